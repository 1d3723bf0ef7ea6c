"""The reliability layer every backend shares: cache, retries with backoff, repair turns, a
circuit breaker per server, and redaction of secrets from everything it returns."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from pydantic import BaseModel, ValidationError

from pos_agent.llm._backend import Backend, BackendError, GenerationRequest, RawReply
from pos_agent.llm._breaker import CircuitBreaker, breaker_for
from pos_agent.llm._cache import CachedOutcome, CacheRequest, ResponseCache
from pos_agent.llm._options import ModelOptions
from pos_agent.llm._printable import printable
from pos_agent.llm._secrets import redact
from pos_agent.llm._stop import stoppable_sleep
from pos_agent.llm._structured import (
    JsonSchema,
    OutputProblem,
    interpret_output,
    json_schema_of,
    repair_turns,
    schema_name_of,
    with_schema_instruction,
    without_surrogates,
)
from pos_agent.llm._types import (
    CallWrapper,
    Completion,
    Message,
    ModelFailure,
    Request,
    SentRequest,
    StructuredMode,
    Usage,
)

logger = logging.getLogger(__name__)

Sleep = Callable[[float], None]

# Output failures depend only on the request (and the model), so replaying them keeps a
# recorded run identical; transport failures are the network's mood and are never recorded.
_RECORDED_FAILURES = ("schema", "empty", "truncated")


def backoff_delay(retry: int, *, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Full-jitter backoff: uniform in [0, min(cap, base * 2**retry)] for the retry-th retry."""
    bound = min(cap_s, base_s * (2.0**retry))
    return rng.uniform(0.0, bound)


@dataclass
class _Spent:
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)
    structured_mode: StructuredMode | None = None
    usage_notes: list[str] = field(default_factory=list)
    sent: list[SentRequest] = field(default_factory=list)
    """The requests the server answered, as sent (for the ledger's cache estimate)."""

    @property
    def usage_note(self) -> str | None:
        return "; ".join(dict.fromkeys(self.usage_notes)) or None


def _verdict(reply: RawReply, schema: type[BaseModel] | None) -> BaseModel | OutputProblem | None:
    """The reply's parsed answer (None without a schema), or what is wrong with it."""
    if reply.defect is not None:
        return OutputProblem("schema", reply.defect)
    return interpret_output(reply.text, truncated=reply.truncated, schema=schema)


def _out_of_repairs(
    reply: RawReply, problem: OutputProblem, repairs: int, spent: _Spent
) -> ModelFailure:
    return ModelFailure(
        problem.kind,
        f"{problem.detail} (after {repairs} repair turn(s); raise max_repairs or "
        "max_tokens, simplify the schema, or use a stronger model)",
        attempts=spent.attempts,
        last_text=without_surrogates(reply.text),
        usage=spent.usage,
        structured_mode=spent.structured_mode,
        sent=spent.sent,
    )


