"""A truncated internal answer (cut at its output cap) is asked once more with a larger budget
and otherwise is a failed call with the method's usual fallback, never accepted: ACON's summary,
the LongHorizon manager's plan, HiAgent's and PACE's summaries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent_fixtures import KitchenEnv
from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.context import (
    AconMemory,
    AconSettings,
    HiAgentSettings,
    LongHorizonSettings,
    ModelCaller,
    SubgoalMemory,
)
from pos_agent.agents.context.calls import TRUNCATION_RETRY_FACTOR, cut_at_cap
from pos_agent.agents.context.longhorizon import DecisionRequest, LongHorizonHarness
from pos_agent.llm import (
    Completion,
    Message,
    ModelFailure,
    ScriptedModel,
    ScriptedReply,
    TokenLedger,
    Usage,
)
from pos_agent.llm.backend import GenerationRequest
from pos_agent.roles.limits import role_limits
from pos_agent.transition import Transition

CUT = "### REASONING\nThe agent opened the drawer and found"


def cut_then(
    *answers: str, cuts: int = 1
) -> tuple[Callable[[GenerationRequest], ScriptedReply], list[GenerationRequest]]:
    """The first `cuts` replies are cut at their cap; then `answers` in order."""
    seen: list[GenerationRequest] = []
    queue = list(answers)

    def respond(request: GenerationRequest) -> ScriptedReply:
        seen.append(request)
        if len(seen) <= cuts:
            return ScriptedReply(CUT, truncated=True, completion_tokens=request.max_tokens)
        return ScriptedReply(queue.pop(0))

    return respond, seen


def test_a_cut_answer_is_asked_again_with_a_larger_budget_and_the_cut_one_is_a_failure() -> None:
    respond, seen = cut_then("a whole summary")
    caller = ModelCaller(ScriptedModel(respond))
    text = caller.text("compressor", "compress", [Message("user", "summarize")], max_tokens=64)
    assert text == "a whole summary"
    assert [r.max_tokens for r in seen] == [64, 64 * TRUNCATION_RETRY_FACTOR]
    kinds = [c.outcome.kind if isinstance(c.outcome, ModelFailure) else "ok" for c in caller.calls]
    assert kinds == ["truncated", "ok"]
    assert caller.calls[0].completion_tokens == 64  # the cut call's tokens still count


def test_cut_twice_the_call_has_failed() -> None:
    respond, seen = cut_then(cuts=2)
    caller = ModelCaller(ScriptedModel(respond))
    assert caller.text("summarizer", "x", [Message("user", "go")], max_tokens=32) is None
    assert len(seen) == 2
    assert [c.ok for c in caller.calls] == [False, False]


def test_a_replayed_answer_that_spent_its_whole_cap_counts_as_cut() -> None:
    def completion(tokens: int, *, cached: bool) -> Completion:
        return Completion("x", None, Usage(10, tokens), 0.0, cached, 0, "m")

    assert cut_at_cap(completion(64, cached=True), 64)
    assert not cut_at_cap(completion(63, cached=True), 64)
    assert not cut_at_cap(completion(64, cached=False), 64)  # fresh: the backend's flag decides


def acon_turn(step: int) -> Transition:
    return Transition(step, f"action {step}", f"observation {step}: " + "x" * 200)


def test_acon_never_replaces_its_summary_with_a_cut_one() -> None:
    respond, _ = cut_then(cuts=2)
    settings = AconSettings(threshold_tokens=50, summary_tokens=64)
    acon = AconMemory("task", settings, ModelCaller(ScriptedModel(respond)))
    for step in range(1, 6):
        acon.add(acon_turn(step))
    view = acon.context(5)
    assert view.compression is not None and not view.compression.ok
    assert acon.summary is None  # not the cut text
    assert len(acon.unfolded) == 5  # the turns are kept, to be folded at the next trigger


def test_acon_takes_the_retried_whole_summary() -> None:
    respond, seen = cut_then("whole summary")
    settings = AconSettings(threshold_tokens=50, summary_tokens=64)
    acon = AconMemory("task", settings, ModelCaller(ScriptedModel(respond)))
    for step in range(1, 6):
        acon.add(acon_turn(step))
    assert acon.context(5).summary == "whole summary"
    assert seen[-1].max_tokens == 128


def test_hiagent_falls_back_instead_of_keeping_a_cut_summary() -> None:
    respond, _ = cut_then(cuts=2)
    memory = SubgoalMemory(
        "task", HiAgentSettings(summary_tokens=32), ModelCaller(ScriptedModel(respond))
    )
    memory.set_subgoal("find the key", 0)
    memory.add(Transition(1, "open drawer 1", "You open the drawer 1. You see a key 1."))
    memory.set_subgoal("open the chest", 1)
    folded = memory.completed[0]
    assert folded.summary_failed and CUT not in (folded.summary or "")
    assert "You see a key 1" in (folded.summary or "")


def test_a_cut_manager_plan_is_no_plan_and_the_round_takes_no_action() -> None:
    work = (
        "Task state:\nCompleted: nothing\nTask contract:\n- C1: open; verified by: look\n"
        "Dependencies: none\nNext: work\nSubtask: open the microwave\nBoundaries: none"
    )

    def respond(request: GenerationRequest) -> ScriptedReply:
        if request.role == "manager":
            # The plan is cut before its route line at both budgets.
            return ScriptedReply(work.split("Next:")[0], truncated=True)
        raise AssertionError(f"unexpected {request.role}")

    decisions: list[DecisionRequest] = []

    def decide(request: DecisionRequest) -> str:
        decisions.append(request)
        return "finish"

    harness = LongHorizonHarness(
        LongHorizonSettings(max_rounds=2),
        ModelCaller(ScriptedModel(respond)),
        decide,
        family="alfworld",
    )
    outcome = harness.run(KitchenEnv(max_steps=10))
    assert [r.route for r in outcome.rounds] == ["invalid", "invalid"]
    assert all(r.manager_text is None for r in outcome.rounds)
    assert decisions == [] and outcome.actions == 0


def test_pace_never_keeps_a_cut_chunk_summary() -> None:
    from pos_agent.agents.context import LexicalScorer, PaceMemory, PaceSettings

    respond, _ = cut_then(cuts=100)
    caller = ModelCaller(ScriptedModel(respond))
    memory = PaceMemory("task", PaceSettings(), caller, LexicalScorer(), step_budget=10)
    for step in range(1, 5):
        memory.add(Transition(step, f"go to place {step}", f"You arrive at place {step}."))
        memory.context(step)
    summarized = [c for c in memory.chunks.values() if c.detailed is not None]
    assert summarized, "the aged chunks were summarized"
    for chunk in summarized:
        assert CUT not in (chunk.detailed or "") and CUT not in (chunk.brief or "")
        assert (chunk.detailed or "").startswith("(no summary; start of the observation)")
        assert chunk.summary_failures == 2


# -- every agent-side call within the case's generation length, retries included ------------------


def test_a_cut_answer_is_retried_only_up_to_the_generation_cap() -> None:
    respond, seen = cut_then("whole")
    caller = ModelCaller(ScriptedModel(respond), cap=512)
    assert caller.text("compressor", "compress", [Message("user", "s")], max_tokens=384) == "whole"
    assert [r.max_tokens for r in seen] == [384, 512], "the retry is cut to the cap"
    respond, seen = cut_then(cuts=2)
    caller = ModelCaller(ScriptedModel(respond), cap=512)
    assert caller.text("manager", "plan", [Message("user", "p")], max_tokens=512) is None
    assert [r.max_tokens for r in seen] == [512], "no larger budget is left: not asked again"
    assert [c.ok for c in caller.calls] == [False]
    assert "the call has failed" in str(caller.calls[0].outcome)


def test_no_baseline_call_asks_for_more_than_the_papers_512_tokens_on_alfworld(
    tmp_path: Path,
) -> None:
    asked: list[int] = []

    def respond(request: GenerationRequest) -> ScriptedReply:
        asked.append(request.max_tokens)
        if request.role == "manager":
            return ScriptedReply("Task state: ...", truncated=True)
        raise AssertionError(f"unexpected {request.role}/{request.purpose}")

    settings = resolve_settings(
        "alfworld-mini", "lh_harness", {"max_rounds": 2}, generation_tokens=512
    )
    agent, _ = build_baseline(
        "lh_harness",
        ScriptedModel(respond),
        settings,
        limits=role_limits("policy", model="openai:x", generation_tokens=512),
        ledger=TokenLedger(),
        trace=None,
        on_step=None,
        temperature=0.0,
    )
    agent.run(KitchenEnv(max_steps=5))
    assert asked == [512, 512], "one call per round, each within the paper's 512 (not 1,024)"


def test_the_harness_caps_a_baselines_own_calls_at_the_cases_generation_length(
    tmp_path: Path,
) -> None:
    from pos_agent.bench.agent_factory import build_agent
    from pos_agent.bench.spec import CaseSpec
    from pos_agent.trace import TraceWriter

    asked: list[int] = []

    def respond(request: GenerationRequest) -> ScriptedReply:
        asked.append(request.max_tokens)
        return ScriptedReply("Task state: ...", truncated=True)

    model = ScriptedModel(respond, spec="openai:scripted")
    spec = CaseSpec(
        env="toy",
        task="heat-mug",
        agent="lh_harness",
        model="openai:scripted",
        generation_tokens=96,
        method_options={"max_rounds": 1},
    )
    env = KitchenEnv(max_steps=3)
    with TraceWriter(tmp_path) as trace:
        agent, settings = build_agent(
            spec, env, lambda n, r: model, TokenLedger(), trace, None, None
        )
        agent.run(env)
    assert settings["generation_tokens"] == 96 and asked == [96], "the suite's cap, no retry"
