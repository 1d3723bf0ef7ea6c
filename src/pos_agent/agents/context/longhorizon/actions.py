"""Which environment actions each LongHorizon-Harness role may take.

- The executor gets every action except a terminal submission: the final answer is submitted
  from verified state by the harness, not by an executor mid-round.
- The auditor gets read-only actions only. In tool environments a tool's own `read_only` and
  `terminal` flags decide (LOCA sets them on every tool from MCP annotations or its reviewed
  table, `envs/loca/tool_access.py`); only a tool without flags (the project's own RCA and
  ClinDiag tools) is judged by its name: neither a submission nor a writing verb. In the text
  games they are the looking verbs of each game (`look`, `inventory`, `examine`, ...).
- The final answer gets only the terminal tool(s).
Executor and auditor also get `finish`, which ends their turn without an environment action.
An unusable decision is not a `finish`: it spends a step on `role_fallback`, as every method's.
Every view keeps the environment's calls per turn (RCA: 3), as every other method gets them.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any

from pos_agent.agents.context.settings import Family
from pos_agent.envs import Observation
from pos_agent.llm import loads_bounded
from pos_agent.roles.caller import fallback_action

FINISH = "finish"
FINISH_TOOL: dict[str, Any] = {
    "name": FINISH,
    "description": "End your turn (no environment action) and write your report.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
}
_TERMINAL = re.compile(r"^(submit|claim_done|final_answer)", re.IGNORECASE)
# Verbs of tool names that change the world (the rest read it: get, list, query, search, check,
# read, ask, order a test, ...).
_WRITE_VERBS = [
    "write",
    "create",
    "delete",
    "remove",
    "update",
    "edit",
    "move",
    "rename",
    "append",
    "send",
    "set",
    "put",
    "post",
    "run",
    "exec",
    "restart",
    "start",
    "stop",
    "kill",
    "install",
    "apply",
    "add",
    "insert",
    "modify",
    "change",
    "patch",
    "upload",
    "commit",
    "deploy",
    "scale",
    "drop",
]
_WRITES = re.compile(rf"(^|_)({'|'.join(_WRITE_VERBS)})(_|$)", re.IGNORECASE)
# Read-only commands of the text games: they report the world and change nothing.
READ_ONLY_VERBS: dict[Family, tuple[str, ...]] = {
    "alfworld": ("look", "inventory", "examine"),
    "scienceworld": ("look around", "look at", "look in", "inventory", "read", "task"),
    "textworld-express": ("look around", "look", "inventory", "examine"),
}
_DEFAULT_VERBS = ("look", "inventory", "examine")


def is_terminal_tool(tool: dict[str, Any]) -> bool:
    if "terminal" in tool:
        return bool(tool["terminal"])
    return bool(_TERMINAL.match(str(tool.get("name", ""))))


def is_read_only_tool(tool: dict[str, Any]) -> bool:
    if "read_only" in tool:
        return bool(tool["read_only"])
    name = str(tool.get("name", ""))
    return not is_terminal_tool(tool) and not _WRITES.search(name)


def is_read_only_command(action: str, family: Family) -> bool:
    verbs = READ_ONLY_VERBS.get(family, _DEFAULT_VERBS)
    text = " ".join(action.lower().split())
    return any(text == verb or text.startswith(verb + " ") for verb in verbs)


def is_finish(action: str | None) -> bool:
    """True for the `finish` pseudo-action, as text or as a tool call."""
    text = (action or "").strip()
    if text.lower() == FINISH:
        return True
    try:
        parsed = loads_bounded(text)
    except ValueError:
        return False
    calls = parsed if isinstance(parsed, list) else [parsed]
    return any(isinstance(c, dict) and c.get("tool") == FINISH for c in calls)


def split_finish(action: str | None) -> tuple[str | None, bool]:
    """The environment action an answer holds, and whether it also ends the role's turn.

    `finish` alone is (None, True); a tool turn that lists real calls and `finish` keeps the real
    calls (they are taken) and ends the turn after them; anything else is (action, False)."""
    text = (action or "").strip()
    if not text or text.lower() == FINISH:
        return None, bool(text)
    try:
        parsed = loads_bounded(text)
    except ValueError:
        return action, False
    calls = parsed if isinstance(parsed, list) else [parsed]
    real = [c for c in calls if not (isinstance(c, dict) and c.get("tool") == FINISH)]
    if len(real) == len(calls):
        return action, False
    if not real:
        return None, True
    kept = real[0] if len(real) == 1 else real
    return json.dumps(kept, ensure_ascii=False), True


def _restrict(
    observation: Observation,
    tools: list[dict[str, Any]] | None,
    actions: list[str] | None,
    finish: bool,
) -> Observation:
    if tools is not None and finish:
        tools = [*tools, FINISH_TOOL]
    if actions is not None and finish:
        actions = [*actions, FINISH]
    return dataclasses.replace(
        observation,
        tools=tools,
        admissible_actions=actions,
        max_calls=observation.max_calls,
    )


def executor_view(observation: Observation) -> Observation:
    tools = observation.tools
    if tools is not None:
        tools = [t for t in tools if not is_terminal_tool(t)]
    actions = observation.admissible_actions
    return _restrict(observation, tools, list(actions) if actions is not None else None, True)


def auditor_view(observation: Observation, family: Family) -> Observation:
    if observation.tools is not None:
        return _restrict(
            observation, [t for t in observation.tools if is_read_only_tool(t)], None, True
        )
    actions = observation.admissible_actions
    if actions is None:
        allowed = list(READ_ONLY_VERBS.get(family, _DEFAULT_VERBS)[:2])
    else:
        allowed = [a for a in actions if is_read_only_command(a, family)]
    return _restrict(observation, None, allowed, True)


def terminal_tools(observation: Observation) -> list[dict[str, Any]]:
    return [t for t in observation.tools or [] if is_terminal_tool(t)]


def final_view(observation: Observation) -> Observation:
    return _restrict(observation, terminal_tools(observation), None, False)


def allowed(action: str, view: Observation) -> bool:
    """Whether `action` is one the restricted view offers (the harness may have repaired it
    to something else; a role must never reach outside its view). The environment's own
    fallback call is in every view: it is harmless and read-only, never a submission, and it is
    what every method's unusable decision spends its step on (`role_fallback`)."""
    if view.fallback_action is not None and action == view.fallback_action:
        return True
    if view.tools is not None:
        names = {str(t.get("name")) for t in view.tools}
        try:
            parsed = loads_bounded(action)
        except ValueError:
            return False
        calls: Sequence[Any] = parsed if isinstance(parsed, list) else [parsed]
        return bool(calls) and all(isinstance(c, dict) and c.get("tool") in names for c in calls)
    if view.admissible_actions is None:
        return True
    return action in view.admissible_actions


def role_fallback(view: Observation, recent: Sequence[str]) -> str | None:
    """The action a role's unusable decision spends its step on, as every other method's does
    (`roles.caller.fallback_action`): the environment's own fallback call (a harmless read-only
    tool call); else, in a text game, the first action of the view not just tried; else a call
    of the view's first argument-free tool (an empty call of its first tool when none is: the
    environment explains the format). Never `finish` or a submission. None only when the view
    offers nothing else (an auditor in a room with no looking verb)."""
    if view.fallback_action is not None:
        return view.fallback_action
    actions = [a for a in view.admissible_actions or [] if a != FINISH]
    if actions:
        return next((a for a in actions if a not in recent), actions[0])
    tools = [t for t in view.tools or [] if t.get("name") != FINISH and not is_terminal_tool(t)]
    if tools:
        return fallback_action(dataclasses.replace(view, tools=tools), None, recent)
    return None
