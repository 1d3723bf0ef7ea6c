"""One JSON POST with a hard wall-clock deadline and a cap on the reply size.

HTTP clients time each network read, not the whole exchange: a server that sends a byte every
few seconds can hold a call for as long as it likes, and one that sends 30 MB fills memory.
Here the exchange runs on a daemon thread while the caller waits at most `timeout_s` for it;
the thread stops reading at `max_bytes` (keeping only that much) and gives up at its next read
once the caller has stopped waiting, so nothing outlives the deadline by more than one read.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from pos_agent.llm._stop import RequestsStopped, raise_if_stopped, wait_or_stop


class DeadlineExceeded(Exception):
    """The whole exchange did not finish within its deadline."""


@dataclass(frozen=True)
class HttpReply:
    """Status, lower-cased headers and body. `oversize` is True when the body was cut at the
    cap (`body` then holds only its first `max_bytes`)."""

    status: int
    headers: dict[str, str]
    body: bytes
    oversize: bool = False


def post_json(
    client: Any,
    url: Any,
    payload: dict[str, Any],
    headers: dict[str, str],
    *,
    timeout_s: float,
    max_bytes: int,
) -> HttpReply:
    """POST `payload` with an httpx client; raises DeadlineExceeded or httpx's errors."""
    outcome: list[HttpReply | BaseException] = []
    done = threading.Event()
    abandoned = threading.Event()
    # Text that is not valid Unicode (a lone surrogate) must not fail the call here.
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8", errors="replace")
    headers = {**headers, "content-type": "application/json"}

    def exchange() -> None:
        try:
            outcome.append(_exchange(client, url, body, headers, timeout_s, max_bytes, abandoned))
        except BaseException as exc:  # handed to the waiting caller, who re-raises it
            outcome.append(exc)
        finally:
            done.set()

    raise_if_stopped()  # a stopped run sends nothing more
    threading.Thread(target=exchange, name="pos-llm-http", daemon=True).start()
    try:
        answered = wait_or_stop(done, timeout_s)
    except RequestsStopped:
        abandoned.set()
        raise
    if not answered:
        abandoned.set()
        raise DeadlineExceeded(f"no complete reply within {timeout_s:g}s")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _exchange(
    client: Any,
    url: Any,
    body: bytes,
    headers: dict[str, str],
    timeout_s: float,
    max_bytes: int,
    abandoned: threading.Event,
) -> HttpReply:
    """Send the JSON `body` and read the reply up to `max_bytes` (stops when `abandoned`)."""
    with client.stream("POST", url, content=body, headers=headers, timeout=timeout_s) as response:
        reply_headers = {name.lower(): value for name, value in response.headers.items()}
        declared = reply_headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            return HttpReply(response.status_code, reply_headers, b"", oversize=True)
        parts: list[bytes] = []
        size = 0
        # Decoded bytes are counted, so a compressed reply cannot slip past the cap either.
        for chunk in response.iter_bytes():
            if abandoned.is_set():
                break
            size += len(chunk)
            if size > max_bytes:
                parts.append(chunk[: max_bytes - (size - len(chunk))])
                return HttpReply(response.status_code, reply_headers, b"".join(parts), True)
            parts.append(chunk)
        return HttpReply(response.status_code, reply_headers, b"".join(parts))
