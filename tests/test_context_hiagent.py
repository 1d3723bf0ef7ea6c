"""HiAgent: a new subgoal folds the previous one into its cached summary (exactly one call per
completed subgoal); retrieve shows the originals until the next subgoal and spends no action."""

from __future__ import annotations

from agent_fixtures import KitchenEnv
from context_fixtures import RoleScript, numbered, user_text
from pos_agent.agents.context import (
    HiAgentSettings,
    ModelCaller,
    SubgoalMemory,
    decide_with_lookups,
    hiagent_resolver,
)
from pos_agent.agents.context.hiagent import parse_retrieve
from pos_agent.transition import Transition

TASK = "heat some mug and put it in cabinet"


def memory(script: RoleScript) -> SubgoalMemory:
    return SubgoalMemory(TASK, HiAgentSettings(), ModelCaller(script.model()))


def play(memory: SubgoalMemory, plan: list[tuple[str, str]]) -> None:
    """(new subgoal or "" to continue, action) per step, each action observed as
    'You did <action>.'"""
    for step, (subgoal, action) in enumerate(plan, start=1):
        memory.context()
        memory.set_subgoal(subgoal, step)
        memory.add(Transition(step, action, f"You did {action}."))


def test_a_new_subgoal_folds_the_previous_one_with_one_cached_summary_call() -> None:
    script = RoleScript({"summarizer/summarize_subgoal": numbered("summary")})
    hi = memory(script)
    play(
        hi,
        [
            ("find the mug", "go to countertop 1"),
            ("", "take mug 1"),  # no new subgoal: the current one goes on
            ("heat the mug", "go to microwave 1"),
            ("", "heat mug 1 with microwave 1"),
            ("put it in the cabinet", "go to cabinet 1"),
        ],
    )
    assert len(script.calls) == 2  # two completed subgoals, one call each
    first = user_text(script.calls[0])
    assert "Subgoal: find the mug" in first
    assert "You did go to countertop 1." in first and "You did take mug 1." in first
    assert "heat" not in first
    for _ in range(3):
        view = hi.context()
    assert len(script.calls) == 2  # cached, not recomputed per step
    assert [g.summary for g in view.completed] == ["summary 1", "summary 2"]
    text = view.render()
    assert "1. Subgoal: find the mug\n   Summary: summary 1" in text
    assert "2. Subgoal: heat the mug\n   Summary: summary 2" in text
    assert "You did take mug 1." not in text  # folded away
    assert "Current subgoal 3: put it in the cabinet" in text
    assert "You did go to cabinet 1." in text  # the active subgoal is in full


def test_retrieve_shows_the_originals_until_the_next_subgoal_and_spends_no_action() -> None:
    script = RoleScript({"summarizer": numbered("summary")})
    hi = memory(script)
    play(hi, [("find the mug", "take mug 1"), ("heat the mug", "heat mug 1 with microwave 1")])
    play_step = 3
    env = KitchenEnv(max_steps=5)
    env.reset()
    hi.context()
    hi.set_subgoal("open the cabinet", play_step)
    answers = iter(["retrieve(1, 2)", "retrieve(7)", "open microwave 1"])
    seen: list[str] = []

    def ask(lookups: object) -> str:
        seen.append(hi.view().render())
        return next(answers)

    action, lookups = decide_with_lookups(
        ask, hiagent_resolver(hi), hi.settings.max_retrieves_per_step
    )
    assert action == "open microwave 1"
    assert [lk.ok for lk in lookups] == [True, False]
    assert "no completed subgoal 7" in lookups[1].note
    assert "You did take mug 1." not in seen[0]
    assert "You did take mug 1." in seen[1] and "You did heat mug 1 with microwave 1." in seen[1]
    assert env.steps_used == 0  # lookups never reach the environment
    env.step(action)
    hi.add(Transition(play_step, action, "You open the microwave 1."))
    assert env.steps_used == 1
    # Still shown at the next step under the same subgoal...
    hi.context()
    hi.set_subgoal("", 4)
    assert "You did take mug 1." in hi.view().render()
    # ...and folded again once the next subgoal starts.
    hi.set_subgoal("put the mug in the cabinet", 5)
    text = hi.view().render()
    assert "You did take mug 1." not in text and "1. Subgoal: find the mug" in text
    assert len(script.calls) == 3  # the retrievals cost no summary calls


def test_retrievals_are_capped_per_step() -> None:
    hi = memory(RoleScript({"summarizer": numbered("summary")}))
    play(hi, [("a", "x"), ("b", "y")])
    hi.context()
    results = [hi.retrieve([1]) for _ in range(4)]
    assert [bool(r.shown) for r in results] == [True, True, True, False]
    assert "no retrievals left" in results[3].message
    hi.context()
    assert hi.retrieve([1]).shown == (1,)
    assert parse_retrieve("Retrieve(2, 1,2)") == [1, 2] and parse_retrieve("retrieve mug") is None


def test_a_failed_summary_falls_back_to_the_last_observation_and_empty_subgoals_cost_nothing() -> (
    None
):
    script = RoleScript({"summarizer": lambda request: ""})
    hi = memory(script)
    hi.set_subgoal("look around", 1)
    hi.set_subgoal("find the mug", 1)  # replaced before any action: no call
    assert script.calls == []
    play(hi, [("", "go to sink 1"), ("heat the mug", "go to microwave 1")])
    folded = hi.completed[-1]
    assert folded.summary_failed and folded.summary == "You did go to sink 1."
    assert hi.completed[0].summary == "(no actions were taken for this subgoal)"
    assert len(script.of("summarizer")) == 1


def test_turns_before_the_first_subgoal_stay_in_full() -> None:
    hi = memory(RoleScript({"summarizer": numbered("summary")}))
    hi.add(Transition(1, "look", "You are in a kitchen."))
    assert "Before the first subgoal:" in hi.context().render()
    assert "No subgoal yet" in hi.context().render()


def test_only_an_explicit_new_subgoal_starts_one_whatever_its_wording() -> None:
    """Upstream opens a subgoal on every `Subgoal:` line and never compares wordings: here a
    non-empty `new_subgoal` is that line, an empty one continues the current subgoal."""
    script = RoleScript({"summarizer": numbered("summary")})
    hi = memory(script)
    play(hi, [("find the mug", "go to countertop 1"), ("", "take mug 1"), ("", "look")])
    assert hi.completed == [] and hi.active is not None and len(hi.active.turns) == 3
    # The same words again are still an explicit new subgoal (upstream: a new `Subgoal:` line).
    play(hi, [("find the mug", "go to sink 1")])
    assert [g.text for g in hi.completed] == ["find the mug"]
    assert hi.active.number == 2 and len(script.calls) == 1
