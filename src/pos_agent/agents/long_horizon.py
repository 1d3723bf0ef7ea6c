"""LongHorizon-Harness in the shared harness: its own Manager -> Executor -> Auditor rounds
(`agents/context/longhorizon`, paper App. D.3) over the same environment, tools, budget and
termination as every other method.

The rounds decide; this agent supplies what they call and records what they do:
- `decide`: one executor action, auditor query or final answer by the backbone, through the
  same role caller, schemas and action validation as the ReAct methods (an inadmissible answer
  is repaired to the nearest action of the role's view; no usable answer, or one outside the
  role's view, spends a step on the fallback action as every other method does: a read-only
  call or the first admissible action of the view, `role_fallback`), accounted under the role
  that made it;
- the trace: every environment action and observation, each round's plan (`round_plan`: task
  state, contract, route, subtask) and verdict (`round_audit`), and the manager's, report and
  audit calls under the ledger roles `manager`, `executor` and `auditor`;
- the result: environment actions (auditor queries included) next to internal calls, rounds,
  how they ended and what was submitted.
"""

from __future__ import annotations

from typing import Unpack

from pos_agent.agents import prompts
from pos_agent.agents.backbone import BackboneAgent, BackboneOptions
from pos_agent.agents.base import (
    Episode,
    finish,
    observation_event,
    validate_action,
)
from pos_agent.agents.context.accounting import InternalCalls
from pos_agent.agents.context.calls import ModelCaller
from pos_agent.agents.context.longhorizon import (
    DecisionRequest,
    LongHorizonHarness,
    LongHorizonOutcome,
    Round,
    allowed,
    role_fallback,
)
from pos_agent.agents.context.settings import LongHorizonSettings, benchmark_family
from pos_agent.envs import Environment, Observation
from pos_agent.events import ActionEvent, DegradedEvent, RoundAuditEvent, RoundPlanEvent
from pos_agent.llm import Model
from pos_agent.roles.schemas import action_text, decision_schema
from pos_agent.transition import Transition


class LongHorizonAgent(BackboneAgent):
    """Manager / Executor / Auditor rounds with the backbone in every role."""

    name = "lh_harness"

    def __init__(
        self,
        model: Model,
        settings: LongHorizonSettings,
        **options: Unpack[BackboneOptions],
    ) -> None:
        super().__init__(model, **options)
        self.settings = settings

    def run(self, env: Environment) -> Episode:
        run = _Run(self, env)
        return run.play()


