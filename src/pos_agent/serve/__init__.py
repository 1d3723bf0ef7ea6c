"""`pos serve`: PoS in front of any agent, as a proxy for OpenAI Chat Completions, the OpenAI
Responses API and the Anthropic Messages API (docs/serve.md). `Proxy.verdict` (a history's new
steps to its session's monitor) and the policy's parts (`with_notes`, `Judge`, `refusal_text`,
`stop_text`) are what the LiteLLM guardrail (`pos_agent.serve.litellm`) runs too.

```python
import uvicorn
from pos_agent.serve import ServeConfig, create_app

app = create_app(ServeConfig(upstream="http://127.0.0.1:8080/v1", policy="nudge"))
uvicorn.run(app, host="127.0.0.1", port=8765)
```

Point the agent's `base_url` at the proxy; each response carries the monitor's verdict in
`X-PoS-*` headers. History formats are read by `StepParser`s (OpenAI tool calls, smolagents'
text and a CodeAgent's code, ReAct text); add your own in `ServeConfig(parsers=...)`. Responses
and Messages requests are read as Chat Completions messages first (`apis.py`).
"""

from pos_agent.serve.app import create_app
from pos_agent.serve.config import NOTE_PREFIX, Policy, ServeConfig, default_trace_dir
from pos_agent.serve.parsers import (
    DEFAULT_PARSERS,
    ReActParser,
    SmolagentsParser,
    Step,
    StepParser,
    ToolCallsParser,
    message_text,
    parse_answer,
    parse_history,
)
from pos_agent.serve.policy import Judge, Refusal, Verdict, refusal_text, stop_text, with_notes
from pos_agent.serve.proxy import Proxy
from pos_agent.serve.sessions import SESSION_HEADER, Session, SessionStore, session_id

__all__ = [
    "DEFAULT_PARSERS",
    "NOTE_PREFIX",
    "SESSION_HEADER",
    "Judge",
    "Policy",
    "Proxy",
    "ReActParser",
    "Refusal",
    "ServeConfig",
    "Session",
    "SessionStore",
    "SmolagentsParser",
    "Step",
    "StepParser",
    "ToolCallsParser",
    "Verdict",
    "create_app",
    "default_trace_dir",
    "message_text",
    "parse_answer",
    "parse_history",
    "refusal_text",
    "session_id",
    "stop_text",
    "with_notes",
]
