"""The tool-agent family of `pos trapbench`: the simulated workspace, its labels and its CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from extras import needs_textworld
from pos_trapbench.toolagent.corpus import load_tool_trajectories, tools_corpus_file
from pos_trapbench.toolagent.generate import make_corpus, make_trajectory
from pos_trapbench.toolagent.noise import Noise
from pos_trapbench.toolagent.records import (
    EXPECTED_PATTERN,
    TOOL_PRODUCTIVE_KINDS,
    TOOL_TRAP_KINDS,
    ToolTrajectory,
)
from pos_trapbench.toolagent.tasks import FailingTests, Pipeline, Service
from pos_trapbench.toolagent.workspace import Call, Workspace


@pytest.fixture(scope="module")
def corpus() -> list[ToolTrajectory]:
    return make_corpus(24, seed=5)


def workspace(seed: int = 1) -> Workspace:
    import random

    return Workspace(Noise.start(random.Random(seed)), "/home/agent/work/shop")


def test_the_corpus_is_the_same_for_the_same_seed_and_differs_for_another() -> None:
    first = make_trajectory(3, 1, ["repeat", "semantic"])
    assert first == make_trajectory(3, 1, ["repeat", "semantic"])
    assert first.steps != make_trajectory(4, 1, ["repeat", "semantic"]).steps


def test_every_trajectory_finishes_its_tasks(corpus: list[ToolTrajectory]) -> None:
    for trajectory in corpus:
        assert trajectory.done, trajectory.id
        assert trajectory.steps[-1].remaining == 0
        last = list(trajectory.beliefs())[-1]
        assert last.goals <= last.world, trajectory.id  # the goal facts hold and are seen


def test_each_trap_and_productive_kind_is_there_and_clean_runs_have_no_trap(
    corpus: list[ToolTrajectory],
) -> None:
    kinds = Counter(s.kind for t in corpus for s in t.segments)
    assert set(kinds) == set(TOOL_TRAP_KINDS) | set(TOOL_PRODUCTIVE_KINDS)
    for trajectory in corpus:
        if trajectory.kind == "clean":
            assert not any(s.pattern for s in trajectory.segments)


def test_labels_match_segments_and_traps_never_make_progress(
    corpus: list[ToolTrajectory],
) -> None:
    for trajectory in corpus:
        for index, segment in enumerate(trajectory.segments):
            steps = trajectory.steps[segment.start - 1 : segment.end]
            assert {s.label for s in steps} == {segment.kind}
            assert {s.segment for s in steps} == {index}
            assert segment.pattern == EXPECTED_PATTERN.get(segment.kind)
            if segment.pattern is not None:
                assert not any(s.progress for s in steps), (trajectory.id, segment)
                assert 6 <= len(steps) <= 15
            else:
                assert len(steps) >= 3
        for step in trajectory.steps:
            if step.segment is None:
                assert step.label == "none"


def test_productive_repetition_makes_progress(corpus: list[ToolTrajectory]) -> None:
    for kind in ("retest", "paging", "poll_done"):
        steps = [s for t in corpus for s in t.steps if s.label == kind]
        assert steps and all(s.progress for s in steps), kind
    # A trap right before a productive stretch would blur both: they are kept apart.
    for trajectory in corpus:
        ends = [s.end for s in trajectory.segments if s.pattern]
        for segment in trajectory.segments:
            if segment.pattern is None:
                assert all(not end < segment.start <= end + 2 for end in ends)


def test_repeated_calls_get_noisy_outputs(corpus: list[ToolTrajectory]) -> None:
    repeats = [
        t.steps[s.start - 1 : s.end] for t in corpus for s in t.segments if s.kind == "repeat"
    ]
    assert repeats
    for steps in repeats:
        calls = {(s.tool, json.dumps(s.parsed_arguments(), sort_keys=True)) for s in steps}
        outputs = {s.observation for s in steps}
        if len(calls) == 1 and not steps[0].error:  # the same call, never the same text
            assert len(outputs) == len(steps)


def test_arguments_are_sent_as_json_with_the_agents_key_order(
    corpus: list[ToolTrajectory],
) -> None:
    orders = Counter(
        tuple(json.loads(s.arguments)) for t in corpus for s in t.steps if s.tool == "http_request"
    )
    assert ("method", "url") in orders and ("url", "method") in orders


def test_a_fix_is_progress_and_a_rerun_without_an_edit_is_not() -> None:
    ws = workspace(7)
    suite = FailingTests(ws)
    ws.tasks = [suite]
    before = ws.remaining()
    first = ws.execute(Call("run_tests", {}))
    assert "failed" in first.text and ws.remaining() < before
    after_run = ws.remaining()
    again = ws.execute(Call("run_tests", {}))
    assert ws.remaining() == after_run and again.text != first.text  # durations, seeds, ids
    bug = suite.bugs[0]
    line = bug.lines[0]
    ws.execute(Call("read_file", {"path": bug.path, "start": line - 2, "end": line + 2}))
    read = ws.remaining()
    stage = bug.template.stages[0]
    edit = ws.execute(Call("edit_file", {"path": bug.path, "old": stage.bad, "new": stage.good}))
    assert not edit.error and ws.remaining() == read - 1


def test_the_service_boots_after_the_fix_and_a_poll_during_the_boot_is_progress() -> None:
    ws = workspace(2)
    service = Service(ws)
    ws.tasks = [service]
    assert "502 Bad Gateway" in ws.execute(Call("http_request", {"url": service.URL})).text
    old = service.env["DATABASE_URL"]
    new = old.replace(f":{service.wrong_port}/", f":{service.db_port}/")
    ws.execute(Call("edit_file", {"path": service.ENV, "old": old, "new": new}))
    ws.execute(Call("restart_service", {"name": "api"}))
    codes = []
    for _ in range(service.boot_total):
        before = ws.remaining()
        text = ws.execute(Call("http_request", {"url": service.URL})).text
        codes.append(text.split("HTTP/1.1 ")[1][:3])
        assert ws.remaining() < before
    assert codes[-1] == "200" and set(codes[:-1]) == {"503"}


def test_a_hung_job_makes_no_progress_until_it_is_cancelled() -> None:
    ws = workspace(3)
    pipeline = Pipeline(ws)
    ws.tasks = [pipeline]
    pipeline.arm_polling("S1", 10)
    job = pipeline.ids[0]
    ws.execute(Call("submit_job", {"pipeline": "extract_orders", "params": {}}))
    stuck = ws.remaining()
    texts = [ws.execute(Call("job_status", {"job_id": job})).text for _ in range(10)]
    assert ws.remaining() == stuck and len(set(texts)) == 10  # the clock and ids move on
    ws.execute(Call("cancel_job", {"job_id": job}))
    assert ws.remaining() < stuck


def test_bad_calls_end_as_tool_errors_not_crashes() -> None:
    ws = workspace()
    ws.tasks = [Pipeline(ws)]
    for call in (
        Call("read_file", {"path": "nope.py"}),
        Call("edit_file", {"path": "etl/pipelines.yaml", "old": "absent", "new": "x"}),
        Call("job_status", {"job_id": "0000"}),
        Call("teleport", {}),
        Call("read_file", {}),
        Call("search", {"query": "x", "page": "two"}),
    ):
        result = ws.execute(call)
        assert result.error, call


def test_make_and_eval_the_tools_family(tmp_path: Path) -> None:
    from pos_agent.cli.app import app

    runner = CliRunner()
    made = runner.invoke(
        app,
        ["trapbench", "make", "--family", "tools", "--trajectories", "8", "--out", str(tmp_path)],
    )
    assert made.exit_code == 0, made.output
    trajectories = load_tool_trajectories(tools_corpus_file(tmp_path))
    assert len(trajectories) == 8 and not (tmp_path / "corpus.jsonl").exists()
    manifest = json.loads((tmp_path / "tools" / "manifest.json").read_text())
    assert manifest["trajectories"] == 8 and manifest["steps"] == sum(
        len(t.steps) for t in trajectories
    )
    result = runner.invoke(app, ["trapbench", "eval", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| detector | repeat | alternation | cycle | semantic | polling |" in result.output
    for name in ("OpenHands SDK rules", "Gemini CLI rules", "OpenRouter doomLoop"):
        assert name in result.output
    assert "tools · improved · oracle belief:" in result.output
    for name in ("table.md", "table.csv", "table.png"):
        assert (tmp_path / "results" / name).stat().st_size > 0
    rows = (tmp_path / "results" / "table.csv").read_text().splitlines()
    assert rows[0].startswith("family,detector,kind,recall")
    assert any(r.startswith("tools,improved · model-free,semantic,") for r in rows)


def test_make_refuses_an_unknown_family(tmp_path: Path) -> None:
    from pos_agent.cli.app import app

    result = CliRunner().invoke(
        app, ["trapbench", "make", "--family", "games", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2 and "--family must be one of" in result.output


def test_a_tools_corpus_with_a_bad_line_is_refused_with_its_line_number(tmp_path: Path) -> None:
    from pos_agent.cli.app import app

    path = tools_corpus_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(make_trajectory(1, 1, []).model_dump_json() + '\n{"steps": 3}\n')
    with pytest.raises(ValueError, match=":2:"):
        load_tool_trajectories(path)
    result = CliRunner().invoke(app, ["trapbench", "eval", str(tmp_path)])
    assert result.exit_code == 2 and ":2:" in result.output


def test_eval_of_both_families_prints_a_table_each_and_an_overall_one(tmp_path: Path) -> None:
    from pos_agent.cli.app import app
    from pos_trapbench.records import OracleState, StepRecord, Trajectory, dump_trajectories

    state = OracleState(
        about=[], focus=[], open_goals=["in(key, bag)"], unseen_goal_objects=[], plan_length=3
    )
    steps = [
        StepRecord(
            t=i + 1,
            action="look",
            observation=f"A hall ({i}).",
            label="static",
            segment=0,
            progress=0,
            score=0,
            oracle=state,
        )
        for i in range(7)
    ]
    game = Trajectory(
        id="g__injected-1",
        game="games/g.z8",
        family="custom",
        kind="injected",
        goal="take the key",
        won=True,
        initial_observation="",
        initial=state,
        steps=steps,
        segments=[{"kind": "static", "start": 1, "end": 7}],
    )
    (tmp_path / "corpus.jsonl").write_text(dump_trajectories([game]))
    path = tools_corpus_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(
        "".join(make_trajectory(2, i, ["repeat"]).model_dump_json() + "\n" for i in range(3))
    )
    result = CliRunner().invoke(app, ["trapbench", "eval", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| detector | static | cycle | drift | all |" in result.output
    assert "| detector | repeat | alternation | cycle | semantic | polling | all |" in result.output
    assert "| detector | worst kind | all |" in result.output
    assert "textworld: 1 trajectories, 7 steps" in result.output
    assert "overall · improved · model-free:" in result.output
    table = (tmp_path / "results" / "table.md").read_text()
    assert table.count("## ") == 3


@needs_textworld
def test_make_builds_both_families_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pos_agent.cli.app import app
    from pos_trapbench import corpus as corpus_module
    from trapbench_fakes import fake_game

    class FakeGames(corpus_module.CorpusMaker):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs, task=fake_game)

    monkeypatch.setattr(corpus_module, "CorpusMaker", FakeGames)
    result = CliRunner().invoke(
        app,
        ["trapbench", "make", "--games", "2", "--trajectories", "3", "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    assert len(load_tool_trajectories(tools_corpus_file(tmp_path))) == 3
    held_out = load_tool_trajectories(tools_corpus_file(tmp_path, "tools-b"))
    assert len(held_out) == 3 and {t.family for t in held_out} == {"tools-b"}
    assert (tmp_path / "corpus.jsonl").is_file()
    textworld = CliRunner().invoke(
        app,
        [
            "trapbench",
            "make",
            "--family",
            "textworld",
            "--games",
            "2",
            "--out",
            str(tmp_path / "tw"),
        ],
    )
    assert textworld.exit_code == 0, textworld.output
    assert not tools_corpus_file(tmp_path / "tw").exists()
