"""The shape every converter returns, and the small helpers they share.

A converted trajectory is a goal and its steps. A step is what the agent did (`action`, one
line; for a tool call also `tool` and `arguments` as JSON text) and what it got back
(`observation`, and `error` when the source says the action failed; None when it does not
say). Text games have `tool` and `arguments` None and the command as `action`.

Converters are pure functions of one source file's text: deterministic, standard library
only, and `never_raise` turns any surprise into "nothing read" instead of an exception.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RealStep:
    action: str
    """One line: the command, or `tool {json arguments}`."""
    tool: str | None
    """The tool's name; None for a text-game command or a reply with no readable action."""
    arguments: str | None
    """The call's arguments as JSON text; None for a text command."""
    observation: str
    error: bool | None
    """True: the source shows the action failed; False: it shows it did not; None: unknown."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "tool": self.tool,
            "arguments": self.arguments,
            "observation": self.observation,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class RealTrajectory:
    goal: str
    steps: tuple[RealStep, ...]


Converter = Callable[[str], list[RealTrajectory]]


def never_raise(convert: Callable[[str], list[RealTrajectory]]) -> Converter:
    """Guard a converter: text that is not a string, or any error, reads as no trajectory;
    trajectories without steps are dropped."""

    @functools.wraps(convert)
    def guarded(text: str) -> list[RealTrajectory]:
        try:
            found = convert(text if isinstance(text, str) else "")
        except Exception:  # a converter must never raise on odd input
            return []
        return [t for t in found if t.steps]

    return guarded


def one_line(text: object) -> str:
    """`text` with every run of whitespace (line breaks too) made one space."""
    return " ".join(("" if text is None else str(text)).split())


def as_text(value: object) -> str:
    """A string as it is; None as ""; anything else as JSON (or `str` when not JSON-able)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def load_json(text: str) -> Any:
    """The JSON value of `text`, or None when it is not JSON."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None


def dump_arguments(arguments: object) -> str:
    """Arguments (a Python value) as one JSON text with sorted keys."""
    try:
        return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return json.dumps(as_text(arguments))


def text_step(action: object, observation: object, error: bool) -> RealStep:
    """A text-game step: the command on one line, the reply without its outer line breaks."""
    reply = "" if observation is None else str(observation)
    return RealStep(one_line(action), None, None, reply.strip("\n"), bool(error))


def call_step(
    tool: str | None, arguments: object, observation: object, error: bool | None
) -> RealStep:
    """A tool call whose arguments are a Python value; `action` keeps the arguments' spacing
    (line breaks become spaces). No tool and no arguments: a reply with no readable action."""
    text = None if arguments is None else dump_arguments(arguments)
    if tool is None:
        action = "(no action)" if text is None else text
    else:
        action = tool if text is None else f"{tool} {text}"
    action = action.replace("\r", " ").replace("\n", " ")
    return RealStep(action, tool, text, as_text(observation), error)


def json_call_step(
    tool: str, arguments: str | dict[str, Any], observation: object, error: bool | None
) -> RealStep:
    """A tool call whose arguments are JSON text as the agent wrote them (or a dict).

    Valid JSON text is rewritten on one line with sorted keys; other text is kept as
    `{"input": text}`. `action` is `tool {arguments}` with every whitespace run one space."""
    if isinstance(arguments, str):
        try:
            text = dump_arguments(json.loads(arguments))
        except (ValueError, RecursionError):
            text = json.dumps({"input": arguments}, ensure_ascii=False)
    else:
        text = dump_arguments(arguments)
    reply = "" if observation is None else str(observation)
    return RealStep(one_line(f"{tool} {text}"), tool, text, reply, error)


def notebook_code_cells(text: str) -> list[dict[str, Any]]:
    """The code cells of a Jupyter notebook's JSON text (none when it is not a notebook)."""
    notebook = load_json(text)
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return []
    return [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]


def joined(value: object) -> str:
    """A notebook text field: a string, or a list of strings joined."""
    if isinstance(value, list):
        return "".join(x for x in value if isinstance(x, str))
    return value if isinstance(value, str) else ""


def stream_outputs(cell: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for output in cell.get("outputs") or []:
        if isinstance(output, dict) and output.get("output_type") == "stream":
            yield output


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""Terminal colour codes, as consoles leave them in pasted logs."""
