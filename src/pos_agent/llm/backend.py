"""For backend authors: what a backend implements, how to register it, and the shared parts.

A library user needs only `pos_agent.llm` (load_model, Message, Completion, ...). Writing a
new backend needs this module; docs/adding-a-backend.md shows a complete one.

    from pos_agent.llm.backend import BackendEntry, RawReply, register_backend

    register_backend(BackendEntry("echo", EchoBackend.from_spec, target="TEXT"))
    load_model("echo:hello")
"""

from pos_agent.llm._backend import (
    Backend,
    BackendError,
    BackendErrorKind,
    GenerationRequest,
    RawReply,
    estimate_tokens,
)
from pos_agent.llm._breaker import CircuitBreaker, breaker_for, forget_breakers
from pos_agent.llm._cache import CachedOutcome, CacheRequest, cache_key
from pos_agent.llm._registry import (
    BackendEntry,
    BackendFactory,
    backend_entries,
    register_backend,
    spec_forms,
)
from pos_agent.llm._reliable import backoff_delay
from pos_agent.llm._scripted import ScriptedBackend
from pos_agent.llm._server_modes import MODE_NAMES, SERVER_MODES, forget_servers, known_mode
from pos_agent.llm._structured import JsonSchema, json_schema_of, minimal_instance
from pos_agent.llm._usage import plausible_count, prompt_bound

__all__ = [
    "MODE_NAMES",
    "SERVER_MODES",
    "Backend",
    "BackendEntry",
    "BackendError",
    "BackendErrorKind",
    "BackendFactory",
    "CacheRequest",
    "CachedOutcome",
    "CircuitBreaker",
    "GenerationRequest",
    "JsonSchema",
    "RawReply",
    "ScriptedBackend",
    "backend_entries",
    "backoff_delay",
    "breaker_for",
    "cache_key",
    "estimate_tokens",
    "forget_breakers",
    "forget_servers",
    "json_schema_of",
    "known_mode",
    "minimal_instance",
    "plausible_count",
    "prompt_bound",
    "register_backend",
    "spec_forms",
]
