"""Prompt parts every role's prompts share: clipping, the tool list and the action list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def clip(text: str, limit: int | None) -> str:
    """`text` stripped, and cut to `limit` characters with a marker (None: whole)."""
    text = text.strip()
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 15)].rstrip() + " ...[truncated]"


def tools_block(tools: Sequence[dict[str, Any]], max_calls: int = 1) -> str:
    """The tools with every argument: type, required or optional, allowed values, description."""
    how = (
        f'Answer with "calls": a list of 1 to {max_calls} tool calls for this turn.'
        if max_calls > 1
        else 'Answer with one tool call in "call".'
    )
    lines = [f"Tools ({how}):"]
    for tool in tools:
        parameters = tool.get("parameters") or {}
        required = set(parameters.get("required") or [])
        lines.append(f"- {tool.get('name')}: {str(tool.get('description', '')).strip()}")
        for name, spec in (parameters.get("properties") or {}).items():
            spec = spec if isinstance(spec, dict) else {}
            facts = [str(spec.get("type", "any")), "required" if name in required else "optional"]
            if spec.get("enum"):
                facts.append("one of: " + ", ".join(map(str, spec["enum"])))
            for bound, word in (("minimum", "min"), ("maximum", "max")):
                if spec.get(bound) is not None:
                    facts.append(f"{word} {spec[bound]}")
            about = str(spec.get("description", "")).strip()
            lines.append(f"    {name} ({'; '.join(facts)})" + (f": {about}" if about else ""))
    return "\n".join(lines)


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
