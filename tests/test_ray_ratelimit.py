"""The cluster's model rate limit (llm/_ratelimit.py): concurrency, pace, 429 Retry-After, leases,
and the hook in the HTTP path. The Gate's clock is injected: no test sleeps on a guess."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pos_agent.llm import Gate, Message, RateLimits
from pos_agent.llm._ratelimit import LocalLimiter, install, request_slot
from pos_agent.llm.backend import BackendError, GenerationRequest, OpenAICompatibleBackend


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_concurrency_is_limited_per_model_key() -> None:
    clock = Clock()
    gate = Gate(RateLimits(concurrency=2), clock)
    first, _ = gate.try_take("srv|a")
    second, _ = gate.try_take("srv|a")
    third, wait = gate.try_take("srv|a")
    assert first and second and third is None and wait > 0
    other, _ = gate.try_take("srv|b")
    assert other is not None, "another model has its own limit"
    gate.give(first)
    again, _ = gate.try_take("srv|a")
    assert again is not None
    assert gate.in_flight("srv|a") == 2 and gate.max_in_flight == 2


def test_a_429_pauses_every_request_to_its_model_for_retry_after() -> None:
    clock = Clock()
    gate = Gate(RateLimits(concurrency=8), clock)
    lease, _ = gate.try_take("k")
    assert lease is not None
    gate.give(lease, 429, 7.0)
    blocked, wait = gate.try_take("k")
    assert blocked is None and wait == pytest.approx(7.0)
    clock.now += 6.9
    assert gate.try_take("k")[0] is None
    clock.now += 0.2
    assert gate.try_take("k")[0] is not None
    assert gate.paused == 1


def test_a_429_without_retry_after_pauses_for_the_default() -> None:
    clock = Clock()
    gate = Gate(RateLimits(concurrency=1, default_pause_s=2.5), clock)
    lease, _ = gate.try_take("k")
    assert lease is not None
    gate.give(lease, 429, None)
    assert gate.try_take("k") == (None, pytest.approx(2.5))


def test_requests_per_minute_are_spaced_evenly() -> None:
    clock = Clock()
    gate = Gate(RateLimits(per_minute=30), clock)  # one start every 2 s
    assert gate.try_take("k")[0] is not None
    blocked, wait = gate.try_take("k")
    assert blocked is None and wait == pytest.approx(2.0)
    clock.now += 2.0
    assert gate.try_take("k")[0] is not None


def test_a_lease_its_holder_never_gives_back_expires() -> None:
    clock = Clock()
    gate = Gate(RateLimits(concurrency=1, lease_s=30), clock)
    assert gate.try_take("k")[0] is not None  # its process dies holding it
    assert gate.try_take("k")[0] is None
    clock.now += 30.0
    assert gate.try_take("k")[0] is not None


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RateLimits(concurrency=0)
    with pytest.raises(ValueError, match="positive"):
        RateLimits(per_minute=0)


def test_without_a_limiter_the_slot_is_a_no_op() -> None:
    install(None)
    with request_slot("srv", "m") as slot:
        slot.done(429, 5.0)  # nobody to tell: nothing happens


def test_the_local_limiter_keeps_threads_within_the_limit() -> None:
    limiter = LocalLimiter(RateLimits(concurrency=2))
    inside, peak, lock = [0], [0], threading.Lock()
    release = threading.Event()
    entered = threading.Semaphore(0)

    def request() -> None:
        lease = limiter.acquire("k")
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        entered.release()
        release.wait(10)
        with lock:
            inside[0] -= 1
        limiter.release(lease, 200, None)

    threads = [threading.Thread(target=request) for _ in range(5)]
    for thread in threads:
        thread.start()
    assert entered.acquire(timeout=10) and entered.acquire(timeout=10)
    assert not entered.acquire(timeout=0.2), "a third request started beyond the limit"
    release.set()
    for thread in threads:
        thread.join(10)
    assert peak[0] == 2 and limiter.gate.in_flight("k") == 0


@contextmanager
def busy_server(replies: list[tuple[int, dict[str, str]]]) -> Iterator[tuple[str, list[float]]]:
    """A loopback server answering with `replies` in turn (status, headers), then 200s."""
    seen: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append(1.0)
            status, headers = replies.pop(0) if replies else (200, {})
            body: dict[str, Any] = (
                {"error": {"message": "slow down", "type": "rate_limit"}}
                if status != 200
                else {
                    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "ok"}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )  # fmt: skip
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


def request() -> GenerationRequest:
    return GenerationRequest((Message("user", "hi"),), None, None, 8, 0.0, 1)


class Recording:
    """A limiter that records what the HTTP path told it."""

    def __init__(self) -> None:
        self.acquired: list[str] = []
        self.released: list[tuple[int, int | None, float | None]] = []

    def acquire(self, key: str) -> int:
        self.acquired.append(key)
        return len(self.acquired)

    def release(self, lease: int, status: int | None, retry_after_s: float | None) -> None:
        self.released.append((lease, status, retry_after_s))


def test_the_http_path_asks_the_limiter_and_reports_a_429_retry_after() -> None:
    recording = Recording()
    install(recording)
    try:
        with busy_server([(429, {"Retry-After": "7"})]) as (url, seen):
            backend = OpenAICompatibleBackend("m", base_url=url, api_key="k", timeout_s=10)
            with pytest.raises(BackendError) as busy:
                backend.generate(request())
            assert busy.value.retry_after_s == 7.0
            assert backend.generate(request()).text == "ok"
    finally:
        install(None)
    assert len(seen) == 2
    assert recording.acquired == [f"{url}|m", f"{url}|m"]
    assert recording.released == [(1, 429, 7.0), (2, 200, None)]


def test_a_429_seen_by_one_request_pauses_the_next_one() -> None:
    clock = Clock()
    limiter = LocalLimiter(RateLimits(concurrency=4))
    limiter.gate.clock = clock
    install(limiter)
    try:
        with busy_server([(429, {"retry-after-ms": "1500"})]) as (url, _):
            backend = OpenAICompatibleBackend("m", base_url=url, api_key="k", timeout_s=10)
            with pytest.raises(BackendError):
                backend.generate(request())
    finally:
        install(None)
    assert limiter.gate.try_take(f"{url}|m") == (None, pytest.approx(1.5))
