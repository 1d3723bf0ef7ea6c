"""The trap monitor in an openai-agents run (openai-agents 0.20+): run hooks, an input filter
and a tool guardrail.

    from agents import Runner
    from pos_agent.adapters import Guard
    from pos_agent.adapters.openai_agents import PosRunHooks, guard_tool, run_config

    guard = Guard(goal="make the tests pass")
    agent = Agent(name="fixer", tools=[guard_tool(guard, t) for t in tools], model=model)
    result = await Runner.run(agent, task, hooks=PosRunHooks(guard), run_config=run_config(guard))

- `PosRunHooks.on_tool_end` feeds the monitor each tool call (its name and raw arguments, from
  the `ToolContext`) with its result.
- **Where the hint goes:** `HintFilter` (set as `RunConfig.call_model_input_filter`; `run_config`
  builds one) appends the pending hint as a user message to the next model input, once, and
  puts it back at the same place in every later input of the run, so the model keeps it in its
  history as it would a message it had been sent.
- **Blocking:** `guard_tool` returns a copy of a function tool with a tool input guardrail that,
  while the advice blocks the call, answers the model with the refusal text instead of running
  the tool (`ToolGuardrailFunctionOutput.reject_content`).
- On `stop`, `PosRunHooks(guard, raise_on_stop=True)` raises `AgentsTrapStop` (a `TrapStop`)
  out of `Runner.run`: after the tool call that reached it, or, when `guard_tool` refused that
  call (the SDK runs no tool hook then), before the next model call.
"""

from __future__ import annotations

import copy
from typing import Any

try:
    from agents import RunConfig, RunContextWrapper, RunHooks
    from agents.exceptions import AgentsException
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool import FunctionTool
    from agents.tool_guardrails import (
        ToolGuardrailFunctionOutput,
        ToolInputGuardrail,
        ToolInputGuardrailData,
    )
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "pos_agent.adapters.openai_agents needs openai-agents: "
        'pip install "pos-agent[openai-agents]"'
    ) from error

from pos_agent.adapters.guard import Guard, TrapStop
from pos_agent.monitor import ToolCall

__all__ = ["AgentsTrapStop", "HintFilter", "PosRunHooks", "guard_tool", "run_config"]


class AgentsTrapStop(AgentsException, TrapStop):
    """`TrapStop` as the SDK's own exception, so that `Runner.run` raises it as it is (it wraps
    any other exception from a hook in a `UserError`)."""


class PosRunHooks(RunHooks[Any]):
    """Run hooks that feed a `Guard` each local tool call and its result."""

    def __init__(self, guard: Guard, *, raise_on_stop: bool = False) -> None:
        self.guard = guard
        self.raise_on_stop = raise_on_stop

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Any, tool: Any, result: object
    ) -> None:
        name = getattr(context, "tool_name", None) or getattr(tool, "name", None) or "tool"
        arguments = getattr(context, "tool_arguments", "") or ""
        report = self.guard.feed(ToolCall(str(name), arguments), result)
        if self.raise_on_stop and report is not None and report.advice.kind == "stop":
            raise AgentsTrapStop(report)

    async def on_llm_start(
        self, context: RunContextWrapper[Any], agent: Any, system_prompt: Any, input_items: Any
    ) -> None:
        # A call that `guard_tool` refused never reaches `on_tool_end` (the SDK skips the
        # tool's hooks), but the guard counted it: the stop it reached ends the run here,
        # before the next model call.
        last = self.guard.last
        if self.raise_on_stop and last is not None and self.guard.stopped:
            raise AgentsTrapStop(last)


class HintFilter:
    """A `call_model_input_filter` that shows the guard's hint in the model input.

    A new hint is appended to the input as a user message; the position is remembered, and the
    message is put back there in every later input of the same run (the SDK rebuilds the input
    from the run's items on each call, so a filter's additions would otherwise last one call).
    A shorter input than a remembered position means a new run: the notes are forgotten.
    """

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self._notes: list[tuple[int, Any]] = []

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        if self._notes and self._notes[-1][0] > len(items):
            self._notes.clear()
        hint = self.guard.take_hint()
        if hint is not None:
            self._notes.append((len(items), {"role": "user", "content": hint}))
        for offset, (position, note) in enumerate(self._notes):
            items.insert(position + offset, note)
        return ModelInputData(input=items, instructions=data.model_data.instructions)


def run_config(guard: Guard, **options: Any) -> RunConfig:
    """A `RunConfig` with the guard's `HintFilter` (other options as `RunConfig` takes them)."""
    return RunConfig(call_model_input_filter=HintFilter(guard), **options)


def guard_tool(guard: Guard, tool: FunctionTool) -> FunctionTool:
    """A copy of `tool` whose calls the standing advice blocks are answered with the refusal
    text instead of running (a tool input guardrail; the tool's own guardrails still run)."""

    def check(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        call = ToolCall(data.context.tool_name, data.context.tool_arguments or "")
        refusal = guard.refusal(call)
        if refusal is None:
            return ToolGuardrailFunctionOutput.allow()
        guard.feed(call, refusal, progress=0)
        return ToolGuardrailFunctionOutput.reject_content(refusal)

    guarded = copy.copy(tool)
    guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
        guardrail_function=check, name="pos_trap_block"
    )
    guarded.tool_input_guardrails = [*(tool.tool_input_guardrails or ()), guardrail]
    return guarded
