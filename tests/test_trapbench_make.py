"""`make` bookkeeping without building games: resuming, Ctrl-C, and the corpus file last."""

from __future__ import annotations

from pathlib import Path

import pytest

from extras import needs_textworld
from pos_agent.trapbench import corpus as corpus_module
from pos_agent.trapbench.corpus import CORPUS_FILE, CorpusMaker, SlotResult
from pos_agent.trapbench.games import GameSpec, game_specs, replacement_spec
from pos_agent.trapbench.records import GameEntry, OracleState, Trajectory, load_trajectories


def fake_slot(spec: GameSpec, out: Path) -> SlotResult:
    state = OracleState(about=[], focus=[], open_goals=[], unseen_goal_objects=[], plan_length=0)
    trajectory = Trajectory(
        id=f"{spec.id}__clean",
        game=f"games/{spec.id}.z8",
        family=spec.family,
        kind="clean",
        goal="win",
        won=True,
        initial_observation="",
        initial=state,
        steps=[],
    )
    entry = GameEntry(
        id=spec.id, family=spec.family, seed=spec.seed, command=spec.command, status="used"
    )
    return SlotResult(spec.id, [trajectory], [entry])


@needs_textworld
def test_an_interrupted_make_keeps_finished_games_and_resumes_with_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []

    def interrupted_after_two(spec: GameSpec, out: Path) -> SlotResult:
        if len(built) == 2:
            raise KeyboardInterrupt
        built.append(spec.id)
        return fake_slot(spec, out)

    monkeypatch.setattr(corpus_module, "build_slot", interrupted_after_two)
    with pytest.raises(KeyboardInterrupt):
        CorpusMaker(tmp_path, games=4, seed=3, workers=1).run()
    assert not (tmp_path / CORPUS_FILE).exists()  # never a corpus that misses games
    maker = CorpusMaker(tmp_path, games=4, seed=3, workers=1)
    assert [s.id for s in maker.pending()] == ["cook-002", "quest-003"]

    monkeypatch.setattr(corpus_module, "build_slot", fake_slot)
    corpus = maker.run()
    ids = [t.id for t in load_trajectories(corpus)]
    assert ids == ["cook-000__clean", "quest-001__clean", "cook-002__clean", "quest-003__clean"]
    assert [g.id for g in maker.manifest.games] == [
        "cook-000",
        "cook-002",
        "quest-001",
        "quest-003",
    ]


@needs_textworld
def test_a_different_seed_in_the_same_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(corpus_module, "build_slot", fake_slot)
    CorpusMaker(tmp_path, games=2, seed=3, workers=1).run()
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
