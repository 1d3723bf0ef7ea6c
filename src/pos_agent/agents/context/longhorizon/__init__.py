"""LongHorizon-Harness: Manager / Executor / Auditor rounds over the environment's tools."""

from pos_agent.agents.context.longhorizon.actions import (
    FINISH,
    allowed,
    auditor_view,
    executor_view,
    final_view,
    is_finish,
    role_fallback,
)
from pos_agent.agents.context.longhorizon.reports import (
    AuditReport,
    ManagerPlan,
    parse_audit_report,
    parse_header,
    parse_manager_output,
)
from pos_agent.agents.context.longhorizon.rounds import (
    Decide,
    DecisionRequest,
    LongHorizonHarness,
    LongHorizonOutcome,
    Round,
    RoundObserver,
)

__all__ = [
    "FINISH",
    "AuditReport",
    "Decide",
    "DecisionRequest",
    "LongHorizonHarness",
    "LongHorizonOutcome",
    "ManagerPlan",
    "Round",
    "RoundObserver",
    "allowed",
    "auditor_view",
    "executor_view",
    "final_view",
    "is_finish",
    "parse_audit_report",
    "parse_header",
    "parse_manager_output",
    "role_fallback",
]
