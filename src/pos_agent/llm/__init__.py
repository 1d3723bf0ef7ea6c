"""The model layer: one small protocol over the embedded local model, OpenAI-compatible servers
and a scripted test model, with structured output, retries, repairs, a response cache and token
accounting (DESIGN.md section 5).

    model = load_model("local")                       # or "openai:gpt-4o-mini", "scripted", ...
    answer = model.complete([Message("user", "...")], schema=Action, max_tokens=256)
    answer.parsed                                      # a validated Action
"""

from pos_agent.llm._backend import Backend, BackendError, GenerationRequest, RawReply
from pos_agent.llm._cache import CachedOutcome, CacheRequest, ResponseCache, cache_key
from pos_agent.llm._ledger import CallTotals, TokenLedger
from pos_agent.llm._load import DEFAULT_SPEC, ModelSpec, load_model, parse_spec
from pos_agent.llm._options import CacheMode, ModelOptions
from pos_agent.llm._reliable import ReliableModel, backoff_delay
from pos_agent.llm._scripted import ScriptedBackend, ScriptedModel, ScriptedReply
from pos_agent.llm._structured import json_schema_of
from pos_agent.llm._types import (
    FAILURE_KINDS,
    ROLES,
    Completion,
    FailureKind,
    Message,
    Model,
    ModelFailure,
    Role,
    Usage,
)

__all__ = [
    "DEFAULT_SPEC",
    "FAILURE_KINDS",
    "ROLES",
    "Backend",
    "BackendError",
    "CacheMode",
    "CacheRequest",
    "CachedOutcome",
    "CallTotals",
    "Completion",
    "FailureKind",
    "GenerationRequest",
    "Message",
    "Model",
    "ModelFailure",
    "ModelOptions",
    "ModelSpec",
    "RawReply",
    "ReliableModel",
    "ResponseCache",
    "Role",
    "ScriptedBackend",
    "ScriptedModel",
    "ScriptedReply",
    "TokenLedger",
    "Usage",
    "backoff_delay",
    "cache_key",
    "json_schema_of",
    "load_model",
    "parse_spec",
]