class ReliableModel(CallWrapper):
    """A `Model` made of a backend plus the shared reliability logic.

    `complete` returns a Completion or raises ModelFailure, never anything else: backend
    errors, malformed output and storage problems all end as one of the two.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        spec: str,
        options: ModelOptions | None = None,
        cache: ResponseCache | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        secrets: Sequence[str | None] = (),
    ) -> None:
        self.spec = spec
        self.backend = backend
        self.options = options or ModelOptions()
        if cache is None and self.options.cache_mode != "off":
            cache = ResponseCache(self.options.cache_path, self.options.cache_mode)
        self.cache = cache
        self._sleep: Sleep = sleep or stoppable_sleep
        self._rng = rng or random.Random()
        self._secrets = tuple(
            s for s in (*secrets, *getattr(backend, "secrets", ())) if isinstance(s, str) and s
        )
        # How a backend that does not say otherwise met a schema: its grammar (llama.cpp), or
        # the schema shown in the prompt and validation after.
        self._default_mode: StructuredMode = (
            "grammar" if getattr(backend, "constrains_output", False) else "prompt"
        )
        self._breaker: CircuitBreaker | None = None
        if backend.base_url and self.options.breaker_failures > 0:
            self._breaker = breaker_for(
                backend.base_url,
                threshold=self.options.breaker_failures,
                cooldown_s=self.options.breaker_cooldown_s,
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(spec={self.spec!r}, backend={self.backend!r})"

    def answer(self, request: Request) -> Completion:
        started = time.perf_counter()
        try:
            return self._complete(
                request.messages,
                request.schema,
                request.max_tokens,
                request.temperature,
                started,
                role=request.role,
                purpose=request.purpose,
            )
        except ModelFailure as failure:
            failure.model = self.spec
            failure.message = redact(failure.message, self._secrets)
            if failure.last_text is not None:
                failure.last_text = without_surrogates(redact(failure.last_text, self._secrets))
            failure.latency_s = time.perf_counter() - started
            raise
        except Exception as exc:
            # Contract: nothing but ModelFailure leaves complete(), whatever a backend does.
            message = redact(f"unexpected {type(exc).__name__}: {exc}", self._secrets)
            raise ModelFailure(
                "transport",
                message,
                model=self.spec,
                latency_s=time.perf_counter() - started,
            ) from None

    def _complete(
        self,
        messages: Sequence[Message],
        schema: type[BaseModel] | None,
        max_tokens: int,
        temperature: float,
        started: float,
        *,
        role: str = "",
        purpose: str = "",
    ) -> Completion:
        _check_arguments(messages, max_tokens, temperature)
        schema_json = _schema_json(schema)
        request = self._cache_request(messages, schema_json, max_tokens, temperature)
        if self.cache is not None and self.cache.readable:
            hit = self.cache.get(request.key())
            if hit is not None:
                replayed = self._replay(hit, schema, started)
                if replayed is not None:
                    return replayed
        conversation = self._conversation(messages, schema_json)
        spent = _Spent()
        repairs = 0
        previous: tuple[str, OutputProblem] | None = None
        while True:
            generation = GenerationRequest(
                messages=tuple(conversation),
                schema=schema_json,
                schema_name=schema_name_of(schema) if schema else None,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=self.options.seed,
                attempt=spent.attempts,
                role=role,
                purpose=purpose,
            )
            reply = self._send(generation, spent, previous)
            verdict = _verdict(reply, schema)
            if not isinstance(verdict, OutputProblem):
                completion = Completion(
                    text=reply.text,
                    parsed=verdict,
                    usage=spent.usage,
                    latency_s=time.perf_counter() - started,
                    cached=False,
                    repairs=repairs,
                    model=self.spec,
                    structured_mode=spent.structured_mode,
                    usage_note=spent.usage_note,
                    truncated=reply.truncated,
                    sent=tuple(spent.sent),
                )
                self._store(request, completion, spent.attempts)
                return completion
            if repairs >= self.options.max_repairs:
                failure = _out_of_repairs(reply, verdict, repairs, spent)
                self._store_failure(request, failure, time.perf_counter() - started)
                raise failure
            repairs += 1
            previous = (reply.text, verdict)
            logger.info("%s: repair turn %d after %s output", self.spec, repairs, verdict.kind)
            conversation.extend(
                repair_turns(
                    reply.text, verdict, max_tokens=max_tokens, structured=schema is not None
                )
            )

    def _cache_request(
        self,
        messages: Sequence[Message],
        schema_json: JsonSchema | None,
        max_tokens: int,
        temperature: float,
    ) -> CacheRequest:
        """The request as the response cache keys it."""
        return CacheRequest(
            backend=self.backend.name,
            model=self.backend.model_id,
            base_url=self.backend.base_url,
            messages=tuple(messages),
            schema=schema_json,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=self.options.seed,
            max_repairs=self.options.max_repairs,
        )

    def _conversation(
        self, messages: Sequence[Message], schema_json: JsonSchema | None
    ) -> list[Message]:
        """The messages as sent: sendable text, and the schema in the prompt when asked for (by
        default, when the backend does not constrain its output to the schema itself)."""
        in_prompt = self.options.schema_in_prompt
        if in_prompt is None:
            in_prompt = not getattr(self.backend, "constrains_output", False)
        # Text that is not valid Unicode (a lone surrogate, say from a tool's output) cannot be
        # encoded for any backend; it is sent with U+FFFD in its place.
        sendable = [replace(m, content=without_surrogates(m.content)) for m in messages]
        if schema_json and in_prompt:
            return with_schema_instruction(sendable, schema_json)
        return sendable

    def _send(
        self,
        generation: GenerationRequest,
        spent: _Spent,
        previous: tuple[str, OutputProblem] | None,
    ) -> RawReply:
        """One generation, with retries. When a repair turn itself cannot be sent (say, it
        overflowed the context), the failure is the output problem that needed repairing,
        which is the real cause."""
        try:
            return self._generate_with_retries(generation, spent)
        except ModelFailure as send_failure:
            if previous is None or send_failure.kind not in ("config", "context_overflow"):
                raise
            text, problem = previous
            raise ModelFailure(
                problem.kind,
                f"{problem.detail}; the repair turn failed: {send_failure.message}",
                attempts=spent.attempts,
                last_text=text,
                usage=spent.usage,
                sent=spent.sent,
            ) from None

    def _generate_with_retries(self, request: GenerationRequest, spent: _Spent) -> RawReply:
        options = self.options
        self._refuse_when_circuit_open(spent)
        retry = 0
        while True:
            spent.attempts += 1
            try:
                reply = self.backend.generate(request)
            except BackendError as error:
                message = redact(error.message, self._secrets)
                self._count_outage(error)
                if not error.retryable or retry >= options.max_retries:
                    exhausted = (
                        f" (gave up after {retry} retries)" if error.retryable and retry else ""
                    )
                    raise ModelFailure(
                        error.kind,
                        message + exhausted,
                        attempts=spent.attempts,
                        usage=spent.usage,
                        sent=spent.sent,
                    ) from None
                delay = backoff_delay(
                    retry, base_s=options.backoff_base_s, cap_s=options.backoff_cap_s, rng=self._rng
                )
                if error.retry_after_s is not None:
                    delay = max(delay, min(error.retry_after_s, options.backoff_cap_s))
                logger.warning(
                    "%s: %s; retry %d/%d in %.2fs",
                    printable(self.spec),
                    printable(message),
                    retry + 1,
                    options.max_retries,
                    delay,
                )
                self._sleep(delay)
                retry += 1
                continue
            if self._breaker is not None:
                self._breaker.record_success()
            spent.usage = spent.usage + reply.usage
            if reply.usage_note:
                spent.usage_notes.append(reply.usage_note)
            if request.schema is not None:
                spent.structured_mode = reply.structured_mode or self._default_mode
            # A server or proxy that echoes the key back must not put it in a trace.
            text = redact(reply.text, self._secrets)
            if text != reply.text:
                reply = replace(reply, text=text)
            spent.sent.append(SentRequest(request.messages, reply.usage.prompt_tokens, reply.text))
            return reply

    def _refuse_when_circuit_open(self, spent: _Spent) -> None:
        """Fail fast, before any request, while this server's circuit breaker is open."""
        if self._breaker is None:
            return
        wait = self._breaker.refusal()
        if wait is None:
            return
        raise ModelFailure(
            "transport",
            f"{self.backend.base_url} failed {self._breaker.failures} times in a row, so it is "
            f"not called for another {wait:.0f}s (circuit breaker); check that the server is "
            "running and reachable",
            attempts=spent.attempts,
            usage=spent.usage,
            sent=spent.sent,
        )

    def _count_outage(self, error: BackendError) -> None:
        if self._breaker is None or not error.outage:
            return
        if self._breaker.record_outage():
            logger.warning(
                "%s: %d failures in a row from %s; calls to it fail fast for %.0fs",
                self.spec,
                self._breaker.failures,
                self.backend.base_url,
                self._breaker.cooldown_s,
            )

    def _replay(
        self, hit: CachedOutcome, schema: type[BaseModel] | None, started: float
    ) -> Completion | None:
        if hit.failure_kind is not None:
            raise ModelFailure(
                hit.failure_kind,
                hit.failure_message or "recorded failure",
                attempts=hit.attempts,
                last_text=hit.text,
                usage=hit.usage,
                cached=True,
                structured_mode=hit.structured_mode,
            )
        parsed: BaseModel | None = None
        if schema is not None:
            try:
                parsed = schema.model_validate(hit.parsed)
            except ValidationError:
                return None  # the row predates a validator change: answer afresh
        return Completion(
            text=hit.text or "",
            parsed=parsed,
            usage=hit.usage,
            latency_s=time.perf_counter() - started,
            cached=True,
            repairs=hit.repairs,
            model=self.spec,
            structured_mode=hit.structured_mode,
        )

    def _store(self, request: CacheRequest, completion: Completion, attempts: int) -> None:
        if self.cache is None or not self.cache.writable:
            return
        parsed = (
            completion.parsed.model_dump(mode="json") if completion.parsed is not None else None
        )
        self.cache.put(
            request,
            CachedOutcome(
                text=completion.text,
                parsed=parsed,
                usage=completion.usage,
                repairs=completion.repairs,
                attempts=attempts,
                latency_s=completion.latency_s,
                structured_mode=completion.structured_mode,
            ),
        )

    def _store_failure(self, request: CacheRequest, failure: ModelFailure, latency: float) -> None:
        if self.cache is None or not self.cache.writable:
            return
        if failure.kind not in _RECORDED_FAILURES:
            return
        self.cache.put(
            request,
            CachedOutcome(
                text=redact(failure.last_text or "", self._secrets),
                parsed=None,
                usage=failure.usage,
                repairs=self.options.max_repairs,
                attempts=failure.attempts,
                latency_s=latency,
                failure_kind=failure.kind,
                failure_message=redact(failure.message, self._secrets),
                structured_mode=failure.structured_mode,
            ),
        )


def _check_arguments(messages: Sequence[Message], max_tokens: int, temperature: float) -> None:
    if not messages:
        raise ModelFailure("config", "no messages given: pass at least one user message")
    for message in messages:
        if not isinstance(message, Message):
            raise ModelFailure(
                "config", f"messages must be Message instances, got {type(message).__name__}"
            )
        if message.role not in ("system", "user", "assistant"):
            raise ModelFailure("config", f"unknown message role {message.role!r}")
    if max_tokens < 1:
        raise ModelFailure("config", f"max_tokens must be at least 1, got {max_tokens}")
    if temperature < 0:
        raise ModelFailure("config", f"temperature must be >= 0, got {temperature}")


def _schema_json(schema: type[BaseModel] | None) -> JsonSchema | None:
    if schema is None:
        return None
    try:
        return json_schema_of(schema)
    except Exception as exc:
        raise ModelFailure("config", f"cannot build a JSON schema from {schema!r}: {exc}") from None
