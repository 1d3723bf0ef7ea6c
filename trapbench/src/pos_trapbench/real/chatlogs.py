"""Converters for tool agents saved as structured logs: tau-bench's message lists, ToolBench's
DFSDT search trees and Cline's API conversation history."""

from __future__ import annotations

import re
from typing import Any

from pos_trapbench.real.steps import (
    RealStep,
    RealTrajectory,
    json_call_step,
    load_json,
    never_raise,
)


def _tau_call_steps(call_message: dict[str, Any], later: list[Any]) -> list[RealStep]:
    steps = []
    for call in call_message.get("tool_calls") or []:
        function = (call or {}).get("function") or {}
        call_id = (call or {}).get("id")
        output = next(
            (
                str(m.get("content") or "")
                for m in later
                if isinstance(m, dict)
                and m.get("role") == "tool"
                and m.get("tool_call_id") == call_id
            ),
            "",
        )
        failed = output.startswith(("Error", "Unknown action"))
        name = function.get("name") or "?"
        steps.append(json_call_step(name, function.get("arguments") or "{}", output, failed))
    return steps


def _tau_trajectory(messages: list[Any]) -> RealTrajectory:
    goal = next(
        (
            str(m.get("content") or "")
            for m in messages
            if isinstance(m, dict) and m.get("role") == "user"
        ),
        "",
    )
    steps: list[RealStep] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if message.get("tool_calls"):
            steps += _tau_call_steps(message, messages[i + 1 :])
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        answer = ""
        if isinstance(following, dict) and following.get("role") == "user":
            answer = str(following.get("content") or "")
        said = {"content": str(message.get("content") or "")}
        steps.append(json_call_step("respond", said, answer, False))
    return RealTrajectory(goal, tuple(steps))


@never_raise
def convert_tau_bench(text: str) -> list[RealTrajectory]:
    """tau-bench's `historical_trajectories/*.json`: task results, each with an OpenAI-style
    message list in `traj`. Tool calls are steps; a plain message to the (simulated) user is a
    `respond` step whose observation is the user's next message."""
    data = load_json(text)
    if not isinstance(data, list):
        return []
    return [_tau_trajectory(r.get("traj") or []) for r in data if isinstance(r, dict)]


def _tool_result(observation: str) -> bool | None:
    """ToolBench's API wrapper answers JSON with an `error` field; None when it does not."""
    answer = load_json(observation)
    if isinstance(answer, dict) and "error" in answer:
        return bool(answer.get("error"))
    return None


@never_raise
def convert_toolbench_dfs(text: str) -> list[RealTrajectory]:
    """A ToolBench DFSDT answer file: the search tree walked in pre-order (the order in which
    the model produced its nodes). Each `Action` node and the `Action Input` under it is a
    step, so backtracking reads as a jump back to an earlier state."""
    data = load_json(text)
    if not isinstance(data, dict):
        return []
    goal = str((data.get("answer_generation") or {}).get("query") or "")
    steps = []
    stack = [((data.get("tree") or {}).get("tree")) or {}]
    pending: str | None = None
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        kind = node.get("node_type")
        if kind == "Action":
            pending = str(node.get("description") or "?")
        elif kind == "Action Input" and pending is not None:
            output = "" if node.get("observation") is None else str(node.get("observation"))
            arguments = str(node.get("description") or "{}")
            steps.append(json_call_step(pending, arguments, output, _tool_result(output)))
            pending = None
        stack.extend(reversed(node.get("children") or []))
    return [RealTrajectory(goal, tuple(steps))]


_CLINE_RESULT = re.compile(r"^\[([a-z_]+)(?: for [^\]]*)?\] Result:\s*", re.S)


_TASK = re.compile(r"<task>\s*(.*?)\s*</task>", re.S)


def _blocks(content: object) -> list[Any]:
    return content if isinstance(content, list) else [{"type": "text", "text": str(content)}]


def _cline_task(messages: list[Any]) -> str:
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        texts = [
            b.get("text") or ""
            for b in _blocks(message.get("content"))
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        # The first <task> of a message counts; an empty one sends us to the next message.
        found = next((m for t in texts if (m := _TASK.search(t))), None)
        if found and found.group(1):
            return found.group(1)
    return ""


def _cline_results(message: object) -> list[str]:
    """The tool results in a user message: tool_result blocks, "[tool] Result:" text blocks."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return []
    results = []
    for block in _blocks(message.get("content")):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            content = block.get("content")
            if isinstance(content, list):
                content = "\n".join(str(x.get("text", "")) for x in content if isinstance(x, dict))
            results.append(str(content or ""))
        elif block.get("type") == "text":
            said = block.get("text") or ""
            if _CLINE_RESULT.match(said):
                results.append(_CLINE_RESULT.sub("", said, count=1))
    return results


def _cline_step(use: dict[str, Any], output: str) -> RealStep:
    name = str(use.get("name") or "?")
    given = use.get("input")
    arguments = dict(given) if isinstance(given, dict) else {"input": given}
    arguments.pop("task_progress", None)  # Cline's checklist text, not part of the call
    head = output[:300].lower()
    failed = "error" in head and (
        "[error]" in head or head.startswith("error") or "error executing" in head
    )
    if name == "execute_command" and "command" in arguments:
        return json_call_step("bash", {"command": arguments.get("command")}, output, failed or None)
    return json_call_step(name, arguments, output, failed or None)


@never_raise
def convert_cline_api(text: str) -> list[RealTrajectory]:
    """Cline's `api_conversation_history.json` (Anthropic messages): each `tool_use` block is a
    step, its observation the matching result in the next user message."""
    messages = load_json(text)
    if not isinstance(messages, list):
        return []
    steps = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        results = _cline_results(messages[i + 1]) if uses and i + 1 < len(messages) else []
        for k, use in enumerate(uses):
            steps.append(_cline_step(use, results[k] if k < len(results) else ""))
    return [RealTrajectory(_cline_task(messages), tuple(steps))]
