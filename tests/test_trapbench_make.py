"""`make` bookkeeping without building games: resuming, Ctrl-C, the corpus file last, and
workers that die, hang or explode (real worker processes running the tasks of
`trapbench_fakes`)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from extras import needs_textworld
from pos_trapbench.corpus import CORPUS_FILE, MANIFEST_FILE, CorpusMaker, SlotResult
from pos_trapbench.games import game_specs, replacement_spec
from pos_trapbench.pool import Limits, MemoryGuard, Running
from pos_trapbench.records import load_trajectories
from pos_trapbench.session import SearchLimit, bounded_plan_tracking
from trapbench_fakes import HANGING_SLOT, exploding_game, fake_game, hanging_game

ALL_CLEAN = ["cook-000__clean", "quest-001__clean", "cook-002__clean", "quest-003__clean"]


def manifest_games(out: Path) -> dict[str, dict[str, object]]:
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    return {g["id"]: g for g in manifest["games"]}


@needs_textworld
def test_an_interrupted_make_keeps_finished_games_and_resumes_with_the_rest(
    tmp_path: Path,
) -> None:
    settled: list[str] = []

    def interrupted_after_two(result: SlotResult) -> None:
        settled.append(result.slot)
        if len(settled) == 2:
            raise KeyboardInterrupt

    maker = CorpusMaker(tmp_path, games=4, seed=3, workers=1, task=fake_game)
    with pytest.raises(KeyboardInterrupt):
        maker.run(on_slot=interrupted_after_two)
    assert multiprocessing.active_children() == []  # the workers are stopped with the build
    assert not (tmp_path / CORPUS_FILE).exists()  # never a corpus that misses games
    maker = CorpusMaker(tmp_path, games=4, seed=3, workers=1, task=fake_game)
    assert [s.id for s in maker.pending()] == ["cook-002", "quest-003"]

    corpus = maker.run()
    assert corpus is not None
    assert [t.id for t in load_trajectories(corpus)] == ALL_CLEAN
    assert [g.id for g in maker.manifest.games] == [
        "cook-000",
        "cook-002",
        "quest-001",
        "quest-003",
    ]


@needs_textworld
def test_a_worker_killed_mid_build_fails_its_game_and_the_build_ends_with_the_rest_kept(
    tmp_path: Path,
) -> None:
    killed: list[int] = []

    def kill_the_hanging_worker(running: list[Running]) -> None:
        for task in running:
            if task.key == HANGING_SLOT and not killed:
                os.kill(task.pid, signal.SIGKILL)  # the real worker process, mid-game
                killed.append(task.pid)

    maker = CorpusMaker(tmp_path, games=4, seed=3, workers=2, task=hanging_game)
    assert maker.run(on_progress=kill_the_hanging_worker) is None
    assert killed
    assert [r.slot for r in maker.failed] == [HANGING_SLOT]
    games = manifest_games(tmp_path)
    assert games[HANGING_SLOT]["status"] == "failed"
    assert "killed by signal 9" in str(games[HANGING_SLOT]["reason"])
    assert {g for g, e in games.items() if e["status"] == "used"} == {
        "cook-000",
        "quest-001",
        "quest-003",
    }
    assert sorted(p.stem for p in (tmp_path / "trajectories").glob("*.jsonl")) == [
        "cook-000",
        "quest-001",
        "quest-003",
    ]
    assert not (tmp_path / CORPUS_FILE).exists()

    # The next run builds only the failed game, and the manifest forgets the failure.
    maker = CorpusMaker(tmp_path, games=4, seed=3, workers=2, task=fake_game)
    assert [s.id for s in maker.pending()] == [HANGING_SLOT]
    corpus = maker.run()
    assert corpus is not None
    assert [t.id for t in load_trajectories(corpus)] == ALL_CLEAN
    assert manifest_games(tmp_path)[HANGING_SLOT]["status"] == "used"


@needs_textworld
def test_a_game_over_the_time_limit_is_stopped_and_fails(tmp_path: Path) -> None:
    maker = CorpusMaker(
        tmp_path, games=3, seed=3, workers=1, task=hanging_game, limits=Limits(time_s=1)
    )
    assert maker.run() is None
    reason = str(manifest_games(tmp_path)[HANGING_SLOT]["reason"])
    assert "over the time limit (1 s)" in reason
    assert manifest_games(tmp_path)["quest-001"]["status"] == "used"
    assert multiprocessing.active_children() == []


@needs_textworld
def test_a_search_that_explodes_is_skipped_at_its_memory_bound_and_the_slot_replaced(
    tmp_path: Path,
) -> None:
    limits = Limits(memory_mb=400)
    maker = CorpusMaker(tmp_path, games=4, seed=3, workers=2, task=exploding_game, limits=limits)
    corpus = maker.run()
    assert corpus is not None
    games = manifest_games(tmp_path)
    exploded = games[HANGING_SLOT]
    assert exploded["status"] == "skipped"
    assert str(exploded["reason"]).startswith("memory bound:")
    assert games[f"{HANGING_SLOT}~1"]["status"] == "used"
    # Skipped within its bound: the worker never reached the limit at which it is killed.
    assert all(p.mb < limits.kill_mb for p in maker.peaks.values())
    assert max(p.mb for p in maker.peaks.values()) > limits.memory_mb
    ids = [t.id for t in load_trajectories(corpus)]
    assert ids == [*ALL_CLEAN[:2], f"{HANGING_SLOT}~1__clean", ALL_CLEAN[3]]


def test_the_memory_guard_is_quiet_under_its_bound() -> None:
    with MemoryGuard(limit_mb=1 << 20):
        chunks = [bytes(1 << 20) for _ in range(8)]
    assert len(chunks) == 8


@needs_textworld
def test_a_different_seed_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    CorpusMaker(tmp_path, games=2, seed=3, workers=1, task=fake_game).run()
    with pytest.raises(ValueError, match="--games 2 --seed 3"):
        CorpusMaker(tmp_path, games=4, seed=3)


def test_game_seeds_are_deterministic_and_alternate_families() -> None:
    specs = game_specs(6, seed=1)
    assert specs == game_specs(6, seed=1) and specs != game_specs(6, seed=2)
    assert [s.family for s in specs] == ["tw-cooking", "custom"] * 3
    replacement = replacement_spec(specs[1], 2)
    assert replacement.id == "quest-001~2" and replacement.family == "custom"
    assert replacement == replacement_spec(specs[1], 2)
    assert specs[0].command.startswith("tw-make tw-cooking --recipe 2 --take 2 --go 6")
    assert "--world-size 8 --nb-objects 12 --quest-length 10" in specs[1].command


@needs_textworld
def test_plan_tracking_that_never_ends_stops_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from textworld.generator.game import ActionDependencyTree

    def cycling(tree: object) -> Iterator[str]:
        while True:  # an action and its reverse, popped in turn (issue 26)
            yield "take"
            yield "put"

    monkeypatch.setattr(ActionDependencyTree, "flatten", cycling)
    tree = ActionDependencyTree()
    with bounded_plan_tracking(limit=40), pytest.raises(SearchLimit, match="past 40 actions"):
        tuple(tree.flatten())
    assert ActionDependencyTree.flatten is cycling  # restored on the way out

    monkeypatch.setattr(ActionDependencyTree, "flatten", lambda tree: iter(["a", "b", "c"]))
    with bounded_plan_tracking(limit=3):
        assert tuple(tree.flatten()) == ("a", "b", "c")  # within the bound: unchanged
