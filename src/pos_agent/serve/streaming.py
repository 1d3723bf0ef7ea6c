"""Streamed answers: relayed chunk by chunk as they come, through a guard while a block stands
(it holds only tool-call events and settles them at the end of the call), and ended with an
error event the client sees when the upstream's stream breaks, stalls or stops short.

The three judged APIs stream server-sent events. One error event serves them all: `event:
error` with a JSON body that has an `error` object (the `openai` client raises `APIError` on
it, for Chat Completions and the Responses API alike; the `anthropic` client raises on any
`error` event), and the Responses API's own `type`/`code`/`message` fields.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import httpx

from pos_agent.monitor import ToolCall, TrapMonitor
from pos_agent.serve.policy import Judge, Verdict, final_answer_call

__all__ = [
    "EventGuard",
    "StreamEnding",
    "StreamGuard",
    "StreamRewriter",
    "error_event",
    "relay",
    "sse",
    "sse_fields",
]

log = logging.getLogger("pos_agent.serve")


class StreamRewriter(Protocol):
    """What the relay needs of a guard."""

    def feed(self, chunk: bytes) -> list[bytes]: ...

    def close(self) -> list[bytes]: ...


def _event_end(buffer: bytes) -> int | None:
    for separator in (b"\n\n", b"\r\n\r\n"):
        at = buffer.find(separator)
        if at >= 0:
            return at + len(separator)
    return None


def sse_fields(event: bytes) -> tuple[str | None, str | None]:
    """The `event:` name and the joined `data:` lines of one server-sent event."""
    name = None
    data = []
    for line in event.decode("utf-8", "replace").splitlines():
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif line.startswith("event:"):
            name = line[6:].strip()
    return name, "\n".join(data) if data else None


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    """One server-sent event (with an `event:` line when named)."""
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n\n"


def error_event(kind: str, message: str, status: int = 502) -> bytes:
    """The event that ends a broken stream (see the module's docstring)."""
    error = {"type": kind, "message": message, "code": status}
    body = {"type": "error", "code": kind, "message": message, "param": None, "error": error}
    return sse(body, "error")


class EventGuard:
    """Splits a stream into events for `_event`; fails open: after an error (logged) it sends
    on what it held and, from then on, every chunk as it comes."""

    def __init__(self) -> None:
        self._buffer = b""
        self._held: list[bytes] = []
        self.failed = False

    def feed(self, chunk: bytes) -> list[bytes]:
        if self.failed:
            return [chunk]
        self._buffer += chunk
        out: list[bytes] = []
        while True:
            cut = _event_end(self._buffer)
            if cut is None:
                return out
            event, self._buffer = self._buffer[:cut], self._buffer[cut:]
            try:
                out += self._event(event)
            except Exception:
                return out + self._fail(event)

    def close(self) -> list[bytes]:
        if self.failed:
            return []
        event, self._buffer = self._buffer, b""
        try:
            out = self._event(event) if event else []
        except Exception:
            return self._fail(event)
        return out + self._release()

    def _event(self, event: bytes) -> list[bytes]:
        raise NotImplementedError

    def _fail(self, event: bytes) -> list[bytes]:
        log.exception("the block policy failed on a stream; the rest is relayed as it comes")
        self.failed = True
        rest, self._buffer = self._buffer, b""
        return [*self._release(), event, *([rest] if rest else [])]

    def _release(self) -> list[bytes]:
        held, self._held = self._held, []
        return held


class StreamGuard(EventGuard):
    """A streamed Chat Completions answer: tool-call deltas are held until the answer's end,
    then sent on, or replaced by one content chunk with the refusal and a `stop` finish (a
    `final_answer` call for smolagents at the stop level)."""

    def __init__(
        self, verdict: Verdict, monitor: TrapMonitor | None, judge: Judge | None = None
    ) -> None:
        super().__init__()
        self.judge = judge if judge is not None else Judge(verdict, monitor)
        self._calls: dict[int, dict[str, str]] = {}
        self._template: dict[str, Any] | None = None

    def _event(self, event: bytes) -> list[bytes]:
        _, data = sse_fields(event)
        if data is None or data == "[DONE]":
            return [*self._settle(None), event]
        try:
            chunk = json.loads(data)
        except ValueError:
            return [*self._release(), event]
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and delta.get("tool_calls"):
            self._template = chunk
            for raw in delta["tool_calls"]:
                if not isinstance(raw, dict):
                    continue
                slot = self._calls.setdefault(int(raw.get("index", 0)), {"name": "", "args": ""})
                function = raw.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["args"] += function.get("arguments") or ""
            self._held.append(event)
            if isinstance(choice, dict) and choice.get("finish_reason"):
                return self._settle(None)
            return []
        if isinstance(choice, dict) and choice.get("finish_reason") and self._held:
            return self._settle((chunk, event))
        return [*self._release(), event] if not self._held else [event]

    def _settle(self, finish: tuple[dict[str, Any], bytes] | None) -> list[bytes]:
        if not self._held:
            return [finish[1]] if finish else []
        calls = [ToolCall(c["name"], c["args"]) for _, c in sorted(self._calls.items())]
        refusal = self.judge(calls)
        if refusal is None:
            return [*self._release(), *([finish[1]] if finish else [])]
        template = dict(self._template or {})
        if refusal.final_answer:
            delta: dict[str, Any] = {"role": "assistant", "tool_calls": [final_answer_call("")]}
            call = delta["tool_calls"][0]
            call["index"] = 0
            call["function"]["arguments"] = json.dumps({"answer": refusal.text})
            reason = "tool_calls"
        else:
            delta, reason = {"role": "assistant", "content": refusal.text}, "stop"
        template["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
        out = [sse(template)]
        if finish is not None:
            chunk = finish[0]
            for choice in chunk.get("choices") or []:
                if isinstance(choice, dict):
                    choice["finish_reason"] = reason
            out.append(sse(chunk))
        else:
            template = dict(template)
            template["choices"] = [{"index": 0, "delta": {}, "finish_reason": reason}]
            out.append(sse(template))
        self._held.clear()
        self._calls.clear()
        return out

    def _release(self) -> list[bytes]:
        self._calls.clear()
        return super()._release()


class StreamEnding:
    """Watches a stream for the event that ends it as its API says (`pattern`): a stream that
    ends without one was cut short."""

    TAIL = 64

    def __init__(self, pattern: re.Pattern[bytes] | None) -> None:
        self.pattern = pattern
        self.complete = pattern is None
        self._tail = b""

    def seen(self, chunk: bytes) -> None:
        if self.complete or self.pattern is None:
            return
        window = self._tail + chunk
        if self.pattern.search(window):
            self.complete = True
        self._tail = window[-self.TAIL :]


async def relay(
    chunks: AsyncIterator[bytes],
    upstream: httpx.Response,
    guard: StreamRewriter | None,
    ending: StreamEnding,
    *,
    events: bool = True,
    on_end: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[bytes]:
    """The upstream's body, chunk by chunk as it comes (through the guard when a block
    stands). A stream of events (`events`) that breaks, stalls past the timeout or ends
    without its final event ends with `error_event`; any other body that breaks is cut (the
    client's read fails: never a silent, truncated answer). `on_end` runs once the answer is
    whole."""
    try:
        async for chunk in chunks:
            ending.seen(chunk)
            for piece in guard.feed(chunk) if guard is not None else (chunk,):
                yield piece
        if guard is not None:
            for piece in guard.close():
                yield piece
        if on_end is not None:
            await on_end()
        if not ending.complete:
            log.warning("the upstream ended a stream before its last event")
            yield error_event(
                "upstream_stream_incomplete",
                "PoS proxy: the upstream ended the stream before its last event; the answer "
                "is incomplete",
            )
    except httpx.HTTPError as error:
        timeout = isinstance(error, httpx.TimeoutException)
        log.warning("the upstream stream broke: %s", type(error).__name__)
        if not events:
            raise
        yield error_event(
            "upstream_stream_timeout" if timeout else "upstream_stream_broken",
            f"PoS proxy: the upstream stream broke ({type(error).__name__}); the answer is "
            "incomplete",
            504 if timeout else 502,
        )
    finally:
        await upstream.aclose()
