"""The PoS loop end to end with a scripted model: trapping, recovery, sentinel, degradation."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from agent_fixtures import ACTIONS, Call, KitchenEnv, Script
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.envs import BudgetedEnvironment
from pos_agent.events import (
    BeliefCommitEvent,
    Event,
    HealthEvent,
    ModelCallEvent,
    ObservationEvent,
    ProgressEvent,
    RecoveryEvent,
    SentinelEvent,
)
from pos_agent.trace import TraceWriter, read_events

E = TypeVar("E", bound=Event)


def run(
    script: Script, tmp_path: Any, env: BudgetedEnvironment | None = None, **config: Any
) -> tuple[Any, list[Event]]:
    env = env or KitchenEnv()
    with TraceWriter(tmp_path) as trace:
        agent = PosAgent(RoleModels.single(script.model()), PosConfig(**config), trace=trace)
        episode = agent.run(env)
    return episode, list(read_events(tmp_path))


def of(events: list[Event], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def recovering_policy(call: Call) -> str:
    return "open microwave 1" if "RECOVERY (" in call.user else "examine microwave 1"


def test_repeated_ineffective_action_is_trapped_static_at_first_full_window(tmp_path: Any) -> None:
    script = Script(policy=recovering_policy)
    episode, events = run(script, tmp_path)
    health = of(events, HealthEvent)
    assert health[0].step == 8, "health starts at the K-th validated transition"
    assert health[0].trapped and health[0].pattern == "static"
    assert health[0].blocked == "achievement"
    recovery = of(events, RecoveryEvent)
    assert recovery and recovery[0].forbidden_actions == ["examine microwave 1"]
    policy_prompts = [c.user for c in script.of("policy")]
    assert all("RECOVERY (" not in p for p in policy_prompts[:8])
    assert 'Do not repeat "examine microwave 1"' in policy_prompts[8]
    assert episode.success and episode.steps == 9
    assert (
        episode.trapped_steps == 1 and episode.patterns["static"] == 1 and episode.recoveries == 1
    )


def test_hard_mode_removes_the_suppressed_action_from_the_choices(tmp_path: Any) -> None:
    script = Script(policy=lambda call: call.choices[0] if call.choices else ACTIONS[0])
    env = KitchenEnv(winning="go to sink 1")
    episode, _ = run(script, tmp_path, env=env, recovery="hard")
    choices = [c.choices for c in script.of("policy")]
    assert all(c == ACTIONS for c in choices[:8])
    assert choices[8] is not None and "examine microwave 1" not in choices[8]
    assert "RECOVERY (" not in script.of("policy")[8].user, "hard mode alone does not prompt"
    # Still stuck after "open microwave 1": both no-progress actions in this state are now
    # suppressed, the agent walks to the countertop, then to the sink, and wins.
    assert choices[9] == ["go to countertop 1", "go to sink 1"]
    assert episode.success and episode.steps == 11


def test_soft_mode_keeps_every_choice(tmp_path: Any) -> None:
    script = Script(policy=lambda call: "examine microwave 1")
    run(script, tmp_path, env=KitchenEnv(max_steps=10))
    assert all(c.choices == ACTIONS for c in script.of("policy"))


def test_constraint_is_released_once_progress_resumes(tmp_path: Any) -> None:
    def policy(call: Call) -> str:
        return "go to countertop 1" if "RECOVERY (" in call.user else "examine microwave 1"

    def update(call: Call) -> list[dict[str, Any]]:
        if "You arrive at countertop 1" in call.user:
            return [
                {"op": "resolve_gap", "id": "g1"},
                {"op": "add_gap", "kind": "achievement", "text": "take the mug", "refs": ["mug 1"]},
            ]
        return []

    script = Script(
        policy=policy, update=update, progress=lambda call: int("countertop" in call.user)
    )
    _, events = run(script, tmp_path, env=KitchenEnv(max_steps=12))
    kinds = [(e.event, e.step) for e in events if e.event in ("recovery", "recovery_release")]
    assert kinds[0] == ("recovery", 8)
    assert ("recovery_release", 9) in kinds
    assert "RECOVERY (" not in script.of("policy")[9].user


def test_alternation_is_diagnosed_as_a_cycle_with_lag_2(tmp_path: Any) -> None:
    turn = iter(range(1000))

    def alternate(call: Call) -> str:
        return "go to countertop 1" if next(turn) % 2 == 0 else "go to sink 1"

    def update(call: Call) -> list[dict[str, Any]]:
        place = "countertop 1" if "arrive at countertop 1" in call.user else "sink 1"
        return [{"op": "upsert_state", "entity": "agent", "attribute": "location", "value": place}]

    script = Script(
        policy=alternate,
        init=lambda call: [
            {"op": "upsert_entity", "name": "agent"},
            {
                "op": "add_gap",
                "kind": "epistemic",
                "text": "where is the mug",
                "refs": ["agent"],
                "activate": True,
            },
        ],
        update=update,
    )
    _, events = run(script, tmp_path, env=KitchenEnv(max_steps=10))
    health = of(events, HealthEvent)
    assert health[0].trapped and health[0].pattern == "cycle" and health[0].lag == 2
    assert health[0].blocked == "epistemic"
    recovery = of(events, RecoveryEvent)[0]
    # a_7 = go to countertop 1 (even turns are countertop), a_8 = sink: the loop closes with a_7.
    assert recovery.forbidden_actions == ["go to countertop 1"]


def test_patch_contradicting_the_observation_is_rejected_and_previous_belief_kept(
    tmp_path: Any,
) -> None:
    def update(call: Call) -> list[dict[str, Any]]:
        step = call.observed_step
        return [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "open",
                "evidence": [step],
            }
        ]

    script = Script(update=update)
    episode, events = run(script, tmp_path, env=KitchenEnv(max_steps=2))
    assert [e.event for e in events if e.event in ("belief_commit", "belief_reject")] == [
        "belief_reject",
        "belief_reject",
    ]
    sentinel = of(events, SentinelEvent)[0]
    assert any(f["rule"] == "contradicts_observation" for f in sentinel.rules)
    assert len(script.of("revision")) == 2, "one revision per rejected step"
    assert all(s["attribute"] != "door" for s in episode.final_belief["states"])
    progress = of(events, ProgressEvent)
    assert all(p.label == 0 and p.accepted is False for p in progress)


def test_revision_that_fixes_the_patch_is_committed(tmp_path: Any) -> None:
    def update(call: Call) -> list[dict[str, Any]]:
        return [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "open",
                "evidence": [1],
            }
        ]

    def revision(call: Call) -> list[dict[str, Any]]:
        return [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "closed",
                "evidence": [1],
                "quote": "The microwave 1 is closed",
            }
        ]

    script = Script(update=update, revision=revision)
    episode, events = run(script, tmp_path, env=KitchenEnv(max_steps=1))
    commit = of(events, BeliefCommitEvent)[0]
    assert commit.revised is True
    assert [s["value"] for s in episode.final_belief["states"]] == ["closed"]


def test_unsupported_audit_issue_is_dropped_not_obeyed(tmp_path: Any) -> None:
    script = Script(
        issues=lambda call: [
            {
                "records": ["e1"],
                "kind": "external",
                "problem": "made up",
                "evidence_step": 42,
                "quote": "nope",
            }
        ]
    )
    _, events = run(script, tmp_path, env=KitchenEnv(max_steps=1))
    sentinel = of(events, SentinelEvent)[0]
    assert sentinel.audit == [] and sentinel.dropped == 1
    assert script.of("revision") == []


def test_malformed_output_from_every_role_degrades_without_ending_the_case(tmp_path: Any) -> None:
    for role in ("policy", "init", "update", "audit"):
        script = Script(malformed={role}, policy=lambda call: "examine microwave 1")
        folder = tmp_path / role
        episode, events = run(script, folder, env=KitchenEnv(max_steps=3, winning="none"))
        assert episode.steps == 3 and episode.done, role
        assert any(e.event == "model_failure" for e in events), role
        if role != "init":
            assert episode.degraded_steps >= 1, role


def test_budget_exhaustion_is_a_failure(tmp_path: Any) -> None:
    episode, events = run(Script(), tmp_path, env=KitchenEnv(max_steps=4))
    assert episode.steps == 4 and episode.done and not episode.success
    last = of(events, ObservationEvent)[-1]
    assert "exhausted" in last.text


def test_no_trapping_ablation_never_assesses_health(tmp_path: Any) -> None:
    _, events = run(Script(), tmp_path, env=KitchenEnv(max_steps=10), variant="no_trapping")
    assert not any(e.event in ("health", "recovery") for e in events)


def test_no_consistency_ablation_has_no_audit_but_judges_progress(tmp_path: Any) -> None:
    script = Script()
    run(script, tmp_path, env=KitchenEnv(max_steps=3), variant="no_consistency")
    assert script.of("audit") == [] and script.of("global_audit") == []
    assert len(script.of("progress")) == 3


def test_generic_recovery_ablation_shows_one_generic_line(tmp_path: Any) -> None:
    script = Script(policy=recovering_policy)
    run(script, tmp_path, variant="generic_recovery")
    prompt = script.of("policy")[8].user
    assert "You seem stuck" in prompt and "Do not repeat" not in prompt


def test_global_audit_runs_every_8_steps(tmp_path: Any) -> None:
    script = Script()
    run(script, tmp_path, env=KitchenEnv(max_steps=17))
    assert len(script.of("global_audit")) == 2


def test_policy_prompt_carries_the_belief_not_the_history(tmp_path: Any) -> None:
    script = Script(policy=lambda call: "go to sink 1")
    run(script, tmp_path, env=KitchenEnv(max_steps=6))
    prompts = [c.user for c in script.of("policy")]
    assert all("Current belief:" in p and "e1 mug 1" in p for p in prompts)
    assert "You arrive at sink 1." not in prompts[-1].split("Current observation")[0]


def test_raw_baseline_sees_the_whole_history(tmp_path: Any) -> None:
    script = Script(policy=lambda call: "go to sink 1")
    with TraceWriter(tmp_path) as trace:
        episode = RawAgent(script.model(), trace=trace).run(KitchenEnv(max_steps=4))
    prompts = [c.user for c in script.of("policy")]
    assert episode.steps == 4 and len(prompts) == 4
    assert prompts[-1].count("> go to sink 1") == 3
    assert len(prompts[-1]) > len(prompts[0])


class DiagnosisKitchen(KitchenEnv):
    kind = "diagnosis"


def test_diagnosis_progress_is_the_confidence_change_of_eq4(tmp_path: Any) -> None:
    confidence = {1: 0.2, 2: 0.9, 3: 0.95}

    def update(call: Call) -> list[dict[str, Any]]:
        step = call.observed_step
        return [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "hypothesis: broken",
                "value": "possible",
                "confidence": confidence[step],
                "source": "inferred",
            }
        ]

    script = Script(update=update, progress=lambda call: 1)  # the sentinel's label is ignored
    _, events = run(script, tmp_path, env=DiagnosisKitchen(max_steps=3, winning="none"))
    labels = of(events, ProgressEvent)
    # Eq. 4 over the union of both sides: the hypothesis appearing at 0.2 moves d by 0.1.
    assert [p.label for p in labels] == [0, 1, 0]
    assert [round(p.d or 0, 3) for p in labels] == [0.1, 0.35, 0.025]
    assert "This is a diagnosis task" in script.of("init")[0].user
    assert all("This is a diagnosis task" in c.user for c in script.of("update"))


def test_diagnosis_ties_block_the_epistemic_gap_first(tmp_path: Any) -> None:
    script = Script(
        init=lambda call: [
            {"op": "upsert_entity", "name": "microwave 1"},
            {
                "op": "add_gap",
                "kind": "achievement",
                "text": "name the fault",
                "refs": ["microwave 1"],
                "activate": True,
            },
            {"op": "add_gap", "kind": "epistemic", "text": "is it broken", "refs": ["microwave 1"]},
        ]
    )
    _, events = run(script, tmp_path / "diag", env=DiagnosisKitchen(max_steps=9, winning="none"))
    assert of(events, HealthEvent)[0].blocked == "epistemic"
    execution = Script(init=script.init)
    _, events = run(execution, tmp_path / "exec", env=KitchenEnv(max_steps=9, winning="none"))
    assert of(events, HealthEvent)[0].blocked == "achievement"
    assert "This is a diagnosis task" not in execution.of("init")[0].user


def test_unreachable_model_ends_the_case_as_an_infrastructure_error(tmp_path: Any) -> None:
    from pos_agent.bench.case import CaseSpec, run_case
    from pos_agent.llm import ModelOptions, ScriptedModel
    from pos_agent.llm.backend import BackendError

    down = ScriptedModel(
        lambda request: BackendError("transport", "connection refused", retryable=True),
        options=ModelOptions(max_retries=1),
        sleep=lambda _: None,
    )
    spec = CaseSpec(env="toy", task="heat-mug", agent="pos", max_steps=3)
    result = run_case(spec, tmp_path, run_name="down", load=lambda _spec, _role: down)
    assert result.status == "infra_error" and not result.success
    assert "unavailable" in (result.error or "")
    assert result.tokens["belief"].calls == 1


def test_case_setting_for_the_global_audit_reaches_the_agent(tmp_path: Any) -> None:
    from pos_agent.bench.case import CaseSpec, run_case

    counts = {}
    for every in (2, 0):
        spec = CaseSpec(
            env="toy", task="heat-mug", agent="pos", max_steps=6, global_audit_every=every
        )
        run_case(spec, tmp_path / str(every), run_name="g", load=lambda _s, _r: Script().model())
        events = read_events(tmp_path / str(every))
        counts[every] = sum(
            e.purpose == "global_audit" for e in events if isinstance(e, ModelCallEvent)
        )
    assert counts == {2: 2, 0: 0}  # after steps 2 and 4; step 6 ends the episode first


def test_every_event_the_harness_writes_is_a_declared_kind(tmp_path: Any) -> None:
    from pos_agent.bench.case import CaseSpec, run_case
    from pos_agent.trace import EVENT_KINDS

    def update(call: Call) -> list[dict[str, Any]]:
        step = call.observed_step
        return [
            {
                "op": "upsert_state",
                "entity": "microwave 1",
                "attribute": "door",
                "value": "open",
                "evidence": [step],
            }
        ]

    seen: set[str] = set()
    for name, script in (
        ("trap", Script(policy=recovering_policy)),
        ("reject", Script(update=update)),
    ):
        _, events = run(script, tmp_path / name)
        seen |= {e.event for e in events}
    spec = CaseSpec(env="toy", task="heat-mug", agent="raw", max_steps=2)
    run_case(
        spec,
        tmp_path / "raw",
        run_name="k",
        load=lambda _s, _r: Script(malformed={"policy"}).model(),
    )
    seen |= {e.event for e in read_events(tmp_path / "raw")}
    assert {"episode_start", "episode_end", "recovery", "belief_reject", "model_failure"} <= seen
    assert seen <= set(EVENT_KINDS), seen - set(EVENT_KINDS)


# -- degraded steps, named results ---------------------------------------------------------------


def test_degraded_steps_count_steps_not_calls_for_pos_and_raw(tmp_path: Any) -> None:
    # Every role fails on every call: PoS has three degraded calls a step (the policy falls
    # back, the update keeps the belief, the audit is unavailable), raw one; both count steps.
    script = Script(malformed={"policy", "update", "audit"})
    episode, events = run(script, tmp_path / "pos", env=KitchenEnv(max_steps=3, winning="none"))
    assert episode.steps == 3 and episode.degraded_steps == 3
    assert len([e for e in events if e.event == "model_failure"]) == 9
    with TraceWriter(tmp_path / "raw") as trace:
        raw = RawAgent(Script(malformed={"policy"}).model(), trace=trace)
        raw_episode = raw.run(KitchenEnv(max_steps=3, winning="none"))
    assert raw_episode.degraded_steps == 3


# -- the active gap is retained until resolved ----------------------------------------------------

TWO_GAPS: list[dict[str, Any]] = [
    {"op": "upsert_entity", "name": "mug 1"},
    {"op": "add_gap", "kind": "achievement", "text": "heat the mug", "refs": ["mug 1"],
     "activate": True},
    {"op": "add_gap", "kind": "achievement", "text": "put it away", "refs": ["mug 1"]},
    {"op": "add_gap", "kind": "epistemic", "text": "where is the mug", "refs": ["mug 1"]},
]  # fmt: skip


def test_a_switch_of_the_open_active_gap_is_refused_and_allowed_once_resolved(
    tmp_path: Any,
) -> None:
    from pos_agent.events import ActiveGapEvent

    def update(call: Call) -> list[dict[str, Any]]:
        if call.observed_step == 1:
            return [{"op": "set_active_gap", "id": "g3"}]
        if call.observed_step == 2:
            return [{"op": "resolve_gap", "id": "g1"}, {"op": "set_active_gap", "id": "g3"}]
        return []

    script = Script(init=lambda call: TWO_GAPS, update=update)
    episode, events = run(script, tmp_path, env=KitchenEnv(max_steps=4, winning="none"))
    changes = of(events, ActiveGapEvent)
    assert [(c.step, c.previous, c.active, c.requested) for c in changes] == [
        (1, "g1", "g1", "g3"),
        (2, "g1", "g3", None),
    ]
    assert (
        changes[0].reason.startswith("kept") and changes[1].reason == "chosen by the belief model"
    )
    policy = [c.user for c in script.of("policy")]
    assert "* g1 achievement: heat the mug" in policy[1], "still g1 after the refused switch"
    assert "* g3 epistemic: where is the mug" in policy[2]
    assert episode.final_belief["active_gap_id"] == "g3"


def test_without_a_choice_the_next_gap_is_epistemic_first_in_diagnosis(tmp_path: Any) -> None:
    from pos_agent.events import ActiveGapEvent

    def update(call: Call) -> list[dict[str, Any]]:
        return [{"op": "resolve_gap", "id": "g1"}] if call.observed_step == 1 else []

    for env, expected in ((DiagnosisKitchen(max_steps=2, winning="none"), "g3"),
                          (KitchenEnv(max_steps=2, winning="none"), "g2")):  # fmt: skip
        script = Script(init=lambda call: TWO_GAPS, update=update)
        _, events = run(script, tmp_path / env.kind, env=env)
        change = of(events, ActiveGapEvent)[0]
        assert (change.previous, change.active, change.reason) == (
            "g1",
            expected,
            "earliest open gap",
        )


# -- progress is judged against the gap active before the step (Δ_t) ------------------------------


def test_progress_is_judged_on_the_gap_active_before_the_step_even_when_resolved(
    tmp_path: Any,
) -> None:
    from pos_agent.sentinel import prompts

    def update(call: Call) -> list[dict[str, Any]]:
        return [{"op": "resolve_gap", "id": "g1"}] if call.observed_step == 1 else []

    shown = "Gap active before this step: g1 achievement: heat the mug (resolved by this step)"
    for variant, kind in (("pos", "audit"), ("no_consistency", "progress")):
        script = Script(init=lambda call: TWO_GAPS, update=update, progress=lambda call: 1)
        _, events = run(
            script, tmp_path / variant, env=KitchenEnv(max_steps=2, winning="none"), variant=variant
        )
        judged = script.of(kind)[0]
        assert shown in judged.user, variant
        assert prompts.PROGRESS_QUESTION in judged.user, "one progress question for both"
        progress = of(events, ProgressEvent)
        assert [(p.gap, p.label) for p in progress] == [("g1", 1), ("g2", 1)]


# -- recovery texts ---------------------------------------------------------------------------------


def test_generic_recovery_shows_no_diagnosis(tmp_path: Any) -> None:
    script = Script(policy=recovering_policy)
    _, events = run(script, tmp_path, variant="generic_recovery")
    assert of(events, HealthEvent)[0].pattern == "static", "the trace keeps the diagnosis"
    note = script.of("policy")[8].user.split("RECOVERY (", 1)[1]
    for word in ("trapped", "static", "achievement", "gap blocked"):
        assert word not in note, word


# -- tool environments: a union of the tools' own schemas, lists, the env's fallback --------------


def test_tool_decisions_follow_each_tools_own_argument_schema(tmp_path: Any) -> None:
    import json

    from agent_fixtures import FAULTS, SERVICES, ToolDesk

    calls = [
        {"tool": "read_log", "args": {"service": "checkout"}},
        {"tool": "get_alerts", "args": {}},
    ]
    script = Script(decision=lambda call: {"thought": "look first", "calls": calls})
    desk = ToolDesk(max_steps=2, max_calls=3)
    run(script, tmp_path, env=desk)
    assert desk.received[0] == json.dumps(calls), "a JSON list of calls, in the env's format"
    schema = script.of("policy")[0].schema
    assert schema is not None
    listed = schema["properties"]["calls"]
    assert (listed["minItems"], listed["maxItems"]) == (1, 3)
    members = {
        d["properties"]["tool"]["const"]: d
        for d in schema["$defs"].values()
        if "tool" in d.get("properties", {})
    }
    assert set(members) == {"get_alerts", "read_log", "submit"}
    submit = schema["$defs"][members["submit"]["properties"]["args"]["$ref"].split("/")[-1]]
    assert submit["required"] == ["service", "fault"] and submit["additionalProperties"] is False
    assert submit["properties"]["service"]["enum"] == SERVICES
    assert submit["properties"]["fault"]["enum"] == FAULTS
    assert submit["properties"]["note"] == {"type": "string", "description": "Why."}


def test_one_call_per_turn_is_sent_as_one_object_and_optional_arguments_left_out(
    tmp_path: Any,
) -> None:
    import json

    from agent_fixtures import ToolDesk

    answer = {
        "thought": "",
        "call": {"tool": "submit", "args": {"service": "payment", "fault": "network"}},
    }
    desk = ToolDesk(max_steps=2, max_calls=1)
    episode, _ = run(Script(decision=lambda call: answer), tmp_path, env=desk)
    assert desk.received == [json.dumps(answer["call"])]
    assert episode.success and episode.degraded_steps == 0


def test_a_tool_environment_falls_back_to_its_own_harmless_call_never_look(tmp_path: Any) -> None:
    from agent_fixtures import DESK_FALLBACK, ToolDesk

    desk = ToolDesk(max_steps=3)
    episode, _ = run(Script(malformed={"policy"}), tmp_path, env=desk)
    assert desk.received == [DESK_FALLBACK] * 3
    assert episode.degraded_steps == 3


def test_policy_prompts_show_every_tool_argument_with_its_allowed_values(tmp_path: Any) -> None:
    from agent_fixtures import ToolDesk

    line = "    service (string; required; one of: cart, checkout, payment): The faulty service."
    script = Script(
        decision=lambda call: {"thought": "", "calls": [{"tool": "get_alerts", "args": {}}]}
    )
    run(script, tmp_path / "pos", env=ToolDesk(max_steps=1))
    raw_script = Script(decision=script.decision)
    RawAgent(raw_script.model()).run(ToolDesk(max_steps=1))
    for prompt in (script.of("policy")[0].user, raw_script.of("policy")[0].user):
        assert line in prompt and "a list of 1 to 3 tool calls" in prompt


# -- what each role reads and may write -----------------------------------------------------------


class LongKitchen(KitchenEnv):
    """Observations of 3,000 characters that end with a marker of their step."""

    def _backend_step(self, action: str) -> Any:
        self.taken = getattr(self, "taken", 0) + 1
        result = super()._backend_step(action)
        result.text += " filler" * 430 + f" END-OF-STEP-{self.taken}"
        return result


def test_raw_gets_the_complete_trajectory_unclipped(tmp_path: Any) -> None:
    script = Script(policy=lambda call: "go to sink 1")
    RawAgent(script.model()).run(LongKitchen(max_steps=4))
    last = script.of("policy")[-1].user
    assert all(f"END-OF-STEP-{n}" in last for n in (1, 2, 3))
    assert len(last) > 3 * 3000


def test_raw_cuts_the_oldest_turns_only_to_fit_the_context_window(tmp_path: Any) -> None:
    from pos_agent.events import ContextCutEvent
    from pos_agent.roles.limits import role_limits

    script = Script(policy=lambda call: "go to sink 1")
    limits = role_limits("policy", model="scripted", generation_tokens=512)
    with TraceWriter(tmp_path) as trace:
        agent = RawAgent(script.model(), trace=trace, limits=limits, context_window=3000)
        episode = agent.run(LongKitchen(max_steps=6))
    cuts = of(list(read_events(tmp_path)), ContextCutEvent)
    assert episode.context_cuts == len(cuts) >= 1
    last = script.of("policy")[-1].user
    assert "END-OF-STEP-5" in last and "END-OF-STEP-1" not in last
    assert f"The {cuts[-1].dropped} oldest history entries are left out" in last
    assert len(last) // 3 + 64 <= 3000 - 512, "the estimate fits the window with the answer"


def test_the_belief_model_and_the_policy_see_each_observation_whole(tmp_path: Any) -> None:
    script = Script(policy=lambda call: "go to sink 1")
    run(script, tmp_path, env=LongKitchen(max_steps=2))
    assert "END-OF-STEP-1" in script.of("update")[0].user
    assert "END-OF-STEP-1" in script.of("policy")[1].user


def test_the_audit_reads_whole_observations_except_on_the_compact_profile(tmp_path: Any) -> None:
    from pos_agent.roles.limits import AgentLimits

    script = Script(policy=lambda call: "go to sink 1")
    run(script, tmp_path / "standard", env=LongKitchen(max_steps=2))
    assert "END-OF-STEP-1" in script.of("audit")[0].user
    compact = Script(policy=lambda call: "go to sink 1")
    limits = AgentLimits.of_profile("compact")
    run(compact, tmp_path / "compact", env=LongKitchen(max_steps=2), limits=limits)
    assert "END-OF-STEP-1" not in compact.of("audit")[0].user, "400 characters on compact"


def test_roles_get_the_paper_budget_and_unbounded_schemas_by_default(tmp_path: Any) -> None:
    script = Script()
    run(script, tmp_path, env=KitchenEnv(max_steps=2))
    assert {c.max_tokens for c in script.calls} == {512}, "paper App. D.1: 512 on ALFWorld"
    update = script.of("update")[0].schema
    assert update is not None and "maxItems" not in update["properties"]["ops"]
    assert "maxLength" not in str(update) and "maxItems" not in str(update)


def test_the_compact_profile_bounds_schemas_and_budgets(tmp_path: Any) -> None:
    from pos_agent.roles.limits import AgentLimits

    script = Script()
    run(script, tmp_path, env=KitchenEnv(max_steps=2), limits=AgentLimits.of_profile("compact"))
    budgets = {c.kind: c.max_tokens for c in script.calls}
    assert budgets == {"init": 768, "policy": 128, "update": 768, "audit": 512}
    init, update = script.of("init")[0].schema, script.of("update")[0].schema
    assert init and update
    assert init["properties"]["ops"]["maxItems"] == 12, "the initial belief may be larger"
    assert update["properties"]["ops"]["maxItems"] == 6
    assert script.of("policy")[0].schema["properties"]["thought"]["maxLength"] == 60  # type: ignore[index]


# -- health projects every past world on the current active gap -----------------------------------


def _walking_window(gap_ops: list[dict[str, Any]]) -> tuple[list[Any], Any]:
    """Eight validated steps of an agent that moves every step (progress 1 each time), with the
    goal gap g1 open throughout; `gap_ops` are applied at the last step."""
    from pos_agent.agents.pos.agent import Validated
    from pos_agent.belief import Belief, apply_patch, world_keys

    belief, _ = apply_patch(
        Belief(goal="heat the mug"),
        [
            {"op": "upsert_entity", "name": "agent"},
            {"op": "add_gap", "kind": "achievement", "text": "heat the mug", "activate": True},
        ],
    )
    window = []
    for step in range(1, 9):
        ops: list[dict[str, Any]] = [
            {
                "op": "upsert_state",
                "entity": "agent",
                "attribute": "location",
                "value": f"room {step}",
            }
        ]
        if step == 8:
            ops += gap_ops
        belief, rejected = apply_patch(belief.at_step(step), ops)
        assert not rejected
        window.append(Validated(belief, world_keys(belief), 1))
    return window, belief


def test_a_new_gap_projects_every_past_world_and_progress_stays_healthy(tmp_path: Any) -> None:
    from pos_agent.health import HealthConfig

    # A new epistemic gap about the agent, activated at step 8: with its projection looked up in
    # each past belief (where it did not exist), steps 1-7 projected to nothing and "recurred":
    # R = 6/7 = 0.857, H = 0.14, trapped. Projected with the current gap, every step differs.
    window, belief = _walking_window(
        [
            {
                "op": "add_gap",
                "kind": "epistemic",
                "text": "is it here",
                "refs": ["agent"],
                "activate": True,
            }
        ]
    )
    agent = PosAgent(RoleModels.single(Script().model()))
    report = agent.assess(window, belief, HealthConfig())
    assert belief.active_gap_id == "g2"
    assert (report.recurrence, report.health, report.trapped) == (0.0, 1.0, False)


def test_a_gap_whose_words_match_nothing_never_recurs(tmp_path: Any) -> None:
    from pos_agent.health import HealthConfig

    window, belief = _walking_window(
        [{"op": "add_gap", "kind": "epistemic", "text": "zebra quartz", "activate": True}]
    )
    agent = PosAgent(RoleModels.single(Script().model()))
    report = agent.assess(window, belief, HealthConfig())
    assert (report.recurrence, report.lag, report.trapped) == (0.0, None, False)


def test_a_real_models_prompts_show_the_whole_belief(tmp_path: Any) -> None:
    # The 40-entity cap of the compact profile once applied to every model.
    many = [{"op": "upsert_entity", "name": f"object {i}"} for i in range(45)]
    gap = {"op": "add_gap", "kind": "achievement", "text": "heat the mug", "activate": True}
    script = Script(init=lambda call: [*many, gap])
    run(script, tmp_path, env=KitchenEnv(max_steps=1))
    for prompt in (script.of("policy")[0].user, script.of("update")[0].user):
        assert "- e45 object 44" in prompt and "more entities not shown" not in prompt


class BigRoom(KitchenEnv):
    """A room with 90 admissible actions, listed as the environment gives them."""

    BIG = [f"take object {i} from shelf 1" for i in range(80)] + [
        f"put mug 1 in/on shelf {i}" for i in range(10)
    ]

    def _backend_reset(self) -> Any:
        result = super()._backend_reset()
        result.admissible_actions = list(self.BIG)
        return result


def test_real_models_see_every_admissible_action_in_order_compact_the_first_60(
    tmp_path: Any,
) -> None:
    from pos_agent.roles.limits import AgentLimits

    script = Script(policy=lambda call: BigRoom.BIG[0])
    run(script, tmp_path / "standard", env=BigRoom(max_steps=1))
    prompt = script.of("policy")[0].user
    listed = [line[2:] for line in prompt.split("Admissible actions:\n")[1].splitlines()]
    assert listed == BigRoom.BIG, "all 90, in the environment's order"
    compact = Script(policy=lambda call: BigRoom.BIG[0])
    limits = AgentLimits.of_profile("compact")
    run(compact, tmp_path / "compact", env=BigRoom(max_steps=1), limits=limits)
    prompt = compact.of("policy")[0].user
    assert "put mug 1 in/on shelf 0" not in prompt and "(+30 more)" in prompt


def test_the_belief_prompt_asks_for_few_ops_only_on_the_compact_profile(tmp_path: Any) -> None:
    from pos_agent.roles.limits import AgentLimits

    script = Script()
    run(script, tmp_path / "standard", env=KitchenEnv(max_steps=1))
    systems = [c.user for c in script.calls if c.kind in ("init", "update")]
    assert systems and all("few ops" not in s for s in systems)
    compact = Script()
    limits = AgentLimits.of_profile("compact")
    run(compact, tmp_path / "compact", env=KitchenEnv(max_steps=1), limits=limits)
    systems = [c.user for c in compact.calls if c.kind in ("init", "update")]
    assert systems and all("goal. Return few ops." in s for s in systems)


# -- the sentinel as the paper describes it (issue 22, items 10, 13, 14) ---------------------------


def test_the_audit_asks_for_evidential_support_not_only_contradictions(tmp_path: Any) -> None:
    script = Script()
    run(script, tmp_path, env=KitchenEnv(max_steps=1))
    system = script.of("audit")[0].user
    assert "Do not invent problems" not in system
    assert "an unsupported inference" in system and "You put the mug 1 in/on the" in system
    assert "Plans and intentions" in system


def test_an_unsupported_observed_state_goes_to_the_revision_numbered(tmp_path: Any) -> None:
    def update(call: Call) -> list[dict[str, Any]]:
        return [
            {
                "op": "upsert_state",
                "entity": "mug 1",
                "attribute": "temperature",
                "value": "hot",
                "source": "observed",
                "evidence": [call.observed_step],
            }
        ]

    script = Script(update=update, policy=lambda call: "go to countertop 1")
    _, events = run(script, tmp_path, env=KitchenEnv(max_steps=1))
    assert [f["rule"] for f in of(events, SentinelEvent)[0].rules] == ["unsupported_observation"]
    assert "\n1. [unsupported_observation] s1 records mug 1" in script.of("revision")[0].user


def _contested_run(tmp_path: Any, quote: str) -> tuple[Script, list[Event]]:
    door = {
        "op": "upsert_state",
        "entity": "microwave 1",
        "attribute": "door",
        "value": "closed",
        "evidence": [1],
        "quote": "The microwave 1 is closed",
    }
    issue = {
        "records": ["s1"],
        "kind": "external",
        "problem": "the door was opened",
        "evidence_step": 1,
        "quote": "Nothing happens",
    }
    script = Script(
        update=lambda call: [door],
        issues=lambda call: [issue],
        answers=lambda call: [{"finding": 1, "evidence_step": 1, "quote": quote}],
    )
    _, events = run(script, tmp_path, env=KitchenEnv(max_steps=1))
    return script, events


def test_a_finding_answered_with_evidence_that_holds_is_dropped_at_the_recheck(
    tmp_path: Any,
) -> None:
    script, events = _contested_run(tmp_path, "The microwave 1 is closed.")
    first, recheck = of(events, SentinelEvent)
    assert len(first.audit) == 1 and recheck.audit == [] and recheck.answered == 1
    assert of(events, BeliefCommitEvent)[0].revised is True
    assert '"answers"' in json.dumps(script.of("revision")[0].schema)
    assert "answered these findings with evidence" in script.of("audit")[1].user


def test_an_answer_whose_quote_is_not_in_the_observation_does_not_count(tmp_path: Any) -> None:
    _, events = _contested_run(tmp_path, "The microwave 1 is wide open.")
    assert of(events, SentinelEvent)[1].answered == 0
    assert [e.event for e in events if e.event in ("belief_commit", "belief_reject")] == [
        "belief_reject"
    ]


def _moving_mug(call: Call) -> list[dict[str, Any]]:
    step = call.observed_step
    if step == 3:
        return [{"op": "remove_state", "id": "s1"}]
    place = {1: "countertop 1", 2: "sink 1"}.get(step, "cabinet 1")
    return [{"op": "upsert_state", "entity": "mug 1", "attribute": "location", "value": place}]


def test_the_audit_sees_the_old_values_and_the_removed_records(tmp_path: Any) -> None:
    script = Script(update=_moving_mug)
    run(script, tmp_path, env=KitchenEnv(max_steps=3))
    audits = [c.user for c in script.of("audit")]
    assert "Before this step (B_t), the changed records were:\n- s1 (new)" in audits[0]
    assert "location=sink 1" in audits[1].split("Before this step")[0]
    assert "- s1 mug 1 location=countertop 1 (inferred 0.50)" in audits[1]
    assert "Removed by this step:\n- s1 mug 1 location=sink 1" in audits[2]


def test_no_consistency_judges_progress_on_the_same_inputs_as_full_pos(tmp_path: Any) -> None:
    full, ablated = Script(update=_moving_mug), Script(update=_moving_mug)
    run(full, tmp_path / "pos", env=KitchenEnv(max_steps=6))
    run(ablated, tmp_path / "cv", env=KitchenEnv(max_steps=6), variant="no_consistency")

    # What each reads after its own instructions (the records and transitions).
    def view(text: str) -> str:
        return text[text.index("Changed records") :]

    audits = [view(c.user) for c in full.of("audit")]
    judged = [view(c.user) for c in ablated.of("progress")]
    assert len(judged) == 6 and judged == audits, "the same records and the last 4 transitions"
    recent = judged[5].split("Recent transitions:\n")[1]
    assert recent.startswith("step 2: examine microwave 1 -> step 3:") and "-> step 6:" in recent


def test_no_consistency_checks_only_the_schema(tmp_path: Any) -> None:
    from pos_agent.events import BeliefPatchEvent

    patch: list[dict[str, Any]] = [
        {"op": "upsert_state", "entity": "mug 1", "attribute": "place", "value": "sink 1"},
        {"op": "upsert_state", "entity": "mug 1", "attribute": "place", "value": "cabinet 1"},
        {"op": "upsert_relation", "src": "toaster 1", "type": "on", "dst": "countertop 1"},
        {"op": "upsert_state", "entity": "mug 1", "attribute": "t", "value": "x", "evidence": [9]},
    ]
    runs = {}
    for variant in ("pos", "no_consistency"):
        script = Script(update=lambda call: patch)
        episode, events = run(
            script, tmp_path / variant, env=KitchenEnv(max_steps=1), variant=variant
        )
        runs[variant] = (episode, of(events, BeliefPatchEvent)[0])
    assert len(runs["pos"][1].rejected) == 3, "slot conflict, unknown ends, evidence step 9"
    episode, event = runs["no_consistency"]
    assert event.rejected == []
    names = {e["name"] for e in episode.final_belief["entities"]}
    assert {"toaster 1", "countertop 1"} <= names
    values = {s["attribute"]: s for s in episode.final_belief["states"]}
    assert values["place"]["value"] == "cabinet 1" and values["t"]["evidence"] == [9]


def test_no_consistency_makes_no_progress_call_on_diagnosis_tasks(tmp_path: Any) -> None:
    # Eq. 4 labels a diagnosis step; a judge call whose answer is thrown away would only add
    # sentinel tokens to -CV's Table 2 row (the authors' code makes no such call).
    script = Script(progress=lambda call: 1)
    _, events = run(
        script,
        tmp_path,
        env=DiagnosisKitchen(max_steps=3, winning="none"),
        variant="no_consistency",
    )
    assert script.of("progress") == [] and script.of("audit") == []
    sentinel_calls = [e for e in of(events, ModelCallEvent) if e.role == "sentinel"]
    assert sentinel_calls == []
    assert [p.label for p in of(events, ProgressEvent)] == [0, 0, 0], "Eq. 4 gives the label"
