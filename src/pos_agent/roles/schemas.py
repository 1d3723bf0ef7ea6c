"""The policy's answer schemas, shared by every method, and the helpers that bound a schema.

The base classes are the standard schemas: no length bounds, since a real model's own generation
budget bounds it. `action_schema`, `tool_schema` and `decision_schema` build the schema a role
uses for its `SchemaBounds` (`roles/limits.py`): the same fields with maxLength/maxItems added,
cached per bounds. Bounded schemas subclass the standard ones, so code reads every answer through
the standard types. The belief model's patch schema is in `updater/schemas.py`, the
sentinel's in `sentinel/schemas.py`; both are built with the helpers below.

In tool environments the decision is a union over the offered tools, each with its own argument
schema (names, types, enums, required fields) taken from `Observation.tools`, so a grammar or a
strict json_schema server can produce only calls the environment accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from pos_agent.roles.limits import SchemaBounds

ENUM_ACTION_LIMIT = 200  # longer admissible lists are not compiled into the decoding grammar

# -- the standard (unbounded) schemas -------------------------------------------------------------


class PolicyAnswer(BaseModel):
    """The task agent's decision when actions are free text or chosen from a list."""

    thought: str
    action: str


class ToolDecision(BaseModel):
    """The task agent's decision in a tool environment: one call, or `calls` (up to the
    environment's `max_calls`). Subclasses give `call`/`calls` the tools' own schemas."""

    thought: str


# -- bounded variants --------------------------------------------------------------------------------


def literal_of(values: tuple[Any, ...]) -> Any:
    """Literal[values] for values known at run time (an enum in the JSON schema)."""
    return Literal.__getitem__(values)


def bounded_str(limit: int | None) -> Any:
    return Annotated[str, Field(max_length=limit)] if limit else str


def bounded_list(item: Any, limit: int | None, *, at_least: int = 0) -> Any:
    if limit is None and not at_least:
        return list[item]
    return Annotated[list[item], Field(min_length=at_least or None, max_length=limit)]


def variant_of(base: type[BaseModel], **fields: Any) -> Any:
    """`base` with some fields re-typed (same name, so schemas and traces read the same)."""
    return create_model(base.__name__, __base__=base, __module__=__name__, **fields)


# -- the policy's decision -------------------------------------------------------------------------


@lru_cache(maxsize=64)
def action_schema(actions: tuple[str, ...] | None, bounds: SchemaBounds) -> type[PolicyAnswer]:
    """Free text, or with admissible actions an enum of exactly those strings, so constrained
    decoding cannot produce anything else."""
    action: Any = literal_of(actions) if actions else bounded_str(bounds.action_chars)
    schema: type[PolicyAnswer] = variant_of(
        PolicyAnswer, thought=(bounded_str(bounds.thought_chars), ...), action=(action, ...)
    )
    return schema


