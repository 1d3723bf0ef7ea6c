"""Streamed answers: relayed chunk by chunk as they come, through a `StreamGuard` while a block
stands, which holds only tool-call deltas and settles them at the end of the answer."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx

from pos_agent.monitor import ToolCall, TrapMonitor
from pos_agent.serve.policy import Verdict, blocked_calls, refusal_text

__all__ = ["StreamGuard", "relay"]

log = logging.getLogger("pos_agent.serve")


class StreamGuard:
    """Passes a streamed answer through event by event, holding only tool-call deltas while a
    block stands: at the end of the answer the held call is either sent on or replaced by a
    refusal the agent reads as the assistant's text."""

    def __init__(self, verdict: Verdict, monitor: TrapMonitor | None) -> None:
        self.verdict = verdict
        self.monitor = monitor
        self._buffer = b""
        self._held: list[bytes] = []
        self._calls: dict[int, dict[str, str]] = {}
        self._template: dict[str, Any] | None = None
        self.failed = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """What to send on after `chunk`. Fails open: after an error (logged) the guard sends
        on what it held and, from then on, every chunk as it comes."""
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

    def _fail(self, event: bytes) -> list[bytes]:
        log.exception("the block policy failed on a stream; the rest is relayed as it comes")
        self.failed = True
        rest, self._buffer = self._buffer, b""
        return [*self._release(), event, *([rest] if rest else [])]

    def _event(self, event: bytes) -> list[bytes]:
        data = _sse_data(event)
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
        blocked = blocked_calls(calls, self.verdict.forbidden, self.monitor)
        if not blocked:
            return [*self._release(), *([finish[1]] if finish else [])]
        template = dict(self._template or {})
        refusal = refusal_text(blocked, self.verdict.report)
        template["choices"] = [
            {"index": 0, "delta": {"role": "assistant", "content": refusal}, "finish_reason": None}
        ]
        out = [_sse(template)]
        if finish is not None:
            chunk = finish[0]
            for choice in chunk.get("choices") or []:
                if isinstance(choice, dict):
                    choice["finish_reason"] = "stop"
            out.append(_sse(chunk))
        else:
            template = dict(template)
            template["choices"] = [{"index": 0, "delta": {}, "finish_reason": "stop"}]
            out.append(_sse(template))
        self._held.clear()
        self._calls.clear()
        return out

    def _release(self) -> list[bytes]:
        held, self._held = self._held, []
        self._calls.clear()
        return held


def _event_end(buffer: bytes) -> int | None:
    for separator in (b"\n\n", b"\r\n\r\n"):
        at = buffer.find(separator)
        if at >= 0:
            return at + len(separator)
    return None


def _sse_data(event: bytes) -> str | None:
    lines = [
        line[5:].strip()
        for line in event.decode("utf-8", "replace").splitlines()
        if line.startswith("data:")
    ]
    return "\n".join(lines) if lines else None


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode("utf-8") + b"\n\n"


async def relay(
    upstream: httpx.Response, guard: StreamGuard | None, *, raw: bool
) -> AsyncIterator[bytes]:
    """The upstream's body, chunk by chunk as it comes (through the guard when a block stands);
    `raw` keeps any content encoding as the upstream sent it."""
    try:
        chunks = upstream.aiter_raw() if raw and guard is None else upstream.aiter_bytes()
        async for chunk in chunks:
            for piece in guard.feed(chunk) if guard is not None else (chunk,):
                yield piece
        if guard is not None:
            for piece in guard.close():
                yield piece
    except httpx.HTTPError as error:
        log.warning("the upstream stream broke: %s", type(error).__name__)
    finally:
        await upstream.aclose()
