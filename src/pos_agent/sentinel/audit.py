"""The Belief Sentinel's LLM side (docs/concepts/sentinel.md): the local audit of each candidate belief
(with the execution progress label), the progress judge of the no_consistency ablation, the
periodic global audit, and the support check that drops issues whose evidence does not exist.

The rules (`rules.py`) run first and cost nothing; the audit sees what changed (B_t+1), the same
records as they were in B_t with those the step removed, the gaps (with the one active before
the step, Δ_t) and the last few transitions: Algorithm 1 labels progress from (B_t, B_t+1, Δ_t).
The no_consistency judge reads exactly the same, and answers only the progress question.

In the revision the belief model may answer an audit finding with evidence instead of
complying (`answered`): an answer whose step and quote hold is shown to the re-check, and an
issue on the same records is then dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pos_agent.belief import Belief, Gap, PatchOutcome, project, render_belief
from pos_agent.belief.model import Relation, State, id_order
from pos_agent.events import SentinelEvent
from pos_agent.llm import Model
from pos_agent.roles.caller import RoleCaller
from pos_agent.roles.limits import AuditClips, RoleLimits
from pos_agent.sentinel import prompts
from pos_agent.sentinel.rules import check_rules, normalize_quote
from pos_agent.sentinel.schemas import (
    Answer,
    AuditIssue,
    audit_schema,
    global_audit_schema,
    progress_schema,
)
from pos_agent.transition import Transition


@dataclass
class Transcript:
    """What the sentinel may cite: every observation by step, and the trajectory so far."""

    observations: dict[int, str] = field(default_factory=dict)
    steps: list[Transition] = field(default_factory=list)


@dataclass(frozen=True)
class Flag:
    """One finding as the revision sees it."""

    text: str
    records: tuple[str, ...]
    contestable: bool
    """An audit issue, which the belief model may answer with evidence; a rule finding is a
    fact about the record itself and is fixed in the patch."""


@dataclass(frozen=True)
class Contested:
    """A finding the belief model answered with evidence that holds."""

    flag: Flag
    answer: Answer

    def text(self) -> str:
        return f"{self.flag.text} Answer: step {self.answer.evidence_step}: {self.answer.quote!r}"


@dataclass(frozen=True)
class Verdict:
    """The sentinel's answer on one candidate belief."""

    flags: list[Flag]
    """Rule findings and supported audit issues."""
    progress: int
    """Execution progress label (0 when not judged)."""
    failed: bool
    """The audit call gave no answer (the gap/score heuristic stood in)."""

    @property
    def findings(self) -> list[str]:
        """The findings as text for the revision, numbered in this order."""
        return [f.text for f in self.flags]


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
        before: Belief,
        judge: bool,
        contested: Sequence[Contested] = (),
    ) -> Verdict:
        """Rules, then the local audit of the changed records against B_t (`before`); progress
        judged when `judge`. Issues on records of a `contested` finding are dropped."""
        belief = candidate.belief
        rules = check_rules(
            belief, self.transcript.observations, patch=ops, changed=candidate.changed
        )
        report = self.call(
            "sentinel",
            self.model,
            prompts.audit(
                *self._transition_view(candidate, before, gap_before),
                judge_progress=judge,
                observation_chars=self.clips.audit_observation_chars,
                answered=[c.text() for c in contested],
            ),
            audit_schema(self.limits.bounds),
            step=step.step,
            max_tokens=self.limits.max_tokens,
            purpose="audit",
        )
        issues = self.supported(report.issues if report else [], belief)
        answered = {r for c in contested for r in c.flag.records}
        issues = [i for i in issues if not answered & set(i.records)]
        progress = report.progress if report else _fallback_progress(candidate)
        self.call.emit(
            SentinelEvent(
                step=step.step,
                rules=[f.to_dict() for f in rules],
                audit=[i.model_dump() for i in issues],
                dropped=len(report.issues) - len(issues) if report else 0,
                answered=len(contested),
                progress=progress if judge else None,
                reason=(report.reason or "")
                if report
                else "audit unavailable: gap/score heuristic",
            )
        )
        flags = [Flag(f"[{f.rule}] {f.reason}", f.records, False) for f in rules]
        flags += [Flag(issue_text(i), tuple(i.records), True) for i in issues]
        return Verdict(flags, int(progress) if judge else 0, failed=report is None)

    def judge_progress(
        self, candidate: PatchOutcome, step: Transition, gap_before: Gap | None, *, before: Belief
    ) -> Verdict:
        """The progress question alone, on the audit's inputs (no_consistency: no rules and no
        audit; the call the paper's -CV still makes)."""
        judgment = self.call(
            "sentinel",
            self.model,
            prompts.progress(
                *self._transition_view(candidate, before, gap_before),
                observation_chars=self.clips.audit_observation_chars,
            ),
            progress_schema(self.limits.bounds),
            step=step.step,
            max_tokens=self.limits.max_tokens,
            purpose="progress",
        )
        return Verdict([], int(judgment.progress) if judgment else 0, failed=judgment is None)

    def _transition_view(
        self, candidate: PatchOutcome, before: Belief, gap_before: Gap | None
    ) -> tuple[str, str, str, list[Transition]]:
        """What the audit and the progress judge read of one transition: the changed records and
        their neighbours in B_t+1, the same records in B_t (and those removed), the gaps, and the
        last transitions."""
        belief = candidate.belief
        neighbourhood = neighbourhood_of(belief, candidate.changed)
        changed = (
            render_belief(belief, only=neighbourhood) if neighbourhood else "(nothing changed)"
        )
        return (
            changed,
            before_text(before, belief, candidate.changed),
            gaps_text(belief, gap_before),
            self.transcript.steps[-self.clips.transitions :],
        )

    def answered(self, verdict: Verdict, answers: Sequence[Answer]) -> list[Contested]:
        """The belief model's answers that hold: a contestable finding it names by number, an
        evidence step that exists and a quote found in that step's observation."""
        held = []
        for answer in answers:
            if not 1 <= answer.finding <= len(verdict.flags):
                continue
            flag = verdict.flags[answer.finding - 1]
            text = self.transcript.observations.get(answer.evidence_step)
            needle = normalize_quote(answer.quote)
            if flag.contestable and text and needle and needle in normalize_quote(text):
                held.append(Contested(flag, answer))
        return held

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
        """Drop audit issues whose cited evidence does not exist."""
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


