"""The LongHorizon-Harness round loop (paper App. D.3; upstream AMAP-ML/LongHorizon-Harness
v0.1.7 `manager.py`): Manager -> Executor -> Auditor, until an accepted `done`, `blocked`, the
round cap or the action budget.

- The manager answers in text (task state, contract, dependencies, one route). `work` carries a
  bounded subtask; `done` is accepted only when the latest audit is complete, clean and aligned,
  otherwise the manager is told why and a new round starts; `blocked` ends the rounds.
- The executor is a ReAct loop over the environment's actions (no terminal submission) that
  ends with `finish` or its action cap, then writes a report.
- The auditor makes read-only queries (each spends one action of the same budget), then writes
  a report that must open with three control lines; a malformed header gets exactly one repair
  call, after which the report is read as blocked.
- Where the benchmark ends with a submission (RCA root cause, ClinDiag diagnosis, LOCA
  claim_done), the harness submits it at the end from the verified state (task state and audit
  reports, never an executor's claims), keeping one action in reserve for it.

Policy decisions (executor actions, auditor queries, the final answer) go through `decide`, the
shared ReAct policy harness (validation, repair, fallback). Manager, report and repair calls go
through the ModelCaller. Deviations from upstream: no GUI/CLI split (every benchmark here has one
kind of action), no human gate (`ask`), no executor tiers; the executor's report is one call
after its actions because our policy answers are actions, not free text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pos_agent.agents.context.calls import ModelCaller
from pos_agent.agents.context.longhorizon import prompts
from pos_agent.agents.context.longhorizon.actions import (
    allowed,
    auditor_view,
    executor_view,
    final_view,
    split_finish,
    terminal_tools,
)
from pos_agent.agents.context.longhorizon.reports import (
    AuditReport,
    ManagerPlan,
    Route,
    parse_audit_report,
    parse_header,
    parse_manager_output,
    round_id,
)
from pos_agent.agents.context.settings import Family, LongHorizonSettings
from pos_agent.envs import Environment, Observation
from pos_agent.transition import Transition

EndReason = Literal["done", "blocked", "round_cap", "budget", "env_done"]


@dataclass(frozen=True)
class DecisionRequest:
    """One policy decision a role needs: the context to show and the actions it may take."""

    role: str
    """executor, auditor, or manager (the final answer)."""
    purpose: str
    """act, query or final_answer."""
    context: str
    observation: Observation
    """The current observation, restricted to what this role may do."""
    step: int
    """Environment actions taken so far."""


class Decide(Protocol):
    """The shared policy harness: one action string for a request, or None for no answer."""

    def __call__(self, request: DecisionRequest) -> str | None: ...


ActionObserver = Callable[[str, Transition, Observation], None]


class RoundObserver(Protocol):
    """What a harness wants to know as the rounds go (to trace them while they happen)."""

    def started(self, observation: Observation) -> None:
        """The environment was reset."""
        ...

    def planned(self, round_: Round, actions: int) -> None:
        """The manager answered for `round_` (`actions`: environment actions taken so far)."""
        ...

    def audited(self, round_: Round, actions: int) -> None:
        """The auditor's report for `round_` is in."""
        ...


@dataclass
class Round:
    """One management round, for the trace and the result."""

    number: int
    route: Route
    plan: ManagerPlan | None
    manager_text: str | None
    feedback: str | None = None
    executor_turns: list[Transition] = field(default_factory=list)
    executor_report: str | None = None
    auditor_turns: list[Transition] = field(default_factory=list)
    audit: AuditReport | None = None
    repaired: bool = False
    refused_done: bool = False

    @property
    def id(self) -> str:
        return round_id(self.number)


@dataclass
class LongHorizonOutcome:
    """How the rounds ended."""

    observation: Observation
    rounds: list[Round]
    actions: int
    """Environment actions, auditor queries and the final submission included."""
    auditor_queries: int
    accepted_done: bool
    ended_by: EndReason
    final_action: str | None = None


