"""The PoS agent: every decision is conditioned on a validated belief, not on a transcript.

One episode (DESIGN §1):

    B0 <- initialize(goal, o0)                                   belief model
    for t in 0..T-1:
        a_t   <- policy(B_t, active gap, recovery constraint)    policy model
        o_t+1 <- env.step(a_t)
        B~    <- apply_patch(B_t, update(B_t, a_t, o_t+1))       belief model
        B_t+1 <- sentinel(B_t, B~): rules, LLM audit, one revision, else keep B_t
        u_t+1 <- progress label (sentinel judgment, or Eq. 4 for diagnosis; success = 1)
        keep the active gap unless resolved
        from the K-th validated transition: health H; trapped -> diagnose, compose C; else release C

The variants share this loop: `no_consistency` skips the audit and revision (progress is still
judged), `no_trapping` skips health and recovery, `generic_recovery` replaces the factorized
constraint with one generic line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pos_agent.agents import prompts
from pos_agent.agents.base import (
    Episode,
    RoleCaller,
    StepCallback,
    StepInfo,
    finish,
    observation_info,
)
from pos_agent.agents.prompts import Step
from pos_agent.agents.schemas import (
    AuditIssue,
    AuditReport,
    BeliefPatch,
    GlobalAudit,
    ProgressJudgment,
    decision_schema,
)
from pos_agent.belief import (
    Belief,
    PatchOutcome,
    apply_patch_detailed,
    focus_keys,
    project,
    render_belief,
    select_active_gap,
    world_keys,
)
from pos_agent.envs import Environment, Observation
from pos_agent.health import (
    HealthConfig,
    HealthReport,
    WindowStep,
    assess_window,
    diagnostic_progress,
)
from pos_agent.health.recovery import (
    RecoveryConstraint,
    RecoveryMode,
    Transition,
    allowed_actions,
    compose_recovery,
    generic_recovery,
    should_release,
    world_fingerprint,
)
from pos_agent.llm import Model, TokenLedger
from pos_agent.sentinel import check_rules, normalize_quote
from pos_agent.trace import TraceWriter

Variant = Literal["pos", "no_consistency", "no_trapping", "generic_recovery"]
VARIANTS: tuple[Variant, ...] = ("pos", "no_consistency", "no_trapping", "generic_recovery")


@dataclass
class PosConfig:
    """Settings of the PoS loop; defaults follow the paper's Table 8."""

    variant: Variant = "pos"
    """Which method: the full loop or one of the ablations."""
    recovery: RecoveryMode = "soft"
    """soft: constraint in the prompt (paper); hard: forbidden actions removed; both."""
    health: HealthConfig = field(default_factory=HealthConfig)
    """Window, lags and thresholds of the health check."""
    audit_transitions: int = 4
    """Transitions the local audit sees."""
    global_audit_every: int = 8
    """Steps between global audits (32 for long-context tool tasks); 0 disables them."""
    max_recent: int = 4
    """No-progress transitions shown with a recovery constraint."""
    render_entities: int | None = 40
    """Entities rendered into the policy prompt (active gap's first); None for all."""
    policy_tokens: int = 128
    belief_tokens: int = 768
    sentinel_tokens: int = 512
    temperature: float = 0.0


@dataclass(frozen=True)
class RoleModels:
    """The model behind each role; one model may serve all three."""

    policy: Model
    belief: Model
    sentinel: Model

    @classmethod
    def single(cls, model: Model) -> RoleModels:
        return cls(model, model, model)


