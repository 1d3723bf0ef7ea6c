"""The PoS loop end to end with a scripted model: trapping, recovery, sentinel, degradation."""

from __future__ import annotations

from typing import Any

from agent_fixtures import ACTIONS, Call, KitchenEnv, Script
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.trace import TraceWriter, read_events


def run(
    script: Script, tmp_path: Any, env: KitchenEnv | None = None, **config: Any
) -> tuple[Any, list[dict[str, Any]]]:
    env = env or KitchenEnv()
    with TraceWriter(tmp_path) as trace:
        agent = PosAgent(RoleModels.single(script.model()), PosConfig(**config), trace=trace)
        episode = agent.run(env)
    return episode, list(read_events(tmp_path))


def recovering_policy(call: Call) -> str:
    return "open microwave 1" if "RECOVERY" in call.user else "examine microwave 1"


def test_repeated_ineffective_action_is_trapped_static_at_first_full_window(tmp_path: Any) -> None:
    script = Script(policy=recovering_policy)
    episode, events = run(script, tmp_path)
    health = [e for e in events if e["event"] == "health"]
    assert health[0]["step"] == 8, "health starts at the K-th validated transition"
    assert health[0]["trapped"] and health[0]["pattern"] == "static"
    assert health[0]["blocked"] == "achievement"
    recovery = [e for e in events if e["event"] == "recovery"]
    assert recovery and recovery[0]["forbidden_actions"] == ["examine microwave 1"]
    policy_prompts = [c.user for c in script.of("policy")]
    assert all("RECOVERY" not in p for p in policy_prompts[:8])
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
    assert "RECOVERY" not in script.of("policy")[8].user, "hard mode alone does not prompt"
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
        return "go to countertop 1" if "RECOVERY" in call.user else "examine microwave 1"

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
    kinds = [
        (e["event"], e["step"]) for e in events if e["event"] in ("recovery", "recovery_release")
    ]
    assert kinds[0] == ("recovery", 8)
    assert ("recovery_release", 9) in kinds
    assert "RECOVERY" not in script.of("policy")[9].user


def test_alternation_is_diagnosed_as_a_cycle_with_lag_2(tmp_path: Any) -> None:
    def policy(call: Call) -> str:
        return (
            "go to sink 1"
            if "at countertop 1" in call.user or "Goal" not in call.user
            else "go to countertop 1"
        )

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
    health = [e for e in events if e["event"] == "health"]
    assert health[0]["trapped"] and health[0]["pattern"] == "cycle" and health[0]["lag"] == 2
    assert health[0]["blocked"] == "epistemic"
    recovery = next(e for e in events if e["event"] == "recovery")
    # a_7 = go to countertop 1 (even turns are countertop), a_8 = sink: the loop closes with a_7.
    assert recovery["forbidden_actions"] == ["go to countertop 1"]
    del policy


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
    assert [e["event"] for e in events if e["event"] in ("belief_commit", "belief_reject")] == [
        "belief_reject",
        "belief_reject",
    ]
    sentinel = next(e for e in events if e["event"] == "sentinel")
    assert any(f["rule"] == "contradicts_observation" for f in sentinel["rules"])
    assert len(script.of("revision")) == 2, "one revision per rejected step"
    assert all(s["attribute"] != "door" for s in episode.final_belief["states"])
    progress = [e for e in events if e["event"] == "progress"]
    assert all(p["label"] == 0 and p["accepted"] is False for p in progress)


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
    commit = next(e for e in events if e["event"] == "belief_commit")
    assert commit["revised"] is True
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
    sentinel = next(e for e in events if e["event"] == "sentinel")
    assert sentinel["audit"] == [] and sentinel["dropped"] == 1
    assert script.of("revision") == []


def test_malformed_output_from_every_role_degrades_without_ending_the_case(tmp_path: Any) -> None:
    for role in ("policy", "init", "update", "audit"):
        script = Script(malformed={role}, policy=lambda call: "examine microwave 1")
        folder = tmp_path / role
        episode, events = run(script, folder, env=KitchenEnv(max_steps=3, winning="none"))
        assert episode.steps == 3 and episode.done, role
        assert any(e["event"] == "model_failure" for e in events), role
        if role != "init":
            assert episode.degraded_steps >= 1, role


