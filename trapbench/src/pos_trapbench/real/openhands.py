"""Converter for OpenHands' `output.jsonl` (evaluation outputs and the resolver's format).

One instance per line; its `history` is a list of events (or, in the old format, of
[action, observation] pairs). Each agent action is a step. Its observation is found by the
observation's `cause` (the action's id) or, in the old format, as the next event. The tool is
the function the model called (`tool_call_metadata`), else the action type.
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

_NOT_STEPS = frozenset(
    {"system", "recall", "change_agent_state", "null", "condensation", "push", "reject"}
)
"""Action types that are bookkeeping, not something the agent did."""
_ARGUMENT_KEYS = (
    "command", "path", "code", "content", "old_str", "new_str", "file_text", "view_range",
    "insert_line", "start", "end", "url", "browser_actions", "task", "outputs",
    "final_thought", "text", "thought_only", "translated_ipython_code", "query",
)  # fmt: skip
"""The arguments kept of an action (the rest are flags and ids)."""


def _object(value: object) -> dict[str, Any]:
    """A dict, or JSON text of one; anything else as {}."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        parsed = load_json(value)
        if isinstance(parsed, dict):
            return parsed
    return {}


def _tool_and_arguments(event: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    action = event.get("action")
    given = _object(event.get("args"))
    if not given:  # the old flat format keeps the fields at the top level
        skip = ("action", "source", "id", "timestamp", "message")
        given = {k: v for k, v in event.items() if k not in skip}
    tool = _object(event.get("tool_call_metadata")).get("function_name") or action
    kept = {
        k: given[k] for k in _ARGUMENT_KEYS if k in given and given[k] not in (None, "", [], {})
    }
    if action == "edit" and "command" in given and "command" not in kept:
        kept["command"] = given["command"]
    if action == "message" and not kept:
        content = given.get("content") or event.get("message")
        if content:
            kept["content"] = content
    if action == "think" and not kept and given.get("thought"):
        kept["thought"] = given["thought"]
    if action == "finish" and not kept:
        for key in ("final_thought", "outputs", "thought"):
            if given.get(key):
                kept[key] = given[key]
                break
    return tool, kept


_IPYTHON_FAILED = re.compile(
    r"Traceback \(most recent call last\)|Error:|"
    r"Your proposed edit has introduced new syntax error|No exact match found|"
    r"No replacement was performed"
)


def _failed(observation: dict[str, Any]) -> bool | None:
    """Whether an observation shows its action failed: an error observation, an exit code, an
    editor's error text, `success: false`; None when it cannot tell."""
    kind = observation.get("observation")
    if kind == "error":
        return True
    extras = _object(observation.get("extras"))
    code = _object(extras.get("metadata")).get(
        "exit_code", extras.get("exit_code", observation.get("exit_code"))
    )
    if code is not None and str(code) != "":
        try:
            return int(str(code)) != 0
        except ValueError:
            pass
    content = as_text(observation.get("content"))
    if kind in ("edit", "read", "write") and re.match(r"\s*(ERROR|Error)", content):
        return True
    if kind == "run_ipython" and _IPYTHON_FAILED.search(content):
        return True
    if str(observation.get("success")) in ("False", "false"):
        return True
    return False if kind in ("run", "run_ipython", "edit", "read", "write", "browse") else None


def _events(history: list[Any]) -> list[dict[str, Any]]:
    """The history's events in order, pairs flattened."""
    events: list[dict[str, Any]] = []
    for item in history:
        if isinstance(item, dict):
            events.append(item)
        elif isinstance(item, (list, tuple)):
            events += [x for x in item if isinstance(x, dict)]
    return events


def _user_text(event: dict[str, Any]) -> str:
    return as_text(
        _object(event.get("args")).get("content") or event.get("content") or event.get("message")
    )


class _History:
    """Pairs each agent action of one history with its observations."""

    def __init__(self, history: list[Any]) -> None:
        self.events = _events(history)
        self.by_cause: dict[str, list[dict[str, Any]]] = {}
        for event in self.events:
            if "observation" in event and event.get("cause") is not None:
                self.by_cause.setdefault(str(event.get("cause")), []).append(event)
        self.used: set[int] = set()

    def observations(self, at: int) -> list[dict[str, Any]]:
        """The observations of the action at `at`: by cause, else the next event (old format),
        unless an earlier action already took it."""
        event = self.events[at]
        if event.get("id") is not None and str(event.get("id")) in self.by_cause:
            found = self.by_cause[str(event.get("id"))]
        else:
            j = at + 1
            while j < len(self.events) and not self._is_event(self.events[j]):
                j += 1
            found = []
            if j < len(self.events) and "observation" in self.events[j]:
                found = [self.events[j]] if id(self.events[j]) not in self.used else []
        self.used.update(id(o) for o in found)
        return found

    @staticmethod
    def _is_event(event: dict[str, Any]) -> bool:
        return "observation" in event or bool(event.get("action"))

    def user_answer(self, at: int) -> str | None:
        """The simulated user's answer to the agent's message at `at`, if it has one before
        the agent acts again."""
        for event in self.events[at + 1 :]:
            if event.get("action") == "message" and event.get("source") == "user":
                return as_text(_object(event.get("args")).get("content") or event.get("message"))
            if event.get("action") and event.get("source") == "agent":
                return None
        return None

    def step(self, at: int) -> RealStep:
        event = self.events[at]
        tool, arguments = _tool_and_arguments(event)
        found = self.observations(at)
        output = "\n".join(as_text(o.get("content")) for o in found)
        error: bool | None = None
        for observation in found:
            failed = _failed(observation)
            if failed is True:
                error = True
            elif failed is False and error is None:
                error = False
        if event.get("action") == "message":
            answer = self.user_answer(at)
            if answer is not None:
                output = (output + "\n" + answer).strip()
        return call_step(tool, arguments, output, error)


def _trajectory(history: list[Any], instruction: str) -> RealTrajectory:
    events = _History(history)
    goal, steps = instruction, list[RealStep]()
    for at, event in enumerate(events.events):
        action = event.get("action")
        source = event.get("source") or "agent"
        opening = event.get("source") is None and not steps
        if action == "message" and (source == "user" or opening):
            goal = goal or _user_text(event)
        elif action and action not in _NOT_STEPS and source == "agent":
            steps.append(events.step(at))
    return RealTrajectory(goal, tuple(steps))


def _instruction(instance: dict[str, Any]) -> str:
    task = instance.get("instance")
    if isinstance(task, dict) and isinstance(task.get("problem_statement"), str):
        return task["problem_statement"]
    issue = instance.get("issue")
    if isinstance(issue, dict):
        return (as_text(issue.get("title")) + "\n\n" + as_text(issue.get("body"))).strip()
    return ""


@never_raise
def convert_openhands_output_jsonl(text: str) -> list[RealTrajectory]:
    """OpenHands' `output.jsonl`: one trajectory per instance with a `history`; the goal is
    the instance's problem statement, the resolver's issue, or the user's first message."""
    found = []
    for line in text.splitlines():
        instance = load_json(line.strip()) if line.strip() else None
        if isinstance(instance, dict) and isinstance(instance.get("history"), list):
            found.append(_trajectory(instance["history"], _instruction(instance)))
    return found
