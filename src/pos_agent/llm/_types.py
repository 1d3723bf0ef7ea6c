"""The small vocabulary every backend speaks: messages, usage, completions, typed failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar, get_args, runtime_checkable

from pydantic import BaseModel

Role = Literal["system", "user", "assistant"]
FailureKind = Literal[
    "transport", "schema", "empty", "truncated", "config", "timeout", "context_overflow"
]
FAILURE_KINDS: tuple[FailureKind, ...] = get_args(FailureKind)

# How a structured answer was obtained, strongest first: decoding constrained by a grammar (the
# local model); a server's `response_format` of type json_schema, or json_object carrying the
# schema (llama-cpp-python's server), or plain json_object; or only the schema in the prompt.
# Every mode is validated against the schema afterwards.
StructuredMode = Literal[
    "tools", "grammar", "json_schema", "json_object_schema", "json_object", "prompt"
]
STRUCTURED_MODES: tuple[StructuredMode, ...] = get_args(StructuredMode)

# Who asked for a model call, for token accounting (Table 2 of the paper):
# the PoS roles, the diagnosis environments' own roles, and the internal roles of the paper's
# context-management baselines.
POS_ROLES: tuple[str, ...] = ("policy", "belief", "sentinel")
INTERNAL_ROLES: tuple[str, ...] = (
    "compressor",
    "summarizer",
    "embedder",
    "manager",
    "executor",
    "auditor",
)
ROLES: tuple[str, ...] = (*POS_ROLES, "provider", "judge", *INTERNAL_ROLES)
# Failure kinds that mean the backend is unreachable: a case they end is not scored.
UNAVAILABLE_KINDS: tuple[FailureKind, ...] = ("transport", "timeout")

SchemaT = TypeVar("SchemaT", bound=BaseModel)


MAX_CACHE_BREAKPOINTS = 4
"""Explicit prompt-cache breakpoints one request may carry (Anthropic's limit)."""


@dataclass(frozen=True)
class Message:
    """One chat turn."""

    role: Role
    content: str
    breakpoints: tuple[int, ...] = field(default=(), compare=False)
    """Offsets in `content` where a prompt-cache breakpoint falls: the text before it is what
    later calls repeat unchanged. Never part of the text (and not of equality or the response
    cache key); only servers with explicit breakpoints are sent them
    (`ModelOptions.cache_breakpoints`)."""


def breakpoints_at(content: str, offsets: Sequence[int]) -> tuple[int, ...]:
    """`offsets` as a message's breakpoints: inside the text (not 0), sorted, without
    repeats, the latest `MAX_CACHE_BREAKPOINTS` kept."""
    inside = sorted({o for o in offsets if 0 < o <= len(content)})
    return tuple(inside[-MAX_CACHE_BREAKPOINTS:])


def request_breakpoints(messages: Sequence[Message]) -> list[tuple[int, ...]]:
    """Each message's breakpoints, at most `MAX_CACHE_BREAKPOINTS` over the whole request:
    the latest ones (a prefix cached up to a later breakpoint covers the earlier ones)."""
    flat = [
        (i, o) for i, m in enumerate(messages) for o in breakpoints_at(m.content, m.breakpoints)
    ]
    kept = set(flat[-MAX_CACHE_BREAKPOINTS:])
    return [
        tuple(o for o in breakpoints_at(m.content, m.breakpoints) if (i, o) in kept)
        for i, m in enumerate(messages)
    ]


@dataclass(frozen=True)
class Usage:
    """Tokens spent by one or more backend calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the server says it read from its prompt cache (OpenAI's and DashScope's
    `prompt_tokens_details.cached_tokens`, `cache_read_input_tokens`, llama.cpp's `cache_n`)."""
    cache_write_tokens: int = 0
    """Prompt tokens the server says it wrote to its cache (`cache_creation_input_tokens`)."""
    cache_reported: bool = False
    """The server sent cache counts (else the ledger estimates them, marked as estimated)."""

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_reported or other.cache_reported,
        )


@dataclass(frozen=True)
class SentRequest:
    """One request as it reached the server: the messages as sent (the schema instruction in
    the system message where the server has no native schema mode, the repair turns after
    the first reply), the server's count of its prompt tokens, and the reply's text. What the
    ledger estimates cached tokens on where the server reports none."""

    messages: tuple[Message, ...]
    prompt_tokens: int
    answer: str


