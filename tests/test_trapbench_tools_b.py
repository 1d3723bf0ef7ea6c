"""The held-out tool-agent family `tools-b` (`pos_trapbench.toolagent.family_b`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pos_trapbench.toolagent.corpus import load_tool_trajectories, tools_corpus_file
from pos_trapbench.toolagent.family_b import make_corpus_b
from pos_trapbench.toolagent.family_b_tasks import Clock, GoTests, Rollout
from pos_trapbench.toolagent.generate import make_corpus
from pos_trapbench.toolagent.records import (
    EXPECTED_PATTERN,
    TOOL_PRODUCTIVE_KINDS,
    TOOL_TRAP_KINDS,
    ToolTrajectory,
)
from pos_trapbench.toolagent.workspace import Call


@pytest.fixture(scope="module")
def corpus() -> list[ToolTrajectory]:
    return make_corpus_b(40, seed=3)


def test_the_family_is_the_same_for_the_same_seed_and_not_the_tools_family() -> None:
    a, b = make_corpus_b(6, seed=3), make_corpus_b(6, seed=3)
    assert [t.model_dump() for t in a] == [t.model_dump() for t in b]
    assert [t.model_dump() for t in make_corpus_b(6, seed=4)] != [t.model_dump() for t in a]
    tools = {s.tool for t in make_corpus(6, seed=3) for s in t.steps}
    held_out = {s.tool for t in a for s in t.steps}
    assert {t.family for t in a} == {"tools-b"}
    assert tools.isdisjoint(held_out - {"cat"}) and "kubectl" in held_out


def test_every_kind_is_there_and_traps_never_make_progress(corpus: list[ToolTrajectory]) -> None:
    kinds = Counter(s.kind for t in corpus for s in t.segments)
    for kind in (*TOOL_TRAP_KINDS, *TOOL_PRODUCTIVE_KINDS):
        assert kinds[kind] > 0, kind
    for trajectory in corpus:
        assert trajectory.done
        for segment in trajectory.segments:
            assert segment.pattern == EXPECTED_PATTERN.get(segment.kind)
            steps = trajectory.steps[segment.start - 1 : segment.end]
            assert {s.label for s in steps} == {segment.kind}
            if segment.kind in TOOL_TRAP_KINDS:
                assert not any(s.progress for s in steps)
        if trajectory.kind == "clean":
            assert not any(s.kind in TOOL_TRAP_KINDS for s in trajectory.segments)


def test_every_output_carries_the_exit_footer_and_repeats_differ(
    corpus: list[ToolTrajectory],
) -> None:
    for trajectory in corpus:
        for step in trajectory.steps:
            assert step.observation.splitlines()[-1].startswith("[exit ")
    repeats = [
        trajectory.steps[s.start - 1 : s.end]
        for trajectory in corpus
        for s in trajectory.segments
        if s.kind == "repeat"
    ]
    for steps in repeats:
        assert len({s.observation for s in steps}) > 1


def test_a_real_fix_is_progress_and_a_patch_elsewhere_is_not() -> None:
    import random

    rng = random.Random(1)
    task = GoTests(Clock(rng), rng)
    task.run(Call("shell", {"cmd": "go test ./..."}))
    bug = task.bugs[0]
    task.run(Call("cat", {"path": bug.path, "lines": f"{bug.line - 2}:{bug.line + 2}"}))
    before = task.remaining()
    task.run(Call("apply_patch", {"path": bug.path, "hunk": "@@ -1 +1 @@ unrelated"}))
    assert task.remaining() == before
    task.run(Call("apply_patch", {"path": bug.path, "hunk": f"@@ -{bug.line} +{bug.line} @@ fix "
                                  f"{bug.test} (part 1)"}))  # fmt: skip
    assert task.remaining() < before


def test_the_rollout_finishes_only_after_the_fix() -> None:
    import random

    rng = random.Random(2)
    task = Rollout(Clock(rng), rng)
    status = Call("kubectl", {"args": "rollout status deploy/web --timeout=30s"})
    for _ in range(5):
        assert "successfully rolled out" not in task.run(status)[0]
    for args in ("get pods -l app=web", "logs deploy/web", "describe deploy/web",
                 "set env deploy/web REDIS_URL=redis://cache:6379"):  # fmt: skip
        task.run(Call("kubectl", {"args": args}))
    outputs = [task.run(status)[0] for _ in range(3)]
    assert "successfully rolled out" in outputs[-1] and task.remaining() == 0


def test_make_and_eval_the_held_out_family(tmp_path: Path) -> None:
    from pos_agent.cli.app import app

    runner = CliRunner()
    made = runner.invoke(
        app,
        ["trapbench", "make", "--family", "tools-b", "--trajectories", "8", "--out", str(tmp_path)],
    )
    assert made.exit_code == 0, made.output
    assert len(load_tool_trajectories(tools_corpus_file(tmp_path, "tools-b"))) == 8
    assert not tools_corpus_file(tmp_path).exists()
    result = runner.invoke(app, ["trapbench", "eval", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "tools-b · improved · model-free:" in result.output
    rows = (tmp_path / "results" / "table.csv").read_text().splitlines()
    assert any(r.startswith("tools-b,improved · model-free,semantic,") for r in rows)


def test_no_trap_comes_after_the_last_task(corpus: list[ToolTrajectory]) -> None:
    """With every goal met there is no open gap a trap could block; traps come before."""
    for trajectory in corpus:
        last_task = trajectory.tasks[-1]
        tail = [s for s in trajectory.steps if s.task == last_task]
        finished = next((k for k, s in enumerate(tail) if s.remaining == 0), None)
        if finished is not None:
            assert all(s.label not in TOOL_TRAP_KINDS for s in tail[finished:])