class LongHorizonHarness:
    """Runs one episode as Manager / Executor / Auditor rounds."""

    def __init__(
        self,
        settings: LongHorizonSettings,
        caller: ModelCaller,
        decide: Decide,
        *,
        family: Family,
        on_action: ActionObserver | None = None,
        observer: RoundObserver | None = None,
    ) -> None:
        self.settings = settings
        self.caller = caller
        self.decide = decide
        self.family = family
        self.on_action = on_action
        self.observer = observer

    def run(self, env: Environment) -> LongHorizonOutcome:
        return _Episode(self, env).run()


class _Episode:
    def __init__(self, harness: LongHorizonHarness, env: Environment) -> None:
        self.harness = harness
        self.settings = harness.settings
        self.env = env
        self.actions = 0
        self.queries = 0
        self.rounds: list[Round] = []
        self.state = ""
        self.contract = ""
        self.feedback: list[str] = []
        self.observation = env.reset()
        self.observer = harness.observer
        if self.observer is not None:
            self.observer.started(self.observation)
        self.task = prompts.task_block(env.goal, self.observation.text)
        # One action stays in reserve for the final submission, where there is one.
        self.reserve = 1 if terminal_tools(self.observation) else 0

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> LongHorizonOutcome:
        ended, accepted = self.rounds_until_end()
        final = self.submit_final()
        return LongHorizonOutcome(
            self.observation, self.rounds, self.actions, self.queries, accepted, ended, final
        )

    def rounds_until_end(self) -> tuple[EndReason, bool]:
        """Why the rounds ended, and whether with an accepted `done`."""
        for number in range(1, self.settings.max_rounds + 1):
            if self.observation.done:
                return "env_done", False
            if self.actions_left() <= 0:
                return "budget", False
            round_ = self.manage(number)
            self.rounds.append(round_)
            if self.observer is not None:
                self.observer.planned(round_, self.actions)
            if round_.route == "done" and not round_.refused_done:
                return "done", True
            if round_.route == "blocked":
                return "blocked", False
            if round_.route == "work":
                self.execute(round_)
                if not self.observation.done:
                    self.audit(round_)
                    if self.observer is not None:
                        self.observer.audited(round_, self.actions)
        return ("env_done" if self.observation.done else "round_cap"), False

    def actions_left(self) -> int:
        return self.env.max_steps - self.actions - self.reserve

    def latest_audit(self) -> AuditReport | None:
        for round_ in reversed(self.rounds):
            if round_.audit is not None:
                return round_.audit
        return None

    # -- manager ----------------------------------------------------------------------------------

    def manage(self, number: int) -> Round:
        reports = [r.audit for r in self.rounds if r.audit is not None]
        text = self.harness.caller.text(
            "manager",
            "plan",
            prompts.manager_messages(
                self.task,
                self.state,
                self.contract,
                reports,
                self.feedback,
                number,
                self.actions_left(),
                self.settings.manager_history_chars,
                self.settings.max_rounds,
            ),
            max_tokens=self.settings.generation_tokens,
        )
        self.feedback = []
        if text is None:
            self.feedback.append(
                f"{round_id(number)}: the manager gave no answer; write the sections."
            )
            return Round(number, "invalid", None, None, feedback=self.feedback[-1])
        plan = parse_manager_output(text)
        self.state = plan.state or self.state
        self.contract = plan.contract or self.contract
        round_ = Round(number, plan.route, plan, text)
        if plan.route == "invalid":
            round_.feedback = (
                f"{round_.id}: no valid route. End with 'Next: work' and a Subtask section, "
                "'Next: done' or 'Next: blocked'."
            )
            self.feedback.append(round_.feedback)
        elif plan.route == "done":
            latest = self.latest_audit()
            if latest is None or not latest.accepts_completion:
                round_.refused_done = True
                round_.feedback = _refusal(round_.id, latest)
                self.feedback.append(round_.feedback)
        return round_

    # -- executor ---------------------------------------------------------------------------------

    def related_reports(self, plan: ManagerPlan) -> str:
        cited = [
            r.audit for r in self.rounds if r.audit is not None and r.number in set(plan.related)
        ]
        return prompts.audit_block(cited, self.settings.related_report_chars) if cited else ""

    def role_base(self, round_: Round) -> str:
        """The context the executor and the auditor of a round both start from."""
        assert round_.plan is not None
        return prompts.role_context(
            self.task,
            round_.plan,
            round_.manager_text or "",
            self.state,
            self.contract,
            self.related_reports(round_.plan),
        )

    def execute(self, round_: Round) -> None:
        base = self.role_base(round_)
        self.role_turns(
            "executor",
            "act",
            self.settings.executor_actions,
            lambda: executor_view(self.observation),
            lambda: prompts.executor_context(base, round_.executor_turns),
            round_.executor_turns,
        )
        report = self.harness.caller.text(
            "executor",
            "report",
            prompts.executor_report_messages(base, round_.executor_turns),
            max_tokens=self.settings.generation_tokens,
        )
        round_.executor_report = report or "(the executor gave no report)"

    # -- auditor ----------------------------------------------------------------------------------

    def audit(self, round_: Round) -> None:
        base = self.role_base(round_)
        claim = (round_.executor_report or "")[: self.settings.executor_output_chars]
        self.queries += self.role_turns(
            "auditor",
            "query",
            self.settings.auditor_queries,
            lambda: auditor_view(self.observation, self.harness.family),
            lambda: prompts.auditor_context(
                base, claim, self.observation.text, round_.auditor_turns
            ),
            round_.auditor_turns,
        )
        messages = prompts.auditor_report_messages(
            base, claim, self.observation.text, round_.auditor_turns
        )
        text = self.harness.caller.text(
            "auditor", "audit", messages, max_tokens=self.settings.generation_tokens
        )
        if text is not None and parse_header(text) is None:
            round_.repaired = True
            repaired = self.harness.caller.text(
                "auditor",
                "repair",
                prompts.repair_messages(text),
                max_tokens=self.settings.repair_tokens,
            )
            text = repaired if repaired is not None else text
        round_.audit = parse_audit_report(text or "(the auditor gave no report)", round_.number)

    def role_turns(
        self,
        role: str,
        purpose: str,
        limit: int,
        view_of: Callable[[], Observation],
        context_of: Callable[[], str],
        turns: list[Transition],
    ) -> int:
        """Let `role` act up to `limit` times on its restricted view, appending each action it
        takes to `turns`; it stops at a finish, an action its view does not offer, or the end
        of the budget or the episode. Returns how many actions it took."""
        taken = 0
        for _ in range(limit):
            if self.actions_left() <= 0 or self.observation.done:
                break
            view = view_of()
            action = self.harness.decide(
                DecisionRequest(role, purpose, context_of(), view, self.actions)
            )
            if action is None or not allowed(action, view):
                break
            real, finished = split_finish(action)
            if real is not None:
                turns.append(self.act(role, real))
                taken += 1
            if finished or real is None:
                break
        return taken

    # -- environment ------------------------------------------------------------------------------

    def act(self, role: str, action: str) -> Transition:
        self.observation = self.env.step(action)
        self.actions += 1
        turn = Transition(self.actions, action, self.observation.text)
        if self.harness.on_action is not None:
            self.harness.on_action(role, turn, self.observation)
        return turn

    def submit_final(self) -> str | None:
        """The benchmark's submission from the verified state, if it has one and it is open."""
        if self.observation.done or not terminal_tools(self.observation):
            return None
        if self.env.max_steps - self.actions <= 0:
            return None
        reports = [r.audit for r in self.rounds if r.audit is not None]
        view = final_view(self.observation)
        action = self.harness.decide(
            DecisionRequest(
                "manager",
                "final_answer",
                prompts.final_context(
                    self.task, self.state, reports, self.settings.manager_history_chars
                ),
                view,
                self.actions,
            )
        )
        if action is None or not allowed(action, view):
            return None
        self.act("manager", action)
        return action


def _refusal(round_name: str, latest: AuditReport | None) -> str:
    if latest is None:
        why = "no audit has been made yet"
    else:
        why = (
            f"the latest audit ({latest.round_id}) is status={latest.status}, "
            f"integrity={latest.integrity}, contract={latest.contract}"
        )
    return (
        f"{round_name}: 'done' refused: {why}. Completion needs an audit that is complete, "
        "clean and aligned; schedule a subtask an auditor can check."
    )
