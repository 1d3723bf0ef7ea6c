"""`pos_agent.monitor.TrapMonitor`: the public trap monitor for any agent loop."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from pos_agent.belief import Belief, apply_patch
from pos_agent.monitor import Facts, TrapMonitor

README = Path(__file__).resolve().parents[1] / "README.md"
ROOM_FACTS = frozenset(f"in(thing {i}, shelf {i % 5})" for i in range(70))


def room_facts(room: str, *extra: str) -> frozenset[str]:
    """About 75 true facts, as in a real TextWorld game; the player's room is one of them."""
    return ROOM_FACTS | {f"at(player, {room})", *extra}


def test_the_readme_example_runs_and_prints_what_it_says() -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- monitor-example -->\s*```python\n(.*?)```", text, re.DOTALL)
    assert match, "README lost its monitor example"
    code = match.group(1)
    assert len(code.strip().splitlines()) <= 12
    printed = io.StringIO()
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), namespace)
    assert printed.getvalue().splitlines()[0] == "5 cycle ('go to the kitchen',)"
    assert "RECOVERY" in str(namespace["hint"])
    assert 'Do not take "go to the kitchen" again' in str(namespace["hint"])


# --- model-free ---------------------------------------------------------------------------------


def test_model_free_repeated_observation_is_static_and_says_where_keys_came_from() -> None:
    monitor = TrapMonitor(goal="open the chest")
    reports = [monitor.observe("look", "You are in a cellar. It is dark.") for _ in range(6)]
    # The third identical call and output, with nothing new since the first: the floor.
    assert [r.trapped for r in reports] == [False, False, True, True, True, True]
    last = reports[-1]
    assert last.pattern == "static" and last.blocked == "achievement"
    assert last.belief_source == "observations" and last.progress_source == "novelty"
    assert last.forbidden_actions == ("look",)
    assert last.recovery is not None and 'Do not repeat "look"' in last.recovery
    assert reports[0].recovery is None and reports[0].novel > 0


def test_model_free_exploration_is_not_a_trap() -> None:
    monitor = TrapMonitor(goal="find the chest")
    rooms = ["kitchen", "hall", "study", "garden", "attic", "cellar", "garage", "porch", "den"]
    reports = [monitor.observe("go north", f"You enter the {room}.") for room in rooms]
    assert not any(r.trapped for r in reports)


def stirring(i: int) -> str:
    """The pot (the goal's focus) stays as it was while the rest of the text changes, with no
    first-seen words after the first step and no return to an earlier observation."""
    return "The pot is on the stove. The clock ticks" + " again" * i + "."


FIDDLING = ["stir", "wait", "listen", "stir gently", "wait a bit", "listen again"]


def test_a_progress_label_or_callable_replaces_novelty() -> None:
    unlabelled = TrapMonitor(goal="stir the pot")
    labelled_no, labelled = TrapMonitor(goal="stir the pot"), TrapMonitor(goal="stir the pot")
    for i in range(6):
        free = unlabelled.observe(FIDDLING[i], stirring(i))
        stuck = labelled_no.observe(FIDDLING[i], stirring(i), progress=0)
        report = labelled.observe(FIDDLING[i], stirring(i), progress=1)
    # Model-free and unlabelled, varied calls whose text shows nothing new and reports no
    # failure start no drift alarm (the text alone cannot say the change was beside the goal);
    # a label of no progress says it.
    assert not free.trapped and free.progress_source == "novelty"
    assert stuck.trapped and stuck.pattern == "drift" and stuck.progress_source == "label"
    assert not report.trapped and report.progress_source == "label"

    steps = iter(range(100))
    rising = TrapMonitor(goal="stir the pot", progress=lambda action, text: next(steps) % 2 == 0)
    for i in range(6):
        report = rising.observe(FIDDLING[i], stirring(i))
    assert report.progress_source == "callable"
    assert not report.trapped  # every other step counts as progress: 2 of 4 stuck


def test_a_progress_label_wins_over_an_unchanged_observation() -> None:
    # A poll the caller knows advanced: nothing visible changes, the label says progress.
    monitor = TrapMonitor()
    for _ in range(8):
        report = monitor.observe("job_status", "Job 42 is running.", progress=1)
    assert not report.trapped and report.reading == "productive"


def test_a_progress_label_does_not_hide_a_cycle() -> None:
    # A label that counts every step into one room as progress: the world keeps coming back.
    monitor = TrapMonitor()
    for i in range(8):
        room = "kitchen" if i % 2 else "pantry"
        report = monitor.observe(f"go to the {room}", f"You are in the {room}.", progress=i % 2)
    assert report.trapped and report.pattern == "cycle"


def test_a_progress_label_of_zero_wins_over_novelty() -> None:
    # Every output carries a fresh token the volatile rules do not know; the caller says no.
    monitor = TrapMonitor()
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    for word in words:
        report = monitor.observe(
            "curl http://127.0.0.1:8080/health", f"502 Bad Gateway {word}", progress=0
        )
    assert report.trapped and report.pattern == "static"
    unlabelled = TrapMonitor()
    for word in words:
        free = unlabelled.observe("curl http://127.0.0.1:8080/health", f"502 Bad Gateway {word}")
    assert not free.trapped  # without a label, first-seen words are exploration


