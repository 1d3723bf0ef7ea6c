"""The PoS agent: every decision is conditioned on a validated belief, not on a transcript.

One episode (DESIGN §1, Algorithm 1 of the paper):

    B0 <- initialize(goal, o0)                                   belief model
    for t in 0..T-1:
        a_t   <- policy(B_t, active gap Δ_t, recovery constraint)  policy model
        o_t+1 <- env.step(a_t)
        B~    <- apply_patch(B_t, update(B_t, a_t, o_t+1))       belief model
        B_t+1 <- sentinel(B_t, B~): rules, LLM audit, one revision, else keep B_t
        u_t+1 <- progress on Δ_t (sentinel judgment, or Eq. 4 for diagnosis; success = 1)
        keep Δ_t until it is resolved; then the belief model's choice, else the earliest open gap
        from the K-th validated transition: health H; trapped -> diagnose, compose C; else release C

The variants share this loop: `no_consistency` skips the audit and revision (progress is still
judged, by the same question), `no_trapping` skips health and recovery, `generic_recovery`
replaces the factorized constraint with one generic line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pos_agent.agents.base import (
    Decision,
    Episode,
    RoleCaller,
    StepCallback,
    StepInfo,
    finish,
    observation_event,
)
from pos_agent.agents.config import VARIANTS, PosConfig, RoleModels, Variant
from pos_agent.agents.pos import prompts
from pos_agent.agents.pos.schemas import BeliefPatch, patch_schema
from pos_agent.belief import (
    Belief,
    Gap,
    PatchOutcome,
    apply_patch_detailed,
    focus_keys,
    render_belief,
    retain_active_gap,
    select_active_gap,
    world_keys,
)
from pos_agent.envs import Environment, Observation
from pos_agent.events import (
    ActiveGapEvent,
    BeliefCommitEvent,
    BeliefInitEvent,
    BeliefPatchEvent,
    BeliefRejectEvent,
    DegradedEvent,
    HealthEvent,
    ProgressEvent,
    RecoveryEvent,
    RecoveryReleaseEvent,
    RevisionEvent,
    Scope,
)
from pos_agent.health import (
    HealthConfig,
    HealthReport,
    WindowStep,
    WorldKeys,
    assess_window,
    diagnostic_progress,
)
from pos_agent.kinds import TaskKind
from pos_agent.llm import Message, TokenLedger
from pos_agent.recovery.constraint import (
    RecoveryConstraint,
    allowed_actions,
    compose_recovery,
    generic_recovery,
    should_release,
)
from pos_agent.roles.limits import AgentLimits, RoleLimits, paper_generation_tokens
from pos_agent.roles.schemas import decision_schema
from pos_agent.roles.transition import Transition
from pos_agent.sentinel import check_rules
from pos_agent.sentinel.audit import Sentinel, Transcript, issue_text
from pos_agent.trace import TraceWriter

__all__ = [
    "VARIANTS",
    "PosAgent",
    "PosConfig",
    "RoleModels",
    "Turn",
    "Update",
    "Validated",
    "Variant",
]


@dataclass(frozen=True)
class Validated:
    """One validated transition in the health window."""

    belief: Belief
    world: WorldKeys
    progress: int


@dataclass(frozen=True)
class Update:
    """The outcome of one transition for the belief: B_t+1 and the progress label u_t+1."""

    belief: Belief
    """The committed candidate, or B_t kept (stamped with the new step)."""
    accepted: bool
    progress: int
    degraded: bool
    """A belief or sentinel call gave no usable answer."""


@dataclass
class Turn:
    """What one step of the loop knows before it acts."""

    t: int
    belief: Belief
    """B_t, the belief the decision is conditioned on."""
    world: WorldKeys
    """Record keys of B_t (the state before the action, for static recovery)."""
    gap: Gap | None
    """Δ_t, the gap active before the step: progress is judged against it."""


class PosAgent:
    """The belief-state agent with sentinel validation and trapping recovery."""

    def __init__(
        self,
        models: RoleModels,
        config: PosConfig | None = None,
        *,
        ledger: TokenLedger | None = None,
        trace: TraceWriter | None = None,
        on_step: StepCallback | None = None,
    ) -> None:
        self.models = models
        self.config = config or PosConfig()
        self.name: str = self.config.variant
        self.ledger = ledger or TokenLedger()
        self.call = RoleCaller(self.ledger, trace)
        self.on_step = on_step
        self.diagnostic = False
        self.transcript = Transcript()
        self.limits = self.config.limits or AgentLimits.for_models(
            models.specs(), generation_tokens=paper_generation_tokens("execution")
        )

    # -- the episode ----------------------------------------------------------------------------

    def run(self, env: Environment) -> Episode:
        cfg = self.config
        health_cfg = replace(cfg.health, task=_task_of(env))
        self.diagnostic = health_cfg.task == "diagnosis"
        if cfg.limits is None:
            self.limits = AgentLimits.for_models(
                self.models.specs(), generation_tokens=paper_generation_tokens(env.kind, env.name)
            )
        self.transcript = Transcript()
        self.sentinel = Sentinel(
            self.call, self.models.sentinel, self.limits.sentinel, self.transcript, cfg.clips
        )
        episode = Episode()
        observation = env.reset()
        self._observe(0, observation)
        belief = self.initialize(env.goal, observation)
        window: deque[Validated] = deque(maxlen=health_cfg.window)
        transitions: deque[Transition] = deque(maxlen=health_cfg.window)
        constraint: RecoveryConstraint | None = None
        try:
            for t in range(env.max_steps):
                turn = Turn(t, belief, self._keys(belief, window), belief.active_gap)
                decision = self.decide(env.goal, turn, observation, constraint)
                observation = env.step(decision.action)
                episode.steps = t + 1
                step = self._observe(t + 1, observation, decision.action)

                update = self.update(turn, step, observation, health_cfg)
                degraded = decision.degraded or update.degraded
                episode.degraded_steps += degraded
                belief = update.belief
                if observation.done:
                    self._report(
                        StepInfo(t + 1, decision.action, observation.success, degraded=degraded)
                    )
                    break
                belief = self.keep_active_gap(turn.gap, belief, constraint)
                transitions.append(
                    Transition(
                        t + 1, decision.action, observation.text, update.progress, turn.world
                    )
                )
                window.append(Validated(belief, world_keys(belief), update.progress))

                report = None
                if cfg.variant != "no_trapping" and len(window) >= health_cfg.window:
                    report = self.assess(window, belief, health_cfg)
                    constraint = self.recover(
                        report, transitions, window[-1], constraint, health_cfg, episode
                    )
                if cfg.global_audit_every and (t + 1) % cfg.global_audit_every == 0:
                    belief = self.global_audit(belief, t + 1, constraint)
                self._report(
                    StepInfo(
                        t + 1,
                        decision.action,
                        observation.success,
                        health=report.health if report else None,
                        trapped=bool(report and report.trapped),
                        pattern=report.pattern if report else None,
                        recovery=constraint is not None,
                        degraded=degraded,
                    )
                )
        finally:
            finish(episode, observation)
            episode.final_belief = belief.to_dict()
        return episode

    # -- belief initialization and update ------------------------------------------------------

    def _belief_patch(
        self, messages: Sequence[Message], *, step: int, purpose: str, initial: bool = False
    ) -> BeliefPatch | None:
        """One belief-model call answering with a patch (None: the call degraded)."""
        return self.call(
            "belief",
            self.models.belief,
            messages,
            patch_schema(self.limits.belief.bounds, initial=initial),
            step=step,
            max_tokens=self.limits.belief.max_tokens,
            purpose=purpose,
        )

    def initialize(self, goal: str, observation: Observation) -> Belief:
        patch = self._belief_patch(
            prompts.belief_init(goal, observation.text, diagnostic=self.diagnostic),
            step=0,
            purpose="init",
            initial=True,
        )
        ops = _ops(patch)
        outcome = apply_patch_detailed(Belief(goal=goal, step=0), ops)
        belief = outcome.belief
        if not belief.open_gaps:
            # The loop needs a gap to work on; the goal itself is the first achievement gap.
            belief = apply_patch_detailed(
                belief, [{"op": "add_gap", "kind": "achievement", "text": goal, "activate": True}]
            ).belief
        belief = replace(belief, active_gap_id=select_active_gap(belief, self._preferred_gap))
        self.call.emit(
            BeliefInitEvent(
                step=0,
                ops=ops,
                rejected=[r.to_dict() for r in outcome.rejected],
                belief=belief.to_dict(),
                degraded=patch is None,
            )
        )
        return belief

    def update(
        self, turn: Turn, step: Transition, observation: Observation, health_cfg: HealthConfig
    ) -> Update:
        """B_t+1 and u_t+1 for one transition."""
        base = turn.belief.at_step(step.step)
        patch = self._belief_patch(
            prompts.belief_update(
                self._render(turn.belief, self.limits.belief), step, diagnostic=self.diagnostic
            ),
            step=step.step,
            purpose="update",
        )
        if patch is None:
            self.call.emit(
                DegradedEvent(step=step.step, role="belief", fallback="keep previous belief")
            )
        ops = _ops(patch)
        candidate = apply_patch_detailed(base, ops)
        self._trace_patch(BeliefPatchEvent, step.step, ops, candidate)

        judge = health_cfg.task == "execution"
        if self.config.variant == "no_consistency":
            self.call.emit(BeliefCommitEvent(step=step.step, audited=False))
            verdict = (
                self.sentinel.judge_progress(candidate.belief, step, turn.gap) if judge else None
            )
            update = Update(
                candidate.belief,
                accepted=True,
                progress=verdict.progress if verdict else 0,
                degraded=bool(verdict and verdict.failed),
            )
        else:
            update = self.validate(base, ops, candidate, step, turn.gap, judge)
        d = None
        progress = update.progress
        if health_cfg.task == "diagnosis":
            d, progress = diagnostic_progress(
                _confidences(base), _confidences(update.belief), health_cfg.eps_diag
            )
        if not update.accepted:
            progress = 0  # the belief did not move
        if observation.success:
            progress = 1
        self.call.emit(
            ProgressEvent(
                step=step.step,
                label=progress,
                accepted=update.accepted,
                d=d,
                gap=turn.gap.id if turn.gap else None,
            )
        )
        return replace(update, progress=progress, degraded=update.degraded or patch is None)

    def validate(
        self,
        base: Belief,
        ops: list[Any],
        candidate: PatchOutcome,
        step: Transition,
        gap: Gap | None,
        judge: bool,
    ) -> Update:
        """Rules, then the LLM audit; one revision; else keep the previous belief."""
        verdict = self.sentinel.check(candidate, ops, step, gap, judge=judge)
        if not verdict.findings:
            self.call.emit(BeliefCommitEvent(step=step.step))
            return Update(candidate.belief, True, verdict.progress, verdict.failed)
        revision = self._belief_patch(
            prompts.belief_revision(
                self._render(base, self.limits.belief),
                step,
                ops,
                verdict.findings,
                self.sentinel.evidence(verdict.findings, step),
                diagnostic=self.diagnostic,
            ),
            step=step.step,
            purpose="revision",
        )
        if revision is None:
            self.call.emit(
                BeliefRejectEvent(step=step.step, findings=verdict.findings, reason="no revision")
            )
            return Update(base, False, 0, degraded=True)
        revised_ops = _ops(revision)
        revised = apply_patch_detailed(base, revised_ops)
        self._trace_patch(RevisionEvent, step.step, revised_ops, revised)
        recheck = self.sentinel.check(revised, revised_ops, step, gap, judge=judge)
        failed = verdict.failed or recheck.failed
        if recheck.findings:
            self.call.emit(BeliefRejectEvent(step=step.step, findings=recheck.findings))
            return Update(base, False, 0, failed)
        self.call.emit(BeliefCommitEvent(step=step.step, revised=True))
        return Update(revised.belief, True, recheck.progress, failed)

    def global_audit(
        self, belief: Belief, step: int, constraint: RecoveryConstraint | None
    ) -> Belief:
        """Every N steps: the whole belief against a compact trajectory; fix what is supported."""
        if self.config.variant == "no_consistency":
            return belief
        issues = self.sentinel.global_audit(
            belief, self._render(belief, self.limits.sentinel), step
        )
        if not issues:
            return belief
        fix = self._belief_patch(
            prompts.global_revision(
                self._render(belief, self.limits.belief),
                [issue_text(i) for i in issues],
                diagnostic=self.diagnostic,
            ),
            step=step,
            purpose="global_revision",
        )
        ops = _ops(fix)
        outcome = apply_patch_detailed(belief, ops)
        self._trace_patch(RevisionEvent, step, ops, outcome, scope="global")
        observations = self.transcript.observations
        if check_rules(outcome.belief, observations, patch=ops, changed=outcome.changed):
            self.call.emit(BeliefRejectEvent(step=step, scope="global"))
            return belief
        self.call.emit(BeliefCommitEvent(step=step, scope="global"))
        return self.keep_active_gap(belief.active_gap, outcome.belief, constraint)

    # -- decision ------------------------------------------------------------------------------

    def decide(
        self,
        goal: str,
        turn: Turn,
        observation: Observation,
        constraint: RecoveryConstraint | None,
    ) -> Decision:
        """The next action, settled (validated, repaired or fallen back) and traced."""
        admissible = observation.admissible_actions
        mode = self.config.recovery
        if admissible is not None and constraint is not None and mode in ("hard", "both"):
            admissible = allowed_actions(admissible, constraint)
        shown = constraint.render() if constraint and mode in ("soft", "both") else None
        last_action = self.transcript.steps[-1].action if self.transcript.steps else ""
        answer = self.call(
            "policy",
            self.models.policy,
            prompts.policy(
                goal,
                self._render(turn.belief, self.limits.policy),
                Transition(turn.t, last_action, observation.text),
                admissible,
                shown,
                observation.tools,
                max_calls=observation.max_calls,
                observation_chars=self.config.policy_observation_chars,
            ),
            decision_schema(
                admissible,
                observation.tools,
                self.limits.policy.bounds,
                max_calls=observation.max_calls,
            ),
            step=turn.t,
            max_tokens=self.limits.policy.max_tokens,
            temperature=self.config.temperature,
            purpose="act",
        )
        recent = [s.action for s in self.transcript.steps[-2:]]
        return self.call.settle_action(answer, observation, admissible, recent, turn.t)

    # -- active gap, health, recovery ----------------------------------------------------------

    def keep_active_gap(
        self, before: Gap | None, belief: Belief, constraint: RecoveryConstraint | None
    ) -> Belief:
        """The active gap is retained until resolved (`retain_active_gap`); under a recovery
        constraint the constraint's gap is held the same way."""
        pinned = constraint.active_gap_id if constraint else None
        held = pinned or (before.id if before else None)
        choice = retain_active_gap(
            belief, held, prefer=self._preferred_gap, pinned=pinned is not None
        )
        if choice.changed:
            self.call.emit(
                ActiveGapEvent(
                    step=belief.step,
                    previous=choice.previous,
                    active=choice.belief.active_gap_id,
                    reason=choice.reason,
                    requested=choice.requested,
                )
            )
        return choice.belief

    def assess(
        self, window: Sequence[Validated], belief: Belief, cfg: HealthConfig
    ) -> HealthReport:
        """Health of the window, every past world projected onto the *current* active gap."""
        gap = belief.active_gap
        steps = [
            WindowStep(
                world=v.world,
                focus=focus_keys(v.belief, gap),
                epistemic=v.belief.open_gap_ids("epistemic"),
                achievement=v.belief.open_gap_ids("achievement"),
                progress=v.progress,
            )
            for v in window
        ]
        report = assess_window(steps, cfg)
        self.call.emit(
            HealthEvent(
                step=belief.step,
                active_gap=gap.id if gap else None,
                theta_h=cfg.theta_h,
                **report.to_dict(),
            )
        )
        return report

    def recover(
        self,
        report: HealthReport,
        transitions: Sequence[Transition],
        latest: Validated,
        constraint: RecoveryConstraint | None,
        cfg: HealthConfig,
        episode: Episode,
    ) -> RecoveryConstraint | None:
        """Compose (or refresh) the constraint while trapped; release it once H > theta_H."""
        belief = latest.belief
        if report.trapped:
            episode.trapped_steps += 1
            episode.patterns[report.pattern or "none"] += 1
            if self.config.variant == "generic_recovery":
                new = generic_recovery(report, belief)
            else:
                new = compose_recovery(
                    report,
                    transitions,
                    belief,
                    current_state=latest.world,
                    eps_w=cfg.eps_w,
                    max_recent=self.config.max_recent,
                )
            if constraint is None:
                episode.recoveries += 1
            self.call.emit(
                RecoveryEvent(step=belief.step, refreshed=constraint is not None, **new.to_dict())
            )
            return new
        if constraint is not None and should_release(report, cfg):
            self.call.emit(RecoveryReleaseEvent(step=belief.step, health=report.health))
            return None
        return constraint

    # -- helpers -------------------------------------------------------------------------------

    @property
    def _preferred_gap(self) -> Literal["epistemic", "achievement"]:
        return "epistemic" if self.diagnostic else "achievement"

    def _observe(self, t: int, observation: Observation, action: str | None = None) -> Transition:
        """Record observation t (and the step that led to it) and trace it."""
        self.transcript.observations[t] = observation.text
        self.call.emit(observation_event(t, observation))
        step = Transition(t, action or "", observation.text)
        if action is not None:
            self.transcript.steps.append(step)
        return step

    def _keys(self, belief: Belief, window: Sequence[Validated]) -> WorldKeys:
        # The keys of the last window entry are this belief's, unless a global audit changed it
        # since; computing them is the costly part on large beliefs.
        latest = window[-1] if window else None
        return latest.world if latest and latest.belief is belief else world_keys(belief)

    def _render(self, belief: Belief, limits: RoleLimits) -> str:
        return render_belief(belief, max_entities=limits.render_entities)

    def _trace_patch(
        self,
        kind: type[BeliefPatchEvent] | type[RevisionEvent],
        step: int,
        ops: list[Any],
        outcome: PatchOutcome,
        *,
        scope: Scope = "local",
    ) -> None:
        self.call.emit(
            kind(
                step=step,
                ops=ops,
                applied=outcome.applied,
                rejected=[r.to_dict() for r in outcome.rejected],
                changed=sorted(outcome.changed),
                scope=scope,
            )
        )

    def _report(self, info: StepInfo) -> None:
        if self.on_step is not None:
            info.tokens = self.call.tokens()
            self.on_step(info)


def _ops(patch: BeliefPatch | None) -> list[Any]:
    """The patch as plain JSON ops (unset fields dropped), or nothing."""
    if patch is None:
        return []
    return [op.model_dump(exclude_none=True) for op in patch.ops]


def _confidences(belief: Belief) -> dict[str, float]:
    """Confidences of inferred states and relations: the hypotheses Eq. 4 tracks."""
    out = {s.id: s.confidence for s in belief.states.values() if s.source == "inferred"}
    out.update({r.id: r.confidence for r in belief.relations.values() if r.source == "inferred"})
    return out


def _task_of(env: Environment) -> TaskKind:
    return "diagnosis" if getattr(env, "kind", "execution") == "diagnosis" else "execution"
