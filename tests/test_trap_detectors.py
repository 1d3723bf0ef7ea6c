"""Each detector of `pos trapbench eval` on hand-built trajectories, and the scoring rules."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pos_trapbench.anchor_rules import (
    AgentBoardRules,
    GeminiCliRules,
    HashedCallRules,
    OpenHandsRules,
    OpenRouterRules,
    RuleStep,
)
from pos_trapbench.detectors import HealthDetector, RuleDetector
from pos_trapbench.metrics import LabelledRun, Span, alarm_starts, score_runs
from pos_trapbench.records import Label, OracleState, StepRecord, Trajectory
from pos_trapbench.runs import textworld_run

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
    run = textworld_run(trajectory, [world for _, world in steps])
    detector.start(run)
    return [detector.step(step) for step in run.steps]


def first_alarm(alarms) -> tuple[int | None, str | None]:  # type: ignore[no-untyped-def]
    for i, alarm in enumerate(alarms):
        if alarm.on:
            return i, alarm.pattern
    return None, None


# --- belief health ----------------------------------------------------------------------------


def test_improved_with_oracle_beliefs_names_each_trap_within_three_steps() -> None:
    detector = HealthDetector("improved", oracle=True)
    # The same call and output a third time with nothing new: the floor (an exact repeat).
    assert first_alarm(run_detector(detector, static_run())) == (2, "static")
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
    assert first_alarm(run_detector(detector, static_run())) == (2, "static")
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
    assert rules_on(OpenHandsRules(), REPEAT)[3].level == "stop"
    assert first_alarm(rules_on(OpenHandsRules(), ALTERNATE)) == (5, "cycle")  # A/B over 6
    assert first_alarm(rules_on(OpenHandsRules(), THREE_ROOMS)) == (None, None)
    assert first_alarm(rules_on(OpenHandsRules(), DRIFT)) == (None, None)


def test_openhands_warns_once_before_it_stops_an_error_streak() -> None:
    errors = OpenHandsRules()
    alarms = [
        errors.step(RuleStep("fly", f"Error at {i}: I don't understand.", error=True))
        for i in range(5)
    ]
    assert [a.level for a in alarms] == [None, None, "nudge", "stop", "stop"]
    assert first_alarm(alarms) == (2, "static")
    # A new streak after a break gets its own warning.
    errors.step(RuleStep("look", "A hall."))
    again = [errors.step(RuleStep("fly", f"E{i}", error=True)) for i in range(3)]
    assert again[-1].level == "nudge"


def test_openhands_repeated_agent_message_without_observation() -> None:
    rules = OpenHandsRules()
    alarms = [rules.step(RuleStep("I will now check the logs.", "")) for _ in range(3)]
    assert first_alarm(alarms) == (2, "static")
    tool = OpenHandsRules()  # a tool call always has an observation of its own
    calls = [tool.step(RuleStep("x", "", key="read:{}", tool="read")) for _ in range(3)]
    assert first_alarm(calls) == (None, None)


def test_openhands_needs_the_same_observation_too() -> None:
    changing = [("wait", f"Time passes ({i}).") for i in range(6)]
    assert first_alarm(rules_on(OpenHandsRules(), changing)) == (None, None)


def test_gemini_cli_nudges_at_five_repeats_and_halts_at_the_second_detection() -> None:
    alarms = rules_on(GeminiCliRules(), [("look", "A hall.")] * 12)
    assert first_alarm(alarms) == (4, "static")
    assert [a.level for a in alarms[4:9]] == ["nudge"] * 5  # on while the loop goes on
    assert alarms[9].level == "stop"  # five more after the nudge: halted
    assert first_alarm(rules_on(GeminiCliRules(), REPEAT[:4])) == (None, None)


def test_gemini_cli_finds_repeated_sequences_of_up_to_five_calls() -> None:
    cycle = [("a", "1"), ("b", "2"), ("c", "3")] * 5
    alarms = rules_on(GeminiCliRules(), cycle)
    assert first_alarm(alarms) == (14, "cycle")  # 3 calls x 5
    assert first_alarm(rules_on(GeminiCliRules(), cycle[:14])) == (None, None)
    six = [(f"call {i}", "x") for i in range(6)] * 5  # longer than 5: not looked for
    assert first_alarm(rules_on(GeminiCliRules(), six))[0] is None
    assert first_alarm(rules_on(GeminiCliRules(), ALTERNATE)) == (None, None)  # 4 rounds only
    assert first_alarm(rules_on(GeminiCliRules(), DRIFT)) == (None, None)
    # A deviation ends the standing alarm.
    alarms = rules_on(GeminiCliRules(), [("look", "A hall.")] * 5 + [("go east", "Kitchen.")])
    assert alarms[4].on and not alarms[5].on


def test_gemini_cli_content_chunks_for_text_commands() -> None:
    # Six commands in turn: no sequence of <= 5 calls repeats, but every 50-character chunk of
    # the command stream comes round once a turn, so the tenth turn finds one 10 times.
    commands = [(f"examine the thing {i:02d}", "x") for i in range(6)] * 11
    index, pattern = first_alarm(rules_on(GeminiCliRules(), commands))
    assert index is not None and 54 <= index < 60 and pattern == "static"
    calls = [RuleStep(a, o, key=f"t:{a}", tool="t") for a, o in commands]
    rules = GeminiCliRules()
    assert not any(rules.step(c).on for c in calls)  # tool calls: no content check


def test_openrouter_ladder_observe_block_stop() -> None:
    alarms = rules_on(OpenRouterRules(), [("look", "A hall.")] * 7)
    assert [a.level for a in alarms] == [None, "observe", "block", "block", "block", "stop", "stop"]
    assert [a.on for a in alarms[:3]] == [False, False, True]
    assert alarms[2].pattern == "static"


def test_openrouter_streak_survives_other_tools_but_not_other_inputs() -> None:
    def call(tool: str, arguments: str) -> RuleStep:
        return RuleStep(f"{tool} {arguments}", "out", key=f"{tool}:{arguments}", tool=tool)

    rules = OpenRouterRules()
    steps = [call("status", "{1}"), call("read", "{a}"), call("status", "{1}"), call("read", "{b}")]
    steps.append(call("status", "{1}"))
    alarms = [rules.step(s) for s in steps]
    assert alarms[-1].level == "block"  # third identical status call, reads in between
    rules = OpenRouterRules()
    alarms = [rules.step(call("status", f"{{{i % 2}}}")) for i in range(8)]
    assert not any(a.on for a in alarms)  # the inputs change every call


def test_hashed_call_proxy_three_in_ten() -> None:
    alarms = rules_on(HashedCallRules(), REPEAT)
    assert first_alarm(alarms) == (2, "static")
    assert alarms[2].level == "block"
    assert first_alarm(rules_on(HashedCallRules(), ALTERNATE)) == (4, "cycle")
    spread = [("look", "A hall.")] + [(f"go {i}", "x") for i in range(5)]
    spread += [("look", "A hall.")] + [(f"take {i}", "x") for i in range(4)] + [("look", "x")]
    assert first_alarm(rules_on(HashedCallRules(), spread)) == (None, None)  # 11 calls apart
    assert first_alarm(rules_on(HashedCallRules(), DRIFT)) == (None, None)


def test_rule_steps_compare_tool_calls_by_canonical_arguments() -> None:
    from pos_agent.monitor import Facts
    from pos_trapbench.runs import BenchStep

    def step(arguments: str) -> BenchStep:
        return BenchStep(
            f"read_file {arguments}",
            "read_file",
            arguments,
            "text",
            False,
            0,
            Facts(frozenset()),
            "none",
        )

    a, b = step('{"path": "a.py", "start": 1}'), step('{"start":1,  "path":"a.py"}')
    assert a.canonical_call() == b.canonical_call()
    assert a.canonical_call() != step('{"path": "b.py", "start": 1}').canonical_call()
    detector = RuleDetector(HashedCallRules())
    alarms = [detector.step(s) for s in (a, b, a)]
    assert alarms[-1].on


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
        segments=tuple(Span(k, f, last, None if k == "explore" else k) for k, f, last in segments),
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
    assert score.productive_segments["explore"] == 1 and score.productive_alarmed_share() == 1.0
    assert sum(score.segments.values()) == 0


def test_clean_runs_alarmed() -> None:
    score = score_runs([labelled("....", (), clean=True), labelled("..X.", (), clean=True)])
    assert score.clean_runs == 2 and score.clean_alarmed_share == 0.5


def test_a_run_with_mismatched_lengths_is_refused() -> None:
    with pytest.raises(ValueError, match="one entry per step"):
        score_runs([LabelledRun(("none",), (), (True, False), (None, None), False)])


def test_pattern_right_is_judged_against_the_segment_pattern_not_its_kind() -> None:
    run = LabelledRun(
        labels=("none", "semantic", "semantic", "none"),
        segments=(Span("semantic", 1, 2, "drift"),),
        alarms=(False, True, True, False),
        patterns=(None, "drift", "drift", None),
        clean=False,
    )
    score = score_runs([run])
    assert score.detected["semantic"] == 1 and score.pattern_right == 1
    wrong = LabelledRun(
        run.labels, run.segments, run.alarms, (None, "static", "static", None), False
    )
    assert score_runs([wrong]).pattern_right == 0