def test_budget_exhaustion_is_a_failure(tmp_path: Any) -> None:
    episode, events = run(Script(), tmp_path, env=KitchenEnv(max_steps=4))
    assert episode.steps == 4 and episode.done and not episode.success
    last = [e for e in events if e["event"] == "observation"][-1]
    assert "exhausted" in last["text"]


def test_no_trapping_ablation_never_assesses_health(tmp_path: Any) -> None:
    _, events = run(Script(), tmp_path, env=KitchenEnv(max_steps=10), variant="no_trapping")
    assert not any(e["event"] in ("health", "recovery") for e in events)


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
    assert all("Belief:" in p and "e1 mug 1" in p for p in prompts)
    assert "You arrive at sink 1." not in prompts[-1].split("Current observation")[0]


def test_raw_baseline_sees_the_whole_history(tmp_path: Any) -> None:
    script = Script(policy=lambda call: "go to sink 1")
    with TraceWriter(tmp_path) as trace:
        episode = RawAgent(script.model(), trace=trace).run(KitchenEnv(max_steps=4))
    prompts = [c.user for c in script.of("raw")]
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
    labels = [e for e in events if e["event"] == "progress"]
    assert [p["label"] for p in labels] == [0, 1, 0]
    assert [round(p["d"], 3) for p in labels] == [0.0, 0.35, 0.025]
    assert "This is a diagnosis task" in script.of("init")[0].system
    assert all("This is a diagnosis task" in c.system for c in script.of("update"))


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
    assert next(e for e in events if e["event"] == "health")["blocked"] == "epistemic"
    execution = Script(init=script.init)
    _, events = run(execution, tmp_path / "exec", env=KitchenEnv(max_steps=9, winning="none"))
    assert next(e for e in events if e["event"] == "health")["blocked"] == "achievement"
    assert "This is a diagnosis task" not in execution.of("init")[0].system


def test_unreachable_model_ends_the_case_as_an_infrastructure_error(tmp_path: Any) -> None:
    from pos_agent.bench.case import CaseSpec, run_case
    from pos_agent.llm import ModelOptions, ScriptedModel
    from pos_agent.llm.backend import BackendError

    down = ScriptedModel(
        lambda request: BackendError("transport", "connection refused", retryable=True),
        options=ModelOptions(max_retries=1),
        sleep=lambda _: None,
    )
    spec = CaseSpec(env="alfworld-mini", task="heat-mug", agent="pos", max_steps=3)
    result = run_case(spec, tmp_path, run_name="down", load=lambda _spec, _role: down)
    assert result.status == "infra_error" and not result.success
    assert "unavailable" in (result.error or "")
    assert result.tokens["belief"].calls == 1


def test_case_setting_for_the_global_audit_reaches_the_agent(tmp_path: Any) -> None:
    from pos_agent.bench.case import CaseSpec, run_case

    counts = {}
    for every in (2, 0):
        spec = CaseSpec(
            env="alfworld-mini", task="heat-mug", agent="pos", max_steps=6, global_audit_every=every
        )
        run_case(spec, tmp_path / str(every), run_name="g", load=lambda _s, _r: Script().model())
        events = read_events(tmp_path / str(every))
        counts[every] = sum(
            e.get("purpose") == "global_audit" for e in events if e["event"] == "model_call"
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
        seen |= {e["event"] for e in events}
    spec = CaseSpec(env="alfworld-mini", task="heat-mug", agent="raw", max_steps=2)
    run_case(
        spec, tmp_path / "raw", run_name="k", load=lambda _s, _r: Script(malformed={"raw"}).model()
    )
    seen |= {e["event"] for e in read_events(tmp_path / "raw")}
    assert {"episode_start", "episode_end", "recovery", "belief_reject", "model_failure"} <= seen
    assert seen <= set(EVENT_KINDS), seen - set(EVENT_KINDS)
