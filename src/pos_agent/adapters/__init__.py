"""PoS in front of an agent framework: the trap monitor fed from the framework's own hooks.

One module per framework, each imported on its own (it imports its framework; this package
imports none):

| module | framework | the monitor reads | the hint goes | a blocked call |
|---|---|---|---|---|
| `pos_agent.adapters.smolagents` | smolagents (`pip install "pos-agent[smolagents]"`) | each `ActionStep` (a step callback) | appended to that step's observations, which the next step's prompt shows | `guard_tools`: the tool returns the refusal |
| `pos_agent.adapters.openai_agents` | openai-agents (`[openai-agents]`) | `RunHooks.on_tool_end` | a user note in the next model input (`RunConfig.call_model_input_filter`), kept in later inputs | `guard_tool`: a tool input guardrail answers with the refusal |
| `pos_agent.adapters.langchain` | LangChain 1.x / LangGraph (`[langchain]`) | agent middleware `wrap_tool_call` | a `HumanMessage` added to the state before the next model call (`before_model`) | `wrap_tool_call` answers with a `ToolMessage` refusal |
| `pos_agent.serve.litellm` | LiteLLM's proxy or SDK (`[litellm]`) | each request's history, as `pos serve` reads it (`PosGuardrail`, a pre-call guardrail hook) | a note in the request, where `pos serve` puts it | the post-call hook answers with an error (`TrapBlocked`, HTTP 400 through the proxy) |

`Guard` (one monitor per run, thread-safe) and `watch` (a decorator for the tool functions of a
hand-written loop) need no framework. See docs/monitor.md.

`code_calls` reads the tool calls in the code a `CodeAgent` writes. `monitor_options` reads the polling and exempt tools from the file `pos serve --config` takes.
"""

from pos_agent.adapters.code import code_blocks, code_calls
from pos_agent.adapters.guard import HINT_PREFIX, Guard, TrapStop, watch
from pos_agent.adapters.options import (
    DEFAULT_POLLS,
    monitor_options,
    polling_option,
    read_config_file,
)

__all__ = [
    "DEFAULT_POLLS",
    "HINT_PREFIX",
    "Guard",
    "TrapStop",
    "code_blocks",
    "code_calls",
    "monitor_options",
    "polling_option",
    "read_config_file",
    "watch",
]
