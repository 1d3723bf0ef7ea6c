"""What a backend implements: one raw generation, with errors classified for the retry loop.

Backend authors import these from `pos_agent.llm.backend`; see docs/adding-a-backend.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pos_agent.llm._structured import JsonSchema
from pos_agent.llm._types import Message, StructuredMode, Usage

BackendErrorKind = Literal["transport", "timeout", "config", "context_overflow"]


class BackendError(Exception):
    """A backend call that failed before producing output.

    `retryable` marks the transient ones (timeouts, 429, 5xx, dropped connections);
    `retry_after_s` carries a server's Retry-After hint. `outage` says the server looks down
    (unreachable, timing out, failing): consecutive outages open the circuit breaker of its base
    URL. It defaults to `retryable`; a 429 is retryable but no outage (the server is up, only
    busy). Messages must not contain secrets.
    """

    def __init__(
        self,
        kind: BackendErrorKind,
        message: str,
        *,
        retryable: bool,
        retry_after_s: float | None = None,
        outage: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: BackendErrorKind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.outage = retryable if outage is None else outage


@dataclass(frozen=True)
class GenerationRequest:
    """One backend call. `schema` is set when the reply must be a JSON object of that shape."""

    messages: tuple[Message, ...]
    schema: JsonSchema | None
    schema_name: str | None
    max_tokens: int
    temperature: float
    seed: int
    attempt: int = 0
    role: str = ""
    """Who asked (policy, belief, sentinel, provider, judge, ...); not part of the cache key."""
    purpose: str = ""
    """Why (act, init, update, revision, audit, ...); not part of the cache key."""


@dataclass(frozen=True)
class RawReply:
    """What a backend produced. `truncated` means generation stopped at max_tokens.

    `structured_mode` says how the backend held the output to `request.schema` (None: it did
    not, the schema was only in the prompt). `defect` names a problem the backend already saw
    in the output (say, a reply over the size cap, of which `text` is only the start): the
    reliability layer treats it as bad output, with a repair turn, never as a transport error.
    `usage_note` says why `usage` is not what the server reported (none, or implausible
    numbers replaced by an estimate); None when it is.
    """

    text: str
    usage: Usage
    truncated: bool = False
    structured_mode: StructuredMode | None = None
    defect: str | None = None
    usage_note: str | None = None


class Backend(Protocol):
    """A way to run one generation; `ReliableModel` adds retries, repairs and the cache.

    `name`, `model_id` and `base_url` identify the backend in cache keys: `model_id` must be
    stable across machines (a file name and size, not an absolute path) and `base_url` must
    carry no credentials. A backend with a `base_url` shares a circuit breaker with every
    other backend of that URL in the process.

    Optional attributes, read with getattr: `constrains_output` (True when decoding already
    enforces the schema, so it need not be spelled out in the prompt) and `secrets` (strings
    to scrub from everything written or shown: keys, URL passwords).
    """

    name: str
    model_id: str
    base_url: str | None

    def generate(self, request: GenerationRequest) -> RawReply: ...
