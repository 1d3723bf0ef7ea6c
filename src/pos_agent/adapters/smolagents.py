"""The trap monitor in a smolagents agent (smolagents 1.20+): a step callback.

    from smolagents import ToolCallingAgent
    from pos_agent.adapters import Guard
    from pos_agent.adapters.smolagents import StepMonitor, guard_tools

    guard = Guard(goal="make the tests pass")
    agent = ToolCallingAgent(
        tools=guard_tools(guard, tools),  # optional: refuse the calls a block names
        model=model,
        step_callbacks=[StepMonitor(guard)],
    )

After each `ActionStep`, `StepMonitor` feeds the monitor the step's tool calls (all the calls of
one step are one action) and its observations. **Where the hint goes:** when the advice has a text
(a new alarm, a block, a stop), it is appended to that step's `observations`; smolagents writes
the memory into the next step's prompt, so the model reads it there, once, and it stays in the
history like any observation. Only the advice decides: a standing alarm injects nothing more
(re-injecting sent a smolagents run back into its loop). On `stop` the agent is interrupted
(`agent.interrupt()`) unless `interrupt_on_stop=False`.

A `CodeAgent` (smolagents' default agent) calls its tools from the Python code it writes: the
monitor reads the tool calls in that code (`pos_agent.adapters.code_calls`), and `guard_tools`
refuses a forbidden one where the code calls it (the code gets the refusal as the tool's
result).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

try:
    from smolagents.memory import ActionStep
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        'pos_agent.adapters.smolagents needs smolagents: pip install "pos-agent[smolagents]"'
    ) from error

from pos_agent.adapters.code import code_calls
from pos_agent.adapters.guard import REFUSED, Guard
from pos_agent.monitor import ToolCall

__all__ = ["StepMonitor", "guard_tools", "step_action"]

FINAL_ANSWER = "final_answer"
PYTHON_INTERPRETER = "python_interpreter"
"""The call a `CodeAgent` step records: its code as the arguments."""

T = TypeVar("T")


def _calls(call: Any) -> list[ToolCall]:
    """One smolagents tool call as monitor calls: a `CodeAgent`'s code as the tool calls in it
    (the code alone when it calls no tool)."""
    arguments = call.arguments if call.arguments is not None else ""
    if call.name == PYTHON_INTERPRETER and isinstance(arguments, str):
        inner = code_calls(arguments)
        if inner:
            return inner
    return [ToolCall(call.name, arguments)]


def step_action(step: ActionStep) -> object:
    """The monitor's action for one step: its tool calls (the final answer left out; for a
    `CodeAgent`, the tool calls inside its code), else the code it ran or the text the model
    wrote."""
    calls = [
        inner
        for call in step.tool_calls or ()
        if call.name != FINAL_ANSWER
        for inner in _calls(call)
    ]
    if len(calls) == 1:
        return calls[0]
    if calls:
        return calls
    if step.code_action:
        return step.code_action
    output = step.model_output
    return output if isinstance(output, str) else str(output or "")


class StepMonitor:
    """A smolagents step callback that feeds a `Guard` and puts the hint in the next step."""

    def __init__(
        self, guard: Guard | None = None, *, interrupt_on_stop: bool = True, **guard_options: Any
    ) -> None:
        """
        Args:
            guard: The guard to feed; by default `Guard(**guard_options)`.
            interrupt_on_stop: Interrupt the agent when the advice says `stop`.
        """
        self.guard = guard or Guard(**guard_options)
        self.interrupt_on_stop = interrupt_on_stop

    def __call__(self, memory_step: Any, agent: Any = None) -> None:
        if not isinstance(memory_step, ActionStep) or memory_step.is_final_answer:
            return
        if memory_step.tool_calls and all(c.name == FINAL_ANSWER for c in memory_step.tool_calls):
            return
        observation = memory_step.observations
        if observation is None and memory_step.error is not None:
            observation = f"Error: {memory_step.error}"
        # A call `guard_tools` refused produced nothing: no progress, whatever its text.
        refused = observation is not None and REFUSED in str(observation)
        self.guard.feed(
            step_action(memory_step), observation or "", progress=0 if refused else None
        )
        hint = self.guard.take_hint()
        if hint is not None:
            before = memory_step.observations
            memory_step.observations = f"{before}\n\n{hint}" if before else hint
        if self.interrupt_on_stop and self.guard.stopped and agent is not None:
            agent.interrupt()


def guard_tools(guard: Guard, tools: Iterable[T]) -> list[T]:
    """The same smolagents tools, each refusing a call the standing advice blocks: the tool
    returns the refusal text (the model reads it as the observation) instead of running. The
    tools are changed in place (their `forward`) and returned as a list."""
    out = list(tools)
    for tool in out:
        _guard_forward(guard, tool)
    return out


def _guard_forward(guard: Guard, tool: Any) -> None:
    forward = tool.forward
    name = tool.name

    def guarded(*args: Any, **kwargs: Any) -> Any:
        refusal = guard.refusal(ToolCall(name, kwargs if not args else {"args": list(args)}))
        if refusal is not None:
            return refusal
        return forward(*args, **kwargs)

    tool.forward = guarded