@dataclass
class _Validated:
    """One validated transition in the health window."""

    belief: Belief
    world: Any
    progress: int


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

    # -- the episode ----------------------------------------------------------------------------

    def run(self, env: Environment) -> Episode:
        cfg = self.config
        health_cfg = replace(cfg.health, task=_task_of(env))
        self.diagnostic = health_cfg.task == "diagnostic"
        self.observations: dict[int, str] = {}
        self.trajectory: list[Step] = []
        episode = Episode()
        observation = env.reset()
        self.observations[0] = observation.text
        self.call.emit("observation", 0, **observation_info(observation))
        belief = self.initialize(env.goal, observation)
        window: deque[_Validated] = deque(maxlen=health_cfg.window)
        transitions: deque[Transition] = deque(maxlen=health_cfg.window)
        constraint: RecoveryConstraint | None = None
        try:
            for t in range(env.max_steps):
                # The keys of the last window entry are this belief's, unless a global audit
                # changed it since; computing them is the costly part on large beliefs.
                latest = window[-1] if window else None
                keys = latest.world if latest and latest.belief is belief else world_keys(belief)
                state_before = world_fingerprint(keys)
                action, fell_back = self.decide(env.goal, belief, observation, t, constraint)
                observation = env.step(action)
                episode.steps = t + 1
                self.observations[t + 1] = observation.text
                self.call.emit("observation", t + 1, **observation_info(observation))
                step = Step(t + 1, action, observation.text)
                self.trajectory.append(step)

                belief, progress, degraded = self.update(belief, step, observation, health_cfg)
                degraded += fell_back
                episode.degraded_steps += degraded
                if observation.done:
                    self._report(
                        StepInfo(t + 1, action, observation.success, degraded=bool(degraded))
                    )
                    break
                belief = self.keep_active_gap(belief, constraint)
                transitions.append(
                    Transition(t + 1, action, observation.text, progress, state_before)
                )
                window.append(_Validated(belief, world_keys(belief), progress))

                report = None
                if cfg.variant != "no_trapping" and len(window) >= health_cfg.window:
                    report = self.assess(window, belief, health_cfg)
                    constraint = self.recover(
                        report,
                        transitions,
                        belief,
                        constraint,
                        health_cfg,
                        episode,
                        current_state=world_fingerprint(window[-1].world),
                    )
                if cfg.global_audit_every and (t + 1) % cfg.global_audit_every == 0:
                    belief = self.global_audit(belief, t + 1)
                self._report(
                    StepInfo(
                        t + 1,
                        action,
                        observation.success,
                        health=report.health if report else None,
                        trapped=bool(report and report.trapped),
                        pattern=report.pattern if report else None,
                        recovery=constraint is not None,
                        degraded=bool(degraded),
                    )
                )
        finally:
            finish(episode, observation)
            episode.final_belief = belief.to_dict()
        return episode

    # -- belief initialization and update ------------------------------------------------------

    def initialize(self, goal: str, observation: Observation) -> Belief:
        empty = Belief(goal=goal, step=0)
        patch = self.call(
            "belief",
            self.models.belief,
            prompts.belief_init(goal, observation.text, diagnostic=self.diagnostic),
            BeliefPatch,
            step=0,
            max_tokens=self.config.belief_tokens,
            purpose="init",
        )
        ops = _ops(patch)
        outcome = apply_patch_detailed(empty, ops)
        belief = outcome.belief
        if not belief.open_gaps:
            # The loop needs a gap to work on; the goal itself is the first achievement gap.
            belief = apply_patch_detailed(
                belief, [{"op": "add_gap", "kind": "achievement", "text": goal, "activate": True}]
            ).belief
        belief = replace(belief, active_gap_id=select_active_gap(belief, "achievement"))
        self.call.emit(
            "belief_init",
            0,
            ops=ops,
            rejected=[r.to_dict() for r in outcome.rejected],
            belief=belief.to_dict(),
            degraded=patch is None,
        )
        return belief

    def update(
        self, belief: Belief, step: Step, observation: Observation, health_cfg: HealthConfig
    ) -> tuple[Belief, int, int]:
        """B_t+1 and u_t+1 for one transition; the third value counts degraded role calls."""
        base = belief.at_step(step.step)
        degraded = 0
        patch = self.call(
            "belief",
            self.models.belief,
            prompts.belief_update(self._render(belief), step, diagnostic=self.diagnostic),
            BeliefPatch,
            step=step.step,
            max_tokens=self.config.belief_tokens,
            purpose="update",
        )
        if patch is None:
            degraded += 1
            self.call.emit("degraded", step.step, role="belief", fallback="keep previous belief")
        ops = _ops(patch)
        candidate = apply_patch_detailed(base, ops)
        self._trace_patch("belief_patch", step.step, ops, candidate)

        judge = health_cfg.task == "execution"
        if self.config.variant == "no_consistency":
            committed, accepted = candidate.belief, True
            self.call.emit("belief_commit", step.step, revised=False, audited=False)
            progress = self.judge_progress(committed, step) if judge else 0
        else:
            committed, accepted, progress, audit_failed = self.validate(
                base, ops, candidate, step, judge
            )
            degraded += audit_failed
        d = None
        if health_cfg.task == "diagnostic":
            d, progress = diagnostic_progress(
                _confidences(base), _confidences(committed), health_cfg.eps_diag
            )
        if not accepted:
            progress = 0  # the belief did not move
        if observation.success:
            progress = 1
        self.call.emit("progress", step.step, label=progress, accepted=accepted, d=d)
        return committed, progress, degraded

    def validate(
        self, base: Belief, ops: list[Any], candidate: PatchOutcome, step: Step, judge: bool
    ) -> tuple[Belief, bool, int, int]:
        """Rules, then the LLM audit; one revision; else keep the previous belief.

        Returns (belief, accepted, progress label, degraded calls)."""
        findings, progress, failed = self.check(candidate, ops, step, judge)
        if not findings:
            self.call.emit("belief_commit", step.step, revised=False)
            return candidate.belief, True, progress, failed
        revision = self.call(
            "belief",
            self.models.belief,
            prompts.belief_revision(
                self._render(base),
                step,
                ops,
                findings,
                self._evidence(findings, step),
                diagnostic=self.diagnostic,
            ),
            BeliefPatch,
            step=step.step,
            max_tokens=self.config.belief_tokens,
            purpose="revision",
        )
        if revision is None:
            self.call.emit("belief_reject", step.step, findings=findings, reason="no revision")
            return base, False, 0, failed + 1
        revised_ops = _ops(revision)
        revised = apply_patch_detailed(base, revised_ops)
        self._trace_patch("revision", step.step, revised_ops, revised)
        remaining, progress, failed_again = self.check(revised, revised_ops, step, judge)
        failed += failed_again
        if remaining:
            self.call.emit("belief_reject", step.step, findings=remaining)
            return base, False, 0, failed
        self.call.emit("belief_commit", step.step, revised=True)
        return revised.belief, True, progress, failed

    def check(
        self, candidate: PatchOutcome, ops: list[Any], step: Step, judge: bool
    ) -> tuple[list[str], int, int]:
        """Findings (rules + supported audit issues) as text, the progress label, failed calls."""
        belief = candidate.belief
        rules = check_rules(belief, self.observations, patch=ops, changed=candidate.changed)
        neighbourhood = _neighbourhood(belief, candidate.changed)
        recent = self.trajectory[-self.config.audit_transitions :]
        report = self.call(
            "sentinel",
            self.models.sentinel,
            prompts.audit(
                render_belief(belief, only=neighbourhood) if neighbourhood else "(nothing changed)",
                _gaps_text(belief),
                recent,
                judge_progress=judge,
            ),
            AuditReport,
            step=step.step,
            max_tokens=self.config.sentinel_tokens,
            purpose="audit",
        )
        issues = self._supported(report.issues if report else [], belief)
        progress = report.progress if report else _fallback_progress(candidate)
        self.call.emit(
            "sentinel",
            step.step,
            rules=[f.to_dict() for f in rules],
            audit=[i.model_dump() for i in issues],
            dropped=len(report.issues) - len(issues) if report else 0,
            progress=progress,
            reason=(report.reason or "") if report else "audit unavailable: gap/score heuristic",
        )
        texts = [f"[{f.rule}] {f.reason}" for f in rules] + [_issue_text(i) for i in issues]
        return texts, int(progress), int(report is None)

    def judge_progress(self, belief: Belief, step: Step) -> int:
        judgment = self.call(
            "sentinel",
            self.models.sentinel,
            prompts.progress(_gaps_text(belief), step),
            ProgressJudgment,
            step=step.step,
            max_tokens=96,
            purpose="progress",
        )
        return int(judgment.progress) if judgment else 0

    def global_audit(self, belief: Belief, step: int) -> Belief:
        """Every N steps: the whole belief against a compact trajectory; fix what is supported."""
        if self.config.variant == "no_consistency":
            return belief
        report = self.call(
            "sentinel",
            self.models.sentinel,
            prompts.global_audit(self._render(belief), self.trajectory),
            GlobalAudit,
            step=step,
            max_tokens=self.config.sentinel_tokens,
            purpose="global_audit",
        )
        issues = self._supported(report.issues if report else [], belief)
        self.call.emit("sentinel", step, scope="global", audit=[i.model_dump() for i in issues])
        if not issues:
            return belief
        fix = self.call(
            "belief",
            self.models.belief,
            prompts.global_revision(
                self._render(belief),
                [_issue_text(i) for i in issues],
                diagnostic=self.diagnostic,
            ),
            BeliefPatch,
            step=step,
            max_tokens=self.config.belief_tokens,
            purpose="global_revision",
        )
        ops = _ops(fix)
        outcome = apply_patch_detailed(belief, ops)
        self._trace_patch("revision", step, ops, outcome)
        if check_rules(outcome.belief, self.observations, patch=ops, changed=outcome.changed):
            self.call.emit("belief_reject", step, scope="global")
            return belief
        self.call.emit("belief_commit", step, scope="global")
        return outcome.belief

    # -- decision ------------------------------------------------------------------------------

    def decide(
        self,
        goal: str,
        belief: Belief,
        observation: Observation,
        t: int,
        constraint: RecoveryConstraint | None,
    ) -> tuple[str, int]:
        """The next action and whether the policy had to fall back (1) or not (0)."""
        admissible = observation.admissible_actions
        if (
            admissible is not None
            and constraint is not None
            and self.config.recovery in ("hard", "both")
        ):
            admissible = allowed_actions(admissible, constraint)
        shown = constraint is not None and self.config.recovery in ("soft", "both")
        answer = self.call(
            "policy",
            self.models.policy,
            prompts.policy(
                goal,
                self._render(belief),
                Step(t, self.trajectory[-1].action if self.trajectory else "", observation.text),
                admissible,
                constraint.render() if shown and constraint else None,
                observation.tools,
            ),
            decision_schema(admissible, observation.tools),
            step=t,
            max_tokens=self.config.policy_tokens,
            temperature=self.config.temperature,
            purpose="act",
        )
        recent = [s.action for s in self.trajectory[-2:]]
        action, degraded = self.call.settle_action(answer, admissible, recent, t)
        return action, int(degraded)

    # -- active gap, health, recovery ----------------------------------------------------------

    def keep_active_gap(self, belief: Belief, constraint: RecoveryConstraint | None) -> Belief:
        """Keep the active gap until resolved; under a constraint it stays fixed."""
        pinned = constraint.active_gap_id if constraint else None
        if pinned and pinned in belief.gaps and belief.gaps[pinned].is_open:
            chosen: str | None = pinned
        else:
            chosen = select_active_gap(belief, "achievement")
        if chosen != belief.active_gap_id:
            self.call.emit("active_gap", belief.step, previous=belief.active_gap_id, active=chosen)
            belief = replace(belief, active_gap_id=chosen)
        return belief

    def assess(
        self, window: Sequence[_Validated], belief: Belief, cfg: HealthConfig
    ) -> HealthReport:
        """Health of the window, every step re-projected onto the *current* active gap."""
        gap = belief.active_gap_id
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
            "health", belief.step, active_gap=gap, theta_h=cfg.theta_h, **report.to_dict()
        )
        return report

    def recover(
        self,
        report: HealthReport,
        transitions: Sequence[Transition],
        belief: Belief,
        constraint: RecoveryConstraint | None,
        cfg: HealthConfig,
        episode: Episode,
        *,
        current_state: int,
    ) -> RecoveryConstraint | None:
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
                    current_state=current_state,
                    max_recent=self.config.max_recent,
                )
            if constraint is None:
                episode.recoveries += 1
            self.call.emit(
                "recovery", belief.step, refreshed=constraint is not None, **new.to_dict()
            )
            return new
        if constraint is not None and should_release(report, cfg):
            self.call.emit("recovery_release", belief.step, health=report.health)
            return None
        return constraint

    # -- helpers -------------------------------------------------------------------------------

    def _render(self, belief: Belief) -> str:
        return render_belief(belief, max_entities=self.config.render_entities)

    def _supported(self, issues: Sequence[AuditIssue], belief: Belief) -> list[AuditIssue]:
        """Drop audit issues whose cited evidence does not exist (DESIGN §3.3)."""
        kept = []
        for issue in issues:
            if issue.evidence_step is not None:
                text = self.observations.get(issue.evidence_step)
                if text is None:
                    continue
                if issue.quote and normalize_quote(issue.quote) not in normalize_quote(text):
                    continue
            elif issue.kind == "external":
                continue  # an external contradiction must cite the observation
            if not any(belief.record(r) is not None for r in issue.records):
                continue
            kept.append(issue)
        return kept

    def _evidence(self, findings: Sequence[str], step: Step) -> str:
        cited = sorted(
            {step.step, *(s for s in range(step.step) if f"step {s}" in " ".join(findings))}
        )
        return "\n".join(
            f"step {s}: {prompts.clip(self.observations[s], 600)}"
            for s in cited
            if s in self.observations
        )

    def _trace_patch(self, event: str, step: int, ops: list[Any], outcome: PatchOutcome) -> None:
        self.call.emit(
            event,
            step,
            ops=ops,
            applied=outcome.applied,
            rejected=[r.to_dict() for r in outcome.rejected],
            changed=sorted(outcome.changed),
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


def _neighbourhood(belief: Belief, changed: frozenset[str]) -> set[str]:
    """Entities of the changed records plus their one-hop neighbours."""
    entities = {e for e in (belief.entity_of(i) for i in changed) if e is not None}
    for record_id in changed:
        relation = belief.relations.get(record_id)
        if relation is not None:
            entities |= {
                e for e in (belief.entity_of(relation.src), belief.entity_of(relation.dst)) if e
            }
        gap = belief.gaps.get(record_id)
        if gap is not None:
            entities |= project(belief, gap.id).entities
    for relation in belief.relations.values():
        src, dst = belief.entity_of(relation.src), belief.entity_of(relation.dst)
        if src in entities and dst:
            entities.add(dst)
        elif dst in entities and src:
            entities.add(src)
    return entities


def _gaps_text(belief: Belief) -> str:
    lines = ["Open gaps (* = active):"]
    for gap in belief.open_gaps:
        mark = "*" if gap.id == belief.active_gap_id else "-"
        lines.append(f"{mark} {gap.id} {gap.kind}: {gap.text}")
    return "\n".join(lines) if len(lines) > 1 else "Open gaps: none"


def _issue_text(issue: AuditIssue) -> str:
    where = (
        f" (step {issue.evidence_step}: {issue.quote!r})" if issue.evidence_step is not None else ""
    )
    fix = f" Fix: {issue.fix}" if issue.fix else ""
    return f"[audit {issue.kind}] {', '.join(issue.records)}: {issue.problem}{where}.{fix}"


def _confidences(belief: Belief) -> dict[str, float]:
    """Confidences of inferred states and relations: the hypotheses Eq. 4 tracks."""
    out = {s.id: s.confidence for s in belief.states.values() if s.source == "inferred"}
    out.update({r.id: r.confidence for r in belief.relations.values() if r.source == "inferred"})
    return out


def _fallback_progress(candidate: PatchOutcome) -> int:
    """Without a sentinel answer: progress iff the patch resolved a gap."""
    return int(any(op.get("op") == "resolve_gap" for op in candidate.applied))


def _task_of(env: Environment) -> Literal["execution", "diagnostic"]:
    return "diagnostic" if getattr(env, "kind", "execution") == "diagnosis" else "execution"
