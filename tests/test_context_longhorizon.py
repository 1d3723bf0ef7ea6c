"""LongHorizon-Harness: the audit header (parsed, downgraded, repaired once), `done` only after a
complete, clean and aligned audit, auditor queries that spend the action budget, roles kept to
their actions, and the final answer submitted from verified state."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from agent_fixtures import KitchenEnv
from context_fixtures import RoleScript, user_text
from pos_agent.agents.context import LongHorizonSettings, ModelCaller
from pos_agent.agents.context.longhorizon import (
    DecisionRequest,
    LongHorizonHarness,
    allowed,
    auditor_view,
    executor_view,
    final_view,
    parse_audit_report,
    parse_header,
    parse_manager_output,
    role_fallback,
)
from pos_agent.envs import BackendResult
from pos_agent.envs.tools import (
    ToolCall,
    ToolCallError,
    ToolEnvironment,
    ToolSpec,
    object_schema,
    parse_tool_calls,
    string_param,
)
from pos_agent.llm.backend import GenerationRequest

CLEAN = "Status: complete\nIntegrity: clean\nContract audit: aligned\n\nFacts: verified.\nBlocking constraints: none"
OPEN = "Status: incomplete\nIntegrity: clean\nContract audit: aligned\n\nFacts: not yet.\nBlocking constraints: C1"


def work(subtask: str = "open the microwave", related: str = "") -> str:
    return (
        "Task state:\nCompleted: nothing yet\nTask contract:\n- C1: the microwave is open; verified "
        f"by: examine it\nDependencies: none\nNext: work\nSubtask: {subtask}\n"
        f"Acceptance criteria: the microwave is open\nRelated audit rounds: {related}\nBoundaries: none"
    )


DONE = "Task state:\nCompleted: the microwave is open [round_002]\nNext: done"


# -- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        CLEAN,
        "**Status: complete**\n**Integrity: clean**\n**Contract audit: aligned**",
        "\n  status : COMPLETE\nIntegrity\uff1aclean\n- Contract audit: Aligned\n",
        "# Status: complete\n## Integrity: clean\nContract audit: aligned",
    ],
)
def test_a_valid_header_is_read_in_its_usual_variants(text: str) -> None:
    header = parse_header(text)
    assert header is not None
    assert (header.status, header.integrity, header.contract) == ("complete", "clean", "aligned")


@pytest.mark.parametrize(
    "text",
    [
        "The subtask is done.\nStatus: complete\nIntegrity: clean\nContract audit: aligned",
        "Status: complete\nIntegrity: clean",
        "Integrity: clean\nStatus: complete\nContract audit: aligned",
        "Status: done\nIntegrity: clean\nContract audit: aligned",
        "Status: complete\nIntegrity: fine\nContract audit: aligned",
        "",
    ],
)
def test_a_malformed_header_is_none_and_reads_as_blocked(text: str) -> None:
    assert parse_header(text) is None
    report = parse_audit_report(text, 4)
    assert (report.status, report.integrity, report.contract) == ("blocked", "suspect", "unknown")
    assert not report.header_valid and not report.accepts_completion


def test_complete_is_downgraded_by_a_violation_an_unaligned_contract_or_blocking_constraints() -> (
    None
):
    assert parse_audit_report(CLEAN, 1).accepts_completion
    violation = parse_audit_report(CLEAN.replace("clean", "violation"), 1)
    assert violation.status == "incomplete" and violation.downgraded == "integrity violation"
    revise = parse_audit_report(CLEAN.replace("aligned", "needs_revision"), 1)
    assert revise.status == "incomplete" and "needs_revision" in (revise.downgraded or "")
    listed = CLEAN.replace(
        "Blocking constraints: none", "Blocking constraints:\n- C2: not met\n\nState update: x"
    )
    blocked = parse_audit_report(listed, 1)
    assert blocked.status == "incomplete" and blocked.blocking == ("C2: not met",)
    for none in ("none", "None.", "n/a", "No blocking constraints."):
        text = CLEAN.replace("Blocking constraints: none", f"Blocking constraints: {none}")
        assert parse_audit_report(text, 1).accepts_completion, none
    suspect = parse_audit_report(CLEAN.replace("clean", "suspect"), 1)
    assert suspect.status == "complete" and not suspect.accepts_completion


def test_the_manager_plan_is_split_into_its_sections() -> None:
    plan = parse_manager_output(work("heat the mug", "round_002, Round_1 and round_002"))
    assert plan.route == "work" and plan.subtask == "heat the mug"
    assert plan.related == (1, 2)
    assert plan.contract.startswith("- C1: the microwave is open")
    assert "Related audit rounds: round_001, round_002" in plan.subtask_contract()
    assert parse_manager_output("**Next: Done.**").route == "done"
    assert parse_manager_output("Task state:\nnothing").route == "invalid"
    assert parse_manager_output("Next: work").route == "invalid"  # work without a subtask
    assert parse_manager_output("Next: later").route == "invalid"


# -- the rounds ---------------------------------------------------------------------------------


@dataclass
class Decider:
    """Scripted policy decisions per role; records each request."""

    executor: list[str] = field(default_factory=list)
    auditor: list[str] = field(default_factory=list)
    final: Callable[[DecisionRequest], str] = lambda request: "finish"
    requests: list[DecisionRequest] = field(default_factory=list)

    def __call__(self, request: DecisionRequest) -> str | None:
        self.requests.append(request)
        if request.role == "manager":
            return self.final(request)
        queue = self.executor if request.role == "executor" else self.auditor
        return queue.pop(0) if queue else "finish"

    def of(self, role: str) -> list[DecisionRequest]:
        return [r for r in self.requests if r.role == role]


def replies(*texts: str) -> Callable[[GenerationRequest], str]:
    queue = list(texts)
    return lambda request: queue.pop(0)


def harness(script: RoleScript, decider: Decider, **settings: int) -> LongHorizonHarness:
    return LongHorizonHarness(
        LongHorizonSettings(**settings),
        ModelCaller(script.model()),
        decider,
        family="alfworld",
    )


def test_done_is_refused_until_the_latest_audit_is_complete_clean_and_aligned() -> None:
    script = RoleScript(
        {
            "manager": replies(DONE, work(), DONE, work(related="round_002"), DONE),
            "executor/report": lambda request: "I opened the microwave.",
            "auditor/audit": replies(OPEN, CLEAN),
        }
    )
    decider = Decider(executor=["go to countertop 1", "finish", "go to sink 1"])
    env = KitchenEnv(max_steps=20)
    outcome = harness(script, decider).run(env)

    assert [r.route for r in outcome.rounds] == ["done", "work", "done", "work", "done"]
    assert [r.refused_done for r in outcome.rounds] == [True, False, True, False, False]
    assert outcome.accepted_done and outcome.ended_by == "done"
    managers = [user_text(r) for r in script.of("manager")]
    assert "'done' refused: no audit has been made yet" in managers[1]
    assert "'done' refused: the latest audit (round_002) is status=incomplete" in managers[3]
    assert "refused" not in managers[4]
    # The manager keeps every audit report; the executor of round 4 gets the one it cited.
    assert "[round_002] status=incomplete" in managers[4]
    assert "[round_004] status=complete" in managers[4]
    assert "[round_002]" in decider.of("executor")[-1].context


def test_a_malformed_header_gets_exactly_one_repair_call() -> None:
    script = RoleScript(
        {
            "manager": replies(work(), work(), "Next: blocked"),
            "executor": lambda request: "done",
            "auditor/audit": replies("Looks finished to me.", "Also fine."),
            "auditor/repair": replies(CLEAN, "Still no header."),
        }
    )
    outcome = harness(script, Decider()).run(KitchenEnv(max_steps=20))
    first, second = outcome.rounds[0], outcome.rounds[1]
    assert first.repaired and first.audit is not None and first.audit.accepts_completion
    assert second.repaired and second.audit is not None and second.audit.status == "blocked"
    assert len(script.of("auditor", "repair")) == 2  # one per malformed report, never two
    assert "Looks finished to me." in user_text(script.of("auditor", "repair")[0])
    assert outcome.ended_by == "blocked"


def test_auditor_queries_spend_the_same_action_budget() -> None:
    script = RoleScript(
        {
            "manager": replies(work(), work()),
            "executor": lambda request: "done",
            "auditor/audit": lambda request: OPEN,
        }
    )
    decider = Decider(
        executor=["go to countertop 1", "finish", "go to sink 1", "go to sink 1", "go to sink 1"],
        auditor=["examine microwave 1", "examine microwave 1", "finish"],
    )
    env = KitchenEnv(max_steps=5)
    outcome = harness(script, decider, auditor_queries=3).run(env)
    assert outcome.auditor_queries == 2
    # Round 1: one executor action and two audit queries; round 2 has the 2 actions left.
    managers = [user_text(r) for r in script.of("manager")]
    assert "5 environment actions are left" in managers[0]
    assert "2 environment actions are left" in managers[1]
    assert len(outcome.rounds[1].executor_turns) == 2
    assert outcome.actions == env.steps_used == 5
    assert outcome.ended_by == "env_done" and outcome.observation.info.get("budget_exhausted")
    assert len(managers) == 2


def test_each_role_is_offered_only_its_actions() -> None:
    env = ServiceEnv()
    first = env.reset()
    names = lambda view: [t["name"] for t in view.tools or []]  # noqa: E731
    assert names(executor_view(first)) == ["check", "restart", "finish"]
    assert names(auditor_view(first, "rca")) == ["check", "finish"]
    assert names(final_view(first)) == ["submit_root_cause"]
    kitchen = KitchenEnv()
    view = auditor_view(kitchen.reset(), "alfworld")
    assert view.admissible_actions == ["examine microwave 1", "finish"]


SPECS = [
    ToolSpec(
        "check", "Status of a service.", object_schema(["service"], service=string_param("name"))
    ),
    ToolSpec(
        "restart", "Restart a service.", object_schema(["service"], service=string_param("name"))
    ),
    ToolSpec(
        "submit_root_cause",
        "Submit the root cause; this ends the case.",
        object_schema(["root_cause_entity"], root_cause_entity=string_param("service")),
    ),
]


class ServiceEnv(ToolEnvironment):
    """Two services; `db` is the faulty one. Submitting ends the case."""

    name = "services"

    def __init__(self, max_steps: int = 12) -> None:
        super().__init__(task_id="db-down", max_steps=max_steps, category="x", split="test")
        self.submitted: list[str] = []

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return SPECS

    @property
    def fallback_call(self) -> ToolCall:
        return ToolCall("check", {"service": "web"})

    def _backend_reset(self) -> BackendResult:
        self.goal = "find the faulty service and submit it"
        return BackendResult("Alert: checkout is failing. Services: web, db.", None)

    def _backend_step(self, action: str) -> BackendResult:
        try:
            call = parse_tool_calls(action, SPECS)[0]
        except ToolCallError as error:
            return self.invalid_result(str(error))
        service = str(call.args.get("service") or call.args.get("root_cause_entity"))
        if call.tool == "submit_root_cause":
            self.submitted.append(service)
            return BackendResult("Submitted.", None, done=True, success=service == "db", score=1.0)
        if call.tool == "check":
            return BackendResult(
                f"{service}: {'connection refused' if service == 'db' else 'ok'}", None
            )
        return BackendResult(f"{service} restarted.", None)

    def _backend_restart(self) -> None:
        pass

    def _backend_close(self) -> None:
        pass


def tool(name: str, **args: str) -> str:
    return json.dumps({"tool": name, "args": args})


def test_the_final_answer_is_submitted_from_verified_state_only() -> None:
    audit = (
        "Status: complete\nIntegrity: suspect\nContract audit: aligned\n\nFacts: check db showed "
        "'connection refused'; the executor's claim about web is not supported.\nBlocking constraints: none"
    )
    script = RoleScript(
        {
            "manager": replies(
                work("find the faulty service"),
                "Task state:\nCompleted: db refuses connections [round_001]\nNext: blocked",
            ),
            "executor/report": lambda request: "The root cause is WEB-CLAIM-UNVERIFIED.",
            "auditor/audit": lambda request: audit,
        }
    )
    decider = Decider(
        executor=[tool("check", service="web"), "finish"],
        auditor=[tool("check", service="db"), "finish"],
        final=lambda request: tool("submit_root_cause", root_cause_entity="db"),
    )
    env = ServiceEnv(max_steps=12)
    outcome = harness(script, decider).run(env)

    final = decider.of("manager")
    assert len(final) == 1 and final[0].purpose == "final_answer"
    assert "connection refused" in final[0].context  # the audit's verified fact
    assert "db refuses connections [round_001]" in final[0].context  # the task state
    assert "WEB-CLAIM-UNVERIFIED" not in final[0].context  # never the executor's claim
    assert [t["name"] for t in final[0].observation.tools or []] == ["submit_root_cause"]
    assert outcome.final_action == tool("submit_root_cause", root_cause_entity="db")
    assert env.submitted == ["db"] and outcome.observation.success
    assert outcome.actions == env.steps_used == 3
    # The executor was never offered the submission.
    assert all(
        "submit_root_cause" not in [t["name"] for t in r.observation.tools or []]
        for r in decider.of("executor")
    )


def test_one_action_stays_in_reserve_for_the_submission() -> None:
    script = RoleScript(
        {
            "manager": lambda request: work("check everything"),
            "executor": lambda request: "checked",
            "auditor": lambda request: OPEN,
        }
    )
    decider = Decider(
        executor=[tool("check", service="web")] * 10,
        final=lambda request: tool("submit_root_cause", root_cause_entity="web"),
    )
    env = ServiceEnv(max_steps=4)
    outcome = harness(script, decider, executor_actions=10).run(env)
    assert len(outcome.rounds[0].executor_turns) == 3
    assert env.submitted == ["web"] and outcome.actions == 4
    assert outcome.ended_by == "budget" and not outcome.accepted_done


def test_an_action_outside_the_role_view_ends_the_turn_without_reaching_the_environment() -> None:
    script = RoleScript(
        {
            "manager": replies(work(), "Next: blocked"),
            "executor": lambda request: "done",
            "auditor": lambda request: CLEAN,
        }
    )
    decider = Decider(executor=["finish"], auditor=["open microwave 1"])  # not read-only
    env = KitchenEnv(max_steps=10)
    outcome = harness(script, decider).run(env)
    assert env.steps_used == 0 and outcome.auditor_queries == 0


def test_an_unusable_decision_falls_back_within_every_role_view_never_to_finish() -> None:
    services = ServiceEnv().reset()
    check_web = tool("check", service="web")
    for view in (executor_view(services), auditor_view(services, "rca"), final_view(services)):
        assert role_fallback(view, []) == check_web and allowed(check_web, view)
    kitchen = KitchenEnv().reset()
    assert role_fallback(executor_view(kitchen), []) == "examine microwave 1"
    assert role_fallback(executor_view(kitchen), ["examine microwave 1"]) == "open microwave 1"
    assert role_fallback(auditor_view(kitchen, "alfworld"), []) == "examine microwave 1"
    bare = dataclasses.replace(kitchen, admissible_actions=["open microwave 1"])
    assert role_fallback(auditor_view(bare, "alfworld"), []) is None, "nothing it may take"


class ThreeCallServiceEnv(ServiceEnv):
    """ServiceEnv with RCA's three tool calls per turn (each call answered in turn)."""

    calls_per_turn = 3

    def _backend_step(self, action: str) -> BackendResult:
        try:
            calls = parse_tool_calls(action, SPECS, max_calls=3)
        except ToolCallError as error:
            return self.invalid_result(str(error))
        answers = [
            super(ThreeCallServiceEnv, self)
            ._backend_step(json.dumps({"tool": c.tool, "args": c.args}))
            .text
            for c in calls
        ]
        return BackendResult("\n".join(answers), None)


