"""A loopback OpenAI-compatible chat server whose behaviour a test sets and changes while it runs.

It answers each schema with its smallest valid object (after `latency_s`), a request with
`tools` with a call of the first tool (or, with `refuse_tools`, an HTTP 400), or fails with an
HTTP status and message, and records when every request arrived, so a test can tell whether a
process went on calling the model after it should have stopped.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pos_agent.llm.backend import minimal_instance


@dataclass
class Behaviour:
    """What the server does with the next request."""

    latency_s: float = 0.0
    status: int = 200
    message: str = ""
    request_times: list[float] = field(default_factory=list)
    refuse_tools: bool = False  # answer a request with `tools` as a server without them would
    bodies: list[dict[str, Any]] = field(default_factory=list)
    fail_first: int = 0
    """The first this-many requests fail with HTTP 500 (an outage that then ends)."""


class _Handler(BaseHTTPRequestHandler):
    behaviour: Behaviour

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        behaviour = self.behaviour
        behaviour.request_times.append(time.monotonic())
        time.sleep(behaviour.latency_s)
        behaviour.bodies.append(body)
        if len(behaviour.request_times) <= behaviour.fail_first:
            self._send(500, {"error": {"message": "the server is restarting", "type": "x"}})
            return
        if behaviour.status != 200:
            self._send(behaviour.status, {"error": {"message": behaviour.message, "type": "x"}})
            return
        tools = body.get("tools")
        if tools and behaviour.refuse_tools:
            self._send(400, {"error": {"message": "tools are not supported", "type": "x"}})
            return
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if tools:  # native tool calling: the first tool, its smallest valid arguments
            function = tools[0]["function"]
            arguments = json.dumps(minimal_instance(function["parameters"]))
            message["tool_calls"] = [
                {"id": "c1", "type": "function",
                 "function": {"name": function["name"], "arguments": arguments}}
            ]  # fmt: skip
        else:
            fmt = body.get("response_format") or {}
            schema = (fmt.get("json_schema") or {}).get("schema")
            message["content"] = (
                json.dumps(minimal_instance(schema)) if schema else '{"status": "ok"}'
            )
        self._send(
            200,
            {
                "id": "fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            },
        )

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a deadline, a killed process)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def fake_openai(behaviour: Behaviour | None = None) -> Iterator[tuple[str, Behaviour]]:
    """(base_url, behaviour) of a running server; stopped when the block ends."""
    behaviour = behaviour or Behaviour()
    handler = type("Handler", (_Handler,), {"behaviour": behaviour})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", behaviour
    finally:
        server.shutdown()
        server.server_close()
