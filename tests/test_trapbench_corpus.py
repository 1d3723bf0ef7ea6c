"""The trap corpus from real TextWorld games: labels, wins, replay, resumability, the CLI.

One small corpus (one tw-cooking game, one custom quest) is built once for the module; building
compiles real games with Inform 7 and plays them through Jericho, so these tests are slow.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pos_trapbench.corpus import CORPUS_FILE, MANIFEST_FILE, CorpusMaker, build_game
from pos_trapbench.evaluate import evaluate, load_corpus, markdown_table
from pos_trapbench.games import (
    GameGenerationError,
    GameSpec,
    bounded_quest_search,
    make_game,
)
from pos_trapbench.pool import Limits, WorkerPool
from pos_trapbench.records import Trajectory, load_trajectories
from pos_trapbench.segments import room_graph
from pos_trapbench.session import MAX_PLAN_ACTIONS, clean_feedback

DRIFT_VERBS = {"open", "close", "take", "drop", "put", "insert"}

pytestmark = [
    pytest.mark.slow,
    # Jericho does not list TextWorld's games as supported; TextWorld tracks their state itself.
    pytest.mark.filterwarnings("ignore::UserWarning:jericho"),
]

textworld = pytest.importorskip("textworld")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("traps")
    CorpusMaker(out, games=2, seed=7, workers=1).run()
    return out


@pytest.fixture(scope="module")
def trajectories(corpus_dir: Path) -> list[Trajectory]:
    return load_corpus(corpus_dir)


def test_both_families_give_a_clean_run_and_injected_runs(trajectories: list[Trajectory]) -> None:
    families = {t.family for t in trajectories}
    assert families == {"tw-cooking", "custom"}
    for family in families:
        kinds = [t.kind for t in trajectories if t.family == family]
        assert kinds.count("clean") == 1 and kinds.count("injected") >= 2


def test_every_run_is_won_in_the_real_game(trajectories: list[Trajectory]) -> None:
    for trajectory in trajectories:
        assert trajectory.won, trajectory.id
        last = trajectory.steps[-1]
        assert last.oracle.plan_length == 0 and last.oracle.open_goals == []


def test_replaying_the_actions_in_a_fresh_game_gives_the_same_text_and_a_win(
    corpus_dir: Path, trajectories: list[Trajectory]
) -> None:
    infos = textworld.EnvInfos(won=True)
    for trajectory in trajectories[:3]:
        env = textworld.start(str(corpus_dir / trajectory.game), request_infos=infos)
        state = env.reset()
        assert clean_feedback(state.feedback) == trajectory.initial_observation
        for step in trajectory.steps:
            state, _, done = env.step(step.action)
            assert clean_feedback(state.feedback) == step.observation, (trajectory.id, step.t)
        assert done and state["won"]
        env.close()


def test_each_segment_is_exactly_where_its_labels_say(trajectories: list[Trajectory]) -> None:
    injected = [t for t in trajectories if t.kind == "injected"]
    assert sum(len(t.segments) for t in injected) >= 6
    for trajectory in trajectories:
        if trajectory.kind == "clean":
            assert not trajectory.segments
        for step in trajectory.steps:
            if step.segment is None:
                assert step.label == "none"
                continue
            segment = trajectory.segments[step.segment]
            assert segment.start <= step.t <= segment.end and step.label == segment.kind
        for index, segment in enumerate(trajectory.segments):
            inside = [s for s in trajectory.steps if segment.start <= s.t <= segment.end]
            assert inside and all(s.segment == index for s in inside)
            assert segment.end - segment.start + 1 >= 6
        # Segments never touch: the plan is followed in between for more than the grace steps.
        for before, after in pairwise(trajectory.segments):
            assert after.start - before.end > 2


def player_rooms(worlds: list[frozenset[str]]) -> list[str]:
    return [next(f for f in world if f.startswith("at(player, ")) for world in worlds]


def test_segments_do_what_their_kind_says(trajectories: list[Trajectory]) -> None:
    kinds_seen = set()
    for trajectory in trajectories:
        worlds = list(trajectory.worlds())
        for segment in trajectory.segments:
            kinds_seen.add(segment.kind)
            steps = trajectory.steps[segment.start - 1 : segment.end]
            if segment.kind == "static":
                # One no-op repeated: nothing stops being true, the plan does not move.
                assert len({s.action for s in steps}) == 1
                assert all(not s.oracle.removed and s.progress == 0 for s in steps)
                assert len({s.oracle.plan_length for s in steps}) == 1
            elif segment.kind == "cycle" and segment.detail.startswith("rooms"):
                # Back and forth over 2 rooms (period 2) or 3 rooms (period 4).
                rooms = player_rooms(worlds[segment.start - 1 : segment.end])
                assert len(set(rooms)) in (2, 3)
                period = 2 * (len(set(rooms)) - 1)
                assert all(rooms[i] == rooms[i - period] for i in range(period, len(rooms)))
            elif segment.kind == "cycle":
                # One container opened and closed in turn.
                assert len({s.action for s in steps}) == 2
                assert all(a.action != b.action for a, b in pairwise(steps))
            elif segment.kind == "drift":
                segment_worlds = worlds[segment.start - 1 : segment.end]
                assert len(set(segment_worlds)) == len(segment_worlds)  # no state twice
                assert all(s.progress == 0 for s in steps)
                assert all(s.action.split()[0] in DRIFT_VERBS for s in steps)
            else:  # exploration: every step opens something or moves
                assert all(s.action.startswith(("open ", "go ")) for s in steps)
    assert kinds_seen == {"static", "cycle", "drift", "explore"}


def test_progress_is_the_plan_getting_shorter(trajectories: list[Trajectory]) -> None:
    for trajectory in trajectories:
        previous = trajectory.initial.plan_length
        for step in trajectory.steps:
            assert step.progress == int(step.oracle.plan_length < previous)
            previous = step.oracle.plan_length


def test_the_oracle_world_only_holds_what_was_seen(trajectories: list[Trajectory]) -> None:
    clean = next(t for t in trajectories if t.kind == "clean")
    first = set(clean.initial.added)
    last = set(list(clean.worlds())[-1])
    assert any(f.startswith("at(player") for f in first)
    assert len(last) > len(first)  # walking the game shows more of it


def test_room_graph_reads_both_directions_of_a_free_passage() -> None:
    from textworld.logic import Proposition, Variable

    kitchen, hall = Variable("r_0", "r"), Variable("r_1", "r")
    facts = frozenset(
        {
            Proposition("north_of", [hall, kitchen]),
            Proposition("free", [kitchen, hall]),
            Proposition("free", [hall, kitchen]),
        }
    )
    assert room_graph(facts) == {"r_0": {"north": "r_1"}, "r_1": {"south": "r_0"}}
    assert room_graph(facts - {Proposition("free", [hall, kitchen])}) == {}


def test_make_resumes_and_keeps_finished_games(corpus_dir: Path) -> None:
    slot_files = sorted((corpus_dir / "trajectories").glob("*.jsonl"))
    stamps = {p: p.stat().st_mtime_ns for p in slot_files}
    maker = CorpusMaker(corpus_dir, games=2, seed=7, workers=1)
    assert maker.pending() == []
    maker.run()
    assert {p: p.stat().st_mtime_ns for p in slot_files} == stamps
    manifest = json.loads((corpus_dir / MANIFEST_FILE).read_text())
    assert manifest["seed"] == 7 and all(
        g["command"].startswith("tw-make") for g in manifest["games"]
    )
    with pytest.raises(ValueError, match="--seed 7"):
        CorpusMaker(corpus_dir, games=2, seed=8)


def test_the_manifest_command_regenerates_the_same_game_with_tw_make(
    corpus_dir: Path, tmp_path: Path
) -> None:
    manifest = json.loads((corpus_dir / MANIFEST_FILE).read_text())
    entry = next(g for g in manifest["games"] if g["family"] == "custom" and g["status"] == "used")
    tw_make = Path(sys.executable).with_name("tw-make")
    subprocess.run(
        [str(tw_make), *shlex.split(entry["command"])[1:]], cwd=tmp_path, check=True, timeout=300
    )
    ours = textworld.Game.load(str(corpus_dir / "games" / f"{entry['id']}.json"))
    theirs = textworld.Game.load(str(tmp_path / "games" / f"{entry['id']}.json"))
    assert ours.world == theirs.world and ours.quests == theirs.quests
    assert ours.walkthrough == theirs.walkthrough


def test_eval_on_the_corpus_prints_the_table(
    corpus_dir: Path, trajectories: list[Trajectory]
) -> None:
    from pos_agent.cli.app import app

    result = CliRunner().invoke(app, ["trapbench", "eval", str(corpus_dir)])
    assert result.exit_code == 0, result.output
    assert "improved · oracle belief" in result.output and "OpenHands SDK rules" in result.output
    for name in ("table.md", "table.csv", "table.png"):
        assert (corpus_dir / "results" / name).stat().st_size > 0
    table = markdown_table(evaluate(trajectories))
    assert table.count("\n") == 10  # header, rule and nine detectors


def test_eval_without_a_corpus_says_what_to_do(tmp_path: Path) -> None:
    from pos_agent.cli.app import app

    result = CliRunner().invoke(app, ["trapbench", "eval", str(tmp_path)])
    assert result.exit_code == 2
    assert "pos trapbench make" in result.output


def test_a_corpus_file_with_a_bad_line_is_refused_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / CORPUS_FILE
    path.write_text('{"not": "a trajectory"}\n')
    with pytest.raises(ValueError, match=":1:"):
        load_trajectories(path)


def test_a_game_whose_plan_tracking_explodes_is_skipped_within_its_bound(tmp_path: Path) -> None:
    # Slot quest-011 of `--games 16 --seed 7777` (issue 26): in an injected run TextWorld's
    # winning-policy tracking pops an action and its reverse in turn for ever; unbounded, the
    # worker grew to 10 GB.
    spec = GameSpec("quest-011", "custom", 62732)
    with WorkerPool(1, Limits(time_s=600)) as pool:
        pool.submit(spec.id, build_game, spec, tmp_path)
        [result] = list(pool.results())
    assert result.ok, result.error
    entry = result.value.entry
    assert entry.status == "skipped"
    assert entry.reason.startswith(
        f"search bound: TextWorld's winning plan went past {MAX_PLAN_ACTIONS}"
    )
    assert result.peak_mb < Limits().memory_mb
    assert not (tmp_path / "games" / "quest-011.z8").exists()


def test_a_quest_search_past_its_bound_skips_the_seed(tmp_path: Path) -> None:
    spec = GameSpec("quest-001", "custom", 9118)  # its quest search expands 13 nodes
    with bounded_quest_search(limit=5), pytest.raises(GameGenerationError, match="search bound"):
        make_game(spec, tmp_path)
    assert list(tmp_path.glob("*.z8")) == []
