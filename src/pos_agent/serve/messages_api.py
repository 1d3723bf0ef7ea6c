"""The Anthropic Messages API (`POST /v1/messages`), as the `anthropic` client calls it.

- **History:** `system` is the system prompt; an assistant message's `tool_use` blocks become
  Chat Completions tool calls (arguments: the block's `input`), and a user message's
  `tool_result` blocks tool messages (its text blocks, if any, a user message after them).
- **Notes** are text blocks added to the user message they follow (the one that holds the
  step's tool results), so the history keeps the API's user/assistant alternation; a note
  after an assistant message is a user message of its own.
- **Refusal:** a refused `tool_use` block becomes a text block with the refusal, in the whole
  message and in a stream (the block's events are held until its `content_block_stop`, then
  sent on or replaced by a text block's events); when no `tool_use` is left, `stop_reason`
  becomes `end_turn`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pos_agent.monitor import ToolCall
from pos_agent.serve.apis import History, notes_after
from pos_agent.serve.parsers import message_text
from pos_agent.serve.policy import Judge, Verdict
from pos_agent.serve.streaming import EventGuard, sse, sse_fields

__all__ = ["MessagesApi", "MessagesGuard"]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return message_text({"content": content})


def _blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _assistant(blocks: list[Any]) -> dict[str, Any]:
    text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    calls = [
        {
            "id": b.get("id"),
            "type": "function",
            "function": {"name": b.get("name"), "arguments": b.get("input") or {}},
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _user(blocks: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))}
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    if text or not out:
        out.append({"role": "user", "content": text})
    return out


def _history(payload: dict[str, Any]) -> History | None:
    items = payload.get("messages")
    if not isinstance(items, list):
        return None
    messages: list[Any] = []
    origin: list[int] = []
    system = payload.get("system")
    if system:
        messages.append({"role": "system", "content": _text(system)})
        origin.append(-1)
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        blocks = [b for b in _blocks(item.get("content")) if isinstance(b, dict)]
        converted = [_assistant(blocks)] if item.get("role") == "assistant" else _user(blocks)
        messages += converted
        origin += [index] * len(converted)
    return History(messages, origin)


def _call(block: dict[str, Any]) -> ToolCall:
    return ToolCall(str(block.get("name") or ""), block.get("input") or {})


def _with_text(message: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    if message.get("role") != "user":
        return message
    blocks = _blocks(message.get("content"))
    return {**message, "content": [*blocks, *({"type": "text", "text": t} for t in texts)]}


class MessagesApi:
    """The Anthropic Messages API."""

    name = "messages"
    ending = re.compile(rb"\"type\"\s*:\s*\"(?:message_stop|error)\"")

    def history(self, payload: dict[str, Any]) -> History | None:
        return _history(payload)

    def with_notes(
        self, payload: dict[str, Any], history: History, verdict: Verdict, role: str
    ) -> dict[str, Any] | None:
        by_item = notes_after(history, verdict)
        extra = [verdict.extra_note] if verdict.extra_note else []
        if not by_item and not extra:
            return None
        items = list(payload["messages"])
        if extra:
            by_item.setdefault(len(items) - 1, []).extend(extra)
        out: list[Any] = []
        for index, item in enumerate(items):
            texts = by_item.get(index)
            if not texts or not isinstance(item, dict):
                out.append(item)
            elif item.get("role") == "user":
                out.append(_with_text(item, texts))
            else:
                out += [
                    item,
                    {"role": "user", "content": [{"type": "text", "text": t} for t in texts]},
                ]
        return {**payload, "messages": out}

    def refuse(self, body: dict[str, Any], judge: Judge, fmt: str | None) -> bool:
        content = body.get("content")
        if not isinstance(content, list):
            return False
        uses = [
            i for i, b in enumerate(content) if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        refusal = judge([_call(content[i]) for i in uses])
        if refusal is None:
            return False
        refused = [i for i in uses if judge.refuses(_call(content[i]))]
        for i in refused:
            content[i] = {"type": "text", "text": refusal.text}
        if len(refused) == len(uses):
            body["stop_reason"] = "end_turn"
        return True

    def guard(self, judge: Judge) -> MessagesGuard:
        return MessagesGuard(judge)


class MessagesGuard(EventGuard):
    """A streamed message: a `tool_use` block's events are held until its `content_block_stop`,
    then sent on or replaced by a text block with the refusal."""

    def __init__(self, judge: Judge) -> None:
        super().__init__()
        self.judge = judge
        self._block: dict[str, Any] | None = None
        self._json = ""
        self.kept = 0
        self.refused = 0

    def _event(self, event: bytes) -> list[bytes]:
        name, data = sse_fields(event)
        try:
            body = json.loads(data) if data else None
        except ValueError:
            body = None
        kind = body.get("type", name) if isinstance(body, dict) else name
        if not isinstance(body, dict):
            if self._held:
                self._held.append(event)
                return []
            return [event]
        if (
            kind == "content_block_start"
            and (body.get("content_block") or {}).get("type") == "tool_use"
        ):
            self._block, self._json = dict(body["content_block"]), ""
            self._held.append(event)
            return []
        if self._block is not None and kind == "content_block_delta":
            self._json += (body.get("delta") or {}).get("partial_json") or ""
            self._held.append(event)
            return []
        if self._block is not None and kind == "content_block_stop":
            return self._settle(body, event)
        if kind == "message_delta" and self.refused and not self.kept:
            delta = body.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason") == "tool_use":
                delta["stop_reason"] = "end_turn"
                return [*self._release(), sse(body, name)]
        return [*self._release(), event]

    def _settle(self, stop: dict[str, Any], event: bytes) -> list[bytes]:
        block, self._block = self._block or {}, None
        try:
            arguments = json.loads(self._json) if self._json.strip() else {}
        except ValueError:
            arguments = self._json
        refusal = self.judge([ToolCall(str(block.get("name") or ""), arguments)])
        if refusal is None:
            self.kept += 1
            return [*self._release(), event]
        self.refused += 1
        self._held.clear()
        index = stop.get("index", 0)
        return [
            sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            ),
            sse(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": refusal.text},
                },
                "content_block_delta",
            ),
            event,
        ]
