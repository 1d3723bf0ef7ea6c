"""The APIs the proxy judges, each in its own shape: OpenAI Chat Completions (here), the OpenAI
Responses API (`responses_api.py`) and the Anthropic Messages API (`messages_api.py`).

An `Api` reads a request's history as Chat Completions messages (the shape the parsers read),
remembering which of the request's own items each message comes from; puts the session's notes
back into the request in its own shape; and rewrites an answer, whole or streamed, where the
policy refuses a call in it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pos_agent.serve.parsers import StepParser
from pos_agent.serve.policy import Judge, Verdict, refuse_answer, with_notes
from pos_agent.serve.streaming import StreamGuard, StreamRewriter

__all__ = ["Api", "ChatApi", "History", "notes_after"]


@dataclass(frozen=True, slots=True)
class History:
    """A request's history as Chat Completions messages."""

    messages: list[Any]
    origin: list[int] = field(default_factory=list)
    """For each message, the index of the request's item it was read from (-1: none, e.g. a
    system prompt given apart). Empty: the messages are the request's own."""


class Api(Protocol):
    """One API the proxy judges."""

    name: str
    ending: re.Pattern[bytes]
    """What the event that ends a complete streamed answer looks like."""

    def history(self, payload: dict[str, Any]) -> History | None:
        """The request's history, or None when the body is not a request of this API (it is
        then passed through as it came)."""
        ...

    def with_notes(
        self, payload: dict[str, Any], history: History, verdict: Verdict, role: str
    ) -> dict[str, Any] | None:
        """The request with the verdict's notes where they were given (None: unchanged)."""
        ...

    def refuse(self, body: dict[str, Any], judge: Judge, fmt: str | None) -> bool:
        """Rewrite a whole answer in place where the judge refuses calls; True if it did."""
        ...

    def guard(self, judge: Judge) -> StreamRewriter:
        """The guard of a streamed answer while the judge may refuse calls."""
        ...


def notes_after(history: History, verdict: Verdict) -> dict[int, list[str]]:
    """The verdict's notes by the index of the request's item each one follows."""
    by_item: dict[int, list[str]] = {}
    last = len(history.messages) - 1
    for note in verdict.notes:
        index = min(note.after, last)
        item = history.origin[index] if history.origin else index
        by_item.setdefault(item, []).append(note.text)
    return by_item


class ChatApi:
    """OpenAI Chat Completions: `POST /v1/chat/completions`."""

    name = "chat"
    ending = re.compile(rb"data: ?\[DONE\]|\"finish_reason\"\s*:\s*\"")

    def __init__(self, parsers: Sequence[StepParser]) -> None:
        self.parsers = parsers

    def history(self, payload: dict[str, Any]) -> History | None:
        messages = payload.get("messages")
        return History(messages) if isinstance(messages, list) else None

    def with_notes(
        self, payload: dict[str, Any], history: History, verdict: Verdict, role: str
    ) -> dict[str, Any] | None:
        messages = history.messages
        forwarded = with_notes(messages, verdict, role)
        return None if forwarded is messages else {**payload, "messages": forwarded}

    def refuse(self, body: dict[str, Any], judge: Judge, fmt: str | None) -> bool:
        return refuse_answer(body, judge, self.parsers, fmt)

    def guard(self, judge: Judge) -> StreamRewriter:
        return StreamGuard(judge.verdict, judge.monitor, judge)
