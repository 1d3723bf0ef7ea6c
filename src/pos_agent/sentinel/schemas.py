"""The sentinel's answer schemas: the local audit, the progress judgment and the global audit.

The standard classes carry no length bounds; `audit_schema`, ... build the bounded variant for
the sentinel role's `SchemaBounds`, cached per bounds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel

from pos_agent.roles.limits import SchemaBounds
from pos_agent.roles.schemas import bounded_list, bounded_str, variant_of


class AuditIssue(BaseModel):
    """One problem the sentinel found in the changed part of the belief."""

    records: list[str]
    kind: Literal["internal", "external"]
    problem: str
    evidence_step: int | None = None
    quote: str | None = None
    fix: str | None = None


class Answer(BaseModel):
    """The belief model's answer to one audit finding, instead of complying: the observation
    that shows the record is right."""

    finding: int
    """The finding's number in the list it was shown."""
    evidence_step: int
    quote: str
    """Exact words of that step's observation."""


class AuditReport(BaseModel):
    """The sentinel's local audit of one transition; `progress` only for execution tasks."""

    issues: list[AuditIssue]
    progress: Literal[0, 1] = 0
    reason: str | None = None


class ProgressJudgment(BaseModel):
    """Execution progress alone (the no_consistency ablation, which has no audit)."""

    progress: Literal[0, 1]
    reason: str | None = None


class GlobalAudit(BaseModel):
    """The periodic audit of the whole belief against a compact trajectory."""

    issues: list[AuditIssue]


def _issue(bounds: SchemaBounds) -> Any:
    text = bounded_str(bounds.text_chars)
    return variant_of(
        AuditIssue,
        records=(bounded_list(bounded_str(bounds.name_chars), bounds.issue_records), ...),
        problem=(text, ...),
        quote=(text | None, None),
        fix=(text | None, None),
    )


def answers_field(bounds: SchemaBounds) -> Any:
    """The bounded list of answers a revision may carry (at most one per audit issue)."""
    answer = variant_of(Answer, quote=(bounded_str(bounds.text_chars), ...))
    return bounded_list(answer, bounds.audit_issues)


@lru_cache(maxsize=16)
def audit_schema(bounds: SchemaBounds) -> type[AuditReport]:
    """The local audit's schema."""
    schema: type[AuditReport] = variant_of(
        AuditReport,
        issues=(bounded_list(_issue(bounds), bounds.audit_issues), ...),
        reason=(bounded_str(bounds.text_chars) | None, None),
    )
    return schema


@lru_cache(maxsize=16)
def global_audit_schema(bounds: SchemaBounds) -> type[GlobalAudit]:
    """The global audit's schema."""
    schema: type[GlobalAudit] = variant_of(
        GlobalAudit, issues=(bounded_list(_issue(bounds), bounds.global_audit_issues), ...)
    )
    return schema


@lru_cache(maxsize=16)
def progress_schema(bounds: SchemaBounds) -> type[ProgressJudgment]:
    """The progress judgment's schema (no_consistency)."""
    schema: type[ProgressJudgment] = variant_of(
        ProgressJudgment, reason=(bounded_str(bounds.text_chars) | None, None)
    )
    return schema
