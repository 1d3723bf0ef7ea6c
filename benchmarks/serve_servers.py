"""The servers of `benchmarks.serve`, each run in a process of its own by uvicorn on 127.0.0.1:
a scripted OpenAI-compatible upstream that answers every chat request with one tool call after a
fixed delay, and the proxy with an event-loop lag probe; plus the process figures (CPU time,
RSS) read from /proc."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

LAG_PATH = "/bench/lag"
PROBE_S = 0.02
"""The lag probe sleeps this long and records how late it wakes up."""

ANSWER = json.dumps(
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


def scripted_upstream(delay_s: float) -> Any:
    """An OpenAI-compatible upstream: every chat request is answered with the same tool call,
    `delay_s` seconds after its body has arrived (the model's time)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def chat(request: Request) -> Response:
        await request.body()
        await asyncio.sleep(delay_s)
        return Response(ANSWER, media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def with_lag_probe(app: Any) -> Any:
    """`app` with an event-loop lag probe: from the first request on, a task sleeps `PROBE_S`
    again and again and records how late it wakes. `GET /bench/lag` answers the lags recorded
    since the last call (in seconds) and starts a new record."""
    lags: list[float] = []
    probe: list[asyncio.Task[None]] = []

    async def measure() -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(PROBE_S)
            lags.append(time.perf_counter() - started - PROBE_S)

    async def probed(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not probe:
            probe.append(asyncio.get_running_loop().create_task(measure()))
        if scope["type"] == "http" and scope["path"] == LAG_PATH:
            body = json.dumps(lags).encode()
            lags.clear()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return probed


def serve(role: str, port: int, upstream: str | None, policy: str, delay_s: float) -> None:
    """Run one server in this process until it is terminated."""
    import uvicorn

    if role == "upstream":
        app = scripted_upstream(delay_s)
    else:
        from pos_agent.serve import ServeConfig, create_app

        assert upstream is not None
        config = ServeConfig(upstream=upstream, policy=policy)  # type: ignore[arg-type]
        app = with_lag_probe(create_app(config))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def spawn(*args: str) -> tuple[subprocess.Popen[bytes], str]:
    """A server process (`python -m benchmarks.serve --role ...`) and its URL, once it listens."""
    port = _free_port()
    command = [sys.executable, "-m", "benchmarks.serve", *args, "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = process.stderr.read().decode() if process.stderr else ""
            raise SystemExit(f"a server exited: {error}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("a server did not start within 60 s")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """The process's user and system CPU time so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def rss_mb(pid: int) -> float:
    """The process's resident memory in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")
