"""Native tool calling: a tool decision sent as OpenAI function definitions, and the reply's
`tool_calls` read back into the decision's JSON.

A tool decision is the policy schema of a tool environment (`roles/schemas.tool_schema`): a
`thought` and a `call` (or `calls`) that is a union of one member per tool, each with its
`tool` name as a constant and its `args` schema. `tool_functions` turns that union into the
`tools` list of a chat-completions request (name, description, the full argument schema with
its `$ref`s inlined); `decision_text` turns the reply's `tool_calls` into the same JSON a
structured-output answer would have been, so everything after the backend reads one shape.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pos_agent.llm._structured import JsonSchema, loads_bounded


def tool_functions(schema: JsonSchema | None) -> tuple[list[dict[str, Any]], bool] | None:
    """(function definitions, several calls allowed) for a tool decision; None for any other
    schema."""
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties") or {}
    key = "calls" if "calls" in properties else "call" if "call" in properties else None
    if key is None or "thought" not in properties:
        return None
    definitions = schema.get("$defs") or {}
    node = properties[key]
    if key == "calls":
        node = node.get("items") or {}
    members = node.get("anyOf") or [node]
    functions = []
    for member in members:
        member = _inline(member, definitions)
        fields = member.get("properties") or {}
        tool = fields.get("tool") or {}
        name = tool.get("const") or next(iter(tool.get("enum") or []), None)
        if not isinstance(name, str) or "args" not in fields:
            return None
        parameters = dict(fields["args"])
        parameters.pop("title", None)
        function: dict[str, Any] = {"name": name, "parameters": parameters}
        if member.get("description"):
            function["description"] = member["description"]
        functions.append({"type": "function", "function": function})
    return (functions, key == "calls") if functions else None


def decision_text(message: dict[str, Any], several: bool) -> str | None:
    """The decision JSON of a reply's `tool_calls` (its content as the thought), or None when
    the reply called no tool."""
    calls = []
    for item in message.get("tool_calls") or []:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments: Any = function.get("arguments")
        if isinstance(arguments, str):
            # Unreadable arguments stay text: the decision's schema check reports them and a
            # repair turn asks again, as for any malformed answer.
            with contextlib.suppress(ValueError):
                arguments = loads_bounded(arguments) if arguments.strip() else {}
        calls.append({"tool": function["name"], "args": {} if arguments is None else arguments})
    if not calls:
        return None
    content = message.get("content")
    thought = content.strip() if isinstance(content, str) else ""
    decision: dict[str, Any] = {"thought": thought}
    if several:
        decision["calls"] = calls
    else:
        decision["call"] = calls[0]
    return json.dumps(decision, ensure_ascii=False)


def _inline(node: Any, definitions: dict[str, Any], depth: int = 0) -> Any:
    """`node` with every `#/$defs/...` reference replaced by its definition."""
    if isinstance(node, list):
        return [_inline(item, definitions, depth) for item in node]
    if not isinstance(node, dict):
        return node
    reference = node.get("$ref")
    if isinstance(reference, str) and depth < 32:
        target = definitions.get(reference.rsplit("/", 1)[-1], {})
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**target, **rest}, definitions, depth + 1)
    return {k: _inline(v, definitions, depth + 1) for k, v in node.items() if k != "$defs"}