def test_the_same_call_whose_output_only_changes_outside_the_goal_is_static() -> None:
    monitor = TrapMonitor(goal="stir the pot")
    for i in range(6):
        report = monitor.observe("stir", stirring(i))
    assert report.trapped and report.pattern == "static" and report.forbidden_actions == ("stir",)


def test_reset_starts_a_new_episode() -> None:
    monitor = TrapMonitor()
    for _ in range(6):
        monitor.observe("look", "Nothing happens.")
    monitor.reset()
    report = monitor.observe("look", "Nothing happens.")
    assert report.step == 1 and not report.trapped and report.novel > 0


# --- with facts -------------------------------------------------------------------------------


def test_fact_sets_on_a_large_world_tell_a_cycle_from_static_where_paper_cannot() -> None:
    improved, paper = TrapMonitor(), TrapMonitor(health="paper")
    for i in range(8):
        facts = Facts(
            world=room_facts("kitchen" if i % 2 else "pantry"),
            goals=frozenset({"in(key, hand)"}),
        )
        report = improved.observe("go", "You walk.", facts, progress=0)
        baseline = paper.observe("go", "You walk.", facts, progress=0)
    assert report.belief_source == "facts"
    assert report.trapped and report.pattern == "cycle" and report.health.lag == 2
    assert baseline.trapped and baseline.pattern == "static"


def test_fact_sets_drift_outside_the_focus() -> None:
    monitor = TrapMonitor()
    boxes = {f"closed(box {j})" for j in range(8)}
    for i in range(8):
        # One known box after another is opened: nothing new, nothing the key needs.
        opened = boxes - {f"closed(box {i})"} | {f"open(box {i})"}
        facts = Facts(
            world=room_facts("kitchen", "in(key, drawer)", *opened),
            goals=frozenset({"in(key, hand)"}),
        )
        report = monitor.observe(f"open box {i}", f"You open box {i}.", facts, progress=0)
    assert report.trapped and report.pattern == "drift"


def test_static_recovery_forbids_only_what_was_tried_in_this_same_state() -> None:
    monitor = TrapMonitor()
    goal = frozenset({"in(key, hand)"})
    before, after = room_facts("hall"), room_facts("hall", "at(coin, floor)")
    steps = [("wait", before)] * 2 + [("drop coin", after)] + [("wait", after)] * 3
    for action, world in steps:
        report = monitor.observe(action, "...", Facts(world=world, goals=goal), progress=0)
    assert report.trapped and report.pattern == "static"
    assert report.forbidden_actions == ("wait",)  # "drop coin" was tried in another state


def test_a_met_goal_ends_the_trap() -> None:
    monitor = TrapMonitor()
    goal = frozenset({"in(key, hand)"})
    for _ in range(6):
        monitor.observe("look", "A room.", Facts(world=room_facts("hall"), goals=goal))
    report = monitor.observe(
        "take key", "Taken.", Facts(world=room_facts("hall", "in(key, hand)"), goals=goal)
    )
    assert not report.trapped and report.health.persistence_a == 0.0


def test_a_plain_set_of_facts_is_accepted() -> None:
    monitor = TrapMonitor()
    for _ in range(6):
        report = monitor.observe("wait", "Time passes.", set(room_facts("hall")))
    assert report.belief_source == "facts" and report.trapped and report.pattern == "static"


def test_facts_reject_a_single_string() -> None:
    with pytest.raises(TypeError, match="collection"):
        Facts(world="at(player, hall)")  # type: ignore[arg-type]


# --- with a PoS belief --------------------------------------------------------------------------


def test_a_pos_belief_is_read_through_its_record_keys_and_gaps() -> None:
    belief, rejected = apply_patch(
        Belief(goal="heat the mug"),
        [
            {"op": "upsert_entity", "name": "mug"},
            {
                "op": "add_gap",
                "kind": "achievement",
                "text": "heat the mug",
                "refs": ["e1"],
                "activate": True,
            },
        ],
    )
    assert not rejected
    monitor = TrapMonitor(goal="heat the mug")
    for _ in range(6):
        report = monitor.observe("look", "You see a mug.", belief, progress=0)
    assert report.belief_source == "belief"
    assert report.trapped and report.pattern == "static" and report.blocked == "achievement"
    assert report.recovery is not None and 'g1 "heat the mug"' in report.recovery


def test_health_mode_is_checked_and_recorded() -> None:
    assert TrapMonitor(health="paper").observe("a", "b").diagnosis == "paper"
    assert TrapMonitor().config.diagnosis == "improved"
    with pytest.raises(ValueError, match="health"):
        TrapMonitor(health="smart")  # type: ignore[arg-type]


def test_report_to_dict_is_plain_json() -> None:
    import json

    report = TrapMonitor().observe("look", "A room.")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["step"] == 1 and data["belief_source"] == "observations"
    assert {"health", "trapped", "pattern", "blocked", "recovery"} <= data.keys()
