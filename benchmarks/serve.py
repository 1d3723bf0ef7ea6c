"""Overhead of `pos serve` per request, excluding the upstream, and memory per idle session.

    python -m benchmarks.serve [--turns 20] [--sessions 1,16,64] [--policy observe] [--trace]

A local fake upstream (an ASGI app that answers every chat request at once with one tool call)
and the proxy in front of it each run in a process of their own, served by uvicorn on
127.0.0.1. For each concurrency level, that many sessions run a tool loop at the same time
(`--turns` requests each, the history growing by one tool call and its result a turn: mostly
new files read, every fourth turn a repeated read). The proxy's own time per request is what it
reports in its `Server-Timing` header: from the request's arrival to forwarding it (parsing the
history, the monitor, the notes), plus from the upstream's answer to the answer sent back (the
block check); the upstream's time is not in it, nor is any other request's, since that work has
no await in it. It is given as wall time and as the thread's CPU time (wall time on a shared
machine counts being preempted). The round trips are for reference: on one machine they hold
the client's and both servers' queueing too. The lines are

    serve: <n> sessions: proxy overhead p50 <x> ms, p99 <y> ms (cpu p50 <c> ms, p99 <d> ms;
        <r> requests; round trip p50 <a> ms via the proxy, <b> ms direct)

and `serve: memory per idle session: <k> KiB (<m> sessions of <s> steps, tracemalloc)`, measured
in this process on the proxy's own session objects after each was given a `--turns`-step
history. The target is p99 <= 5 ms at 64 sessions with the model-free monitor.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


def fake_upstream() -> Any:
    """An OpenAI-compatible upstream that answers every chat request at once with a tool call."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    answer = json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "fake",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
                            }
                        ],
                    },
                }
            ],
        }
    ).encode()

    async def chat(request: Request) -> Response:
        await request.body()
        return Response(answer, media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _spawn(*args: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [sys.executable, "-m", "benchmarks.serve", *args, "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(
                f"a server exited: {process.stderr.read().decode() if process.stderr else ''}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("a server did not start within 60 s")


async def _session_loop(
    client: Any, url: str, session: int, turns: int, direct: bool
) -> tuple[list[float], list[float], list[float]]:
    inside: list[float] = []
    cpu: list[float] = []
    trips: list[float] = []
    tag = "direct" if direct else "proxy"
    for turn in range(1, turns + 1):
        body = {"model": "fake", "messages": history(session, turn), "tools": [TOOL]}
        started = time.perf_counter()
        answer = await client.post(
            f"{url}/v1/chat/completions", json=body, headers={"X-PoS-Session": f"{tag}-{session}"}
        )
        trips.append(time.perf_counter() - started)
        answer.raise_for_status()
        timings = server_timing(answer.headers.get("server-timing", ""))
        if "pos" in timings:
            inside.append(timings["pos"])
            cpu.append(timings["pos-cpu"])
    return inside, cpu, trips


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


async def _level(proxy: str, upstream: str, sessions: int, turns: int) -> None:
    import httpx

    limits = httpx.Limits(max_connections=sessions + 4, max_keepalive_connections=sessions + 4)
    async with httpx.AsyncClient(timeout=60, limits=limits, trust_env=False) as client:
        await _session_loop(client, proxy, 10_000 + sessions, 2, False)  # warm both servers
        await _session_loop(client, upstream, 10_000 + sessions, 2, True)
        runs = await asyncio.gather(
            *(
                _session_loop(client, proxy, sessions * 1000 + s, turns, False)
                for s in range(sessions)
            )
        )
        direct = await asyncio.gather(
            *(
                _session_loop(client, upstream, sessions * 1000 + s, turns, True)
                for s in range(sessions)
            )
        )
    inside = [t for run in runs for t in run[0]]
    cpu = [t for run in runs for t in run[1]]
    trips = [t for run in runs for t in run[2]]
    direct_trips = [t for run in direct for t in run[2]]
    print(
        f"serve: {sessions} sessions: proxy overhead p50 {_ms(inside, 0.5)} ms, "
        f"p99 {_ms(inside, 0.99)} ms (cpu p50 {_ms(cpu, 0.5)} ms, p99 {_ms(cpu, 0.99)} ms; "
        f"{len(inside)} requests; round trip p50 {_ms(trips, 0.5)} ms via the proxy, "
        f"{_ms(direct_trips, 0.5)} ms direct)",
        flush=True,
    )


def _ms(values: list[float], quantile: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(quantile * len(ordered)))] * 1000:.3f}"


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


def _serve(role: str, port: int, upstream: str | None, policy: str, traces: str | None) -> None:
    import uvicorn

    if role == "upstream":
        app = fake_upstream()
    else:
        from pos_agent.serve import ServeConfig, create_app

        assert upstream is not None
        folder = Path(traces) if traces else None
        config = ServeConfig(upstream=upstream, policy=policy, trace_dir=folder)  # type: ignore[arg-type]
        app = create_app(config)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=20, help="requests per session")
    parser.add_argument("--sessions", default="1,16,64", help="concurrency levels")
    parser.add_argument("--policy", default="observe", choices=["observe", "nudge", "block"])
    parser.add_argument(
        "--trace", action="store_true", help="the proxy writes its traces (to a temp folder)"
    )
    parser.add_argument("--trace-dir", help=argparse.SUPPRESS)
    parser.add_argument("--idle", type=int, default=500, help="sessions for the memory figure")
    parser.add_argument("--role", choices=["upstream", "proxy"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role:
        _serve(args.role, args.port, args.upstream, args.policy, args.trace_dir)
        return
    scratch = tempfile.TemporaryDirectory(prefix="pos-perf-serve-")
    traces = ["--trace-dir", scratch.name] if args.trace else []
    upstream, upstream_url = _spawn("--role", "upstream")
    proxy, proxy_url = _spawn(
        "--role", "proxy", "--upstream", f"{upstream_url}/v1", "--policy", args.policy, *traces
    )
    try:
        print(
            f"serve: fake upstream {upstream_url}, proxy {proxy_url} (policy {args.policy}, "
            f"model-free, traces {'on' if args.trace else 'off'}, {args.turns} requests a "
            "session)",
            flush=True,
        )
        for sessions in (int(n) for n in args.sessions.split(",")):
            asyncio.run(_level(proxy_url, upstream_url, sessions, args.turns))
    finally:
        for process in (proxy, upstream):
            process.terminate()
            process.wait(30)
        scratch.cleanup()
    per = idle_session_memory(args.idle, args.turns)
    print(
        f"serve: memory per idle session: {per / 1024:.1f} KiB "
        f"({args.idle} sessions of {args.turns} steps, tracemalloc)",
        flush=True,
    )


if __name__ == "__main__":
    main()
    sys.exit(0)
