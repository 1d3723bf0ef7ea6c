"""The proxy's upstream connections: a kept-alive connection that the upstream closes as a
request goes out (its keep-alive timeout) costs the agent nothing: the request goes again on a
new connection, instead of a 502."""

from __future__ import annotations

import json
import socket
import threading

import httpx

from pos_agent.serve import ServeConfig, create_app
from test_serve_fakes import ThreadServer

ANSWER = json.dumps(
    {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
    }
).encode()


class ClosingUpstream:
    """An HTTP/1.1 upstream on a raw socket: the first connection is closed after its request
    is read, with no answer (as a keep-alive timeout does); later ones are answered."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                while len(body) < length:
                    body += conn.recv(65536)
                if self.connections == 1:
                    continue  # closed with no answer
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    + f"Content-Length: {len(ANSWER)}\r\n\r\n".encode()
                    + ANSWER
                )

    def close(self) -> None:
        self.sock.close()


def test_a_connection_closed_by_the_upstream_is_retried_not_a_502() -> None:
    upstream = ClosingUpstream()
    try:
        with ThreadServer(create_app(ServeConfig(upstream=upstream.url))) as proxy:
            answer = httpx.post(
                f"{proxy.url}/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hello"}]},
                timeout=20,
            )
    finally:
        upstream.close()
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "hi"
    assert upstream.connections == 2
