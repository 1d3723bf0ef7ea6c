"""Shared pieces of the `pos serve` tests (no tests here): a scripted OpenAI-compatible upstream,
servers run by uvicorn in a thread on 127.0.0.1 (ports from the OS), and the scripted loops.

The upstream is scripted so that the agent loops until it sees a marker in its history: the
monitor's note (`NOTE_PREFIX` + "Note:") for a nudge, the refusal ("Blocked:") for a block. So
"the agent leaves the loop" is a test that fails when the proxy does nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pos_agent.serve import NOTE_PREFIX, ServeConfig, create_app, message_text

NUDGE_MARK = f"{NOTE_PREFIX} Note:"
BLOCK_MARK = f"{NOTE_PREFIX} Blocked:"
READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}
KEY = "sk-test-0123456789abcdefghijklmnop"


def history_text(messages: list[Any]) -> str:
    return "\n".join(message_text(m) for m in messages if isinstance(m, dict))


def loops_until(mark: str, *, finish: Callable[[], dict[str, Any]] | None = None) -> Callable:
    """A script: read the same file again and again until `mark` is in the history, then
    answer (by default: a text answer)."""

    def script(body: dict[str, Any]) -> dict[str, Any]:
        if mark in history_text(body.get("messages", [])):
            return finish() if finish else {"content": "I will stop repeating myself. Done."}
        return {"tool_calls": [("read_file", {"path": "app.py"})]}

    return script


def productive(paths: int = 8) -> Callable:
    """A script: read `paths` different files, one a turn, then answer."""

    def script(body: dict[str, Any]) -> dict[str, Any]:
        done = sum(1 for m in body.get("messages", []) if m.get("role") in ("tool", "user")) - 1
        turn = max(done, 0)
        if turn >= paths:
            return {"content": "All files read. Done."}
        return {"tool_calls": [("read_file", {"path": f"module_{turn}.py"})]}

    return script


@dataclass
class Upstream:
    """What the scripted upstream does and what it saw."""

    script: Callable[[dict[str, Any]], dict[str, Any]]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    status: int = 200
    error_body: bytes = b""
    stream_gate: threading.Event | None = None
    """When set, a stream sends its first chunk, then waits for the gate before the rest."""
    ids: Iterator[int] = field(default_factory=itertools.count)


def upstream_app(upstream: Upstream) -> Starlette:
    async def chat(request: Request) -> Response:
        body = json.loads(await request.body())
        upstream.bodies.append(body)
        upstream.headers.append(dict(request.headers))
        if upstream.status != 200:
            return Response(
                upstream.error_body, status_code=upstream.status, media_type="application/json"
            )
        reply = upstream.script(body)
        n = next(upstream.ids)
        calls = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(reply.get("tool_calls", []))
        ]
        if body.get("stream"):
            return StreamingResponse(
                _stream(upstream, n, reply, calls), media_type="text/event-stream"
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        if calls:
            message["tool_calls"] = calls
        return JSONResponse(
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 1,
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if calls else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )

    async def models(request: Request) -> Response:
        upstream.headers.append(dict(request.headers))
        return JSONResponse({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    async def embeddings(request: Request) -> Response:
        body = json.loads(await request.body())
        upstream.bodies.append(body)
        return JSONResponse({"object": "list", "data": [{"index": 0, "embedding": [0.5, 0.25]}]})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
        ]
    )


async def _stream(
    upstream: Upstream, n: int, reply: dict[str, Any], calls: list[dict[str, Any]]
) -> AsyncIterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(data)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    if upstream.stream_gate is not None:
        opened = await asyncio.to_thread(upstream.stream_gate.wait, 10)
        if not opened:
            return
    if calls:
        for i, call in enumerate(calls):
            fn = call["function"]
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": fn["name"], "arguments": ""},
                        }
                    ]
                }
            )
            args = fn["arguments"]
            for cut in range(0, len(args), 8):
                yield chunk(
                    {"tool_calls": [{"index": i, "function": {"arguments": args[cut : cut + 8]}}]}
                )
        yield chunk({}, "tool_calls")
    else:
        for word in (reply.get("content") or "").split(" "):
            yield chunk({"content": word + " "})
        yield chunk({}, "stop")
    yield b"data: [DONE]\n\n"


class ThreadServer:
    """An ASGI app served by uvicorn in a thread on 127.0.0.1, on a port the OS picks."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    @property
    def url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@contextmanager
