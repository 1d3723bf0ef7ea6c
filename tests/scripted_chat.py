"""A scripted OpenAI-compatible chat server on 127.0.0.1 for the framework adapter tests.

Each chat request is answered with the tool call the script names for it (`script(n)`, n = 0, 1,
... the request's index), until the request carries the monitor's hint (`marker`, anywhere in its
messages): from then on it answers with the final answer. So an agent whose hint never reaches the
model loops until its framework's step limit, and the test fails on the missing hint. A script
that returns None ends the run by itself (a productive run that needs no hint).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pos_agent.adapters import HINT_PREFIX

Script = Callable[[int], "tuple[str, dict[str, Any]] | None"]


@dataclass
class Chat:
    """What the server does and what it saw."""

    script: Script
    final_tool: str | None = None
    """Answer the end with a call of this tool (smolagents' `final_answer`), else with text."""
    marker: str = HINT_PREFIX
    bodies: list[dict[str, Any]] = field(default_factory=list)
    hint_at: int | None = None
    """The index of the first request that carried the marker."""
    tool_calls: int = 0
    base_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            n = len(self.bodies)
            self.bodies.append(body)
            seen = self.marker in json.dumps(body.get("messages", []))
            if seen and self.hint_at is None:
                self.hint_at = n
            planned = None if self.hint_at is not None else self.script(n)
            if planned is not None:
                self.tool_calls += 1
        if planned is None:
            return _reply(n, None, "done", self.final_tool)
        name, arguments = planned
        return _reply(n, (name, arguments), None, None)

    def hinted_requests(self) -> list[dict[str, Any]]:
        return [b for b in self.bodies if self.marker in json.dumps(b.get("messages", []))]


def _reply(
    n: int, call: tuple[str, dict[str, Any]] | None, text: str | None, final_tool: str | None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if call is None and final_tool is not None:
        call = (final_tool, {"answer": text})
    if call is not None:
        message["tool_calls"] = [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": call[0], "arguments": json.dumps(call[1])},
            }
        ]
        finish = "tool_calls"
    else:
        message["content"] = text
        finish = "stop"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class _Handler(BaseHTTPRequestHandler):
    chat: Chat

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "x"}})
            return
        self._send(200, self.chat.answer(body))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def scripted_chat(
    script: Script, *, final_tool: str | None = None, marker: str = HINT_PREFIX
) -> Iterator[Chat]:
    """Serve `script` on 127.0.0.1 (a free port) for the duration of the block; the run ends
    at the first request that carries `marker`."""
    chat = Chat(script, final_tool=final_tool, marker=marker)
    handler = type("Handler", (_Handler,), {"chat": chat})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    chat.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield chat
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def same_call(name: str, arguments: dict[str, Any]) -> Script:
    """The loop: the same call on every request."""
    return lambda n: (name, arguments)


def distinct_calls(name: str, key: str, values: list[str]) -> Script:
    """A productive run: one call per value, then the end."""
    return lambda n: (name, {key: values[n]}) if n < len(values) else None
