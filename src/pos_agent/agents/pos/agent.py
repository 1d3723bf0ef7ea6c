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

The variants share this loop; what each one uses is a fact of `agents.methods.METHODS`: without
consistency (`no_consistency`) the audit and revision are skipped (progress is still judged, by
the same question), without trapping (`no_trapping`) health and recovery, and with
`generic_recovery` one generic line replaces the factorized constraint.

`run()` is a short loop over `step()`; everything one episode knows is its `EpisodeState`,
created by `start()` at the beginning of the episode.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
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
from pos_agent.agents.methods import METHODS
from pos_agent.agents.pos import prompts
from pos_agent.agents.pos.config import PosConfig, RoleModels
from pos_agent.agents.pos.schemas import BeliefPatch, BeliefRevision, patch_schema, revision_schema
from pos_agent.belief import (
    Belief,
    Gap,
    PatchOutcome,
    apply_patch_detailed,
    focus_keys,
    render_belief,
    retain_active_gap,
    with_first_gap,
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
from pos_agent.sentinel import check_rules
from pos_agent.sentinel.audit import Sentinel, Transcript, issue_text
from pos_agent.trace import TraceWriter
from pos_agent.transition import Transition


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
class StepStart:
    """What one step of the loop knows before it acts."""

    t: int
    belief: Belief
    """B_t, the belief the decision is conditioned on."""
    world: WorldKeys
    """Record keys of B_t (the state before the action, for static recovery)."""
    gap: Gap | None
    """Δ_t, the gap active before the step: progress is judged against it."""


@dataclass
class EpisodeState:
    """Everything one episode knows, created by `PosAgent.start` when the episode begins."""

    goal: str
    max_steps: int
    health: HealthConfig
    """The health settings, with the environment's task kind."""
    limits: AgentLimits
    """Budgets and schema bounds per role (the config's, else each role's model's profile and
    the paper's budget for this environment)."""
    transcript: Transcript
    """What the sentinel may cite: every observation and the trajectory so far."""
    sentinel: Sentinel
    observation: Observation
    """The latest observation."""
    belief: Belief
    """B_t, the validated belief."""
    window: deque[Validated]
    """The last K validated transitions (the health window)."""
    transitions: deque[Transition]
    """The same transitions as the recovery logic reads them."""
    constraint: RecoveryConstraint | None = None
    """The recovery constraint while trapped."""
    episode: Episode = field(default_factory=Episode)
    t: int = 0
    """Steps taken."""
    done: bool = False
    """The environment ended the episode."""

    @property
    def diagnostic(self) -> bool:
        return self.health.task == "diagnosis"

    @property
    def preferred_gap(self) -> Literal["epistemic", "achievement"]:
        return "epistemic" if self.diagnostic else "achievement"

    @property
    def over(self) -> bool:
        """The environment ended the episode, or the step budget is spent."""
        return self.done or self.t >= self.max_steps


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
        self.method = METHODS[self.config.variant]
        self.name: str = self.config.variant
        self.ledger = ledger or TokenLedger()
        self.call = RoleCaller(self.ledger, trace)
        self.on_step = on_step

    # -- the episode ----------------------------------------------------------------------------

    def run(self, env: Environment) -> Episode:
        state = self.start(env)
        try:
            while not state.over:
                info = self.step(env, state)
                if self.on_step is not None:
                    info.tokens = self.call.tokens()
                    self.on_step(info)
        finally:
            finish(state.episode, state.observation)
            state.episode.final_belief = state.belief.to_dict()
        return state.episode

    def episode_state(self, env: Environment, observation: Observation) -> EpisodeState:
        """A fresh state for an episode of `env` whose first observation is `observation`
        (the belief not yet initialized)."""
        cfg = self.config
        health = replace(cfg.health, task=env.kind)
        limits = cfg.limits or AgentLimits.for_models(
            self.models.specs(), generation_tokens=paper_generation_tokens(env.kind, env.name)
        )
        transcript = Transcript()
        sentinel = Sentinel(self.call, self.models.sentinel, limits.sentinel, transcript, cfg.clips)
        return EpisodeState(
            goal=env.goal,
            max_steps=env.max_steps,
            health=health,
            limits=limits,
            transcript=transcript,
            sentinel=sentinel,
            observation=observation,
            belief=Belief(goal=env.goal, step=0),
            window=deque(maxlen=health.window),
            transitions=deque(maxlen=health.window),
        )

    def start(self, env: Environment) -> EpisodeState:
        """Reset the environment and initialize the belief: B0 <- initialize(goal, o0)."""
        state = self.episode_state(env, env.reset())
        self._observe(state, 0, state.observation)
        state.belief = self.initialize(state)
        return state

    def step(self, env: Environment, state: EpisodeState) -> StepInfo:
        """One transition of the loop: act, update and validate the belief, keep the active gap,
        then health and recovery (and every N steps the global audit)."""
        cfg, t = self.config, state.t
        turn = StepStart(t, state.belief, self._keys(state), state.belief.active_gap)
        decision = self.decide(state, turn)
        observation = env.step(decision.action)
        state.observation = observation
        state.t = state.episode.steps = t + 1
        transition = self._observe(state, t + 1, observation, decision.action)

        update = self.update(state, turn, transition)
        degraded = decision.degraded or update.degraded
        state.episode.degraded_steps += degraded
        state.belief = update.belief
        if observation.done:
            state.done = True
            return StepInfo(t + 1, decision.action, observation.success, degraded=degraded)
        state.belief = self.keep_active_gap(
            turn.gap, state.belief, state.constraint, prefer=state.preferred_gap
        )
        state.transitions.append(
            replace(transition, progress=update.progress, state_before=turn.world)
        )
        state.window.append(Validated(state.belief, world_keys(state.belief), update.progress))

        report = None
        if self.method.uses_trapping and len(state.window) >= state.health.window:
            report = self.assess(state.window, state.belief, state.health)
            state.constraint = self.recover(state, report)
        if cfg.global_audit_every and (t + 1) % cfg.global_audit_every == 0:
            state.belief = self.global_audit(state, t + 1)
        return StepInfo(
            t + 1,
            decision.action,
            observation.success,
            health=report.health if report else None,
            trapped=bool(report and report.trapped),
            pattern=report.pattern if report else None,
            recovery=state.constraint is not None,
            degraded=degraded,
        )

    # -- belief initialization and update ------------------------------------------------------

    def _belief_patch(
        self,
        state: EpisodeState,
        messages: Sequence[Message],
        *,
        step: int,
        purpose: str,
        initial: bool = False,
        schema: type[BeliefPatch] | None = None,
    ) -> BeliefPatch | None:
        """One belief-model call answering with a patch (None: the call degraded)."""
        return self.call(
            "belief",
            self.models.belief,
            messages,
            schema or patch_schema(state.limits.belief.bounds, initial=initial),
            step=step,
            max_tokens=state.limits.belief.max_tokens,
            purpose=purpose,
        )

    def initialize(self, state: EpisodeState) -> Belief:
        patch = self._belief_patch(
            state,
            prompts.belief_init(
                state.goal,
                state.observation.text,
                diagnostic=state.diagnostic,
                note=state.limits.belief.patch_note,
            ),
            step=0,
            purpose="init",
            initial=True,
        )
        ops = _ops(patch)
        outcome = apply_patch_detailed(
            Belief(goal=state.goal, step=0), ops, checked=self.method.uses_consistency
        )
        belief = with_first_gap(outcome.belief, state.preferred_gap)
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

    def update(self, state: EpisodeState, turn: StepStart, step: Transition) -> Update:
        """B_t+1 and u_t+1 for one transition."""
        base = turn.belief.at_step(step.step)
        patch = self._belief_patch(
            state,
            prompts.belief_update(
                _render(turn.belief, state.limits.belief),
                step,
                diagnostic=state.diagnostic,
                note=state.limits.belief.patch_note,
            ),
            step=step.step,
            purpose="update",
        )
        if patch is None:
            self.call.emit(
                DegradedEvent(step=step.step, role="belief", fallback="keep previous belief")
            )
        ops = _ops(patch)
        # Without consistency verification only the schema is checked (`checked=False`).
        candidate = apply_patch_detailed(base, ops, checked=self.method.uses_consistency)
        self._trace_patch(BeliefPatchEvent, step.step, ops, candidate)

        judge = state.health.task == "execution"
        if not self.method.uses_consistency:
            self.call.emit(BeliefCommitEvent(step=step.step, audited=False))
            # The progress call the paper's -CV still makes, on every task (its Table 2 counts
            # sentinel tokens for -CV on RCA); on diagnosis tasks Eq. 4 gives the label below.
            verdict = state.sentinel.judge_progress(candidate, step, turn.gap, before=base)
            update = Update(
                candidate.belief,
                accepted=True,
                progress=verdict.progress if judge else 0,
                degraded=verdict.failed,
            )
        else:
            update = self.validate(state, base, ops, candidate, step, turn.gap, judge)
        d = None
        progress = update.progress
        if state.health.task == "diagnosis":
            d, progress = diagnostic_progress(
                _confidences(base), _confidences(update.belief), state.health.eps_diag
            )
        if not update.accepted:
            progress = 0  # the belief did not move
        if state.observation.success:
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
        state: EpisodeState,
        base: Belief,
        ops: list[Any],
        candidate: PatchOutcome,
        step: Transition,
        gap: Gap | None,
        judge: bool,
    ) -> Update:
        """Rules, then the LLM audit; one revision (the belief model gets its patch, the
        findings and the evidence, and may answer an audit finding with evidence instead of
        complying); one re-check; else keep the previous belief (DESIGN §3.3)."""
        sentinel = state.sentinel
        verdict = sentinel.check(candidate, ops, step, gap, before=base, judge=judge)
        if not verdict.findings:
            self.call.emit(BeliefCommitEvent(step=step.step))
            return Update(candidate.belief, True, verdict.progress, verdict.failed)
        revision = self._belief_patch(
            state,
            prompts.belief_revision(
                _render(base, state.limits.belief),
                step,
                ops,
                verdict.findings,
                sentinel.evidence(verdict.findings, step),
                diagnostic=state.diagnostic,
                note=state.limits.belief.patch_note,
            ),
            step=step.step,
            purpose="revision",
            schema=revision_schema(state.limits.belief.bounds),
        )
        if revision is None:
            self.call.emit(
                BeliefRejectEvent(step=step.step, findings=verdict.findings, reason="no revision")
            )
            return Update(base, False, 0, degraded=True)
        revised_ops = _ops(revision)
        revised = apply_patch_detailed(base, revised_ops)
        self._trace_patch(RevisionEvent, step.step, revised_ops, revised)
        answers = revision.answers if isinstance(revision, BeliefRevision) else []
        contested = sentinel.answered(verdict, answers)
        recheck = sentinel.check(
            revised, revised_ops, step, gap, before=base, judge=judge, contested=contested
        )
        failed = verdict.failed or recheck.failed
        if recheck.findings:
            self.call.emit(BeliefRejectEvent(step=step.step, findings=recheck.findings))
            return Update(base, False, 0, failed)
        self.call.emit(BeliefCommitEvent(step=step.step, revised=True))
        return Update(revised.belief, True, recheck.progress, failed)

    def global_audit(self, state: EpisodeState, step: int) -> Belief:
        """Every N steps: the whole belief against a compact trajectory; fix what is supported."""
        belief = state.belief
        if not self.method.uses_consistency:
            return belief
        issues = state.sentinel.global_audit(belief, _render(belief, state.limits.sentinel), step)
        if not issues:
            return belief
        fix = self._belief_patch(
            state,
            prompts.global_revision(
                _render(belief, state.limits.belief),
                [issue_text(i) for i in issues],
                diagnostic=state.diagnostic,
                note=state.limits.belief.patch_note,
            ),
            step=step,
            purpose="global_revision",
        )
        ops = _ops(fix)
        outcome = apply_patch_detailed(belief, ops)
        self._trace_patch(RevisionEvent, step, ops, outcome, scope="global")
        observations = state.transcript.observations
        if check_rules(outcome.belief, observations, patch=ops, changed=outcome.changed):
            self.call.emit(BeliefRejectEvent(step=step, scope="global"))
            return belief
        self.call.emit(BeliefCommitEvent(step=step, scope="global"))
        return self.keep_active_gap(
            belief.active_gap, outcome.belief, state.constraint, prefer=state.preferred_gap
        )

    # -- decision ------------------------------------------------------------------------------

    def decide(self, state: EpisodeState, turn: StepStart) -> Decision:
        """The next action, settled (validated, repaired or fallen back) and traced."""
        observation, constraint, steps = state.observation, state.constraint, state.transcript.steps
        admissible = observation.admissible_actions
        mode = self.config.recovery
        if admissible is not None and constraint is not None and mode in ("hard", "both"):
            admissible = allowed_actions(admissible, constraint)
        shown = constraint.render() if constraint and mode in ("soft", "both") else None
        last_action = steps[-1].action if steps else ""
        limits = state.limits.policy
        answer = self.call(
            "policy",
            self.models.policy,
            prompts.policy(
                state.goal,
                _render(turn.belief, limits),
                Transition(turn.t, last_action, observation.text),
                admissible,
                shown,
                observation.tools,
                max_calls=observation.max_calls,
                observation_chars=self.config.policy_observation_chars,
                action_limit=limits.action_list,
            ),
            decision_schema(
                admissible, observation.tools, limits.bounds, max_calls=observation.max_calls
            ),
            step=turn.t,
            max_tokens=limits.max_tokens,
            temperature=self.config.temperature,
            purpose="act",
        )
        recent = [s.action for s in steps[-2:]]
        return self.call.settle_action(answer, observation, admissible, recent, turn.t)

    # -- active gap, health, recovery ----------------------------------------------------------

    def keep_active_gap(
        self,
        before: Gap | None,
        belief: Belief,
        constraint: RecoveryConstraint | None,
        *,
        prefer: Literal["epistemic", "achievement"],
    ) -> Belief:
        """The active gap is retained until resolved (`retain_active_gap`); under a recovery
        constraint the constraint's gap is held the same way."""
        pinned = constraint.active_gap_id if constraint else None
        held = pinned or (before.id if before else None)
        choice = retain_active_gap(belief, held, prefer=prefer, pinned=pinned is not None)
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
            HealthEvent.of(
                report, step=belief.step, active_gap=gap.id if gap else None, theta_h=cfg.theta_h
            )
        )
        return report

    def recover(self, state: EpisodeState, report: HealthReport) -> RecoveryConstraint | None:
        """Compose (or refresh) the constraint while trapped; release it once H > theta_H."""
        latest, constraint, episode = state.window[-1], state.constraint, state.episode
        belief = latest.belief
        if report.trapped:
            episode.trapped_steps += 1
            episode.patterns[report.pattern or "none"] += 1
            if self.method.generic_recovery:
                new = generic_recovery(report, belief)
            else:
                new = compose_recovery(
                    report,
                    state.transitions,
                    belief,
                    current_state=latest.world,
                    eps_w=state.health.eps_w,
                    max_recent=self.config.max_recent,
                )
            if constraint is None:
                episode.recoveries += 1
            self.call.emit(
                RecoveryEvent(step=belief.step, refreshed=constraint is not None, **new.to_dict())
            )
            return new
        if constraint is not None and should_release(report, state.health):
            self.call.emit(RecoveryReleaseEvent(step=belief.step, health=report.health))
            return None
        return constraint

    # -- helpers -------------------------------------------------------------------------------

    def _observe(
        self, state: EpisodeState, t: int, observation: Observation, action: str | None = None
    ) -> Transition:
        """Record observation t (and the step that led to it) and trace it."""
        state.transcript.observations[t] = observation.text
        self.call.emit(observation_event(t, observation))
        step = Transition(t, action or "", observation.text)
        if action is not None:
            state.transcript.steps.append(step)
        return step

    def _keys(self, state: EpisodeState) -> WorldKeys:
        # The keys of the last window entry are this belief's, unless a global audit changed it
        # since; computing them is the costly part on large beliefs.
        latest = state.window[-1] if state.window else None
        belief = state.belief
        return latest.world if latest and latest.belief is belief else world_keys(belief)

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


def _render(belief: Belief, limits: RoleLimits) -> str:
    return render_belief(belief, max_entities=limits.render_entities)


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
