"""Converters for coding agents' trajectory files: SWE-agent `.traj`, mini-SWE-agent
`.traj.json` / `trajectory.json`, and AutoCodeRover's conversation rounds. (OpenHands'
`output.jsonl` is in `openhands.py`.)

A shell command is the tool `bash` with `{"command": ...}`; an agent-computer-interface command
of SWE-agent (`open`, `edit`, `scroll_down`, ...) is its own tool with `{"args": "..."}`.
"""

from __future__ import annotations

import re
from typing import Any

from pos_trapbench.real.steps import (
    RealStep,
    RealTrajectory,
    as_text,
    call_step,
    load_json,
    never_raise,
)


def message_text(content: object) -> str:
    """A chat message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return as_text(content)


def _messages(value: object) -> list[dict[str, Any]]:
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


SWE_AGENT_COMMANDS = frozenset(
    {
        "open",
        "goto",
        "scroll_down",
        "scroll_up",
        "create",
        "edit",
        "search_dir",
        "search_file",
        "find_file",
        "submit",
        "str_replace_editor",
        "filemap",
        "insert",
        "append",
        "exit_forfeit",
        "exit_cost",
        "exit_context",
        "exit_format",
        "exit_error",
        "skip",
    }
)
"""Commands of SWE-agent's agent-computer interface; anything else is a shell command."""
_VIEW_COMMANDS = frozenset(
    {"open", "goto", "scroll_down", "scroll_up", "search_dir", "search_file", "find_file", "create"}
)
"""Commands whose output is mostly file text: only its first lines can say it failed."""
_FAILED = re.compile(
    r"Your proposed edit has introduced new syntax error|Traceback \(most recent call last\)|"
    r"command not found|No such file or directory|^Usage: |^Error: |SyntaxError: |"
    r"syntax error near|is not a valid|not found\. Please|File .* not found|No file open",
    re.M,
)
_VIEW_FAILED = re.compile(
    r"^Usage: |^Error: |not found|No file open|must be (?:less|greater)|Invalid|No such file|"
    r"already exists|is a directory",
    re.M,
)


def _swe_agent_goal(history: list[dict[str, Any]]) -> str:
    for message in history:
        if message.get("role") != "user" or message.get("is_demo"):
            continue
        content = message_text(message.get("content"))
        for pattern in (
            r"ISSUE:\n(.*?)\n\s*INSTRUCTIONS:",
            r"<pr_description>(.*?)</pr_description>",
        ):
            found = re.search(pattern, content, re.S)
            if found:
                return found.group(1).strip()
        return content.strip()
    return ""


def _swe_agent_step(entry: dict[str, Any]) -> RealStep:
    action = as_text(entry.get("action")).strip()
    output = as_text(entry.get("observation"))
    if not action:
        return call_step(None, None, output, True)
    command = action.split(None, 1)[0]
    if command in SWE_AGENT_COMMANDS:
        tool, arguments = command, {"args": action[len(command) :].strip()}
    else:
        tool, arguments = "bash", {"command": action}
    if tool in _VIEW_COMMANDS:
        failed = _VIEW_FAILED.search("\n".join(output.splitlines()[:3]))
    else:
        failed = _FAILED.search(output)
    return call_step(tool, arguments, output, True if failed else None)


@never_raise
def convert_swe_agent_traj(text: str) -> list[RealTrajectory]:
    """A SWE-agent `.traj`: its `trajectory` of action/observation entries. SWE-agent records no
    exit codes, so `error` is True only where the output shows a failure, else unknown."""
    data = load_json(text)
    if not isinstance(data, dict) or not isinstance(data.get("trajectory"), list):
        return []
    steps = tuple(_swe_agent_step(e) for e in data["trajectory"] if isinstance(e, dict))
    return [RealTrajectory(_swe_agent_goal(_messages(data.get("history"))), steps)]


_SHELL_BLOCK = re.compile(r"```(?:bash|mswea_bash_command|sh)[ \t]*\n(.*?)```", re.S)
_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def _shell_failed(output: str) -> bool | None:
    code = _RETURN_CODE.search(output)
    if code:
        return code.group(1) != "0"
    if re.search(r"timed out|<exception>|Traceback \(most recent call last\)", output):
        return True
    return None


def _mini_goal(task: str) -> str:
    found = re.search(r"<pr_description>(.*?)</pr_description>", task, re.S)
    if found:
        return re.sub(r"^Consider the following PR description:\s*", "", found.group(1).strip())
    found = re.search(
        r"Please solve this (?:issue|task):\s*(.*?)"
        r"(?:\n\nYou can execute|\n\nYou are in the directory|$)",
        task,
        re.S,
    )
    return found.group(1).strip() if found else task.strip()


