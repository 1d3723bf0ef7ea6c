"""The OpenAI Responses API (`POST /v1/responses`), as openai-agents calls it by default.

- **History:** `instructions` is the system prompt; the `input` items become Chat Completions
  messages: a `message` item (or an `{"role", "content"}` one) a message of that role, the
  `function_call` items of one turn an assistant message with those tool calls, and each
  `function_call_output` item a tool message. Other items (reasoning, built-in tools) are
  skipped.
- **Notes** are `message` items of the note's role, inserted after the item they follow.
- **Refusal:** a refused `function_call` output item becomes an assistant `message` item with
  the refusal text, in the whole response and in a stream (the call's events are held until its
  `response.output_item.done`, then sent on or replaced by the message's events; the final
  `response.completed` carries the same output).

With `previous_response_id` the server keeps the history and the request holds only the new
items: the proxy then judges only what the requests show.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pos_agent.monitor import ToolCall
from pos_agent.serve.apis import History, notes_after
from pos_agent.serve.parsers import message_text
from pos_agent.serve.policy import Judge, Refusal, Verdict
from pos_agent.serve.streaming import EventGuard, sse, sse_fields

__all__ = ["ResponsesApi", "ResponsesGuard", "refusal_item"]

FINISHED = ("response.completed", "response.incomplete", "response.failed")


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return message_text({"content": content})


def _history(payload: dict[str, Any]) -> History | None:
    items = payload.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        return None
    messages: list[Any] = []
    origin: list[int] = []
    if isinstance(payload.get("instructions"), str):
        messages.append({"role": "system", "content": payload["instructions"]})
        origin.append(-1)
    calls: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            raw = {"name": item.get("name"), "arguments": item.get("arguments") or ""}
            calls.append({"id": item.get("call_id"), "type": "function", "function": raw})
            if messages and messages[-1].get("tool_calls") is calls:
                origin[-1] = index
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": calls})
                origin.append(index)
            continue
        calls = []
        if kind == "function_call_output":
            output = _text(item.get("output"))
            messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": output}
            )
        elif kind == "message" and isinstance(item.get("role"), str):
            role = "system" if item["role"] == "developer" else item["role"]
            messages.append({"role": role, "content": _text(item.get("content"))})
        else:
            continue
        origin.append(index)
    return History(messages, origin)


def refusal_item(text: str, n: int, *, done: bool = True) -> dict[str, Any]:
    """The assistant message output item that stands for a refused call."""
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "type": "message",
        "id": f"msg_pos_{n}",
        "role": "assistant",
        "status": "completed" if done else "in_progress",
        "content": [part] if done else [],
    }


def _call(item: dict[str, Any]) -> ToolCall:
    return ToolCall(str(item.get("name") or ""), item.get("arguments") or "")


def _refuse_output(output: list[Any], judge: Judge, refused: dict[str, str]) -> bool:
    """Replace refused function calls in a response's `output` (in place). `refused` maps the
    call ids refused already (in a stream) to their text; others are judged now, as one turn."""
    calls = {
        i: item
        for i, item in enumerate(output)
        if isinstance(item, dict) and item.get("type") == "function_call"
    }
    fresh = [i for i, item in calls.items() if str(item.get("call_id")) not in refused]
    if fresh:
        refusal = judge([_call(calls[i]) for i in fresh])
        for i in fresh:
            if refusal is not None and (refusal.final_answer or judge.refuses(_call(calls[i]))):
                refused[str(calls[i].get("call_id"))] = refusal.text
    changed = False
    for i, item in calls.items():
        text = refused.get(str(item.get("call_id")))
        if text is not None:
            output[i] = refusal_item(text, i)
            changed = True
    return changed


class ResponsesApi:
    """The OpenAI Responses API."""

    name = "responses"
    ending = re.compile(rb"\"type\"\s*:\s*\"(?:response\.(?:completed|incomplete|failed)|error)\"")

    def history(self, payload: dict[str, Any]) -> History | None:
        return _history(payload)

    def with_notes(
        self, payload: dict[str, Any], history: History, verdict: Verdict, role: str
    ) -> dict[str, Any] | None:
        by_item = notes_after(history, verdict)
        if not by_item and not verdict.extra_note:
            return None
        items = payload["input"]
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        out: list[Any] = []
        for index, item in enumerate(items):
            out.append(item)
            out += [_note(text, role) for text in by_item.get(index, ())]
        if verdict.extra_note:
            out.append(_note(verdict.extra_note, role))
        return {**payload, "input": out}

    def refuse(self, body: dict[str, Any], judge: Judge, fmt: str | None) -> bool:
        output = body.get("output")
        return isinstance(output, list) and _refuse_output(output, judge, {})

    def guard(self, judge: Judge) -> ResponsesGuard:
        return ResponsesGuard(judge)


def _note(text: str, role: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


class ResponsesGuard(EventGuard):
    """A streamed response: a function call's events are held until its item is done, then
    sent on or replaced by a message item with the refusal."""

    def __init__(self, judge: Judge) -> None:
        super().__init__()
        self.judge = judge
        self.refused: dict[str, str] = {}
        """Refused call ids and their texts (`response.completed` is rewritten to match)."""

    def _event(self, event: bytes) -> list[bytes]:
        name, data = sse_fields(event)
        try:
            body = json.loads(data) if data else None
        except ValueError:
            body = None
        if not isinstance(body, dict):  # a comment or a keep-alive: in order with the rest
            if self._held:
                self._held.append(event)
                return []
            return [event]
        kind = body.get("type", name)
        item = body.get("item")
        is_call = isinstance(item, dict) and item.get("type") == "function_call"
        if kind == "response.output_item.added" and is_call:
            self._held.append(event)
            return []
        if kind == "response.output_item.done" and is_call:
            return self._settle(body, event)
        if self._held and str(kind).startswith("response.function_call_arguments"):
            self._held.append(event)
            return []
        if kind in FINISHED and isinstance(body.get("response"), dict):
            output = body["response"].get("output")
            if isinstance(output, list) and _refuse_output(output, self.judge, self.refused):
                return [*self._release(), sse(body, name)]
        return [*self._release(), event]

    def _settle(self, body: dict[str, Any], event: bytes) -> list[bytes]:
        item = body["item"]
        refusal = self.judge([_call(item)])
        if refusal is None:
            return [*self._release(), event]
        self._held.clear()
        self.refused[str(item.get("call_id"))] = refusal.text
        return _message_events(refusal, body.get("output_index", 0), body)


def _message_events(refusal: Refusal, index: int, done: dict[str, Any]) -> list[bytes]:
    """The events of a message item at `index` holding the refusal text."""
    text = refusal.text
    item = refusal_item(text, index)
    n = int(done.get("sequence_number") or 0)
    at = {"item_id": item["id"], "output_index": index, "content_index": 0}
    part = {"type": "output_text", "text": "", "annotations": []}
    events = [
        {"type": "response.output_item.added", "item": refusal_item(text, index, done=False)},
        {"type": "response.content_part.added", **at, "part": part},
        {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []},
        {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **at, "part": {**part, "text": text}},
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]
    out = []
    for event in events:
        event.setdefault("output_index", index)
        event["sequence_number"] = n
        out.append(sse(event, str(event["type"])))
    return out
