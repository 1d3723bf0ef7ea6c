"""The four baselines in the harness, with scripted backbones: what the policy sees, lookups that
spend no action (through the ReAct harness, not only the memory), HiAgent's subgoal field and
folds, LongHorizon-Harness rounds over the shared budget, every internal call in the ledger and
the trace under its own role, and the result's counts of actions and internal calls."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_fixtures import KitchenEnv, ToolDesk
from context_fixtures import RoleScript, run_baseline, user_text
from pos_agent.agents.base import Episode
from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.context import INTERNAL_ROLES
from pos_agent.agents.raw import RawAgent
from pos_agent.envs import Environment
from pos_agent.events import (
    ActionEvent,
    CompressionEvent,
    DegradedEvent,
    Event,
    LookupEvent,
    ModelCallEvent,
    ModelFailureEvent,
    PaceContextEvent,
    RoundAuditEvent,
    RoundPlanEvent,
    SubgoalEvent,
)
from pos_agent.llm import ModelFailure, TokenLedger
from pos_agent.llm.backend import GenerationRequest
from pos_agent.roles.limits import role_limits
from pos_agent.trace import read_events

CLEAN = "Status: complete\nIntegrity: clean\nContract audit: aligned\n\nFacts: seen.\nBlocking constraints: none"


def plan(subtask: str = "open the microwave") -> str:
    return (
        "Task state:\nCompleted: nothing\nTask contract:\n- C1: the microwave is open; verified "
        f"by: examine it\nDependencies: none\nNext: work\nSubtask: {subtask}\n"
        "Acceptance criteria: it is open\nRelated audit rounds: none\nBoundaries: none"
    )


def choices(request: GenerationRequest) -> list[str]:
    """The admissible-list enum of a decision schema."""
    assert request.schema is not None
    return list(request.schema["properties"]["action"].get("enum") or [])


def answer(action: str, **extra: Any) -> str:
    return json.dumps({"thought": "t", **extra, "action": action})


def play(
    method: str,
    script: RoleScript,
    env: Environment,
    tmp_path: Path,
    options: dict[str, Any] | None = None,
) -> tuple[Episode, TokenLedger, list[Event]]:
    family = "alfworld-mini" if isinstance(env, KitchenEnv) else "rca"
    return run_baseline(method, script, env, tmp_path, options, family_env=family)


def calls_by_role(ledger: TokenLedger) -> dict[str, int]:
    return {role: t["calls"] for role, t in ledger.by_role().items() if t["calls"]}


# -- PACE ------------------------------------------------------------------------------------------


def test_pace_glimpses_are_capped_at_three_per_step_and_spend_no_action(tmp_path: Path) -> None:
    asked: list[tuple[int, list[str], str]] = []

    def policy(request: GenerationRequest) -> str:
        offered = [c for c in choices(request) if c.startswith("glimpse(")]
        asked.append((len(asked), offered, user_text(request)))
        return answer(offered[0] if offered else "go to sink 1")

    script = RoleScript({"policy": policy, "summarizer": lambda r: "it went to a place"})
    env = KitchenEnv(max_steps=8)
    episode, ledger, events = play("pace", script, env, tmp_path)

    assert episode.steps == env.steps_used == 8, "one environment action per step, no more"
    actions = [e.action for e in events if isinstance(e, ActionEvent)]
    assert actions == ["go to sink 1"] * 8, "no glimpse ever reached the environment"
    lookups = Counter(e.step for e in events if isinstance(e, LookupEvent))
    # At step t the chunks older than the two newest are 1..t-2, each glimpsed once, and never
    # more than 3 in a step: then the ask offers no glimpse and the policy acts.
    assert lookups == {3: 1, 4: 2, 5: 3, 6: 3, 7: 3}
    assert episode.extra["lookups"] == 12
    assert calls_by_role(ledger)["policy"] == 8 + 12
    last_asks = [offered for _, offered, _ in asked if not offered]
    assert len(last_asks) == 8, "every step ends with an ask that offers no glimpse"
    # A glimpsed chunk is shown in full where it stands in the re-asked prompt.
    glimpsed = next(text for _, offered, text in asked if "Looked up at this step" in text)
    assert "glimpse(1): chunk 1 is shown in full" in glimpsed
    assert "[chunk 1] > go to sink 1\nYou arrive at sink 1." in glimpsed


def test_pace_traces_levels_summaries_and_the_scorer(tmp_path: Path) -> None:
    script = RoleScript(
        {
            "policy": lambda r: answer("go to sink 1"),
            "summarizer/summarize_detailed": lambda r: "detailed: went to the sink",
            "summarizer/summarize_brief": lambda r: "brief: sink",
        }
    )
    episode, ledger, events = play("pace", script, KitchenEnv(max_steps=4), tmp_path)
    contexts = [e for e in events if isinstance(e, PaceContextEvent)]
    assert [e.step for e in contexts] == [0, 1, 2, 3]
    last = contexts[-1]
    assert [c["id"] for c in last.chunks] == [1, 2, 3], "chronological"
    assert [c["level"] for c in last.chunks][-2:] == ["full", "full"], "the two newest in full"
    assert last.summarized == [
        {"id": 1, "detailed": "detailed: went to the sink", "brief": "brief: sink"}
    ]
    assert last.scorer == "tfidf" and episode.extra["pace_scorer"] == {"tfidf": 1}
    # Each chunk is summarized once (detailed + brief) when it leaves the recent window.
    assert calls_by_role(ledger) == {"policy": 4, "summarizer": 2}
    assert episode.extra["internal_calls"] == {"summarizer": 2}
    assert episode.extra["environment_actions"] == 4


def test_pace_offers_glimpse_as_a_pseudo_tool_and_a_mixed_answer_acts(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def policy(request: GenerationRequest) -> str:
        assert request.schema is not None
        seen.append(request.schema)
        names = re.findall(r'"const": "(\w+)"', json.dumps(request.schema))
        if "glimpse" in names and len(seen) == 5:
            return json.dumps(
                {"thought": "t", "calls": [{"tool": "glimpse", "args": {"chunk": 1}}]}
            )
        if "glimpse" in names:
            calls = [
                {"tool": "glimpse", "args": {"chunk": 1}},
                {"tool": "read_log", "args": {"service": "cart"}},
            ]
            return json.dumps({"thought": "t", "calls": calls})
        return json.dumps({"thought": "t", "calls": [{"tool": "get_alerts", "args": {}}]})

    script = RoleScript({"policy": policy, "summarizer": lambda r: "a summary"})
    env = ToolDesk(max_steps=5)
    episode, _, events = play("pace", script, env, tmp_path)
    assert not any("glimpse" in action for action in env.received), "pseudo-tool never sent"
    assert env.received[3] == '{"tool": "read_log", "args": {"service": "cart"}}', "mixed: acts"
    lookups = [e for e in events if isinstance(e, LookupEvent)]
    assert [(e.step, e.request, e.ok) for e in lookups] == [(4, "glimpse(1)", True)]
    assert episode.steps == env.steps_used == 5


# -- HiAgent ---------------------------------------------------------------------------------------


def test_hiagent_folds_each_completed_subgoal_with_one_summary_call(tmp_path: Path) -> None:
    subgoals = ["find the mug", "", "heat the mug", "", "store it"]
    schemas: list[dict[str, Any]] = []

    def policy(request: GenerationRequest) -> str:
        assert request.schema is not None
        schemas.append(request.schema)
        return answer("go to sink 1", new_subgoal=subgoals[len(schemas) - 1])

    script = RoleScript(
        {"policy": policy, "summarizer": lambda r: f"summary of {user_text(r)[:30]}"}
    )
    episode, ledger, events = play("hiagent", script, KitchenEnv(max_steps=5), tmp_path)
    assert list(schemas[0]["properties"])[:3] == ["thought", "new_subgoal", "action"]
    assert "new_subgoal" in schemas[0]["required"]  # an empty string continues the subgoal
    started = [(e.step, e.number, e.text) for e in events if isinstance(e, SubgoalEvent)]
    assert started == [(0, 1, "find the mug"), (2, 2, "heat the mug"), (4, 3, "store it")]
    folds = [e.folded for e in events if isinstance(e, SubgoalEvent) and e.folded]
    assert [f["number"] for f in folds] == [1, 2]
    assert calls_by_role(ledger) == {"policy": 5, "summarizer": 2}, "one call per completed one"
    assert [c.purpose for c in script.of("summarizer")] == ["summarize_subgoal"] * 2
    assert episode.extra["context"]["subgoals"] == 3


def test_hiagent_retrieve_shows_originals_and_costs_no_budget(tmp_path: Path) -> None:
    prompts: list[str] = []

    def policy(request: GenerationRequest) -> str:
        prompts.append(user_text(request))
        step = len([p for p in prompts if "Looked up" not in p]) - 1
        offered = [c for c in choices(request) if c.startswith("retrieve(")]
        if step == 3 and offered and "Looked up" not in prompts[-1]:
            return answer(offered[0], new_subgoal="")
        goal = {0: "find the mug", 2: "heat the mug"}.get(step, "")
        action = "go to countertop 1" if step == 0 else "go to sink 1"
        return answer(action, new_subgoal=goal)

    script = RoleScript({"policy": policy, "summarizer": lambda r: "it found nothing"})
    env = KitchenEnv(max_steps=5)
    episode, ledger, events = play("hiagent", script, env, tmp_path)
    assert episode.steps == env.steps_used == 5
    (lookup,) = [e for e in events if isinstance(e, LookupEvent)]
    assert (lookup.step, lookup.request, lookup.ok) == (3, "retrieve(1)", True)
    before, after = prompts[3], prompts[4]
    assert "You arrive at countertop 1." not in before and "Summary: it found nothing" in before
    assert "You arrive at countertop 1." in after, "the original trajectory, retrieved"
    assert calls_by_role(ledger) == {"policy": 6, "summarizer": 1}, "retrieve is no summary call"


# -- ACON ------------------------------------------------------------------------------------------


def test_acon_compresses_in_the_harness_and_the_prompt_keeps_the_last_three_turns(
    tmp_path: Path,
) -> None:
    prompts: list[str] = []

    def policy(request: GenerationRequest) -> str:
        prompts.append(user_text(request))
        return answer(
            ["go to sink 1", "go to countertop 1", "examine microwave 1"][len(prompts) % 3]
        )

    script = RoleScript({"policy": policy, "compressor": lambda r: "### REASONING\nwalked around"})
    options = {"threshold_tokens": 20, "summary_tokens": 64}
    episode, ledger, events = play("acon", script, KitchenEnv(max_steps=6), tmp_path, options)
    (first, *_) = compressions = [e for e in events if isinstance(e, CompressionEvent)]
    assert (first.first_folded, first.summary) == (1, "### REASONING\nwalked around")
    assert calls_by_role(ledger)["compressor"] == len(compressions) >= 1
    assert first.step is not None
    after = prompts[first.step]
    assert after.count("<HISTORY_SUMMARY>") == 1 and "walked around" in after
    assert after.count("[step ") == 3, "exactly the last three turns verbatim"
    assert script.of("compressor")[0].max_tokens == 64, "the suite's summary cap"
    assert episode.extra["context"]["compressions"] == len(compressions)


def test_a_failed_internal_call_degrades_the_step_and_the_episode_goes_on(tmp_path: Path) -> None:
    def compressor(request: GenerationRequest) -> str:
        raise ModelFailure("schema", "garbled")

    script = RoleScript({"policy": lambda r: answer("go to sink 1"), "compressor": compressor})
    options = {"threshold_tokens": 10, "summary_tokens": 64}
    episode, ledger, events = play("acon", script, KitchenEnv(max_steps=5), tmp_path, options)
    assert episode.steps == 5, "the episode went on"
    failures = [e for e in events if isinstance(e, ModelFailureEvent)]
    assert failures and {e.role for e in failures} == {"compressor"}
    assert episode.degraded_steps == len({e.step for e in failures})
    assert ledger.by_role()["compressor"]["failures"] == len(failures)
    assert episode.extra["context"]["failed_compressions"] == len(failures)


# -- LongHorizon-Harness -----------------------------------------------------------------------------


def test_long_horizon_rounds_spend_the_shared_budget_and_trace_plan_and_audit(
    tmp_path: Path,
) -> None:
    def decide(request: GenerationRequest) -> str:
        offered = choices(request)
        if request.role == "executor":
            done = user_text(request).count("[step ")
            return answer("go to sink 1" if done < 2 else "finish")
        assert request.role == "auditor" and "open microwave 1" not in offered, "read-only"
        done = user_text(request).split("Your queries:")[-1].count("[step ")
        return answer("examine microwave 1" if done < 1 else "finish")

    script = RoleScript(
        {
            "manager": lambda r: plan(),
            "executor/act": decide,
            "executor/report": lambda r: "I went to the sink twice.",
            "auditor/query": decide,
            "auditor/audit": lambda r: "Facts: no header here",
            "auditor/repair": lambda r: CLEAN,
        }
    )
    env = KitchenEnv(max_steps=7)
    episode, ledger, events = play("lh_harness", script, env, tmp_path)
    # Rounds of 2 executor actions + 1 auditor query until the budget of 7 is spent.
    assert episode.steps == env.steps_used == 7
    assert episode.extra["environment_actions"] == 7
    assert episode.extra["context"]["auditor_queries"] == 2
    assert episode.extra["context"]["ended_by"] in ("budget", "env_done")
    plans = [e for e in events if isinstance(e, RoundPlanEvent)]
    audits = [e for e in events if isinstance(e, RoundAuditEvent)]
    assert [p.round for p in plans] == [1, 2, 3] and plans[0].subtask == "open the microwave"
    assert [(a.round, a.status, a.repaired) for a in audits] == [
        (1, "complete", True),
        (2, "complete", True),
    ]
    assert audits[0].executor_actions == 2 and audits[0].auditor_queries == 1
    roles = calls_by_role(ledger)
    assert "policy" not in roles and set(roles) <= set(INTERNAL_ROLES)
    assert roles["auditor"] == 2 * (2 + 1 + 1), "per round: query, finish, audit, repair"
    # Round 3 spends the last action; its executor still reports, the audit never comes.
    assert episode.extra["internal_calls"] == {"manager": 3, "executor": 3, "auditor": 4}
    traced = Counter(e.role for e in events if isinstance(e, ModelCallEvent))
    assert traced == Counter(roles), "every call of the ledger is in the trace"


def test_an_unusable_long_horizon_decision_spends_a_step_as_every_other_methods_does(
    tmp_path: Path,
) -> None:
    # Every method's unusable decision spends one step on a fallback action (roles/caller.py);
    # LongHorizon's roles used to end their turn at no cost instead, so a backbone that cannot
    # answer kept its whole budget for free.
    def broken(request: GenerationRequest) -> str:
        return "no JSON here"

    lh_script = RoleScript(
        {
            "manager": lambda r: plan(),
            "executor/act": broken,
            "executor/report": lambda r: "nothing worked",
            "auditor/query": broken,
            "auditor/audit": lambda r: CLEAN,
        }
    )
    lh_env = KitchenEnv(max_steps=4, winning="none")
    episode, _, events = play("lh_harness", lh_script, lh_env, tmp_path / "lh", {"max_rounds": 3})
    raw_env = KitchenEnv(max_steps=4, winning="none")
    limits = role_limits("policy", model="openai:x", generation_tokens=512)
    raw = RawAgent(RoleScript({"policy": broken}).model(), limits=limits).run(raw_env)
    assert raw.steps == raw_env.steps_used == 4
    assert episode.steps == lh_env.steps_used == raw.steps, "the same budget, spent the same way"
    fallbacks = [e for e in events if isinstance(e, DegradedEvent) and e.fallback]
    assert len(fallbacks) == 4 and {e.role for e in fallbacks} == {"executor"}
    assert episode.degraded_steps == 4


def test_long_horizon_submits_the_final_answer_in_a_tool_environment(tmp_path: Path) -> None:
    def tool(request: GenerationRequest) -> str:
        text = json.dumps(request.schema)
        if request.purpose == "final_answer":
            assert '"submit"' in text and '"read_log"' not in text, "only the terminal tool"
            call = {"tool": "submit", "args": {"service": "payment", "fault": "network"}}
        elif request.role == "executor" and "read_log: nothing" not in user_text(request):
            call = {"tool": "read_log", "args": {"service": "payment"}}
        else:
            assert '"submit"' not in text, "no submission mid-round"
            call = {"tool": "finish", "args": {}}
        # Every role's view keeps the desk's 3 calls a turn: the schema asks for a list.
        assert request.schema is not None and "calls" in request.schema["properties"]
        return json.dumps({"thought": "t", "calls": [call]})

    done = "Task state:\nCompleted: payment has a network fault [round_001]\nNext: done"
    managers = iter([plan("read the payment log"), done])
    script = RoleScript(
        {
            "manager/plan": lambda r: next(managers),
            "manager/final_answer": tool,
            "executor/act": tool,
            "executor/report": lambda r: "payment log read",
            "auditor/query": tool,
            "auditor/audit": lambda r: CLEAN,
        }
    )
    env = ToolDesk(max_steps=6)
    episode, _, events = play("lh_harness", script, env, tmp_path)
    assert episode.success and episode.extra["context"]["accepted_done"]
    assert (
        env.received[-1] == '{"tool": "submit", "args": {"service": "payment", "fault": "network"}}'
    )
    assert episode.extra["context"]["final_action"] == env.received[-1]
    actions = [e.action for e in events if isinstance(e, ActionEvent)]
    assert actions == env.received and episode.steps == len(env.received) == 2


def test_every_baseline_records_settings_and_its_roles_are_ledger_roles() -> None:
    for method in ("acon", "pace", "hiagent", "lh_harness"):
        settings = resolve_settings("rca", method, {}, generation_tokens=4096)
        assert settings.long_horizon.generation_tokens == 4096
        _, recorded = build_baseline(
            method,
            RoleScript().model(),
            settings,
            limits=role_limits("policy", model="local", generation_tokens=4096),
            ledger=TokenLedger(),
            trace=None,
            on_step=None,
            temperature=0.0,
        )
        assert recorded["policy"]["profile"] == "compact" and recorded["baseline"]
    with pytest.raises(ValueError, match="unknown acon parameter"):
        resolve_settings("rca", "acon", {"treshold": 3}, generation_tokens=512)


def test_a_broken_setup_in_an_internal_call_ends_the_case_after_it_is_accounted(
    tmp_path: Path,
) -> None:
    def compressor(request: GenerationRequest) -> str:
        raise ModelFailure("config", "the server rejected the key")

    script = RoleScript({"policy": lambda r: answer("go to sink 1"), "compressor": compressor})
    options = {"threshold_tokens": 10, "summary_tokens": 64}
    with pytest.raises(ModelFailure, match="rejected the key"):
        play("acon", script, KitchenEnv(max_steps=6), tmp_path, options)
    events = list(read_events(tmp_path))
    failed = [e for e in events if isinstance(e, ModelFailureEvent)]
    assert [(e.role, e.kind) for e in failed] == [("compressor", "config")], "traced first"
