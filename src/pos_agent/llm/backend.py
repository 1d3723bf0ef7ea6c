"""For backend authors: what a backend implements, how to register it, and the shared parts.

A library user needs only `pos_agent.llm` (load_model, Message, Completion, ...). Writing a
new backend needs this module; docs/adding-a-backend.md shows a complete one.

    from pos_agent.llm.backend import BackendEntry, RawReply, register_backend

    register_backend(BackendEntry("echo", EchoBackend.from_spec, target="TEXT"))
    load_model("echo:hello")

It also holds the built-in backends and the parts of their HTTP client that another client of an
OpenAI-compatible server reuses (the embeddings of `pos_agent.agents.context` do): the endpoint
and its key, the request headers, the bounded POST, error texts and Retry-After.
"""

from pos_agent.llm._backend import (
    Backend,
    BackendError,
    BackendErrorKind,
    GenerationRequest,
    RawReply,
)
from pos_agent.llm._breaker import CircuitBreaker, breaker_for, forget_breakers
from pos_agent.llm._builtin import HttpEndpoint, http_endpoint, require_httpx
from pos_agent.llm._cache import CachedOutcome, CacheRequest, cache_key
from pos_agent.llm._http import HttpReply
from pos_agent.llm._local import LlamaCppBackend, embedded_gguf_path
from pos_agent.llm._openai import OpenAICompatibleBackend
from pos_agent.llm._openai_http import (
    OPENAI_DEFAULT_BASE_URL,
    api_endpoint,
    error_text,
    post_or_raise,
    request_headers,
    retry_after_s,
)
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
from pos_agent.tokens import estimate_tokens

__all__ = [
    "MODE_NAMES",
    "OPENAI_DEFAULT_BASE_URL",
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
    "HttpEndpoint",
    "HttpReply",
    "JsonSchema",
    "LlamaCppBackend",
    "OpenAICompatibleBackend",
    "RawReply",
    "ScriptedBackend",
    "api_endpoint",
    "backend_entries",
    "backoff_delay",
    "breaker_for",
    "cache_key",
    "embedded_gguf_path",
    "error_text",
    "estimate_tokens",
    "forget_breakers",
    "forget_servers",
    "http_endpoint",
    "json_schema_of",
    "known_mode",
    "minimal_instance",
    "plausible_count",
    "post_or_raise",
    "prompt_bound",
    "register_backend",
    "request_headers",
    "require_httpx",
    "retry_after_s",
    "spec_forms",
]
