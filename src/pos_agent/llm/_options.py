"""Settings shared by every backend, with the environment variables they fall back to."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from pos_agent.llm._secrets import public_url

CacheMode = Literal["off", "read", "write", "readwrite"]

DEFAULT_CACHE_PATH = Path(".pos-cache") / "llm.sqlite"
CACHE_DIR_ENV = "POS_CACHE_DIR"


def default_cache_path() -> Path:
    """`$POS_CACHE_DIR/llm.sqlite` when that variable is set, else `.pos-cache/llm.sqlite`."""
    folder = os.environ.get(CACHE_DIR_ENV)
    return Path(folder) / DEFAULT_CACHE_PATH.name if folder else DEFAULT_CACHE_PATH


DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"


class ModelOptions(BaseModel):
    """How to reach, run and retry a model. Every field has a safe default."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 for vLLM. Falls back to
    OPENAI_BASE_URL for `openai:` specs; `dashscope:` specs use DashScope's compatible mode."""

    api_key: SecretStr | None = None
    """API key; falls back to OPENAI_API_KEY (or DASHSCOPE_API_KEY for `dashscope:` specs).
    Never written to caches, logs, traces or reprs."""

    endpoint_provider: str | None = None
    """The provider (`openai`, `dashscope`) whose models `base_url` and `api_key` are for: the
    policy's, as `pos bench` sets it. A model of another provider (a `dashscope:` judge of an
    `openai:` policy on a local server) uses its own endpoint and key, from its environment
    variables or its default, never the policy's. None: every model takes them."""

    timeout_s: float = Field(default=180.0, gt=0)
    """Wall-clock limit of one request to a network backend, from sending it to the last byte
    of the reply (not per read: a server dripping its reply is cut off too). The default leaves
    room for a 4,096-token answer (the paper's budget, Appendix D.1) at about 30 tokens/s. The
    local model is bounded by max_tokens instead."""

    max_retries: int = Field(default=4, ge=0)
    """Retries after a timeout, HTTP 429, HTTP 5xx or connection error (0 = try once). A
    request the server rejected as invalid is never retried."""

    max_reply_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Largest reply body read from a network backend. A bigger one is bad output (repaired,
    then a schema failure), never held in memory whole or retried. 4 MiB is several times the
    longest answer any chat model writes within its token limit."""

    breaker_failures: int = Field(default=5, ge=0)
    """Consecutive outage failures (connection errors, timeouts, 5xx) to one base URL after
    which calls to it fail fast, for breaker_cooldown_s, instead of each spending its own
    retries on a dead server. Counted per process; 0 turns the breaker off."""

    breaker_cooldown_s: float = Field(default=30.0, ge=0)
    """How long an open circuit breaker refuses calls; then one call may try again."""

    backoff_base_s: float = Field(default=0.5, ge=0)
    """First retry waits up to this long; each further retry doubles the bound."""

    backoff_cap_s: float = Field(default=20.0, ge=0)
    """Upper bound of one retry wait (full jitter: the wait is uniform in [0, bound])."""

    max_repairs: int = Field(default=2, ge=0)
    """Repair turns after output that is empty, truncated or fails the schema."""

    n_ctx: int = Field(default=8192, ge=512)
    """Context window of local GGUF models, in tokens."""

    n_threads: int | None = Field(default=None, ge=1)
    """CPU threads of local GGUF models; None means one per core."""

    context_slot: str = ""
    """Local GGUF models: calls with different slots get separate llama.cpp contexts (the
    weights are shared), so each role keeps its own KV prefix warm between its calls."""
    schema_in_prompt: bool | None = None
    """Append the JSON schema to the system prompt. None: only where decoding is not
    constrained by a grammar (remote servers); the local model's grammar already enforces it."""
    seed: int = 0
    """Sampling seed, passed to every backend that accepts one."""

    cache_path: Path = Field(default_factory=default_cache_path)
    """SQLite file of the response cache (default: $POS_CACHE_DIR/llm.sqlite, else
    .pos-cache/llm.sqlite in the working folder)."""

    cache_mode: CacheMode = "off"
    """off: no cache; read: replay hits, never store; write: always call, store;
    readwrite: replay hits, store misses."""

    cache_breakpoints: bool = False
    """Send the prompts' explicit prompt-cache breakpoints (`Message.breakpoints`) to an
    OpenAI-compatible server: each marked message's content goes as text parts, the part that
    ends at a breakpoint carrying `cache_control` (ephemeral). For servers that cache only at
    breakpoints: Anthropic models behind an OpenAI-compatible gateway (OpenRouter), DashScope's
    explicit cache. OpenAI, vLLM and llama.cpp cache prefixes automatically and need none.
    Off, the request body is what it always was; other backends ignore it. It changes the
    request, so it is part of a run's settings."""

    def threads(self) -> int:
        return self.n_threads or os.cpu_count() or 1

    @property
    def public_base_url(self) -> str | None:
        """`base_url` without user:password, query or fragment: safe to write or show."""
        return public_url(self.base_url)

    def __repr_args__(self) -> list[tuple[str | None, object]]:
        # A base URL may carry user:password; reprs end up in logs and tracebacks.
        return [
            (name, public_url(value) if name == "base_url" else value)
            for name, value in super().__repr_args__()
        ]


def for_provider(options: ModelOptions, provider: str) -> ModelOptions:
    """`options` as a model of `provider` sees them: without `base_url` and `api_key` when
    those belong to another provider's models (`endpoint_provider`)."""
    if options.endpoint_provider in (None, provider):
        return options
    return options.model_copy(update={"base_url": None, "api_key": None})


def secret_value(secret: SecretStr | None) -> str | None:
    if secret is None:
        return None
    value = secret.get_secret_value()
    return value or None