def before_text(before: Belief, after: Belief, changed: frozenset[str]) -> str:
    """The changed records as B_t had them ("new" when B_t had none), and those the step
    removed."""
    lines, removed = [], []
    for record_id in sorted(changed, key=id_order):
        old = before.record(record_id)
        if old is not None and after.record(record_id) is None:
            removed.append(f"- {record_id} {describe(before, old)}")
        elif isinstance(old, State | Relation) or old is None:
            lines.append(f"- {record_id} " + (describe(before, old) if old else "(new)"))
    text = "Before this step (B_t), the changed records were:\n" + (
        "\n".join(lines) if lines else "- (none)"
    )
    if removed:
        text += "\nRemoved by this step:\n" + "\n".join(removed)
    return text


def describe(belief: Belief, record: object) -> str:
    """One record in a line."""
    if isinstance(record, State):
        entity = belief.entities.get(record.entity)
        name = entity.name if entity else record.entity
        return f"{name} {record.attribute}={record.value} ({record.source} {record.confidence:.2f})"
    if isinstance(record, Relation):
        return f"{record.src} {record.type} {record.dst} ({record.source} {record.confidence:.2f})"
    if isinstance(record, Gap):
        return f"gap {record.kind}: {record.text}"
    return f"entity {getattr(record, 'name', '')}"


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
