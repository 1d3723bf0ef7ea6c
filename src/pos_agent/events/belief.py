"""The belief's events: B0, each patch and revision, the sentinel's findings, the commit or
rejection of the candidate, and the active gap's changes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pos_agent.events.base import Event, Scope


class BeliefInitEvent(Event):
    """The initial belief B0, in full."""

    event: Literal["belief_init"] = "belief_init"
    ops: list[Any] = Field(default_factory=list)
    rejected: list[dict[str, Any]] = Field(default_factory=list)
    belief: dict[str, Any] = Field(description="`Belief.to_dict()` of B0.")
    degraded: bool = Field(default=False, description="The belief model gave no usable patch.")


class _PatchFields(Event):
    ops: list[Any] = Field(default_factory=list, description="The ops as the model wrote them.")
    applied: list[dict[str, Any]] = Field(default_factory=list, description="Normalized ops.")
    rejected: list[dict[str, Any]] = Field(
        default_factory=list, description="Ops `apply_patch` refused, with reasons."
    )
    changed: list[str] = Field(default_factory=list, description="Ids created/changed/removed.")
    scope: Scope = "local"


class BeliefPatchEvent(_PatchFields):
    """The belief model's patch for this step, applied to B_t (a candidate, not yet committed)."""

    event: Literal["belief_patch"] = "belief_patch"


class RevisionEvent(_PatchFields):
    """A corrected patch after sentinel findings (scope global: after the global audit)."""

    event: Literal["revision"] = "revision"


class SentinelEvent(Event):
    """The sentinel's findings on a candidate: rules, supported audit issues, progress label."""

    event: Literal["sentinel"] = "sentinel"
    scope: Scope = "local"
    rules: list[dict[str, Any]] = Field(default_factory=list, description="Rule findings.")
    audit: list[dict[str, Any]] = Field(
        default_factory=list, description="Audit issues whose evidence holds."
    )
    dropped: int = Field(
        default=0,
        description="Audit issues dropped: unsupported, or on a finding answered with evidence.",
    )
    answered: int = Field(
        default=0, description="Findings the belief model answered with evidence that holds."
    )
    progress: int | None = Field(default=None, description="Execution progress label, if judged.")
    reason: str = ""


class BeliefCommitEvent(Event):
    """The candidate became B_t+1."""

    event: Literal["belief_commit"] = "belief_commit"
    scope: Scope = "local"
    revised: bool = Field(default=False, description="The committed patch is the revision.")
    audited: bool = Field(default=True, description="False in the no_consistency ablation.")


class BeliefRejectEvent(Event):
    """Findings remained after the revision: the previous belief is kept."""

    event: Literal["belief_reject"] = "belief_reject"
    scope: Scope = "local"
    findings: list[str] = Field(default_factory=list)
    reason: str = ""


class ActiveGapEvent(Event):
    """The active gap changed, or a switch the belief model asked for was refused."""

    event: Literal["active_gap"] = "active_gap"
    previous: str | None = None
    active: str | None = None
    reason: str = Field(default="", description="Why: resolved, chosen, pinned, kept, ...")
    requested: str | None = Field(
        default=None, description="The gap the belief model asked for, when it was refused."
    )