def test_every_role_view_keeps_the_environments_calls_per_turn() -> None:
    first = ThreeCallServiceEnv().reset()
    assert first.max_calls == 3
    assert executor_view(first).max_calls == 3
    assert auditor_view(first, "rca").max_calls == 3
    assert final_view(first).max_calls == 3


def test_an_executor_turn_takes_all_its_calls_and_a_listed_finish_ends_it_after_them() -> None:
    script = RoleScript(
        {
            "manager": replies(work("check both services"), "Next: blocked"),
            "executor/report": lambda request: "checked web and db",
            "auditor/audit": lambda request: OPEN,
        }
    )
    three = json.dumps(
        [
            {"tool": "check", "args": {"service": "web"}},
            {"tool": "check", "args": {"service": "db"}},
            {"tool": "finish", "args": {}},
        ]
    )
    decider = Decider(executor=[three, tool("check", service="web")])
    env = ThreeCallServiceEnv()
    outcome = harness(script, decider).run(env)
    turns = outcome.rounds[0].executor_turns
    assert len(turns) == 1  # one turn, then the listed finish ended the executor's turn
    assert [c["args"]["service"] for c in json.loads(turns[0].action)] == ["web", "db"]
    assert "connection refused" in turns[0].observation
    assert decider.of("executor")[0].observation.max_calls == 3


