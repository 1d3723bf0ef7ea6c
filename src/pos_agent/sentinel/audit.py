"""The Belief Sentinel's LLM side (DESIGN §3.2-3.3): the local audit of each candidate belief
(with the execution progress label), the progress judge of the no_consistency ablation, the
periodic global audit, and the support check that drops issues whose evidence does not exist.

The rules (`rules.py`) run first and cost nothing; the audit sees only what changed, its
neighbours, the gaps (with the one active before the step, Δ_t) and the last few transitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pos_agent.belief import Belief, Gap, PatchOutcome, project, render_belief
from pos_agent.events import SentinelEvent
from pos_agent.llm import Model
from pos_agent.roles.caller import RoleCaller
from pos_agent.roles.limits import AuditClips, RoleLimits
from pos_agent.roles.transition import Transition
from pos_agent.sentinel import prompts
from pos_agent.sentinel.rules import check_rules, normalize_quote
from pos_agent.sentinel.schemas import (
    AuditIssue,
    audit_schema,
    global_audit_schema,
    progress_schema,
)


@dataclass
class Transcript:
    """What the sentinel may cite: every observation by step, and the trajectory so far."""

    observations: dict[int, str] = field(default_factory=dict)
    steps: list[Transition] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    """The sentinel's answer on one candidate belief."""

    findings: list[str]
    """Rule findings and supported audit issues, as text for the revision."""
    progress: int
    """Execution progress label (0 when not judged)."""
    failed: bool
    """The audit call gave no answer (the gap/score heuristic stood in)."""


class Sentinel:
    """The LLM audit of one agent, over the agent's transcript."""

    def __init__(
        self,
        call: RoleCaller,
        model: Model,
        limits: RoleLimits,
        transcript: Transcript,
        clips: AuditClips | None = None,
    ) -> None:
        self.call = call
        self.model = model
        self.limits = limits
        self.transcript = transcript
        self.clips = clips or limits.clips

    def check(
        self,
        candidate: PatchOutcome,
        ops: list[object],
        step: Transition,
        gap_before: Gap | None,
        *,
        judge: bool,
    ) -> Verdict:
        """Rules, then the local audit of the changed records; progress judged when `judge`."""
        belief = candidate.belief
        rules = check_rules(
            belief, self.transcript.observations, patch=ops, changed=candidate.changed
        )
        neighbourhood = neighbourhood_of(belief, candidate.changed)
        report = self.call(
            "sentinel",
            self.model,
            prompts.audit(
                render_belief(belief, only=neighbourhood) if neighbourhood else "(nothing changed)",
                gaps_text(belief, gap_before),
                self.transcript.steps[-self.clips.transitions :],
                judge_progress=judge,
                observation_chars=self.clips.audit_observation_chars,
            ),
            audit_schema(self.limits.bounds),
            step=step.step,
            max_tokens=self.limits.max_tokens,
            purpose="audit",
        )
        issues = self.supported(report.issues if report else [], belief)
        progress = report.progress if report else _fallback_progress(candidate)
        self.call.emit(
            SentinelEvent(
                step=step.step,
                rules=[f.to_dict() for f in rules],
                audit=[i.model_dump() for i in issues],
                dropped=len(report.issues) - len(issues) if report else 0,
                progress=progress if judge else None,
                reason=(report.reason or "")
                if report
                else "audit unavailable: gap/score heuristic",
            )
        )
        texts = [f"[{f.rule}] {f.reason}" for f in rules] + [issue_text(i) for i in issues]
        return Verdict(texts, int(progress) if judge else 0, failed=report is None)

    def judge_progress(self, belief: Belief, step: Transition, gap_before: Gap | None) -> Verdict:
        """The progress question alone (no_consistency: no audit, progress still judged)."""
        judgment = self.call(
            "sentinel",
            self.model,
            prompts.progress(
                gaps_text(belief, gap_before),
                step,
                observation_chars=self.clips.audit_observation_chars,
            ),
            progress_schema(self.limits.bounds),
            step=step.step,
            max_tokens=self.limits.max_tokens,
            purpose="progress",
        )
        return Verdict([], int(judgment.progress) if judgment else 0, failed=judgment is None)

    def global_audit(self, belief: Belief, rendered: str, step: int) -> list[AuditIssue]:
        """The whole belief against a compact trajectory; the supported issues."""
        report = self.call(
            "sentinel",
            self.model,
            prompts.global_audit(
                rendered,
                self.transcript.steps,
                observation_chars=self.clips.global_observation_chars,
            ),
            global_audit_schema(self.limits.bounds),
            step=step,
            max_tokens=self.limits.max_tokens,
            purpose="global_audit",
        )
        issues = self.supported(report.issues if report else [], belief)
        self.call.emit(
            SentinelEvent(
                step=step,
                scope="global",
                audit=[i.model_dump() for i in issues],
                dropped=len(report.issues) - len(issues) if report else 0,
            )
        )
        return issues

    def supported(self, issues: Sequence[AuditIssue], belief: Belief) -> list[AuditIssue]:
        """Drop audit issues whose cited evidence does not exist (DESIGN §3.3)."""
        kept = []
        for issue in issues:
            if issue.evidence_step is not None:
                text = self.transcript.observations.get(issue.evidence_step)
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

    def evidence(self, findings: Sequence[str], step: Transition) -> str:
        """The observations the findings cite (and this step's), for the revision."""
        cited = " ".join(findings)
        steps = sorted({step.step, *(s for s in range(step.step) if f"step {s}" in cited)})
        observations = self.transcript.observations
        return "\n".join(
            f"step {s}: {prompts.clip(observations[s], self.clips.evidence_chars)}"
            for s in steps
            if s in observations
        )


def neighbourhood_of(belief: Belief, changed: frozenset[str]) -> set[str]:
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
            entities |= project(belief, gap).entities
    for relation in belief.relations.values():
        src, dst = belief.entity_of(relation.src), belief.entity_of(relation.dst)
        if src in entities and dst:
            entities.add(dst)
        elif dst in entities and src:
            entities.add(src)
    return entities


def gaps_text(belief: Belief, gap_before: Gap | None) -> str:
    """The gap the step is judged against (Δ_t, even when the step resolved it), then the open
    gaps now with the active one marked."""
    lines = []
    if gap_before is not None:
        now = belief.gaps.get(gap_before.id)
        resolved = " (resolved by this step)" if now is not None and not now.is_open else ""
        lines.append(
            f"Gap active before this step: {gap_before.id} {gap_before.kind}: "
            f"{gap_before.text}{resolved}"
        )
    else:
        lines.append("Gap active before this step: none")
    open_gaps = belief.open_gaps
    lines.append("Open gaps now (* = active):" if open_gaps else "Open gaps now: none")
    for gap in open_gaps:
        mark = "*" if gap.id == belief.active_gap_id else "-"
        lines.append(f"{mark} {gap.id} {gap.kind}: {gap.text}")
    return "\n".join(lines)


def issue_text(issue: AuditIssue) -> str:
    where = (
        f" (step {issue.evidence_step}: {issue.quote!r})" if issue.evidence_step is not None else ""
    )
    fix = f" Fix: {issue.fix}" if issue.fix else ""
    return f"[audit {issue.kind}] {', '.join(issue.records)}: {issue.problem}{where}.{fix}"


def _fallback_progress(candidate: PatchOutcome) -> int:
    """Without a sentinel answer: progress iff the patch resolved a gap."""
    return int(any(op.get("op") == "resolve_gap" for op in candidate.applied))