def _tool_call_steps(calls: list[Any], answers: dict[Any, str], notes: list[str]) -> list[RealStep]:
    """One step per tool call; user notes after the answers go to the last call's output."""
    steps = []
    for number, call in enumerate(calls):
        if not isinstance(call, dict):
            continue
        function = call.get("function") or {}
        raw = function.get("arguments")
        arguments = load_json(raw) if isinstance(raw, str) else raw
        if arguments is None:
            arguments = {"raw": as_text(raw)}
        output = answers.get(call.get("id"), "")
        if number == len(calls) - 1 and notes:
            output = (output + "\n" + "\n".join(notes)).strip()
        steps.append(
            call_step(function.get("name") or "tool", arguments, output, _shell_failed(output))
        )
    return steps


def _mini_steps(messages: list[dict[str, Any]], start: int) -> list[RealStep]:
    steps: list[RealStep] = []
    i = start
    while i < len(messages):
        message = messages[i]
        if message.get("role") != "assistant":
            i += 1
            continue
        i += 1
        calls = message.get("tool_calls") or []
        if calls:
            answers: dict[Any, str] = {}
            notes: list[str] = []
            while i < len(messages) and messages[i].get("role") in ("tool", "user"):
                content = message_text(messages[i].get("content"))
                if messages[i].get("role") == "tool":
                    answers[messages[i].get("tool_call_id")] = content
                else:
                    notes.append(content)
                i += 1
            steps += _tool_call_steps(calls, answers, notes)
            continue
        output = ""
        if i < len(messages) and messages[i].get("role") in ("user", "tool"):
            output = message_text(messages[i].get("content"))
            i += 1
        blocks = _SHELL_BLOCK.findall(message_text(message.get("content")))
        if len(blocks) == 1:
            command = {"command": blocks[0].strip()}
            steps.append(call_step("bash", command, output, _shell_failed(output)))
        else:
            # no block, or several: mini-SWE-agent answers with a format error
            steps.append(call_step(None, None, output, True))
    return steps


@never_raise
def convert_mini_swe_agent_traj(text: str) -> list[RealTrajectory]:
    """A mini-SWE-agent trajectory: chat messages (a list, or `messages` of an object). Each
    assistant reply is a step: its one shell block, or its tool calls (answered by `tool`
    messages); a reply without exactly one block is a step with no action (a format error)."""
    data = load_json(text)
    messages = _messages(data.get("messages") if isinstance(data, dict) else data)
    first = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    if first is None:
        return [RealTrajectory("", tuple(_mini_steps(messages, 0)))]
    goal = _mini_goal(message_text(messages[first].get("content")))
    return [RealTrajectory(goal, tuple(_mini_steps(messages, first + 1)))]


_API_RESULT = re.compile(r"Result of (\w+)\((.*?)\):\s*\n", re.S)


def _acr_step(replies: str) -> RealStep:
    calls = _API_RESULT.findall(replies)
    if calls:
        failed = re.search(r"Could not find|not found|No .* found", replies) and len(calls) == 1
        made = {"calls": [f"{name}({arguments})" for name, arguments in calls]}
        return call_step("search", made, replies, True if failed else None)
    if "search API calls seem not valid" in replies:
        return call_step("search", {"calls": []}, replies, True)
    imprecise = "buggy locations is not precise" in replies
    if imprecise or "Here are the code in buggy locations" in replies:
        return call_step("report_bug_locations", {}, replies, imprecise)
    return call_step("analyse", {}, replies, None)


@never_raise
def convert_acr_conversation(text: str) -> list[RealTrajectory]:
    """An AutoCodeRover conversation (the last round's file holds the whole dialogue). Each
    assistant turn is a step, read from the replies it got: `search` with the API calls made
    ("Result of f(args):"), `search` with none when no valid call could be taken from it
    (error), `report_bug_locations`, or else `analyse`."""
    data = load_json(text)
    if not isinstance(data, list):
        return []
    messages = _messages(data)
    goal = ""
    for message in messages:
        content = message_text(message.get("content"))
        if message.get("role") == "user" and "<issue>" in content:
            found = re.search(r"<issue>(.*?)</issue>", content, re.S)
            goal = (found.group(1) if found else content).strip()
            break
    steps = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        replies = []
        for reply in messages[i + 1 :]:
            if reply.get("role") == "assistant":
                break
            replies.append(message_text(reply.get("content")))
        steps.append(_acr_step("\n".join(replies)))
    return [RealTrajectory(goal, tuple(steps))]
