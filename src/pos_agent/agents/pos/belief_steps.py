"""The belief side of the PoS loop: B0 from the first observation, and each transition's
update, validated by the sentinel (rules, LLM audit, one revision, else keep B_t), with its
progress label u_t+1 (docs/concepts/belief.md, docs/concepts/sentinel.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pos_agent.agents.base import RoleCaller
from pos_agent.agents.pos import prompts
from pos_agent.agents.pos.config import RoleModels, VariantParts
from pos_agent.agents.pos.schemas import BeliefPatch, BeliefRevision, patch_schema, revision_schema
from pos_agent.agents.pos.state import EpisodeState, StepStart, Update
from pos_agent.belief import (
    Belief,
    Gap,
    PatchOutcome,
    apply_patch_detailed,
    render_belief,
    with_first_gap,
)
from pos_agent.events import (
    BeliefCommitEvent,
    BeliefInitEvent,
    BeliefPatchEvent,
    BeliefRejectEvent,
    DegradedEvent,
    ProgressEvent,
    RevisionEvent,
    Scope,
)
from pos_agent.health import diagnostic_progress
from pos_agent.llm import Message
from pos_agent.roles.limits import RoleLimits
from pos_agent.transition import Transition


class BeliefSteps:
    """The belief-model calls of `PosAgent` and their validation."""

    models: RoleModels
    call: RoleCaller
    parts: VariantParts

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
        ops = patch_ops(patch)
        outcome = apply_patch_detailed(
            Belief(goal=state.goal, step=0), ops, checked=self.parts.uses_consistency
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
                render_for(turn.belief, state.limits.belief),
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
        ops = patch_ops(patch)
        # Without consistency verification only the schema is checked (`checked=False`).
        candidate = apply_patch_detailed(base, ops, checked=self.parts.uses_consistency)
        self._trace_patch(BeliefPatchEvent, step.step, ops, candidate)

        judge = state.health.task == "execution"
        if not self.parts.uses_consistency:
            self.call.emit(BeliefCommitEvent(step=step.step, audited=False))
            # The progress call -CV still makes on execution tasks, where the label is the
            # sentinel's judgment. On diagnosis tasks Eq. 4 gives the label below, so no call
            # is made (as in the authors' code): a judgment that is thrown away would only add
            # sentinel tokens to -CV's bill.
            update = Update(candidate.belief, accepted=True, progress=0, degraded=False)
            if judge:
                verdict = state.sentinel.judge_progress(candidate, step, turn.gap, before=base)
                update = replace(update, progress=verdict.progress, degraded=verdict.failed)
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
        complying); one re-check; else keep the previous belief."""
        sentinel = state.sentinel
        verdict = sentinel.check(candidate, ops, step, gap, before=base, judge=judge)
        if not verdict.findings:
            self.call.emit(BeliefCommitEvent(step=step.step))
            return Update(candidate.belief, True, verdict.progress, verdict.failed)
        revision = self._belief_patch(
            state,
            prompts.belief_revision(
                render_for(base, state.limits.belief),
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
        revised_ops = patch_ops(revision)
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


def render_for(belief: Belief, limits: RoleLimits) -> str:
    """The belief as a prompt shows it, within the role's limits."""
    return render_belief(belief, max_entities=limits.render_entities)


def patch_ops(patch: BeliefPatch | None) -> list[Any]:
    """The patch as plain JSON ops (unset fields dropped), or nothing."""
    if patch is None:
        return []
    return [op.model_dump(exclude_none=True) for op in patch.ops]


def _confidences(belief: Belief) -> dict[str, float]:
    """Confidences of inferred states and relations: the hypotheses Eq. 4 tracks."""
    out = {s.id: s.confidence for s in belief.states.values() if s.source == "inferred"}
    out.update({r.id: r.confidence for r in belief.relations.values() if r.source == "inferred"})
    return out
