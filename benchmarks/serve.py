"""What `pos serve` costs an agent: added round-trip latency, the proxy's CPU per request, its
event-loop lag, and its memory (a large body refused, many sessions, an idle session).

    python -m benchmarks.serve [--sessions 64] [--turns 20] [--delay-ms 50] [--think-s 1]
        [--policy observe] [--churn 10000 --churn-sessions 1000] [--idle 500]

A scripted upstream (it answers every chat request with one tool call after `--delay-ms`) and
the proxy in front of it each run in a process of their own, served by uvicorn on 127.0.0.1
(benchmarks/serve_servers.py). Then:

1. Round trips: `--sessions` agents run a tool loop at the same time, `--think-s` seconds of
   tool time between a session's requests, the history growing one call a turn. Every turn
   sends the same request straight to the upstream and through the proxy, in alternating
   order, so both see the same machine load. Printed: each one's p50 and p99, the latency the
   proxy adds (the difference of the percentiles, and the percentiles of the per-request
   differences), the proxy process's CPU time per proxied request (from /proc, all of its
   work: HTTP in and out, the JSON, the monitor), the in-handler CPU it reports in
   `Server-Timing`, and the lag of the proxy's event loop (a task sleeping 20 ms records how
   late it wakes up: the time another session's request waited on this one's work).
2. A large body: 200 MB declared and then 200 MB sent chunked at the proxy; how it answers, and
   its RSS before and after.
3. Churn: `--churn` requests across `--churn-sessions` sessions, 64 at a time, the proxy's RSS
   at each quarter.
4. Memory per idle session (tracemalloc, in this process, on the proxy's session objects).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import random
import select
import socket
import sys
import time
import tracemalloc
from typing import Any

from benchmarks.serve_servers import LAG_PATH, PROBE_S, cpu_seconds, rss_mb, serve, spawn

TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
LARGE = 200 * 1024 * 1024


def history(session: int, turns: int) -> list[dict[str, Any]]:
    """A tool loop's history of `turns` steps: mostly new files, every fourth turn a repeat."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Task {session}: make the test suite pass."},
    ]
    for turn in range(turns):
        path = "tests/test_app.py" if turn % 4 == 3 else f"src/module_{turn}.py"
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": path})},
        }
        output = (
            f"[2026-12-01T10:{turn % 60:02d}:00Z] {path}: 42 lines; defines handler_{turn} "
            f"and helper_{turn} (request_id=req{session:04d}{turn:04d})"
        )
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": output},
        ]
    return messages


def server_timing(header: str) -> dict[str, float]:
    """`Server-Timing` metrics in seconds: `pos;dur=0.7, pos-cpu;dur=0.6` -> {pos: 0.0007, ...}."""
    out = {}
    for metric in header.split(","):
        name, _, params = metric.strip().partition(";")
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip() == "dur":
                out[name] = float(value) / 1000
    return out


def _ms(values: list[float], quantile: float) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(quantile * len(ordered)))] * 1000:.3f}"


def _quantile(values: list[float], quantile: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]


class Trips:
    """What one round-trip run collected."""

    def __init__(self) -> None:
        self.direct: list[float] = []
        self.proxied: list[float] = []
        self.paired: list[float] = []
        self.handler_cpu: list[float] = []


async def _post(client: Any, url: str, body: bytes, session: str) -> tuple[float, Any]:
    headers = {"content-type": "application/json", "x-pos-session": session}
    started = time.perf_counter()
    answer = await client.post(f"{url}/v1/chat/completions", content=body, headers=headers)
    spent = time.perf_counter() - started
    if answer.status_code != 200:
        raise SystemExit(f"serve: the proxy answered {answer.status_code}: {answer.text[:300]}")
    return spent, answer


async def _agent(
    client: Any, urls: tuple[str, str], session: int, turns: int, think_s: float, out: Trips
) -> None:
    """One session's tool loop: each turn the same request direct and via the proxy."""
    proxy, upstream = urls
    await asyncio.sleep(random.uniform(0, think_s))  # the sessions start spread out
    for turn in range(1, turns + 1):
        body = json.dumps({"model": "fake", "messages": history(session, turn), "tools": [TOOL]})
        data = body.encode()
        first_direct = (session + turn) % 2 == 0
        order = [(upstream, True), (proxy, False)]
        spent: dict[bool, float] = {}
        for url, direct in order if first_direct else order[::-1]:
            spent[direct], answer = await _post(client, url, data, f"s{session}")
            if not direct:
                timings = server_timing(answer.headers.get("server-timing", ""))
                if "pos-cpu" in timings:
                    out.handler_cpu.append(timings["pos-cpu"])
        out.direct.append(spent[True])
        out.proxied.append(spent[False])
        out.paired.append(spent[False] - spent[True])
        await asyncio.sleep(think_s)


