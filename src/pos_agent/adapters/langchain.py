"""The trap monitor in a LangChain 1.x agent (LangGraph underneath): an agent middleware.

    from langchain.agents import create_agent
    from pos_agent.adapters import Guard
    from pos_agent.adapters.langchain import PosMiddleware

    guard = Guard(goal="make the tests pass")
    agent = create_agent(model, tools, middleware=[PosMiddleware(guard)])
    agent.invoke({"messages": [{"role": "user", "content": task}]})

- `wrap_tool_call` (and `awrap_tool_call`) feeds the monitor each tool call (name and
  arguments) with the `ToolMessage` it produced. **Blocking:** while the advice blocks a call,
  it answers with a `ToolMessage` holding the refusal text instead of running the tool.
- **Where the hint goes:** `before_model` adds the pending hint to the agent state as a
  `HumanMessage` just before the next model call: the model reads it once, and it stays in the
  conversation like any message.
- On `stop` (with `end_on_stop=True`, the default), `before_model` ends the run: it adds an
  `AIMessage` that says why and jumps to the end of the graph.

The middleware holds one `Guard`: use one per conversation (thread). Tool calls that LangGraph
runs in parallel threads are fed under the guard's lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

try:
    from langchain.agents.middleware import AgentMiddleware, hook_config
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        'pos_agent.adapters.langchain needs langchain: pip install "pos-agent[langchain]"'
    ) from error

from pos_agent.adapters.guard import Guard
from pos_agent.monitor import ToolCall

__all__ = ["PosMiddleware", "message_text"]


def message_text(result: object) -> str:
    """The text of a tool's result: a `ToolMessage`'s content (text blocks joined), or the
    object as text (e.g. a `Command`)."""
    content = getattr(result, "content", result)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block.get("text", "") if isinstance(block, dict) else str(block) for block in content
        ]
        return "\n".join(p for p in parts if p)
    return str(content)


class PosMiddleware(AgentMiddleware):
    """Feeds a `Guard` each tool call, shows its hint before the next model call, refuses the
    calls a block names, and ends the run on `stop`."""

    def __init__(self, guard: Guard | None = None, *, end_on_stop: bool = True, **options: Any):
        super().__init__()
        self.guard = guard or Guard(**options)
        self.end_on_stop = end_on_stop

    # -- tools -----------------------------------------------------------------------------------

    def _call(self, request: Any) -> ToolCall:
        tool_call = request.tool_call
        return ToolCall(str(tool_call.get("name", "tool")), tool_call.get("args") or {})

    def _refused(self, request: Any, call: ToolCall) -> ToolMessage | None:
        refusal = self.guard.refusal(call)
        if refusal is None:
            return None
        self.guard.feed(call, refusal, progress=0)
        return ToolMessage(
            content=refusal,
            tool_call_id=request.tool_call.get("id") or "",
            name=call.name,
            status="error",
        )

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        call = self._call(request)
        refused = self._refused(request, call)
        if refused is not None:
            return refused
        result = handler(request)
        self.guard.feed(call, message_text(result))
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        call = self._call(request)
        refused = self._refused(request, call)
        if refused is not None:
            return refused
        result = await handler(request)
        self.guard.feed(call, message_text(result))
        return result

    # -- the hint ----------------------------------------------------------------------------------

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        hint = self.guard.take_hint()
        if self.end_on_stop and self.guard.stopped:
            reason = hint or "PoS monitor: stopped, still trapped."
            return {"messages": [AIMessage(content=reason)], "jump_to": "end"}
        if hint is None:
            return None
        return {"messages": [HumanMessage(content=hint)]}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)
