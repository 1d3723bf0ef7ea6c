"""Converters for agent runs printed in Jupyter notebooks' cell outputs: AutoGen (FLAML's
`autogen`) conversations, LangGraph's `pretty_print()` messages and WebVoyager's action lists."""

from __future__ import annotations

import ast
import re
from typing import Any

from pos_trapbench.real.steps import (
    ANSI_ESCAPE,
    RealStep,
    RealTrajectory,
    json_call_step,
    never_raise,
    notebook_code_cells,
    stream_outputs,
)


def _stream_text(output: dict[str, Any]) -> str:
    text = output.get("text")
    return "".join(text) if isinstance(text, list) else str(text or "")


def printed_cells(text: str) -> list[str]:
    """What each code cell printed (its stream outputs joined, colour codes removed), for the
    cells that printed anything."""
    printed = []
    for cell in notebook_code_cells(text):
        parts = [_stream_text(o) for o in stream_outputs(cell)]
        if parts:
            printed.append(ANSI_ESCAPE.sub("", "".join(parts)))
    return printed


_AUTOGEN_HEADER = re.compile(r"^(\S+) \(to ([^)]+)\):\s*$", re.M)
_AUTOGEN_CODE = re.compile(r"```(\w*)\n(.*?)```", re.S)
_AUTOGEN_FUNCTION = re.compile(
    r"\*+ Suggested function Call: (\S+) \*+\s*\nArguments:\s*\n(.*?)\n\*{10,}", re.S
)


def _autogen_turns(printed: str) -> list[tuple[str, str]]:
    """(speaker, message) of each `X (to Y):` turn, banners and separators removed."""
    heads = list(_AUTOGEN_HEADER.finditer(printed))
    turns = []
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(printed)
        body = re.sub(r"\n?>>>>>>>> [^\n]*", "", printed[head.end() : end])
        turns.append((head.group(1), body.replace("-" * 80, "").strip()))
    return turns


def _autogen_step(message: str, reply: str) -> RealStep:
    failed = (not reply.startswith("exitcode: 0")) if reply.startswith("exitcode:") else None
    function = _AUTOGEN_FUNCTION.search(message)
    if function:
        return json_call_step(function.group(1), function.group(2).strip(), reply, failed)
    blocks = _AUTOGEN_CODE.findall(message)
    if not blocks:
        return json_call_step("respond", {"content": message}, reply, None)
    languages = [language or "python" for language, _ in blocks]
    if all(x in ("python", "py") for x in languages):
        tool = "python"
    elif all(x in ("sh", "bash", "shell", "console") for x in languages):
        tool = "bash"
    else:
        tool = "code"
    code = "\n\n".join(body.rstrip() for _, body in blocks)
    return json_call_step(tool, {"command" if tool == "bash" else "code": code}, reply, failed)


@never_raise
def convert_autogen_notebook(text: str) -> list[RealTrajectory]:
    """An AutoGen notebook: each cell that printed a `X (to Y):` conversation is a trajectory.
    The agent that speaks second acts; each of its messages is a step (its code blocks, a
    suggested function call, or a plain `respond`), observed through the other side's next
    message (`exitcode: 1 (execution failed) ...`). The first message is the goal."""
    found = []
    for printed in printed_cells(text):
        turns = _autogen_turns(printed)
        if len(turns) < 2:
            continue
        actor = turns[1][0]
        steps = []
        for k, (speaker, message) in enumerate(turns):
            if speaker != actor:
                continue
            following = turns[k + 1] if k + 1 < len(turns) else None
            reply = following[1] if following is not None and following[0] != actor else ""
            steps.append(_autogen_step(message, reply))
        found.append(RealTrajectory(turns[0][1], tuple(steps)))
    return found


_LANGGRAPH_HEADER = re.compile(r"^=+ (Human|Ai|Tool) Message =+\s*$", re.M)
_LANGGRAPH_CALL = re.compile(r"^  (\S+) \(([^)]*)\)\s*$", re.M)


def _langgraph_arguments(lines: list[str]) -> dict[str, str]:
    """The indented `Args:` lines of a printed tool call; unindented lines continue a value."""
    arguments: dict[str, str] = {}
    key = None
    for line in lines:
        found = re.match(r"^    ([A-Za-z_][\w]*): ?(.*)$", line)
        if found:
            key = found.group(1)
            arguments[key] = found.group(2)
        elif key is not None:
            arguments[key] += "\n" + line
    return arguments


def _langgraph_calls(message: str) -> list[tuple[str, dict[str, str]]]:
    parts = _LANGGRAPH_CALL.split(message.split("Tool Calls:", 1)[1])
    calls = []
    for j in range(1, len(parts) - 2, 3):  # parts: text, then (name, id, rest) per call
        rest = parts[j + 2]
        lines = rest.split("Args:", 1)[1].splitlines()[1:] if "Args:" in rest else []
        # an approval prompt of a human-in-the-loop cell may follow the arguments
        ask = next((q for q, line in enumerate(lines) if line.startswith("Do you approve")), None)
        lines = lines if ask is None else lines[:ask]
        while lines and not lines[-1].strip():
            lines.pop()
        calls.append((parts[j], _langgraph_arguments(lines)))
    return calls