async def round_trips(
    proxy: str, upstream: str, pids: tuple[int, int], args: argparse.Namespace
) -> None:
    import httpx

    size = 2 * args.sessions + 8
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size, keepalive_expiry=4)
    async with httpx.AsyncClient(timeout=120, limits=limits, trust_env=False) as client:
        warm = Trips()
        await asyncio.gather(
            *(_agent(client, (proxy, upstream), 90_000 + s, 3, 0, warm) for s in range(4))
        )
        await client.get(f"{proxy}{LAG_PATH}")  # start a new lag record
        out = Trips()
        cpu = [cpu_seconds(pid) for pid in pids]
        started = time.perf_counter()
        await asyncio.gather(
            *(
                _agent(client, (proxy, upstream), s, args.turns, args.think_s, out)
                for s in range(args.sessions)
            )
        )
        wall = time.perf_counter() - started
        spent = [
            (now[0] - then[0], now[1] - then[1])
            for now, then in zip((cpu_seconds(pid) for pid in pids), cpu, strict=True)
        ]
        lags = (await client.get(f"{proxy}{LAG_PATH}")).json()
    n = len(out.proxied)
    (proxy_user, proxy_system), upstream_spent = spent
    proxy_cpu, upstream_cpu = proxy_user + proxy_system, sum(upstream_spent)
    added = [(_quantile(out.proxied, q) - _quantile(out.direct, q)) * 1000 for q in (0.5, 0.99)]
    print(
        f"serve: round trips: {args.sessions} sessions x {args.turns} requests, upstream delay "
        f"{args.delay_ms:g} ms, {args.think_s:g} s between a session's requests, direct and "
        f"proxied alternated ({n} each, {wall:.1f} s)\n"
        f"serve:   direct p50 {_ms(out.direct, 0.5)} ms, p99 {_ms(out.direct, 0.99)} ms; "
        f"via the proxy p50 {_ms(out.proxied, 0.5)} ms, p99 {_ms(out.proxied, 0.99)} ms\n"
        f"serve:   added latency p50 {added[0]:.3f} ms, p99 {added[1]:.3f} ms (per-request "
        f"differences: p50 {_ms(out.paired, 0.5)} ms, p99 {_ms(out.paired, 0.99)} ms)\n"
        f"serve:   proxy CPU {proxy_cpu / n * 1000:.3f} ms per request (user "
        f"{proxy_user / n * 1000:.3f} + system {proxy_system / n * 1000:.3f}; process, {n} requests); "
        f"upstream CPU {upstream_cpu / (2 * n) * 1000:.3f} ms per request; in-handler CPU "
        f"p50 {_ms(out.handler_cpu, 0.5)} ms, p99 {_ms(out.handler_cpu, 0.99)} ms\n"
        f"serve:   proxy event-loop lag p50 {_ms(lags, 0.5)} ms, p99 {_ms(lags, 0.99)} ms, "
        f"max {_ms(lags, 1.0)} ms ({len(lags)} probes of {PROBE_S * 1000:g} ms)",
        flush=True,
    )


def _send_large(url: str, chunked: bool) -> tuple[str, int, float]:
    """Send a 200 MB body (declared, or chunked with no length) until the proxy answers or
    stops reading: its status line, the bytes sent and the seconds it took."""
    host, port = url.removeprefix("http://").split(":")
    length = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {LARGE}"
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Type: application/json\r\n{length}\r\n\r\n"
    ).encode()
    piece = b"x" * (1024 * 1024)
    frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece
    sent, answer = 0, b""
    started = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(head)
        while sent < LARGE:
            if select.select([sock], [], [], 0)[0]:
                break  # the proxy answered (or closed): stop sending
            try:
                sock.sendall(frame)
            except OSError:  # the proxy stopped reading (timeout) or closed
                break
            sent += len(piece)
        with contextlib.suppress(OSError):
            answer = sock.recv(4096)
    status = answer.partition(b"\r\n")[0].decode(errors="replace") or "(closed, no answer)"
    return status, sent, time.perf_counter() - started


