"""The context methods' events (the paper's baselines: ACON, PACE, HiAgent, LongHorizon-Harness),
each emitted before the decision it shapes, with that decision's step."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pos_agent.events.base import Event


class AconContextEvent(Event):
    """ACON: what the policy prompt holds besides the task (summary and verbatim turns)."""

    event: Literal["acon_context"] = "acon_context"
    summary_tokens: int = Field(default=0, description="Tokens of the history summary (0: none).")
    turns: list[int] = Field(default_factory=list, description="Steps shown verbatim.")
    pending_tokens: int = Field(description="Summary + turns older than the last 3, in tokens.")
    threshold: int = Field(description="Compression threshold in tokens.")


class CompressionEvent(Event):
    """ACON: one compressor call folded steps into the summary, which it replaces."""

    event: Literal["compression"] = "compression"
    first_folded: int
    last_folded: int
    input_tokens: int = Field(description="What crossed the threshold: summary + aged turns.")
    threshold: int
    summary: str | None = Field(description="The new summary; None: the call failed, kept all.")


class PaceContextEvent(Event):
    """PACE: the granularity of every chunk (one per past step) at this step."""

    event: Literal["pace_context"] = "pace_context"
    pressure: float
    thresholds: list[float] = Field(description="(alpha, beta, gamma) after pressure.")
    scorer: str = Field(description="tfidf, embedding:SPEC, or tfidf after an embedding failure.")
    chunks: list[dict[str, Any]] = Field(
        default_factory=list, description="{id, level, score, weight} per chunk, in order."
    )
    summarized: list[dict[str, Any]] = Field(
        default_factory=list, description="{id, detailed, brief} of chunks summarized now."
    )


class LookupEvent(Event):
    """A memory lookup inside a decision (PACE glimpse, HiAgent retrieve): no action spent."""

    event: Literal["lookup"] = "lookup"
    method: str
    request: str
    ok: bool
    note: str = ""


class HiAgentContextEvent(Event):
    """HiAgent: completed subgoals (folded into summaries) and the active one."""

    event: Literal["hiagent_context"] = "hiagent_context"
    completed: list[dict[str, Any]] = Field(
        default_factory=list, description="{number, text, summary} per completed subgoal."
    )
    active: str | None = Field(default=None, description="The active subgoal, if any.")
    active_number: int | None = None
    active_turns: int = Field(default=0, description="Steps shown in full under it.")


class SubgoalEvent(Event):
    """HiAgent: the policy named a new subgoal; the previous one was folded into a summary."""

    event: Literal["subgoal"] = "subgoal"
    number: int
    text: str
    folded: dict[str, Any] | None = Field(
        default=None, description="{number, text, summary, failed} of the subgoal it closed."
    )


class RoundPlanEvent(Event):
    """LongHorizon-Harness: the manager's answer for one round."""

    event: Literal["round_plan"] = "round_plan"
    round: int
    route: str = Field(description="work, done, blocked or invalid.")
    state: str = ""
    contract: str = ""
    subtask: str = ""
    criteria: str = ""
    boundaries: str = ""
    related: list[int] = Field(default_factory=list, description="Audit rounds cited.")
    refused_done: bool = Field(default=False, description="`done` without an accepting audit.")
    feedback: str | None = None
    actions_left: int = 0


class RoundAuditEvent(Event):
    """LongHorizon-Harness: the auditor's verdict on one round's subtask."""

    event: Literal["round_audit"] = "round_audit"
    round: int
    status: str
    integrity: str
    contract_audit: str
    header_valid: bool
    repaired: bool = Field(default=False, description="A header-repair call was made.")
    downgraded: str | None = None
    blocking: list[str] = Field(default_factory=list)
    executor_actions: int = 0
    auditor_queries: int = 0
    executor_report: str = ""
    report: str = ""
