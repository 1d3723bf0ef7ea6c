"""The RCA query tools, in the order the agent sees them; each module keeps a tool's spec next to
the function that answers it. All of them are pure reads of one case's telemetry with bounded
text out."""

from __future__ import annotations

from pos_agent.envs.rca.tools.base import RcaTool
from pos_agent.envs.rca.tools.logs import LOGS_TOOL
from pos_agent.envs.rca.tools.metrics import METRICS_TOOL
from pos_agent.envs.rca.tools.overview import ALERT_TOOL, OVERVIEW_TOOLS
from pos_agent.envs.rca.tools.traces import TRACES_TOOL

QUERY_TOOLS: tuple[RcaTool, ...] = (
    *OVERVIEW_TOOLS,
    METRICS_TOOL,
    LOGS_TOOL,
    TRACES_TOOL,
    ALERT_TOOL,
)
QUERY_TOOLS_BY_NAME = {tool.spec.name: tool for tool in QUERY_TOOLS}

__all__ = ["QUERY_TOOLS", "QUERY_TOOLS_BY_NAME", "RcaTool"]
