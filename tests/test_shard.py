"""`pos bench --shard I/N`: deterministic, disjoint, complete case ranges in suite order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import pos_agent.cli.bench  # noqa: F401
from pos_agent.bench.shards import Shard
from pos_agent.cli.app import app

TASKS = "[heat-mug, cool-apple, clean-cloth, examine-book, two-cds]"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), terminal_width=400, env={"COLUMNS": "400"})


@given(total=st.integers(min_value=0, max_value=300), count=st.integers(min_value=1, max_value=40))
def test_every_case_is_in_exactly_one_shard_in_suite_order(total: int, count: int) -> None:
    cases = list(range(total))
    shards = [Shard(i, count).take(cases) for i in range(1, count + 1)]
    assert [c for shard in shards for c in shard] == cases, "disjoint, complete, in order"
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1, sizes
    assert shards == [Shard(i, count).take(cases) for i in range(1, count + 1)], "deterministic"


def test_a_loop_over_n_gives_each_case_one_shard() -> None:
    cases = [f"case{i}" for i in range(23)]
    for count in range(1, 30):
        owners: dict[str, list[int]] = {}
        for index in range(1, count + 1):
            for case in Shard(index, count).take(cases):
                owners.setdefault(case, []).append(index)
        assert sorted(owners) == sorted(cases)
        assert all(len(found) == 1 for found in owners.values()), (count, owners)


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "1", "a/b", "2/", "-1/3", "1/2/3"])
def test_a_malformed_or_missing_shard_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="I/N"):
        Shard.parse(text)


def test_parse_reads_i_of_n() -> None:
    assert Shard.parse(" 2/8 ") == Shard(2, 8)
    assert str(Shard(2, 8)) == "2/8"


def write_suite(tmp_path: Path) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: sharded\nenv: toy\ntasks: {TASKS}\nmax_steps: 4\n")
    return str(path)


def bench(tmp_path: Path, *extra: str) -> Any:
    return invoke(
        "bench", write_suite(tmp_path), "--agents", "raw,expert", "--model", "scripted",
        "--out", str(tmp_path / "runs"), "--no-preflight", *extra,
    )  # fmt: skip


def listed(run: Path) -> list[str]:
    return [c["folder"] for c in json.loads((run / "config.json").read_text())["cases"]]


def test_pos_bench_shards_play_disjoint_ranges_that_cover_the_suite(tmp_path: Path) -> None:
    everything = bench(tmp_path, "--run", "all")
    assert everything.exit_code == 0, everything.output
    whole = listed(tmp_path / "runs" / "all")
    assert len(whole) == 10
    parts = []
    for index in (1, 2, 3):
        done = bench(tmp_path, "--shard", f"{index}/3", "--run", f"s{index}")
        assert done.exit_code == 0, done.output
        assert f"(shard {index}/3)" in done.output
        run = tmp_path / "runs" / f"s{index}"
        parts.append(listed(run))
        config = json.loads((run / "config.json").read_text())
        assert config["shard"] == {"index": index, "count": 3}
        assert sorted(p.name for p in run.glob("*__*")) == sorted(parts[-1])
    assert [folder for part in parts for folder in part] == whole


def test_an_empty_shard_runs_nothing_and_says_so(tmp_path: Path) -> None:
    done = bench(tmp_path, "--shard", "1/12", "--run", "empty", "--limit", "1")
    assert done.exit_code == 0, done.output
    assert "is empty" in done.output
    assert not (tmp_path / "runs" / "empty").exists()


def test_a_bad_shard_is_refused_before_anything_runs(tmp_path: Path) -> None:
    done = bench(tmp_path, "--shard", "4/3", "--run", "bad")
    assert done.exit_code == 2
    assert "shard 4/3 does not exist" in done.output
    assert not (tmp_path / "runs" / "bad").exists()


def test_the_default_run_name_names_the_shard(tmp_path: Path) -> None:
    done = bench(tmp_path, "--shard", "2/2")
    assert done.exit_code == 0, done.output
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("sharded-") and run.name.endswith("-shard2of2")
