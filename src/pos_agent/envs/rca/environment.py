"""One RCA case as an environment: decision turns of up to 3 tool calls, two budgets, submission.

Budgets (paper appendix C.4): 50 decision turns and at most 150 tool calls; a turn that would
pass the call budget runs the calls that fit, reports the rest as "Not run", and ends the case
as a failure. A malformed action or a failing tool costs its turn and returns an error text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.envs._episode import BackendResult
from pos_agent.envs._types import EnvError
from pos_agent.envs.rca.data import DEFAULT_SPLIT, NEZHA_ENV, RcaData
from pos_agent.envs.rca.scoring import DEFAULT_FAULT_TYPES
from pos_agent.envs.rca.submission import SUBMIT_TOOL, check_submission, score, submit_spec
from pos_agent.envs.rca.telemetry import CaseTelemetry, ToolFailure, import_parquet
from pos_agent.envs.rca.tools import QUERY_TOOLS, QUERY_TOOLS_BY_NAME
from pos_agent.envs.tools import (
    ToolCall,
    ToolEnvironment,
    ToolSpec,
)

# The paper allows 150 tool calls in 50 turns, and the environment offers up to 3 calls a turn.
DEFAULT_MAX_TURNS = 50
DEFAULT_MAX_TOOL_CALLS = 150
CALLS_PER_TURN = 3
# What the harness sends when a policy produced no action: read-only and always valid.
FALLBACK_CALL = ToolCall("get_data_overview", {})


@dataclass
class _Turn:
    """What one decision turn produced."""

    sections: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    terminal: BackendResult | None = None


class RcaEnvironment(ToolEnvironment):
    """One RCA case: query tools over the case folder, submit_root_cause to finish."""

    calls_per_turn = CALLS_PER_TURN

    def __init__(
        self,
        case_id: str,
        *,
        env_name: str = NEZHA_ENV,
        split: str | None = None,
        max_steps: int | None = None,
        max_tool_calls: int | None = None,
        data_dir: str | Path | None = None,
    ) -> None:
        import_parquet()
        data = RcaData.locate(env_name, data_dir)
        folder = data.case_folder(case_id)
        if not (data.answers_dir / f"{folder.name}.json").is_file():
            raise EnvError(
                f"No answer file answers/{folder.name}.json under {data.root}: the case cannot "
                "be scored. Every case folder needs its answer in answers/."
            )
        telemetry = CaseTelemetry(folder)
        system = str(telemetry.task.get("system") or "unknown")
        chosen = split or DEFAULT_SPLIT
        if chosen not in (DEFAULT_SPLIT, system):
            raise EnvError(f"RCA case {folder.name} belongs to {system}, not split {chosen!r}.")
        super().__init__(
            task_id=folder.name,
            max_steps=max_steps or DEFAULT_MAX_TURNS,
            category=system,
            split=chosen,
        )
        self.name = env_name
        self.max_tool_calls = max_tool_calls or DEFAULT_MAX_TOOL_CALLS
        if self.max_tool_calls < 1:
            raise EnvError(f"max_tool_calls must be at least 1 (got {self.max_tool_calls}).")
        self.tool_calls_used = 0
        self._answers_dir = data.answers_dir
        self._telemetry = telemetry
        listed = telemetry.task.get("fault_types")
        self.fault_types = (
            tuple(str(t) for t in listed)
            if isinstance(listed, list) and listed
            else DEFAULT_FAULT_TYPES
        )
        self._specs = (*(tool.spec for tool in QUERY_TOOLS), submit_spec(self.fault_types))

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return list(self._specs)

    @property
    def fallback_call(self) -> ToolCall:
        return FALLBACK_CALL

    # -- BudgetedEnvironment ---------------------------------------------------------------

    def _backend_reset(self) -> BackendResult:
        self.tool_calls_used = 0
        task = self._telemetry.task
        self.goal = (
            "Find the root cause of the alert: the faulty pod or service and the fault type, "
            "then submit them with submit_root_cause."
        )
        text = (
            f"Incident {self.task_id} ({task.get('system', '?')}): "
            f"{task.get('alert_title', 'an alert fired')}.\n"
            f"{task.get('description', '')}\n\n"
            f"You are the on-call SRE. Investigate with the tools, then call submit_root_cause "
            f"(fault types: {', '.join(self.fault_types)}). Budget: {self.max_steps} turns, "
            f"at most {self.max_tool_calls} tool calls; a turn is one call or a JSON list of up "
            f"to {CALLS_PER_TURN} calls.\n"
        ) + self.tool_instructions(
            '{"tool": "query_metrics", "args": {"metric": "CpuUsageRate(%)"}}'
        )
        return BackendResult(text=text, admissible_actions=None, extra=self._base_info())

    def _backend_step(self, action: str) -> BackendResult:
        calls = self.parse_turn(action)
        if isinstance(calls, BackendResult):
            return calls
        turn = self._run_turn(calls)
        if turn.terminal is not None:
            return turn.terminal
        text = "\n\n".join(turn.sections)
        result = BackendResult(text=text, admissible_actions=None, extra=self._base_info())
        if turn.errors and len(turn.errors) == len(turn.sections):
            result.invalid = True
            result.error = " | ".join(turn.errors)
        if self.tool_calls_used >= self.max_tool_calls:
            result.done = True
            result.text += (
                f"\n\n[Tool-call budget of {self.max_tool_calls} exhausted: the case ends as a "
                "failure.]"
            )
            result.extra.update(self._failure_info())
            result.extra["budget_exhausted"] = True
            return result
        result.text += (
            f"\n[{self.max_steps - self.steps_used} turn(s), "
            f"{self.max_tool_calls - self.tool_calls_used} tool call(s) left]"
        )
        return self._pending(result)

    def _backend_restart(self) -> None:
        """Nothing runs in the background: a restart has nothing to replace."""

    def _backend_close(self) -> None:
        """Nothing to stop."""

    # -- turns ------------------------------------------------------------------------------

    def _run_turn(self, calls: list[ToolCall]) -> _Turn:
        turn = _Turn()
        several = len(calls) > 1
        for number, call in enumerate(calls, start=1):
            header = f"[{number}] {call.tool}\n" if several else ""
            if self.tool_calls_used >= self.max_tool_calls:
                turn.sections.append(f"{header}Not run: the tool-call budget is used up.")
                turn.errors.append("tool-call budget used up")
                continue
            self.tool_calls_used += 1
            if call.tool == SUBMIT_TOOL:
                outcome = self._submit(call)
                if isinstance(outcome, str):
                    turn.sections.append(f"{header}{outcome}")
                    turn.errors.append(outcome)
                    continue
                earlier = "\n\n".join(turn.sections)
                outcome.text = f"{earlier}\n\n{header}{outcome.text}" if earlier else outcome.text
                turn.terminal = outcome
                return turn
            try:
                output = QUERY_TOOLS_BY_NAME[call.tool].run(self._telemetry, call)
            except ToolFailure as failure:
                output = f"Error: {failure}"
                turn.errors.append(str(failure))
            except Exception as exc:  # a tool bug must cost one call, not the case
                output = f"Error: {call.tool} failed ({type(exc).__name__}: {exc})."
                turn.errors.append(output)
            turn.sections.append(f"{header}{output}")
        return turn

    def _submit(self, call: ToolCall) -> BackendResult | str:
        """The terminal result, or the error text of a submission naming an unknown entity."""
        try:
            submission = check_submission(call, self._telemetry)
        except ToolFailure as failure:
            return f"Submission not accepted: {failure} Submit again."
        result, info = score(submission, self._answers_dir, self.task_id, self._telemetry)
        verdict = "correct" if result.joint else "not fully correct"
        return BackendResult(
            text=f"Root cause submitted: {submission.entity}, {submission.fault_type}. The case "
            f"is closed ({verdict}: FT {int(result.ft)}, RCL {int(result.rcl)}).",
            admissible_actions=None,
            done=True,
            success=result.joint,
            score=1.0 if result.joint else 0.0,
            extra={**self._base_info(), **info},
        )

    # -- info -------------------------------------------------------------------------------

    def _base_info(self) -> dict[str, Any]:
        return {
            "subset": self.category,
            "tool_calls_used": self.tool_calls_used,
            "max_tool_calls": self.max_tool_calls,
        }

    def _failure_info(self) -> dict[str, Any]:
        return {"metrics": {"FT": 0, "RCL": 0, "Joint": 0}, "judge": "none"}

    def _pending(self, result: BackendResult) -> BackendResult:
        """A non-terminal result; on the last turn it carries the failure metrics."""
        if not result.done and self.steps_used >= self.max_steps:
            result.extra.update(self._failure_info())
        return result
