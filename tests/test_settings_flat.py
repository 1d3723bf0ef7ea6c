"""One encoding of settings for both comparisons: the run folder's (`describe_changes`, a resumed
run with other settings) and the report's (`merge_problems`, runs pooled into one row). They
used to flatten values differently (JSON against repr with bare strings), so the same two runs
could be one experiment to one of them and two to the other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pos_agent.bench.identity import describe_changes, flat_settings
from pos_agent.bench.report.merge import merge_problems

# Pairs of setting values the old report encoding (`repr`, strings bare) judged wrongly.
PAIRS = [
    pytest.param(5, "5", False, id="a number and its text"),
    pytest.param(None, "None", False, id="null and the text None"),
    pytest.param(True, "True", False, id="a boolean and its text"),
    pytest.param([{"a": 1, "b": 2}], [{"b": 2, "a": 1}], True, id="key order inside a value"),
]


def _run(root: Path, name: str, value: Any) -> Path:
    run = root / name
    run.mkdir(parents=True)
    spec = {"agent": "raw", "env": "toy", "task": "heat-mug", "setting": value}
    config = {"cases": [{"folder": f"raw/{name}", "spec": spec}], "model_options": {}}
    (run / "config.json").write_text(json.dumps(config))
    return run


@pytest.mark.parametrize(("old", "new", "same"), PAIRS)
def test_both_comparisons_read_a_setting_the_same_way(
    tmp_path: Path, old: Any, new: Any, same: bool
) -> None:
    assert (flat_settings({"setting": old}) == flat_settings({"setting": new})) is same
    pooled = merge_problems([_run(tmp_path, "first", old), _run(tmp_path, "second", new)])
    assert (pooled == []) is same, pooled
    changes = describe_changes({"case": {"setting": old}}, {"case": {"setting": new}}, {}, {})
    assert (changes == []) is same, changes


def test_nested_settings_flatten_to_dotted_names() -> None:
    assert flat_settings({"a": {"b": 1, "c": {"d": "x"}}, "e": {}}, "model_options.") == {
        "model_options.a.b": "1",
        "model_options.a.c.d": '"x"',
        "model_options.e": "{}",
    }
