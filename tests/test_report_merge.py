"""`pos report runA runB ...`: shards of one sweep merge; runs whose methods differ are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import pos_agent.cli.bench
import pos_agent.cli.report  # noqa: F401
from pos_agent.bench.report import ReportError, aggregate, load_runs, write_report
from pos_agent.bench.report.merge import merge_problems
from pos_agent.cli.app import app

TASKS = "[heat-mug, cool-apple, clean-cloth, examine-book]"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})


@pytest.fixture
def suite(tmp_path: Path) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: merged\nenv: toy\ntasks: {TASKS}\nmax_steps: 4\n")
    return str(path)


def bench(tmp_path: Path, suite: str, run: str, *extra: str) -> Path:
    done = invoke(
        "bench", suite, "--agents", "raw,expert", "--model", "scripted", "--no-preflight",
        "--out", str(tmp_path / "runs"), "--run", run, *extra,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    return tmp_path / "runs" / run


def test_the_shards_of_a_sweep_report_as_the_whole_run(tmp_path: Path, suite: str) -> None:
    whole = bench(tmp_path, suite, "whole")
    shards = [bench(tmp_path, suite, f"s{i}", "--shard", f"{i}/3") for i in (1, 2, 3)]
    assert merge_problems(shards) == []
    merged = aggregate(load_runs(shards).cases)
    alone = aggregate(load_runs([whole]).cases)
    assert merged.methods == alone.methods == ["raw", "expert"]
    for method in merged.methods:
        assert merged.stats[method].success == alone.stats[method].success
    written = write_report(shards, tmp_path / "report", plots=False)
    assert written.markdown_path.is_file()
    done = invoke("report", *map(str, shards), "--no-plots", "--out", str(tmp_path / "cli"))
    assert done.exit_code == 0, done.output


def test_a_method_with_other_settings_is_refused_with_what_differs(
    tmp_path: Path, suite: str
) -> None:
    first = bench(tmp_path, suite, "a", "--shard", "1/2")
    second = bench(tmp_path, suite, "b", "--shard", "2/2", "--generation-tokens", "64")
    problems = merge_problems([first, second])
    assert problems, "a different budget must not be pooled"
    assert any(p.startswith("raw: generation_tokens is") and "64" in p for p in problems), problems
    with pytest.raises(ReportError, match="generation_tokens"):
        write_report([first, second], tmp_path / "report", plots=False)
    refused = invoke("report", str(first), str(second), "--no-plots", "--out", str(tmp_path / "r"))
    assert refused.exit_code == 1
    assert "What differs" in refused.output and "generation_tokens" in refused.output
    assert not (tmp_path / "r" / "report.md").exists()
    # a folder of runs is the same pooling: refused as well
    assert merge_problems([tmp_path / "runs"]) == problems
    # each run as its own method: a comparison, not a pool
    split = invoke(
        "report",
        str(first),
        str(second),
        "--split-runs",
        "--no-plots",
        "--out",
        str(tmp_path / "s"),
    )
    assert split.exit_code == 0, split.output


def test_overlapping_runs_are_refused_as_counting_cases_twice(tmp_path: Path, suite: str) -> None:
    whole = bench(tmp_path, suite, "whole")
    shard = bench(tmp_path, suite, "s1", "--shard", "1/2")
    problems = merge_problems([whole, shard])
    assert len(problems) == 1 and "in both" in problems[0], problems
    with pytest.raises(ReportError, match="overlapping shards"):
        write_report([whole, shard], tmp_path / "report", plots=False)


def test_different_methods_with_the_same_settings_pool(tmp_path: Path, suite: str) -> None:
    raw = tmp_path / "runs" / "raw"
    done = invoke(
        "bench", suite, "--agents", "raw", "--model", "scripted", "--no-preflight",
        "--out", str(tmp_path / "runs"), "--run", "raw",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    done = invoke(
        "bench", suite, "--agents", "expert", "--model", "scripted", "--no-preflight",
        "--out", str(tmp_path / "runs"), "--run", "expert",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert merge_problems([raw, tmp_path / "runs" / "expert"]) == []
    assert merge_problems([raw]) == [], "one run has nothing to merge"