def serving(upstream: Upstream, **settings: Any) -> Iterator[tuple[str, Any]]:
    """The scripted upstream and a proxy in front of it: yields the proxy's /v1 URL and app."""
    with ThreadServer(upstream_app(upstream)) as up:
        config = ServeConfig(upstream=f"{up.url}/v1", **settings)
        app = create_app(config)
        with ThreadServer(app) as proxy:
            yield f"{proxy.url}/v1", app


def pos_auth(app: Any) -> dict[str, str]:
    """The header the proxy's `/pos/*` endpoints need (its token)."""
    return {"Authorization": f"Bearer {app.state.proxy.config.pos_token}"}


def run_tool(name: str, arguments: str, clock: Iterator[int]) -> str:
    """The agent's tool: a read that always gives the same file (with a changing timestamp)."""
    path = json.loads(arguments or "{}").get("path", "?")
    stamp = next(clock)
    if path == "app.py":
        return f"[2026-12-01T09:{stamp % 60:02d}:00Z] app.py: def main(): raise SystemExit(1)"
    return f"{path}: defines handler_{path.split('_')[-1].split('.')[0]} and helper functions"


def sdk_loop(
    base_url: str, *, session: str | None = "sdk", max_turns: int = 20, stream: bool = False
) -> tuple[list[dict[str, str]], list[dict[str, Any]], str | None]:
    """The plain `openai` SDK tool loop: call, run the tools, repeat until no tool call.
    Returns each response's headers, the history and the last answer's text."""
    from openai import OpenAI

    client: Any = OpenAI(
        base_url=base_url,
        api_key=KEY,
        max_retries=0,
        default_headers={"X-PoS-Session": session} if session else None,
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix the failing program app.py."},
        {"role": "user", "content": "Find out why app.py exits with status 1."},
    ]
    clock = itertools.count()
    seen: list[dict[str, str]] = []
    text = None
    for _ in range(max_turns):
        if stream:
            with client.chat.completions.with_streaming_response.create(
                model="fake", messages=messages, tools=[READ_TOOL], stream=True
            ) as raw:
                seen.append(dict(raw.headers))
                content = ""
                calls: dict[int, dict[str, str]] = {}
                for line in raw.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    delta = json.loads(line[6:])["choices"][0]["delta"]
                    content += delta.get("content") or ""
                    for part in delta.get("tool_calls") or []:
                        slot = calls.setdefault(
                            part["index"], {"id": "", "name": "", "arguments": ""}
                        )
                        slot["id"] = part.get("id") or slot["id"]
                        fn = part.get("function") or {}
                        slot["name"] += fn.get("name") or ""
                        slot["arguments"] += fn.get("arguments") or ""
                tool_calls = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for _, c in sorted(calls.items())
                ]
                message: dict[str, Any] = {"role": "assistant", "content": content or None}
        else:
            raw = client.chat.completions.with_raw_response.create(
                model="fake", messages=messages, tools=[READ_TOOL]
            )
            seen.append(dict(raw.headers))
            answer = raw.parse().choices[0].message
            message = {"role": "assistant", "content": answer.content}
            tool_calls = [c.model_dump() for c in answer.tool_calls or []]
        text = message["content"]
        if tool_calls:
            message["tool_calls"] = tool_calls
        messages.append(message)
        if not tool_calls:
            break
        for call in tool_calls:
            function: Any = call["function"]
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": run_tool(function["name"], function["arguments"], clock),
                }
            )
    return seen, messages, text