def large_body(proxy: str, pid: int) -> None:
    before = rss_mb(pid)
    declared = _send_large(proxy, chunked=False)
    chunked = _send_large(proxy, chunked=True)
    after = rss_mb(pid)
    print(
        f"serve: large body: 200 MB declared -> {declared[0]} after {declared[2] * 1000:.1f} ms "
        f"({declared[1] / 2**20:.0f} MB sent); 200 MB chunked -> {chunked[0]} after "
        f"{chunked[2] * 1000:.1f} ms ({chunked[1] / 2**20:.0f} MB sent); proxy RSS "
        f"{before:.1f} MB before, {after:.1f} MB after",
        flush=True,
    )


async def churn(proxy: str, pid: int, requests: int, sessions: int) -> None:
    """`requests` requests across `sessions` sessions (each session's history growing a step a
    request), 64 at a time; the proxy's RSS at each quarter."""
    import httpx

    per = max(1, requests // sessions)
    jobs = [(s, t) for t in range(1, per + 1) for s in range(sessions)][:requests]
    marks = {len(jobs) * q // 4 for q in (1, 2, 3, 4)}
    rss = [rss_mb(pid)]
    queue = iter(enumerate(jobs, 1))
    limits = httpx.Limits(max_connections=72, max_keepalive_connections=72, keepalive_expiry=4)
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=120, limits=limits, trust_env=False) as client:

        async def worker() -> None:
            for done, (session, turn) in queue:
                body = json.dumps({"model": "fake", "messages": history(50_000 + session, turn)})
                await _post(client, proxy, body.encode(), f"churn-{session}")
                if done in marks:
                    rss.append(rss_mb(pid))

        await asyncio.gather(*(worker() for _ in range(64)))
    print(
        f"serve: churn: {len(jobs)} requests across {sessions} sessions ({per} steps each, "
        f"{time.perf_counter() - started:.1f} s): proxy RSS "
        + ", ".join(f"{mb:.1f}" for mb in rss)
        + " MB (start, then each quarter)",
        flush=True,
    )


def idle_session_memory(count: int, turns: int) -> float:
    """Bytes per idle session: the proxy's session objects after a `turns`-step history each."""
    from pos_agent.serve import ServeConfig
    from pos_agent.serve.proxy import Proxy

    proxy = Proxy(ServeConfig(upstream="http://127.0.0.1:9/v1", max_sessions=count + 1))
    histories = [history(s, turns) for s in range(count)]

    async def fill() -> None:
        for s, messages in enumerate(histories):
            await proxy.verdict({"x-pos-session": f"idle-{s}"}, messages)

    asyncio.run(proxy.verdict({"x-pos-session": "warm"}, history(0, turns)))  # imports, caches
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    asyncio.run(fill())
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(proxy.store) == count + 1
    return (after - before) / count


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=64, help="agents at the same time")
    parser.add_argument("--turns", type=int, default=20, help="requests per session")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="the upstream's delay")
    parser.add_argument("--think-s", type=float, default=1.0, help="tool time between requests")
    parser.add_argument("--policy", default="observe", choices=["observe", "nudge", "block"])
    parser.add_argument("--churn", type=int, default=10_000, help="requests of the churn (0: none)")
    parser.add_argument("--churn-sessions", type=int, default=1000)
    parser.add_argument("--idle", type=int, default=500, help="sessions for the idle memory")
    parser.add_argument("--role", choices=["upstream", "proxy"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _arguments(argv)
    if args.role:
        serve(args.role, args.port, args.upstream, args.policy, args.delay_ms / 1000)
        return
    random.seed(0)
    upstream, upstream_url = spawn("--role", "upstream", "--delay-ms", str(args.delay_ms))
    proxy, proxy_url = spawn(
        "--role", "proxy", "--upstream", f"{upstream_url}/v1", "--policy", args.policy
    )
    try:
        print(
            f"serve: scripted upstream {upstream_url}, proxy {proxy_url} (policy {args.policy}, "
            "model-free, traces off)",
            flush=True,
        )
        asyncio.run(round_trips(proxy_url, upstream_url, (proxy.pid, upstream.pid), args))
        large_body(proxy_url, proxy.pid)
        if args.churn:
            asyncio.run(churn(proxy_url, proxy.pid, args.churn, args.churn_sessions))
    finally:
        for process in (proxy, upstream):
            process.terminate()
            process.wait(30)
    per = idle_session_memory(args.idle, args.turns)
    print(
        f"serve: memory per idle session: {per / 1024:.1f} KiB "
        f"({args.idle} sessions of {args.turns} steps, tracemalloc)",
        flush=True,
    )


if __name__ == "__main__":
    main()
    sys.exit(0)