# -- the role instructions carry upstream's rules, and the plan reaches executor and auditor -----


@pytest.mark.parametrize(
    ("role", "rules"),
    [
        (
            "manager",
            [
                "A prerequisite is met only when an audit confirmed it",
                "one main change of state; never bundle",
                "Keep every exact object of the task",
                "never promote an executor's claim",
                "Read each audit's constraint check first",
                "with one round (or very few actions) left",
                "The result must be in the place where it is used",
            ],
        ),
        (
            "auditor",
            [
                "Do not assume the task contract is correct",
                "Per constraint:",
                "Blocking constraints:",
                "The contract itself and the executor's claims are not evidence",
                "the status is incomplete, even when\nthe subtask itself succeeded",
                "State update for the manager:",
                "A missing\n  record of what the executor did is not, by itself, a reason",
            ],
        ),
        (
            "executor",
            [
                "do not use anything an audit marked suspect",
                "Keep the task's exact objects",
                "do not guess and do not re-plan the whole task",
                "Keep every exact object of the task",
            ],
        ),
    ],
)
def test_each_role_carries_upstreams_rules(role: str, rules: list[str]) -> None:
    from pos_agent.agents.context.longhorizon import prompts as lh

    text = {"manager": lh.MANAGER_SYSTEM, "auditor": lh.AUDITOR_SYSTEM}.get(
        role, lh.EXECUTOR_SYSTEM
    )
    flat = " ".join(text.split())
    for rule in rules:
        assert " ".join(rule.split()) in flat, rule


