"""The action as a signal: a canonical key per action, and repeated calls and call sequences.

An action reaches the monitor as a text command (`go north`), a tool call (`ToolCall`, an
OpenAI-style `{"name": ..., "arguments": "<json>"}` or `{"function": {...}}` dict, or a
`{"tool": ..., "args": {...}}` dict), or a list of tool calls made in one turn. Its **key** is
the tool name plus its arguments as canonical JSON (keys sorted, no whitespace), after the
volatile rules of `volatile.py` (so a countdown, a retry index, a timestamp or an id does not
make two calls differ); a text command's key is its normalised, lower-cased text. Other numbers
are kept: `open box 1` and `open box 2`, page 2 and page 3 are different calls. Prose of eight
or more content words ("I apologize, let me provide the complete version ...") is compared by
its set of content words instead (numbers are not words), so reworded repeats of one message
are one action.

`ActionHistory` gives reworded repeats of recent prose one key; the health window
(`health.improved`) then reads at which periods 1..5 the calls repeat: period 1 is the same call
again, 2 an A/B alternation, 3-5 a cycle of calls.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pos_agent.monitor.keys import FUNCTION_WORDS

__all__ = ["ActionHistory", "ActionKey", "ToolCall", "canonical_action", "tool_name"]

MAX_PERIOD = 5
"""The longest repeating call sequence looked for (Gemini CLI looks for 1-5)."""
PROSE_WORDS = 8
"""Actions with at least this many content words are prose, compared by their word sets."""
PROSE_SIMILARITY = 0.6
"""Two prose actions whose content-word sets have a Jaccard similarity >= this are the same."""

_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[a-z][a-z'_-]+")
# `json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)`, without building
# the encoder anew for every call (it keeps no state between calls).
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call: its name and its arguments (a mapping, or the JSON text of one)."""

    name: str
    arguments: Mapping[str, Any] | str = ""


@dataclass(frozen=True, slots=True)
class ActionKey:
    """An action as the monitor compares it."""

    text: str
    """Readable canonical form, e.g. `read_file {"path":"a.py"}`; quoted in recovery text and
    in `forbidden_actions` for tool calls."""

    key: str
    """What equal actions share: `text`, lower-cased, after the volatile rules."""

    tools: tuple[str, ...]
    """Names of the tools called (empty for a text command)."""

    words: frozenset[str] | None = None
    """Content words when the action is prose (see `PROSE_WORDS`), else None."""

    def same(self, other: ActionKey) -> bool:
        """The same action: equal keys, or prose with mostly the same words."""
        if self.key == other.key:
            return True
        a, b = self.words, other.words
        if a is None or b is None:
            return False
        return len(a & b) >= PROSE_SIMILARITY * len(a | b)


def tool_name(action: object) -> str | None:
    """The tool name of a tool-call action, None for a text command."""
    call = _as_call(action)
    return call.name if call is not None else None


def canonical_action(action: object, normalise: Callable[[str], str]) -> ActionKey:
    """The canonical key of one action (see the module doc); never raises on odd input."""
    if isinstance(action, list | tuple) and action and not isinstance(action, str):
        parts = [canonical_action(a, normalise) for a in action]
        return ActionKey(
            " ; ".join(p.text for p in parts),
            " ; ".join(p.key for p in parts),
            tuple(t for p in parts for t in p.tools),
        )
    call = _as_call(action)
    if call is not None:
        text = f"{call.name} {_canonical_arguments(call.arguments)}".strip()
        return ActionKey(text, normalise(text.lower()), (call.name,))
    text = _SPACES.sub(" ", str(action)).strip()
    lowered = normalise(text.lower())
    words = frozenset(w for w in _WORD.findall(lowered) if w not in FUNCTION_WORDS)
    return ActionKey(text, lowered, (), words if len(words) >= PROSE_WORDS else None)


def _as_call(action: object) -> ToolCall | None:
    if isinstance(action, ToolCall):
        return action
    if isinstance(action, Mapping):
        function = action.get("function")
        if isinstance(function, Mapping) and "name" in function:
            return ToolCall(str(function["name"]), function.get("arguments") or "")
        for name_key, args_key in (("name", "arguments"), ("tool", "args"), ("name", "args")):
            if name_key in action:
                return ToolCall(str(action[name_key]), action.get(args_key) or "")
        return None
    name = getattr(action, "name", None)  # SDK tool-call objects: .name and .arguments
    if isinstance(name, str) and hasattr(action, "arguments"):
        return ToolCall(name, action.arguments or "")
    return None


def _canonical_arguments(arguments: object) -> str:
    if isinstance(arguments, str):
        stripped = arguments.strip()
        if not stripped:
            return ""
        try:
            arguments = json.loads(stripped)
        except ValueError:
            return _SPACES.sub(" ", stripped)
    try:
        return _CANONICAL_JSON.encode(arguments)
    except (TypeError, ValueError):
        return _SPACES.sub(" ", str(arguments))


class ActionHistory:
    """Gives reworded repeats of recent prose actions one key, so that equal keys mean the
    same action for the health window (`WindowStep.action`)."""

    def __init__(self, size: int = 2 * MAX_PERIOD + 2) -> None:
        self._prose: deque[tuple[ActionKey, str]] = deque(maxlen=size)

    def clear(self) -> None:
        self._prose.clear()

    def intern(self, action: ActionKey) -> str:
        """The key to record for `action`: its own, or that of a recent prose action it repeats
        in other words."""
        if action.words is None:
            return action.key
        for earlier, key in reversed(self._prose):
            if action.same(earlier):
                self._prose.append((action, key))
                return key
        self._prose.append((action, action.key))
        return action.key