class _Run:
    """One episode: the harness's callbacks and what they record."""

    def __init__(self, agent: LongHorizonAgent, env: Environment) -> None:
        self.agent = agent
        self.env = env
        self.call = agent.call
        self.limits = agent.policy_limits(env)
        self.caller = ModelCaller(
            agent.model, temperature=agent.temperature, cap=agent.internal_cap(env)
        )
        self.internal = InternalCalls(self.caller, self.call)
        self.episode = Episode()
        self.observation: Observation | None = None
        self.degraded: set[int] = set()
        self.thought = ""
        self.recent: list[str] = []  # the last two environment actions (what a fallback avoids)

    def play(self) -> Episode:
        harness = LongHorizonHarness(
            self.agent.settings,
            self.caller,
            self.decide,
            family=benchmark_family(self.env.name),
            on_action=self.acted,
            observer=self,
        )
        outcome: LongHorizonOutcome | None = None
        try:
            outcome = harness.run(self.env)
        finally:
            self.internal.settle(self.episode.steps)
            if self.observation is not None:
                finish(self.episode, self.observation)
            self.episode.degraded_steps = len(self.degraded)
            self.episode.extra.update(self.record(outcome))
        return self.episode

    def record(self, outcome: LongHorizonOutcome | None) -> dict[str, object]:
        out: dict[str, object] = {
            "environment_actions": self.episode.steps,
            "internal_calls": dict(self.internal.by_role),
        }
        if outcome is not None:
            out["context"] = {
                "method": self.agent.name,
                "rounds": len(outcome.rounds),
                "auditor_queries": outcome.auditor_queries,
                "ended_by": outcome.ended_by,
                "accepted_done": outcome.accepted_done,
                "refused_done": sum(r.refused_done for r in outcome.rounds),
                "header_repairs": sum(r.repaired for r in outcome.rounds),
                "final_action": outcome.final_action,
            }
        return out

    # -- the rounds' callbacks ------------------------------------------------------------------

    def started(self, observation: Observation) -> None:
        self.observation = observation
        self.call.emit(observation_event(0, observation))

    def planned(self, round_: Round, actions: int) -> None:
        if self.internal.settle(actions):
            self.degraded.add(actions)
        plan = round_.plan
        self.call.emit(
            RoundPlanEvent(
                step=actions,
                round=round_.number,
                route=round_.route,
                state=plan.state if plan else "",
                contract=plan.contract if plan else "",
                subtask=plan.subtask if plan else "",
                criteria=plan.criteria if plan else "",
                boundaries=plan.boundaries if plan else "",
                related=list(plan.related) if plan else [],
                refused_done=round_.refused_done,
                feedback=round_.feedback,
                actions_left=max(self.env.max_steps - actions, 0),
            )
        )

    def audited(self, round_: Round, actions: int) -> None:
        if self.internal.settle(actions):
            self.degraded.add(actions)
        audit = round_.audit
        if audit is None:
            return
        self.call.emit(
            RoundAuditEvent(
                step=actions,
                round=round_.number,
                status=audit.status,
                integrity=audit.integrity,
                contract_audit=audit.contract,
                header_valid=audit.header_valid,
                repaired=round_.repaired,
                downgraded=audit.downgraded,
                blocking=list(audit.blocking),
                executor_actions=len(round_.executor_turns),
                auditor_queries=len(round_.auditor_turns),
                executor_report=round_.executor_report or "",
                report=audit.text,
            )
        )

    def decide(self, request: DecisionRequest) -> str | None:
        """One action of a role's view, or None (the role's turn ends)."""
        if self.internal.settle(request.step):
            self.degraded.add(request.step)
        view = request.observation
        schema = decision_schema(
            view.admissible_actions, view.tools, self.limits.bounds, max_calls=view.max_calls
        )
        messages = prompts.long_horizon_decision(
            request.context,
            view.admissible_actions,
            view.tools,
            max_calls=view.max_calls,
            # The auditor's and the final answer's contexts already hold what they may use.
            observation=view.text if request.role == "executor" else None,
            finish_hint=request.purpose != "final_answer",
            action_limit=self.limits.action_list,
            # The executor is the ReAct loop: the shared turn scaffolding says where it is.
            step=request.step if request.role == "executor" else None,
        )
        answer = self.call(
            request.role,
            self.agent.model,
            messages,
            schema,
            step=request.step,
            max_tokens=self.limits.max_tokens,
            temperature=self.agent.temperature,
            purpose=request.purpose,
        )
        action, repair = validate_action(action_text(answer), view.admissible_actions)
        if action is not None and not allowed(action, view):
            action, repair = None, f"{action!r} is not an action the {request.role} may take"
        if action is None:
            # The same rule as every other method (roles/caller.py `settle_action`): an
            # unusable decision spends a step on a fallback, it never ends a turn for free.
            fallback = role_fallback(view, self.recent)
            self.degraded.add(request.step)
            self.call.emit(
                DegradedEvent(
                    step=request.step,
                    role=request.role,
                    fallback=fallback,
                    reason=repair or "no answer",
                )
            )
            return fallback
        if repair:
            self.degraded.add(request.step)
            self.call.emit(
                DegradedEvent(
                    step=request.step, role=request.role, repaired_to=action, reason=repair
                )
            )
        self.thought = str(getattr(answer, "thought", ""))
        return action

    def acted(self, role: str, turn: Transition, observation: Observation) -> None:
        """An environment action was taken (executor, auditor query, or the final answer)."""
        self.observation = observation
        self.recent = [*self.recent[-1:], turn.action]
        self.call.emit(ActionEvent(step=turn.step - 1, action=turn.action, thought=self.thought))
        self.agent.record_step(
            self.episode,
            turn.step,
            f"[{role}] {turn.action}",
            observation,
            degraded=turn.step - 1 in self.degraded,
        )
