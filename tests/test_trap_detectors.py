"""Each detector of `pos trapbench eval` on hand-built trajectories, and the scoring rules."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pos_agent.trapbench.detectors import HealthDetector, RuleDetector
from pos_agent.trapbench.metrics import LabelledRun, alarm_starts, score_runs
from pos_agent.trapbench.records import Label, OracleState, StepRecord, Trajectory
from pos_agent.trapbench.rules import AgentBoardRules, GeminiCliRules, OpenHandsRules, RuleStep

# --- hand-built trajectories ------------------------------------------------------------------

FURNITURE = [f"on(plate {i}, table)" for i in range(40)] + [
    f"in(spoon {i}, drawer)" for i in range(30)
]
GOAL = "in(key, inventory)"


def room_text(room: str) -> str:
    return f"-= {room.title()} =- You are in the {room}. There is a table and a drawer here."


def oracle_step(
    t: int,
    action: str,
    observation: str,
    world: frozenset[str],
    label: Label = "none",
    progress: int = 0,
) -> tuple[StepRecord, frozenset[str]]:
    room = next(f for f in world if f.startswith("at(player"))
    state = OracleState(
        about=["player", "key"],
        focus=sorted({room} | {f for f in world if "key" in f}),
        open_goals=[GOAL] if GOAL not in world else [],
        unseen_goal_objects=[],
        plan_length=0,
    )
    record = StepRecord(
        t=t,
        action=action,
        observation=observation,
        label=label,
        progress=progress,
        score=0,
        oracle=state,
    )
    return record, world


def world_in(room: str, *extra: str) -> frozenset[str]:
    return frozenset(FURNITURE) | {f"at(player, {room})", "in(key, chest)", *extra}


def walk_in(rooms: Sequence[str], label: Label = "none") -> list[tuple[StepRecord, frozenset[str]]]:
    return [
        oracle_step(i + 1, f"go to {room}", room_text(room), world_in(room), label)
        for i, room in enumerate(rooms)
    ]


def static_run() -> list[tuple[StepRecord, frozenset[str]]]:
    return [
        oracle_step(i + 1, "look", room_text("hall"), world_in("hall"), "static") for i in range(8)
    ]


def drift_run() -> list[tuple[StepRecord, frozenset[str]]]:
    steps = []
    for i in range(10):
        spoon = f"spoon {i % 5}"
        taken = f"in({spoon}, inventory)" if i % 2 == 0 else f"on({spoon}, table)"
        world = world_in("hall", taken) - {f"in({spoon}, drawer)"}
        steps.append(oracle_step(i + 1, f"move {spoon}", f"You move the {spoon}.", world, "drift"))
    return steps


def exploration_run() -> list[tuple[StepRecord, frozenset[str]]]:
    rooms = ["hall", "study", "garden", "attic", "cellar", "garage", "porch", "den", "loft"]
    steps = []
    for i, room in enumerate(rooms):
        # Each new room shows new things: the oracle world holds facts about what was seen.
        seen = {f"at(lamp {j}, room {j})" for j in range(i + 1)}
        steps.append(
            oracle_step(i + 1, f"go to {room}", room_text(room), world_in(room, *seen), "explore")
        )
    return steps


def run_detector(detector, steps):  # type: ignore[no-untyped-def]
    trajectory = Trajectory(
        id="hand-built",
        game="none",
        family="custom",
        kind="injected",
        goal="take the key",
        won=True,
        initial_observation="",
        initial=OracleState(
            about=[], focus=[], open_goals=[], unseen_goal_objects=[], plan_length=0
        ),
        steps=[s for s, _ in steps],
    )
    detector.start(trajectory)
    return [detector.step(step, world) for step, world in steps]


def first_alarm(alarms) -> tuple[int | None, str | None]:  # type: ignore[no-untyped-def]
    for i, alarm in enumerate(alarms):
        if alarm.on:
            return i, alarm.pattern
    return None, None


# --- belief health ----------------------------------------------------------------------------


def test_improved_with_oracle_beliefs_names_each_trap_within_three_steps() -> None:
    detector = HealthDetector("improved", oracle=True)
    assert first_alarm(run_detector(detector, static_run())) == (4, "static")
    assert first_alarm(run_detector(detector, walk_in(["hall", "kitchen"] * 4))) == (4, "cycle")
    # Back and forth over three rooms; kitchen and pantry are first seen at steps 1 and 2.
    three_rooms = ["hall", "kitchen", "pantry", "kitchen"] * 2
    assert first_alarm(run_detector(detector, walk_in(three_rooms))) == (5, "cycle")
    assert first_alarm(run_detector(detector, drift_run())) == (4, "drift")
    assert first_alarm(run_detector(detector, exploration_run())) == (None, None)


def test_paper_with_oracle_beliefs_calls_everything_static_on_a_large_world() -> None:
    detector = HealthDetector("paper", oracle=True)
    for steps in (static_run(), walk_in(["hall", "kitchen"] * 4), drift_run()):
        index, pattern = first_alarm(run_detector(detector, steps))
        assert index == 7 and pattern == "static"  # the window of 8 is full at index 7
    # Without progress labels, exploration is stagnation to Eq. 5.
    assert first_alarm(run_detector(detector, exploration_run()))[0] == 7


def test_model_free_health_sees_static_and_cycle_from_text_alone() -> None:
    detector = HealthDetector("improved", oracle=False)
    assert first_alarm(run_detector(detector, static_run())) == (4, "static")
    assert first_alarm(run_detector(detector, walk_in(["hall", "kitchen"] * 4)))[1] == "cycle"
    assert first_alarm(run_detector(detector, exploration_run())) == (None, None)


# --- exact-repeat rules -----------------------------------------------------------------------


def rules_on(rules, pairs):  # type: ignore[no-untyped-def]
    rules.reset()
    return [rules.step(RuleStep(a, o)) for a, o in pairs]


REPEAT = [("look", "A hall.")] * 6
ALTERNATE = [("go east", "Kitchen."), ("go west", "Hall.")] * 4
THREE_ROOMS = [
    ("go east", "Kitchen."),
    ("go east", "Pantry."),
    ("go west", "Kitchen."),
    ("go west", "Hall."),
] * 3
DRIFT = [(f"take spoon {i}", f"You take spoon {i}.") for i in range(10)]


def test_openhands_rules() -> None:
    assert first_alarm(rules_on(OpenHandsRules(), REPEAT)) == (3, "static")  # 4 in a row
    assert first_alarm(rules_on(OpenHandsRules(), ALTERNATE)) == (5, "cycle")  # A/B over 6
    assert first_alarm(rules_on(OpenHandsRules(), THREE_ROOMS)) == (None, None)
    assert first_alarm(rules_on(OpenHandsRules(), DRIFT)) == (None, None)
    errors = OpenHandsRules()
    alarms = [errors.step(RuleStep("fly", "I don't understand.", error=True)) for _ in range(3)]
    assert first_alarm(alarms) == (2, "static")  # the same action ending in an error 3 times
    empty = OpenHandsRules()
    assert first_alarm([empty.step(RuleStep("", f"obs {i}")) for i in range(3)])[0] == 2


def test_openhands_needs_the_same_observation_too() -> None:
    changing = [("wait", f"Time passes ({i}).") for i in range(6)]
    assert first_alarm(rules_on(OpenHandsRules(), changing)) == (None, None)


def test_gemini_cli_rules() -> None:
    assert first_alarm(rules_on(GeminiCliRules(), REPEAT)) == (4, "static")  # 5 same calls
    assert first_alarm(rules_on(GeminiCliRules(), ALTERNATE)) == (None, None)
    assert first_alarm(rules_on(GeminiCliRules(), DRIFT)) == (None, None)
    # The streamed-content rule: one 50-character chunk seen 10 times.
    chatter = [("go east", "x"), ("go west", "y")] * 40
    index, _ = first_alarm(rules_on(GeminiCliRules(), chatter))
    assert index is not None and index > 20


def test_agentboard_rules() -> None:
    assert first_alarm(rules_on(AgentBoardRules(), REPEAT)) == (2, "static")
    assert first_alarm(rules_on(AgentBoardRules(), ALTERNATE)) == (None, None)
    rules = AgentBoardRules()
    unparsable = [rules.step(RuleStep(f"blah {i}", "?", error=True)) for i in range(3)]
    assert first_alarm(unparsable) == (2, "static")


def test_rule_detector_wraps_the_rules_and_resets_between_trajectories() -> None:
    detector = RuleDetector(AgentBoardRules())
    assert first_alarm(run_detector(detector, static_run())) == (2, "static")
    assert first_alarm(run_detector(detector, static_run()[:2])) == (None, None)


# --- scoring ----------------------------------------------------------------------------------


def labelled(
    alarms: str, segments: tuple[tuple[str, int, int], ...], patterns: str = "", clean: bool = False
) -> LabelledRun:
    """`alarms` like "..XX.": X = alarm on; `patterns` gives a letter per step (s/c/d)."""
    names = {"s": "static", "c": "cycle", "d": "drift", ".": None}
    labels = ["none"] * len(alarms)
    for kind, first, last in segments:
        for i in range(first, last + 1):
            labels[i] = kind
    return LabelledRun(
        labels=tuple(labels),
        segments=segments,
        alarms=tuple(c == "X" for c in alarms),
        patterns=tuple(names[c] for c in (patterns or "." * len(alarms))),
        clean=clean,
    )


def test_alarm_starts_are_rising_edges() -> None:
    assert alarm_starts([False, True, True, False, True]) == [1, 4]
    assert alarm_starts([True, True]) == [0]


def test_a_segment_is_detected_by_an_alarm_starting_in_it_or_two_steps_after() -> None:
    #            0123456789
    run = labelled("....XX....", (("static", 2, 3),), "....ss....")
    score = score_runs([run])
    assert score.detected["static"] == 1 and score.delays == [2] and score.pattern_right == 1
    late = labelled("......X...", (("cycle", 2, 3),), "......s...")
    assert score_runs([late]).detected["cycle"] == 0  # 3 steps after the segment: missed


def test_an_alarm_already_on_before_the_segment_does_not_count() -> None:
    run = labelled("XXXXXX....", (("drift", 2, 4),), "dddddd....")
    score = score_runs([run])
    assert score.detected["drift"] == 0


def test_false_alarms_count_non_trap_steps_only() -> None:
    #              0123456789
    run = labelled("XX..XX..XX", (("cycle", 4, 5),), "cc..cc..cc")
    score = score_runs([run])
    # Non-trap: 0-3 and 8-9 (4-5 is the segment, 6-7 its grace steps).
    assert score.non_trap_steps == 6
    assert score.false_alarm_steps == 4 and score.new_alarm_starts == 2
    assert score.new_starts_per_100 == pytest.approx(100 * 2 / 6)


def test_exploration_segments_are_non_trap_steps_and_reported_apart() -> None:
    run = labelled("..XX......", (("explore", 1, 4),))
    score = score_runs([run])
    assert score.non_trap_steps == 10 and score.new_alarm_starts == 1
    assert score.explore_segments == 1 and score.explore_alarmed_share == 1.0
    assert sum(score.segments.values()) == 0


def test_clean_runs_alarmed() -> None:
    score = score_runs([labelled("....", (), clean=True), labelled("..X.", (), clean=True)])
    assert score.clean_runs == 2 and score.clean_alarmed_share == 0.5


def test_a_run_with_mismatched_lengths_is_refused() -> None:
    with pytest.raises(ValueError, match="one entry per step"):
        score_runs([LabelledRun(("none",), (), (True, False), (None, None), False)])
