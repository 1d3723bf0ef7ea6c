"""The model layer: one small protocol over the embedded local model, OpenAI-compatible servers
and a scripted test model, with structured output, retries, repairs, a response cache and token
accounting (docs/models.md).

    model = load_model("local")                       # or "openai:gpt-4o-mini", "scripted", ...
    answer = model.complete([Message("user", "...")], schema=Action, max_tokens=256)
    answer.parsed                                      # a validated Action

This is what a library user needs, and what the rest of `pos_agent` takes from the model layer:
the roles, the rate limits that every process calling one model shares, the checks of the CPU
the embedded model runs on, and the helpers that keep keys out of records. Writing a backend of
your own takes the parts in `pos_agent.llm.backend` (see docs/adding-a-backend.md).
"""

import warnings
from typing import Any

from pos_agent.llm._cache import ResponseCache
from pos_agent.llm._cpu import (
    PORTABLE_BUILD_NEEDS,
    REBUILD,
    REPORTED_FLAGS,
    compiled_cpu_features,
    cpu_flags,
    cpu_model,
    llama_features,
    missing_cpu_features,
    uses_amx,
)
from pos_agent.llm._ledger import DEFAULT_CACHE_RULE, CacheCount, CallTotals, TokenLedger
from pos_agent.llm._load import load_model
from pos_agent.llm._options import CacheMode, ModelOptions
from pos_agent.llm._preflight import ProbeOutcome, preflight, probe
from pos_agent.llm._printable import printable
from pos_agent.llm._ratelimit import Gate, Limiter, RateLimits
from pos_agent.llm._ratelimit import install as install_limiter
from pos_agent.llm._registry import (
    DEFAULT_SPEC,
    ModelSpec,
    effective_server,
    owned_by_policy,
    parse_spec,
    wants_context_per_role,
)
from pos_agent.llm._reliable import ReliableModel
from pos_agent.llm._scripted import ScriptedModel, ScriptedReply
from pos_agent.llm._secrets import (
    REDACTED,
    mask_key_like,
    public_url,
    redact,
    url_secrets,
    warn_if_key_goes_in_clear,
)
from pos_agent.llm._stop import (
    RequestsStopped,
    install_stop_check,
    requests_stopped,
    resume_requests,
    stop_requests,
    stoppable_sleep,
)
from pos_agent.llm._structured import MAX_JSON_DEPTH, MAX_REPLY_CHARS, loads_bounded
from pos_agent.llm._types import (
    FAILURE_KINDS,
    INTERNAL_ROLES,
    MAX_CACHE_BREAKPOINTS,
    POS_ROLES,
    ROLES,
    STRUCTURED_MODES,
    CallWrapper,
    Completion,
    FailureKind,
    Message,
    Model,
    ModelFailure,
    Request,
    Role,
    StructuredMode,
    Usage,
    breakpoints_at,
    request_breakpoints,
)

__all__ = [
    "DEFAULT_CACHE_RULE",
    "DEFAULT_SPEC",
    "FAILURE_KINDS",
    "INTERNAL_ROLES",
    "MAX_CACHE_BREAKPOINTS",
    "MAX_JSON_DEPTH",
    "MAX_REPLY_CHARS",
    "PORTABLE_BUILD_NEEDS",
    "POS_ROLES",
    "REBUILD",
    "REDACTED",
    "REPORTED_FLAGS",
    "ROLES",
    "STRUCTURED_MODES",
    "CacheCount",
    "CacheMode",
    "CallTotals",
    "CallWrapper",
    "Completion",
    "FailureKind",
    "Gate",
    "Limiter",
    "Message",
    "Model",
    "ModelFailure",
    "ModelOptions",
    "ModelSpec",
    "ProbeOutcome",
    "RateLimits",
    "ReliableModel",
    "Request",
    "RequestsStopped",
    "ResponseCache",
    "Role",
    "ScriptedModel",
    "ScriptedReply",
    "StructuredMode",
    "TokenLedger",
    "Usage",
    "breakpoints_at",
    "compiled_cpu_features",
    "cpu_flags",
    "cpu_model",
    "effective_server",
    "install_limiter",
    "install_stop_check",
    "llama_features",
    "load_model",
    "loads_bounded",
    "mask_key_like",
    "missing_cpu_features",
    "owned_by_policy",
    "parse_spec",
    "preflight",
    "printable",
    "probe",
    "public_url",
    "redact",
    "request_breakpoints",
    "requests_stopped",
    "resume_requests",
    "stop_requests",
    "stoppable_sleep",
    "url_secrets",
    "uses_amx",
    "wants_context_per_role",
    "warn_if_key_goes_in_clear",
]

# Names that moved to pos_agent.llm.backend; still importable from here, with a warning, so
# code written against the old layout keeps working while it is updated.
_MOVED = frozenset(
    {
        "Backend",
        "BackendError",
        "CacheRequest",
        "CachedOutcome",
        "GenerationRequest",
        "RawReply",
        "ScriptedBackend",
        "backoff_delay",
        "cache_key",
        "json_schema_of",
    }
)


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from pos_agent.llm import backend

        warnings.warn(
            f"import {name} from pos_agent.llm.backend; pos_agent.llm keeps only what library "
            "users need",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(backend, name)
    raise AttributeError(f"module 'pos_agent.llm' has no attribute {name!r}")
