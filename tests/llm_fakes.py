"""A fake OpenAI-compatible server on 127.0.0.1 for the HTTP behaviours of the model layer
(its fixtures are in llm_fixtures.py).

It answers POST /v1/chat/completions from a queue of canned replies (any status, body, content
type, and pacing: a delay before answering, or a body dripped byte by byte) and records every
request it receives.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Canned:
    status: int = 200
    body: Any = None
    """A dict/list (sent as JSON), a str or raw bytes (sent as they are)."""
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    drip_s: float = 0.0
    """Seconds between single bytes of the body (a server that trickles its reply)."""
    send_length: bool = True
    """False: no content-length, the body ends when the connection closes."""

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


def chat_body(content: str | None, finish: str = "stop", usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    return body


def chat(content: str | None, finish: str = "stop", usage: bool = True) -> Canned:
    return Canned(200, chat_body(content, finish, usage))


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Canned:
    return Canned(status, {"error": {"message": message, "type": "x"}}, headers=headers or {})


def llama_cpp_refusal() -> Canned:
    """What llama-cpp-python's server (0.3.x) answers to response_format json_schema: HTTP 500
    with the request's validation error (recorded from the real server)."""
    message = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
        "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", "
        "line 376, in create_chat_completion\n    POST /v1/chat/completions"
    )
    return Canned(500, {"error": {"message": message, "type": "internal_server_error"}})


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    size: int


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is expected here


class FakeServer:
    """Answers POST /v1/chat/completions from a queue of canned replies and records requests."""

    def __init__(self) -> None:
        self.replies: deque[Canned] = deque()
        self.seen: list[Seen] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.seen.append(Seen(self.path, headers, json.loads(raw or b"{}"), len(raw)))
                reply = server.replies.popleft() if server.replies else error(500, "no reply")
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                data = reply.payload()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    if reply.send_length:
                        self.send_header("content-length", str(len(data)))
                    else:
                        self.send_header("connection", "close")
                        self.close_connection = True
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if reply.drip_s:
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(reply.drip_s)
                    else:
                        self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def queue(self, *replies: Canned) -> None:
        self.replies.extend(replies)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