def _langgraph_messages(printed: str) -> list[tuple[str, str]]:
    heads = list(_LANGGRAPH_HEADER.finditer(printed))
    messages = []
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(printed)
        body = re.sub(r"^Currently in: .*$", "", printed[head.end() : end], flags=re.M)
        messages.append((head.group(1), body.strip("\n")))
    return messages


def _langgraph_tool_answer(steps: list[RealStep], pending: list[int], message: str) -> None:
    """Give a Tool message to the first waiting call of its name (or the first waiting)."""
    named = re.match(r"^Name: (\S+)\s*\n?", message)
    name = named.group(1) if named else None
    output = message[named.end() :] if named else message
    target = next((i for i in pending if name is None or steps[i].tool == name), None)
    if target is None and pending:
        target = pending[0]
    if target is None:
        return
    pending.remove(target)
    failed = bool(re.search(r"^error|\berror:", output.lower().strip())) or None
    step = steps[target]
    steps[target] = RealStep(step.action, step.tool, step.arguments, output.strip("\n"), failed)


def _langgraph_trajectory(messages: list[tuple[str, str]]) -> RealTrajectory:
    goal = next((body.strip() for kind, body in messages if kind == "Human"), "")
    steps: list[RealStep] = []
    pending: list[int] = []  # steps waiting for their Tool message, in call order
    for k, (kind, body) in enumerate(messages):
        if kind == "Ai" and "Tool Calls:" in body:
            for name, arguments in _langgraph_calls(body):
                pending.append(len(steps))
                steps.append(json_call_step(name, arguments, "", None))
        elif kind == "Ai":
            following = messages[k + 1] if k + 1 < len(messages) else None
            answer = following[1].strip() if following and following[0] == "Human" else ""
            steps.append(json_call_step("respond", {"content": body.strip()}, answer, None))
        elif kind == "Tool":
            _langgraph_tool_answer(steps, pending, body)
    return RealTrajectory(goal, tuple(steps))


@never_raise
def convert_langgraph_notebook(text: str) -> list[RealTrajectory]:
    """A LangGraph notebook with `pretty_print()` output: each cell that printed `Human`/`Ai`/
    `Tool` message banners is a trajectory. An Ai message's tool calls are steps (observed
    through the matching Tool message); an Ai message without calls is a `respond` step
    observed through the next Human message."""
    return [
        _langgraph_trajectory(messages)
        for messages in map(_langgraph_messages, printed_cells(text))
        if messages
    ]


def _numbered_items(printed: str) -> list[str]:
    """The items of a printed `1. ...`, `2. ...` list; other lines continue the last item."""
    items: list[str] = []
    for line in printed.splitlines():
        found = re.match(r"^(\d+)\. (.*)$", line)
        if found and int(found.group(1)) == len(items) + 1:
            items.append(found.group(2))
        elif items:
            items[-1] += "\n" + line
    return items


def _webvoyager_step(item: str) -> RealStep | None:
    found = re.match(r"^([A-Za-z;]+):\s*(.*)$", item.strip(), re.S)
    if found is None:
        return None
    name, argument = found.group(1).rstrip(";"), found.group(2).strip()
    if name == "retry":
        return json_call_step("retry", {"note": "parse failure"}, argument, True)
    parsed = None
    if argument.startswith("["):
        try:
            parsed = ast.literal_eval(argument)
        except Exception:  # literal_eval raises many kinds on odd text
            parsed = None
    if isinstance(parsed, list):
        arguments: dict[str, Any] = {"args": parsed}
    else:
        arguments = {} if argument == "None" else {"args": argument}
    return json_call_step(name, arguments, "", None)


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source")
    return "".join(source) if isinstance(source, list) else str(source or "")


@never_raise
def convert_webvoyager_notebook(text: str) -> list[RealTrajectory]:
    """LangGraph's WebVoyager notebook: each cell's printed numbered action list
    (`1. Click: ['32']`) is a trajectory, its goal the question passed to `call_agent`. The
    pages were screenshots, so observations are empty except for parse-failure retries."""
    found = []
    for cell in notebook_code_cells(text):
        question = re.search(r"call_agent\(\s*(['\"])(.*?)\1", _source(cell), re.S)
        steps = []
        for output in stream_outputs(cell):
            printed = _stream_text(output)
            if printed.startswith("Final response:"):
                continue
            steps += [s for s in map(_webvoyager_step, _numbered_items(printed)) if s]
        found.append(RealTrajectory(question.group(2) if question else "", tuple(steps)))
    return found