def test_the_managers_plan_reaches_the_executor_and_the_auditor() -> None:
    plan = work("open the microwave").replace(
        "Dependencies: none", "Dependencies: DEPENDS-ON-THE-MICROWAVE-BEING-REACHABLE"
    )
    script = RoleScript(
        {
            "manager": replies(plan, "Next: blocked"),
            "executor/report": lambda request: "opened",
            "auditor/audit": lambda request: OPEN,
        }
    )
    decider = Decider(executor=["go to countertop 1", "finish"], auditor=["finish"])
    harness(script, decider).run(KitchenEnv(max_steps=10))
    marker = "DEPENDS-ON-THE-MICROWAVE-BEING-REACHABLE"
    assert all(marker in r.context for r in decider.of("executor"))
    assert all(marker in r.context for r in decider.of("auditor"))
    assert marker in user_text(script.of("auditor", "audit")[0])
    assert marker in user_text(script.of("executor", "report")[0])


def test_the_manager_sees_report_history_up_to_upstreams_run_value() -> None:
    from pos_agent.agents.context.longhorizon import prompts as lh
    from pos_agent.agents.context.longhorizon.reports import parse_audit_report

    reports = [parse_audit_report(OPEN + "\n" + "x" * 20_000, n) for n in range(1, 5)]
    messages = lh.manager_messages(
        "task", "", "", reports, [], 5, 10, LongHorizonSettings().manager_history_chars, 25
    )
    text = messages[1].content
    assert LongHorizonSettings().manager_history_chars == 100_000
    assert "older report(s) left out" not in text
    assert all(f"[round_00{n}]" in text for n in range(1, 5))
