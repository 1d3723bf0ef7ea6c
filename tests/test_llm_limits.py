"""Bounded time and size: a deadline on the whole request, a cap on the reply, repair turns
that echo only a bounded prefix, and a circuit breaker for a server that is down."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from pydantic import BaseModel

from llm_fakes import Canned, FakeServer, chat, chat_body
from pos_agent.llm import Message, ModelFailure, ModelOptions, ReliableModel, load_model
from pos_agent.llm.backend import BackendError, CircuitBreaker, ScriptedBackend

# The fake server fixture, and forgetting what the process learnt about servers.
pytest_plugins = ["llm_fixtures"]


ASK = [Message("user", "Where is the mug?")]


class Where(BaseModel):
    place: str


def openai_model(server: FakeServer, **overrides: Any) -> ReliableModel:
    options = ModelOptions(base_url=server.base_url, **overrides)
    return load_model("openai:fake", options, sleep=lambda _: None)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_dripping_body_is_cut_at_the_request_deadline(server: FakeServer) -> None:
    # Headers at once, then one byte every 50 ms: each read is quick, the whole takes ~10 s.
    server.queue(Canned(200, chat_body('{"place": "sink"}'), drip_s=0.05))
    started = time.monotonic()
    with pytest.raises(ModelFailure) as caught:
        openai_model(server, timeout_s=0.6, max_retries=0).complete(ASK)
    elapsed = time.monotonic() - started
    assert caught.value.kind == "timeout"
    assert "0.6s" in caught.value.message and "whole request" in caught.value.message
    assert elapsed < 2.0, elapsed


def test_a_slow_but_steady_reply_within_the_deadline_succeeds(server: FakeServer) -> None:
    server.queue(Canned(200, chat_body("fine"), drip_s=0.001))
    assert openai_model(server, timeout_s=10).complete(ASK).text == "fine"


@pytest.mark.parametrize("send_length", [True, False], ids=["declared", "streamed"])
def test_an_oversized_reply_is_bad_output_never_held_or_resent(
    server: FakeServer, send_length: bool
) -> None:

    huge = chat_body('{"place": "' + "x" * 3_000_000 + '"}')
    server.queue(*[Canned(200, huge, send_length=send_length)] * 2)
    model = openai_model(server, max_reply_bytes=1_000_000, max_repairs=1)
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=Where)
    assert caught.value.kind == "schema"
    assert "1,000,000-byte limit" in caught.value.message
    assert len(server.seen) == 2  # one repair turn, no transport retries
    assert server.seen[1].size < 10_000  # the repair turn did not resend the reply
    assert len(caught.value.last_text or "") < 10_000


def test_a_repair_turn_echoes_only_a_bounded_prefix(server: FakeServer) -> None:
    runaway = "not json " * 50_000  # 450,000 characters, far past what 64 tokens can write
    server.queue(chat(runaway), chat('{"place": "sink"}'))
    answer = openai_model(server).complete(ASK, schema=Where, max_tokens=64)
    assert answer.parsed == Where(place="sink")
    echoed = server.seen[1].body["messages"][-2]
    assert echoed["role"] == "assistant"
    assert len(echoed["content"]) < 5_000 and "more characters not shown" in echoed["content"]


def test_a_reply_within_the_token_budget_is_echoed_whole(server: FakeServer) -> None:
    bad = '{"spot": "' + "y" * 6_000 + '"}'  # long, but within what 4,096 tokens can hold
    server.queue(chat(bad), chat('{"place": "sink"}'))
    openai_model(server).complete(ASK, schema=Where, max_tokens=4096)
    assert server.seen[1].body["messages"][-2]["content"] == bad


def test_the_circuit_breaker_fails_fast_after_consecutive_outages() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    options = ModelOptions(base_url=url, max_retries=2, breaker_failures=3, breaker_cooldown_s=60)
    sleeps: list[float] = []
    first = load_model("openai:a", options, sleep=sleeps.append)
    with pytest.raises(ModelFailure) as caught:
        first.complete(ASK)
    assert caught.value.attempts == 3 and len(sleeps) == 2
    # Another model of the same server (another role or case) does not call it at all.
    second = load_model("openai:b", options, sleep=sleeps.append)
    started = time.monotonic()
    with pytest.raises(ModelFailure) as fast:
        second.complete(ASK)
    assert fast.value.kind == "transport" and "circuit breaker" in fast.value.message
    assert fast.value.attempts == 0 and len(sleeps) == 2
    assert time.monotonic() - started < 0.5


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_breaker_lets_a_call_through_after_the_cooldown_and_closes_on_success() -> None:
    clock = Clock()
    breaker = CircuitBreaker(threshold=2, cooldown_s=30, clock=clock)
    assert not breaker.record_outage() and breaker.refusal() is None
    assert breaker.record_outage() and breaker.refusal() == pytest.approx(30)
    clock.now += 31
    assert breaker.refusal() is None  # half-open: one call may try
    assert breaker.record_outage()  # ...and its failure re-opens at once
    assert breaker.refusal() == pytest.approx(30)
    clock.now += 31
    breaker.record_success()
    assert breaker.failures == 0 and breaker.refusal() is None
    assert CircuitBreaker(threshold=0, cooldown_s=30).record_outage() is False  # turned off


def scripted_server(script: list[Any], **overrides: Any) -> ReliableModel:
    backend = ScriptedBackend(script)
    backend.base_url = "http://127.0.0.1:9/v1"  # never contacted: the backend is scripted
    return ReliableModel(
        backend,
        spec="scripted",
        options=ModelOptions(breaker_failures=2, **overrides),
        sleep=lambda _: None,
    )


def test_rate_limits_are_not_outages() -> None:
    busy = BackendError("transport", "HTTP 429", retryable=True, outage=False)
    model = scripted_server([busy, busy, busy, "ok"], max_retries=3)
    assert model.complete(ASK).text == "ok"
    assert model._breaker is not None and model._breaker.refusal() is None


def test_a_success_between_failures_keeps_the_breaker_closed() -> None:
    down = BackendError("transport", "connection refused", retryable=True)
    model = scripted_server([down, "ok", down, "ok"], max_retries=1)
    assert model.complete(ASK).text == "ok"
    assert model.complete(ASK).text == "ok"
    assert model._breaker is not None and model._breaker.refusal() is None