def _camel(name: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", name)
    return "".join(w[:1].upper() + w[1:] for w in words) or "Tool"


def plain_schema(parameters: Mapping[str, Any], *, depth: int = 12) -> dict[str, Any]:
    """A tool's argument schema with its `$ref`s inlined (from its `$defs`) and a nullable
    `anyOf` (`[T, {"type": "null"}]`, how MCP servers write an optional argument) reduced to T:
    what both the decision schema and the tool list read. Deeper than `depth` levels, an object
    is left free-form."""
    definitions = dict(parameters.get("$defs") or parameters.get("definitions") or {})

    def resolve(node: Any, level: int) -> Any:
        if not isinstance(node, Mapping):
            return node
        node = {k: v for k, v in node.items() if k not in ("$defs", "definitions")}
        reference = node.pop("$ref", None)
        if isinstance(reference, str):
            target = definitions.get(reference.rsplit("/", 1)[-1])
            if level >= depth or not isinstance(target, Mapping):
                return {**node, "type": "object"}
            return resolve({**target, **node}, level + 1)
        options = node.get("anyOf")
        if isinstance(options, list):
            kept = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
            if len(kept) == 1 and isinstance(kept[0], Mapping):
                rest = {k: v for k, v in node.items() if k != "anyOf"}
                return resolve({**kept[0], **rest}, level + 1)
        if isinstance(node.get("properties"), Mapping):
            node["properties"] = {k: resolve(v, level + 1) for k, v in node["properties"].items()}
        if isinstance(node.get("items"), Mapping):
            node["items"] = resolve(node["items"], level + 1)
        return node

    resolved = resolve(parameters, 0)
    return resolved if isinstance(resolved, dict) else {}


def _argument_type(spec: Mapping[str, Any], bounds: SchemaBounds, where: str = "") -> Any:
    """A Python type for one JSON-schema property of a tool, nested objects and arrays of them
    included (a model per object with properties; a free-form object is a dict)."""
    allowed = spec.get("enum")
    if isinstance(allowed, list) and allowed:
        return literal_of(tuple(allowed))
    kind = spec.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the one non-null type
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind == "string":
        return bounded_str(bounds.tool_arg_chars)
    if kind == "integer":
        return Annotated[int, Field(ge=spec.get("minimum"), le=spec.get("maximum"))]
    if kind == "number":
        return Annotated[float, Field(ge=spec.get("minimum"), le=spec.get("maximum"))]
    if kind == "boolean":
        return bool
    if kind == "array":
        items = spec.get("items")
        item = _argument_type(items, bounds, f"{where}Item") if isinstance(items, Mapping) else Any
        return bounded_list(item, spec.get("maxItems"), at_least=int(spec.get("minItems") or 0))
    if kind == "object" or "properties" in spec:
        if isinstance(spec.get("properties"), Mapping) and spec["properties"]:
            return _object_model(spec, bounds, where or "Object")
        return dict[str, Any]
    return Any


_NOT_IN_SCHEMA: Any = SkipJsonSchema.__class_getitem__(None)  # None accepted, not offered


def _schema_extra(default: Any) -> Any:
    """The `json_schema_extra` of an optional field: the tool's own default, else none (a
    None default is how an omitted argument is represented, not a value to offer)."""

    def extra(schema: dict[str, Any]) -> None:
        schema.pop("default", None)
        if default is not None:
            schema["default"] = default

    return extra


def _object_model(
    parameters: Mapping[str, Any], bounds: SchemaBounds, name: str
) -> type[BaseModel]:
    """An object schema as a model: its own names (aliases), types, enums, defaults and
    required fields, and no other keys (what grammars and strict servers need)."""
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    fields: dict[str, Any] = {}
    for index, (key, spec) in enumerate(properties.items()):
        spec = spec if isinstance(spec, Mapping) else {}
        kind = _argument_type(spec, bounds, f"{name}{_camel(str(key))}")
        described = {"alias": key, "description": spec.get("description")}
        if key in required:
            fields[f"arg{index}"] = (kind, Field(**described))
        else:
            # Optional arguments may be left out; null is not offered (the schema stays a plain
            # type, which grammars and strict servers handle best).
            fields[f"arg{index}"] = (
                kind | _NOT_IN_SCHEMA,
                Field(
                    default=None, json_schema_extra=_schema_extra(spec.get("default")), **described
                ),
            )
    model: type[BaseModel] = create_model(
        name, __config__=ConfigDict(extra="forbid", populate_by_name=True), **fields
    )
    return model


def _arguments_model(tool: Mapping[str, Any], bounds: SchemaBounds) -> type[BaseModel]:
    """The arguments of one tool as a model: the tool's whole schema, nested objects, arrays,
    enums, defaults and required fields included, nothing else."""
    name = f"{_camel(str(tool.get('name', '')))}Args"
    return _object_model(plain_schema(tool.get("parameters") or {}), bounds, name)


def _call_model(tool: Mapping[str, Any], bounds: SchemaBounds) -> type[BaseModel]:
    name = str(tool.get("name", ""))
    model: type[BaseModel] = create_model(
        f"{_camel(name)}Call",
        # The tool's description: native tool calling sends it with the function definition.
        __doc__=str(tool.get("description") or "").strip() or None,
        __config__=ConfigDict(extra="forbid"),
        tool=(literal_of((name,)), ...),
        args=(_arguments_model(tool, bounds), ...),
    )
    return model


@lru_cache(maxsize=64)
def _tool_schema(tools_json: str, max_calls: int, bounds: SchemaBounds) -> type[ToolDecision]:
    tools = json.loads(tools_json)
    members = tuple(_call_model(t, bounds) for t in tools)
    call: Any = members[0] if len(members) == 1 else Union[members]  # noqa: UP007
    thought = (bounded_str(bounds.thought_chars), ...)
    if max_calls > 1:
        calls = bounded_list(call, max_calls, at_least=1)
        schema: type[ToolDecision] = variant_of(ToolDecision, thought=thought, calls=(calls, ...))
    else:
        schema = variant_of(ToolDecision, thought=thought, call=(call, ...))
    return schema


def tool_schema(
    tools: Sequence[Mapping[str, Any]], max_calls: int, bounds: SchemaBounds
) -> type[ToolDecision]:
    """The decision schema for these tools: a union of one call model per tool, or a list of
    1..max_calls of them."""
    # Not sort_keys: the order of a tool's arguments is the order a model writes them in.
    key = json.dumps(list(tools), ensure_ascii=False, default=str)
    return _tool_schema(key, max(1, int(max_calls)), bounds)


def decision_schema(
    admissible: Sequence[str] | None,
    tools: Sequence[Mapping[str, Any]] | None,
    bounds: SchemaBounds,
    *,
    max_calls: int = 1,
) -> type[BaseModel]:
    """What the policy answers this step: tool calls, an admissible action, or free text."""
    if tools:
        return tool_schema(tools, max_calls, bounds)
    listed = tuple(admissible) if admissible and len(admissible) <= ENUM_ACTION_LIMIT else None
    return action_schema(listed, bounds)


SUBGOAL_FIELD = "new_subgoal"
SUBGOAL_HELP = (
    "Empty while the action continues the current subgoal. Only when there is no current "
    "subgoal, or it is done or cannot be done: the next subgoal, one line."
)


@lru_cache(maxsize=64)
def with_subgoal(schema: type[BaseModel], bounds: SchemaBounds) -> type[BaseModel]:
    """A decision schema with a `new_subgoal` field between the thought and the action (HiAgent:
    upstream's answer is "Action: ..." while a subgoal goes on, and "Subgoal: ...\nAction: ..."
    only to start the next one; an empty field is the first, a non-empty one the second)."""
    rest = {n: (f.annotation, f) for n, f in schema.model_fields.items() if n != "thought"}
    thought = schema.model_fields["thought"]
    fields: dict[str, Any] = {
        "thought": (thought.annotation, thought),
        # A short phrase, bounded like a name: under the compact profile a long bound lets the
        # 135M model pad it ("1. 2. 3. ...") past its 128-token budget.
        SUBGOAL_FIELD: (bounded_str(bounds.name_chars), Field(description=SUBGOAL_HELP)),
        **rest,
    }
    # Tool decisions stay ToolDecisions (action_text reads them as calls); a plain answer's
    # `action` is read by name.
    base = ToolDecision if issubclass(schema, ToolDecision) else BaseModel
    extended: type[BaseModel] = create_model(
        schema.__name__, __base__=base, __module__=__name__, **fields
    )
    return extended


def tool_calls_of(answer: BaseModel) -> list[dict[str, Any]]:
    """The `{"tool", "args"}` objects of a tool decision, optional arguments left out."""
    calls = getattr(answer, "calls", None)
    if calls is None:
        single = getattr(answer, "call", None)
        calls = [] if single is None else [single]
    out = []
    for call in calls:
        args = call.args.model_dump(by_alias=True, exclude_none=True)
        out.append({"tool": call.tool, "args": args})
    return out


def action_text(answer: BaseModel | None) -> str | None:
    """The action string the environment receives for a policy answer: the tool environments'
    format (one `{"tool": ..., "args": ...}` object, or a JSON list of them), else the text."""
    if answer is None:
        return None
    if isinstance(answer, ToolDecision):
        calls = tool_calls_of(answer)
        if not calls:
            return None
        return json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
    action = getattr(answer, "action", None)
    return action if isinstance(action, str) else None
