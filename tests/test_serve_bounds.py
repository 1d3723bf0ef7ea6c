"""`pos serve`'s bounds: a request body past the limit is refused (413) before it is read whole,
through a real server on 127.0.0.1; a session keeps a bounded memory (its monitor's keys and its
notes); and the store evicts an idle session before a busy one."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from pos_agent.monitor import TrapMonitor
from pos_agent.serve import ServeConfig
from pos_agent.serve.proxy import Proxy
from pos_agent.serve.sessions import Session, SessionStore
from test_serve_fakes import NUDGE_MARK, Upstream, history_text, loops_until, sdk_loop, serving

HUGE = 200 * 1024 * 1024


def _raw_post(url: str, path: str, declared: int, sent: bytes) -> tuple[bytes, float]:
    """POST with a declared Content-Length, sending only `sent` of the body; the proxy's whole
    answer (read until it closes) and the seconds it took."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared}\r\n\r\n"
        )
        sock.sendall(head.encode() + sent)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer, time.monotonic() - started


def test_a_200_mb_body_is_refused_before_it_is_read() -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream) as (url, _):
        # 200 MB declared, 64 KiB sent: the proxy answers at once, without waiting for the rest.
        answer, seconds = _raw_post(url, "/v1/chat/completions", HUGE, b"{" + b" " * 65535)
    status, _, rest = answer.partition(b"\r\n")
    assert b" 413 " in status, answer[:300]
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert body["error"]["type"] == "request_too_large"
    assert "--max-body-mb" in body["error"]["message"]
    assert seconds < 10
    assert upstream.bodies == []


def _chunks(total: int, size: int = 1024) -> Iterator[bytes]:
    yield b'{"model": "m", "messages": [], "pad": "'
    for _ in range(total // size):
        yield b"x" * size
    yield b'"}'


def test_a_chunked_body_past_the_limit_gets_413() -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream, max_body_bytes=2048) as (url, _):
        big = httpx.post(f"{url}/chat/completions", content=_chunks(8192), timeout=20)
        small = httpx.post(
            f"{url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            timeout=20,
        )
        passthrough = httpx.post(f"{url}/embeddings", content=_chunks(8192), timeout=20)
    assert big.status_code == 413 and big.json()["error"]["type"] == "request_too_large"
    assert passthrough.status_code == 413
    assert small.status_code == 200
    assert len(upstream.bodies) == 1  # only the small one reached the upstream


def test_a_session_keeps_only_its_latest_notes(tmp_path: Path) -> None:
    upstream = Upstream(loops_until("a mark that never comes"))
    with serving(upstream, policy="nudge", max_notes=2) as (url, app):
        sdk_loop(url, max_turns=30)
        session = app.state.proxy.store.peek("sdk")
    notes = [m for m in upstream.bodies[-1]["messages"] if NUDGE_MARK in history_text([m])]
    assert session.report.escalation != "none"  # the monitor kept advising ...
    assert 1 <= len(session.notes) <= 2  # ... and only the latest two notes are kept
    assert 1 <= len(notes) <= 2


def _distinct_history(steps: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Survey the repository."}]
    for n in range(steps):
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"pkg/m{n}.py"})},
        }
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": f"c{n}",
                "content": f"pkg/m{n}.py defines Widget{n} and helper_{n}_alpha, helper_{n}_beta",
            },
        ]
    return messages


def _remembered(memory_keys: int | None, steps: int) -> int:
    config = ServeConfig(upstream="http://127.0.0.1:9/v1")
    if memory_keys is not None:
        config = ServeConfig(upstream="http://127.0.0.1:9/v1", memory_keys=memory_keys)
    proxy = Proxy(config)
    asyncio.run(proxy.verdict({"x-pos-session": "long"}, _distinct_history(steps)))
    session = proxy.store.peek("long")
    assert session is not None and session.steps == steps
    return session.monitor.remembered


def test_a_long_session_holds_a_bounded_memory() -> None:
    # The default remembers all of a 300-step run; a cap of 64 keys of each kind holds it.
    assert _remembered(None, 300) > 4 * 64
    assert _remembered(64, 300) <= 4 * 64


def test_the_store_evicts_an_idle_session_before_a_busy_one() -> None:
    evicted: list[str] = []
    store = SessionStore(max_sessions=2, on_evict=lambda s, why: evicted.append(s.id))

    def new(key: str) -> Session:
        return Session(key, TrapMonitor("goal"))

    async def run() -> None:
        busy = store.get("busy", new)
        store.get("idle", new)
        async with busy.lock:  # the least recently used session is handling a request
            store.get("third", new)

    asyncio.run(run())
    assert evicted == ["idle"]
    assert store.peek("busy") is not None and store.peek("third") is not None
