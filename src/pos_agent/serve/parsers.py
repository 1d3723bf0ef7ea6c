"""Steps out of a chat history: what the agent called, and what the call gave back.

The proxy sees each request's whole conversation. A parser turns it into monitor steps (one
assistant turn's calls and their results) and reads the calls of one model answer (to block a
forbidden one). Three formats ship:

- `ToolCallsParser`: OpenAI `tool_calls` on assistant messages, answered by `tool` messages;
- `SmolagentsParser`: smolagents' memory as text, an assistant "Calling tools:\\n[{...}]"
  followed by a user "Observation:\\n..." (or "Call id: ...\\nError:\\n..."); a `CodeAgent`'s
  step (one `python_interpreter` call) is the tool calls inside its code, and its answers are
  read from their code blocks;
- `ReActParser`: the classic "Thought / Action / Action Input / Observation" text, in separate
  messages or as one scratchpad.

Write your own by implementing `StepParser` (two methods) and passing it in
`ServeConfig(parsers=[...])`; the first parser that finds steps in a history is used.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pos_agent.adapters.code import code_blocks, code_calls
from pos_agent.monitor import ToolCall

__all__ = [
    "DEFAULT_PARSERS",
    "ReActParser",
    "SmolagentsParser",
    "Step",
    "StepParser",
    "ToolCallsParser",
    "message_text",
    "parse_answer",
    "parse_history",
]

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Step:
    """One monitor step: the calls of one assistant turn and what they gave back."""

    action: ToolCall | tuple[ToolCall, ...] | str
    """One call, the calls made in one turn, or a text command."""

    observation: str
    """The tool results, joined by blank lines when the turn made several calls."""

    end: int
    """Index of the history message that completes the step (a note goes after it)."""


class StepParser(Protocol):
    """Reads one agent format."""

    name: str

    def steps(self, messages: Sequence[Message]) -> list[Step]:
        """Every completed step of the history, oldest first (empty: not this format)."""
        ...

    def calls(self, message: Message) -> list[ToolCall]:
        """The calls a model answer (an assistant message) makes (empty: none, or not this
        format)."""
        ...


def message_text(message: Message) -> str:
    """A message's text: a string content, or the text parts of a list content."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def _action(calls: list[ToolCall]) -> ToolCall | tuple[ToolCall, ...]:
    return calls[0] if len(calls) == 1 else tuple(calls)


def _tool_call(raw: object) -> ToolCall | None:
    """An OpenAI-style tool call (`{"function": {"name", "arguments"}}`) as a `ToolCall`."""
    if not isinstance(raw, Mapping):
        return None
    function = raw.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        arguments = function.get("arguments")
        return ToolCall(function["name"], arguments if arguments is not None else "")
    return None


class ToolCallsParser:
    """OpenAI Chat Completions tool calling: `tool_calls` answered by `tool` messages."""

    name = "tool_calls"

    def steps(self, messages: Sequence[Message]) -> list[Step]:
        found: list[Step] = []
        index = 0
        while index < len(messages):
            message = messages[index]
            raw_calls = message.get("tool_calls") if message.get("role") == "assistant" else None
            if not raw_calls or not isinstance(raw_calls, list):
                index += 1
                continue
            ids = [c.get("id") if isinstance(c, Mapping) else None for c in raw_calls]
            calls = [c for c in (_tool_call(r) for r in raw_calls) if c is not None]
            results: dict[object, str] = {}
            end = index
            cursor = index + 1
            while cursor < len(messages) and messages[cursor].get("role") == "tool":
                results[messages[cursor].get("tool_call_id")] = message_text(messages[cursor])
                end = cursor
                cursor += 1
            if calls and results:
                ordered = [results[i] for i in ids if i in results]
                if len(ordered) < len(results):  # ids missing or unmatched: keep them all
                    ordered = list(results.values())
                found.append(Step(_action(calls), "\n\n".join(ordered), end))
            index = cursor
        return found

    def calls(self, message: Message) -> list[ToolCall]:
        raw_calls = message.get("tool_calls")
        if not isinstance(raw_calls, list):
            return []
        return [c for c in (_tool_call(r) for r in raw_calls) if c is not None]


_PYTHON = "python_interpreter"
_CALLING = re.compile(r"Calling tools:\s*\n(\[.*\])", re.DOTALL)
_SMOL_OBSERVATION = re.compile(r"^\s*(?:Call id: [^\n]*\n)?(?:Observation|Error):\s*\n?", re.I)


