"""Prompt parts every role's prompts share: the shared system text, clipping, the tool list
and the action list.

Cache-aware layout, the same rule for every method (providers serve a prompt's prefix from
their cache when an earlier prompt had the same bytes): stable parts first (system text, tool
schemas, the task, fixed instructions), what changes last (history, belief, observation, the
admissible actions of this step), and the same bytes from step to step wherever the content is
the same.

Cache breakpoints, the same rule for every method (`Message.breakpoints`; sent only to servers
that cache at explicit breakpoints, `ModelOptions.cache_breakpoints`): after the stable prefix
(the system text; the tool schemas, the task and fixed instructions after it), for PoS after
the `Current belief:` block the roles of a step share, and for history methods at the end of
the history before its newest turn (where the previous call's history ended: read) and at the
end of the whole history (what the next call repeats: written). A breakpoint never changes a
byte of the text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pos_agent.roles.schemas import plain_schema

SHARED_SYSTEM = """You are one role of an agent that works on a task from an explicit belief state.
The task and the current belief come first; your role's instructions follow them."""
"""The PoS roles' one system text (policy, belief model, sentinel): the first bytes of every
prompt of a step are the same, so a provider's prompt cache can serve them."""


def part_ends(parts: Sequence[str], separator: str = "\n\n") -> list[int]:
    """Where each of `parts` ends in `separator.join(parts)`."""
    ends, at = [], 0
    for index, part in enumerate(parts):
        at += (len(separator) if index else 0) + len(part)
        ends.append(at)
    return ends


def history_marks(text: str, latest: str = "") -> list[int]:
    """The breakpoints of a history (turns as `Transition.render` writes them, separated by
    a blank line): the end of the history before its newest turn, and the end of the newest
    turn (the end of the text, or of the `latest` observation when a line follows it, as
    HiAgent's line asking for a first subgoal); none when `text` holds no turn."""
    if "[step " not in text:
        return []
    newest = text.rfind("\n\n[step ")
    latest = latest.strip()
    shown = text.rfind(latest, max(0, newest)) if latest else -1
    end = shown + len(latest) if shown >= 0 else len(text)
    return ([newest] if newest > 0 else []) + [end]


def clip(text: str, limit: int | None) -> str:
    """`text` stripped, and cut to `limit` characters with a marker (None: whole)."""
    text = text.strip()
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 15)].rstrip() + " ...[truncated]"


def goal_and_start(goal: str, first_observation: str, start: str = "Step 0:") -> list[str]:
    """The goal and the first observation as prompt parts, the instruction shown once: where
    the first observation is the task's instruction itself (LOCA-Bench's), it is not repeated
    under `start`."""
    first = first_observation.strip()
    if not first or first == goal.strip():
        return [f"Goal: {goal.strip()}"]
    return [f"Goal: {goal}", f"{start}\n{first}"]


def tools_block(tools: Sequence[dict[str, Any]], max_calls: int = 1) -> str:
    """The tools with their whole argument schemas: every argument's type, required or
    optional, allowed values, bounds, default and description, and the fields of nested
    objects (and of arrays of objects) indented under their argument."""
    how = (
        f'Answer with "calls": a list of 1 to {max_calls} tool calls for this turn.'
        if max_calls > 1
        else 'Answer with one tool call in "call".'
    )
    lines = [f"Tools ({how}):"]
    for tool in tools:
        lines.append(f"- {tool.get('name')}: {str(tool.get('description', '')).strip()}")
        lines.extend(_argument_lines(plain_schema(tool.get("parameters") or {}), 1))
    return "\n".join(lines)


def _argument_lines(schema: Mapping[str, Any], level: int) -> list[str]:
    """One line per property of an object schema, its nested fields below it."""
    required = set(schema.get("required") or [])
    lines: list[str] = []
    for name, spec in (schema.get("properties") or {}).items():
        spec = spec if isinstance(spec, Mapping) else {}
        kind = str(spec.get("type", "any"))
        items = spec.get("items") if isinstance(spec.get("items"), Mapping) else None
        if kind == "array" and items is not None:
            kind = f"array of {items.get('type', 'any')}"
        facts = [kind, "required" if name in required else "optional"]
        allowed = spec.get("enum") or (items or {}).get("enum")
        if allowed:
            facts.append("one of: " + ", ".join(map(str, allowed)))
        for bound, word in (
            ("minimum", "min"),
            ("maximum", "max"),
            ("minItems", "at least"),
            ("maxItems", "at most"),
        ):
            if spec.get(bound) is not None:
                facts.append(f"{word} {spec[bound]}")
        if "default" in spec and spec["default"] is not None:
            facts.append(f"default {json.dumps(spec['default'], ensure_ascii=False)}")
        about = str(spec.get("description", "")).strip()
        indent = "    " * level
        lines.append(f"{indent}{name} ({'; '.join(facts)})" + (f": {about}" if about else ""))
        nested = items if items is not None and items.get("properties") else spec
        if isinstance(nested.get("properties"), Mapping):
            lines.extend(_argument_lines(nested, level + 1))
    return lines


def actions_block(
    actions: Sequence[str] | None,
    tools: Sequence[dict[str, Any]] | None = None,
    max_calls: int = 1,
    *,
    limit: int | None = None,
) -> str:
    """The tools, else the admissible actions in the environment's order: all of them, or the
    first `limit` (the `compact` profile's `action_list`) with the rest counted."""
    if tools:
        return tools_block(tools, max_calls)
    if not actions:
        return "Write the action as a short command."
    shown = list(actions) if limit is None else list(actions)[:limit]
    more = f"\n(+{len(actions) - len(shown)} more)" if len(actions) > len(shown) else ""
    return "Admissible actions:\n" + "\n".join(f"- {a}" for a in shown) + more