@dataclass
class Completion:
    """A model's answer to one `complete` call.

    `usage` and `latency_s` cover every backend call the answer took, repair turns and retries
    included. `parsed` is a validated instance of the requested schema, or None when no schema
    was asked for. `cached` is True when the answer was replayed from the response cache.
    `structured_mode` says how the server or model was held to the schema (None without one).
    `usage_note` says why `usage` is not what the server reported (it sent none, or numbers
    that cannot be right and were replaced by an estimate); None when it is.
    `truncated` is True when the backend stopped the (last) reply at `max_tokens` (finish_reason
    "length"); a free-text answer is still returned then, and the caller decides what it is
    worth. A replayed answer does not know it (False).
    """

    text: str
    parsed: BaseModel | None
    usage: Usage
    latency_s: float
    cached: bool
    repairs: int
    model: str
    structured_mode: StructuredMode | None = None
    usage_note: str | None = None
    truncated: bool = False
    sent: tuple[SentRequest, ...] = field(default=(), compare=False, repr=False)
    """Every request that went to the server for this answer, in order (empty for a replayed
    answer, or a model that does not say)."""

    def parsed_as(self, schema: type[SchemaT]) -> SchemaT:
        """The parsed object, typed as `schema` (raises TypeError when it is something else)."""
        if not isinstance(self.parsed, schema):
            raise TypeError(
                f"completion holds {type(self.parsed).__name__}, not {schema.__name__}; "
                "pass that schema to complete()"
            )
        return self.parsed


class ModelFailure(Exception):
    """A model call that produced no usable answer; the only exception `complete` raises.

    `kind` says why: transport (connection, HTTP error, backend error), timeout, schema (output
    never matched the schema), empty, truncated (hit max_tokens), config (bad spec, missing key
    or model file, a rejected key, an unknown model, a server that does not speak the chat
    completions protocol), context_overflow (the prompt does not fit the model's context
    window: a server's context-length rejection or the local model's too-long prompt; the
    case ends as a scored failure, the paper's policy). `usage` is what the failed attempts
    still cost.
    """

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        attempts: int = 0,
        last_text: str | None = None,
        usage: Usage | None = None,
        latency_s: float = 0.0,
        model: str = "",
        cached: bool = False,
        structured_mode: StructuredMode | None = None,
        sent: Sequence[SentRequest] = (),
    ) -> None:
        super().__init__(kind, message)
        self.kind: FailureKind = kind
        self.message = message
        self.attempts = attempts
        self.last_text = last_text
        self.usage = usage if usage is not None else Usage()
        self.latency_s = latency_s
        self.model = model
        self.cached = cached
        self.structured_mode = structured_mode
        self.sent: tuple[SentRequest, ...] = tuple(sent)
        """The requests that went to the server before the call failed (as `Completion.sent`)."""

    @property
    def unavailable(self) -> bool:
        """The backend could not be reached or did not answer in time (transport, timeout):
        the set-up or the network failed, not the model, so the case is not scored."""
        return self.kind in UNAVAILABLE_KINDS

    def __str__(self) -> str:
        where = f" [{self.model}]" if self.model else ""
        tries = f" after {self.attempts} attempt(s)" if self.attempts else ""
        return f"{self.kind}{where}{tries}: {self.message}"

    def __repr__(self) -> str:
        return f"ModelFailure(kind={self.kind!r}, model={self.model!r}, attempts={self.attempts})"


@runtime_checkable
class Model(Protocol):
    """What the agents call. Implementations need not inherit from this."""

    spec: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        role: str = "",
        purpose: str = "",
    ) -> Completion:
        """One answer. `role` (policy, belief, sentinel, provider, judge, ...) and `purpose`
        (act, init, update, audit, ...) say who asks and why: they never change the answer or
        the cache key, but backends and scripted test models can see them."""
        ...


@dataclass(frozen=True, slots=True)
class Request:
    """The arguments of one `Model.complete` call, as a model that acts around a call sees them."""

    messages: Sequence[Message]
    schema: type[BaseModel] | None = None
    max_tokens: int = 512
    temperature: float = 0.0
    role: str = ""
    purpose: str = ""

    def send(self, model: Model) -> Completion:
        """The same call made to `model`."""
        return model.complete(
            self.messages,
            schema=self.schema,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            role=self.role,
            purpose=self.purpose,
        )


class CallWrapper:
    """A model whose `complete` is `answer(Request)`: one signature for every model that
    times, accounts or guards the calls it passes on."""

    spec: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        role: str = "",
        purpose: str = "",
    ) -> Completion:
        return self.answer(Request(messages, schema, max_tokens, temperature, role, purpose))

    def answer(self, request: Request) -> Completion:
        raise NotImplementedError