class SmolagentsParser:
    """smolagents' memory as text: "Calling tools:\\n[...]" then "Observation:\\n..."."""

    name = "smolagents"

    def steps(self, messages: Sequence[Message]) -> list[Step]:
        found: list[Step] = []
        pending: list[ToolCall] | None = None
        for index, message in enumerate(messages):
            role = message.get("role")
            text = message_text(message)
            if role == "assistant":
                calls = self._parse(text)
                pending = calls or None
            elif pending is not None and role in ("user", "tool") and _SMOL_OBSERVATION.match(text):
                observation = _SMOL_OBSERVATION.sub("", text, count=1)
                found.append(Step(_action(pending), observation, index))
                pending = None
        return found

    def calls(self, message: Message) -> list[ToolCall]:
        text = message_text(message)
        # A CodeAgent's answer is code; "Calling tools:" appears only in its memory.
        return self._parse(text) or [c for code in code_blocks(text) for c in code_calls(code)]

    @staticmethod
    def _parse(text: str) -> list[ToolCall]:
        match = _CALLING.search(text)
        if match is None:
            return []
        calls = []
        for call in SmolagentsParser._listed(match.group(1)):
            # A CodeAgent step is one `python_interpreter` call: the tools its code calls.
            inner = []
            if call.name == _PYTHON and isinstance(call.arguments, str):
                inner = code_calls(call.arguments)
            calls += inner or [call]
        return calls

    @staticmethod
    def _listed(listing: str) -> list[ToolCall]:
        try:
            raw = ast.literal_eval(listing)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            try:
                raw = json.loads(listing)
            except ValueError:
                return []
        if not isinstance(raw, list):
            return []
        return [c for c in (_tool_call(r) for r in raw) if c is not None]


_REACT_ACTION = re.compile(
    r"^[ \t]*Action[ \t]*:[ \t]*(?P<name>[^\n\[(]+?)[ \t]*(?:[\[(](?P<inline>[^\n]*)[\])])?[ \t]*$"
    r"(?:\n[ \t]*Action Input[ \t]*:[ \t]*(?P<input>.*?)"
    r"(?=\n[ \t]*(?:Observation|Thought|Action|Final Answer)[ \t]*:|\Z))?",
    re.MULTILINE | re.DOTALL | re.IGNORECASE,
)
_REACT_OBSERVATION = re.compile(
    r"^[ \t]*Observation[ \t]*:[ \t]*(?P<text>.*?)(?=\n[ \t]*(?:Thought|Action|Final Answer)[ \t]*:|\Z)",
    re.MULTILINE | re.DOTALL | re.IGNORECASE,
)


class ReActParser:
    """The classic ReAct text: "Action: tool" + "Action Input: {...}" (or "Action:
    tool[args]"), then "Observation: ...", in messages of their own or in one scratchpad."""

    name = "react"

    def steps(self, messages: Sequence[Message]) -> list[Step]:
        found: list[Step] = []
        pending: ToolCall | None = None
        for index, message in enumerate(messages):
            if message.get("role") == "system":  # the format's own description, not a step
                continue
            text = message_text(message)
            if "Action" not in text and "Observation" not in text:
                continue
            for _, value in self._events(text):
                if isinstance(value, ToolCall):
                    pending = value
                elif pending is not None:
                    found.append(Step(pending, value, index))
                    pending = None
        return found

    def calls(self, message: Message) -> list[ToolCall]:
        return [v for _, v in self._events(message_text(message)) if isinstance(v, ToolCall)]

    @staticmethod
    def _events(text: str) -> list[tuple[int, ToolCall | str]]:
        events: list[tuple[int, ToolCall | str]] = []
        for match in _REACT_ACTION.finditer(text):
            arguments = match.group("input") or match.group("inline") or ""
            name = match.group("name").strip()
            if name:
                events.append((match.start(), ToolCall(name, arguments.strip())))
        for match in _REACT_OBSERVATION.finditer(text):
            events.append((match.start(), match.group("text").strip()))
        events.sort(key=lambda e: e[0])
        return events


DEFAULT_PARSERS: tuple[StepParser, ...] = (ToolCallsParser(), SmolagentsParser(), ReActParser())


def parse_history(
    messages: Sequence[Message], parsers: Sequence[StepParser] = DEFAULT_PARSERS
) -> tuple[list[Step], str | None]:
    """The steps of a history by the first parser that finds any, and that parser's name."""
    for parser in parsers:
        found = parser.steps(messages)
        if found:
            return found, parser.name
    return [], None


def parse_answer(
    message: Message, parsers: Sequence[StepParser] = DEFAULT_PARSERS, prefer: str | None = None
) -> tuple[list[ToolCall], str | None]:
    """The calls of one model answer: by the parser the history used (`prefer`) first, then
    by the first parser that finds any."""
    ordered = sorted(parsers, key=lambda p: p.name != prefer) if prefer else list(parsers)
    for parser in ordered:
        found = parser.calls(message)
        if found:
            return found, parser.name
    return [], None
