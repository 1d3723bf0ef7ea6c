"""A query tool of the RCA environment: its spec next to the function that answers it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pos_agent.envs.rca.telemetry import CaseTelemetry
from pos_agent.envs.tools import ToolCall, ToolSpec


@dataclass(frozen=True)
class RcaTool:
    """`answer(telemetry, **args)` returns bounded text or raises ToolFailure."""

    spec: ToolSpec
    answer: Callable[..., str]

    def run(self, telemetry: CaseTelemetry, call: ToolCall) -> str:
        return self.answer(telemetry, **call.args)
