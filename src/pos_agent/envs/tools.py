"""What the diagnosis environments share: tool specs, a lenient tool-call parser, a base class
that puts the tool schemas on every observation, bounded output, and finding the data folder.

The action format is fixed: a JSON object `{"tool": "<name>", "args": {...}}`, or (where the
environment allows several calls per turn) a JSON list of such objects. The parser accepts the
unambiguous variants models tend to write — `{"name": ..., "arguments": ...}` (arguments as an
object or a JSON string), OpenAI's `{"function": {"name", "arguments"}}`, arguments given at
the top level, a code fence around the JSON, a bare tool name for a tool without required
arguments — and turns everything else into a `ToolCallError` whose message shows the expected
format. It never raises anything else.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.data import dataset_dir, prepared
from pos_agent.envs._episode import BackendResult, BudgetedEnvironment, is_empty_action
from pos_agent.envs._types import EnvError, Observation, TaskKind

# Keys models use for the tool name and for its arguments, in the order they are tried.
_NAME_KEYS = ("tool", "name", "tool_name", "function", "action")
_ARGS_KEYS = ("args", "arguments", "parameters", "input", "tool_input", "params")
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)
_BARE_CALL = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*\))?$")
# What `step` receives for an empty action, so the tool parser can explain the format.
EMPTY_ACTION = "(empty action)"


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what it does, and a JSON schema of its arguments.

    `canonical` maps an argument name to a function that turns an accepted spelling into the
    value the schema lists (e.g. "CPU hog" -> "cpu_consumed"); the parser applies it before
    checking an `enum`, so the schema can list the closed set while the parser stays lenient.
    """

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    canonical: Mapping[str, Callable[[str], str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The `Observation.tools` entry: `{"name", "description", "parameters"}`, where
        `parameters` is a complete JSON schema (`required` and `additionalProperties` always
        present)."""
        schema: dict[str, Any] = {
            "type": "object",
            "properties": self.properties,
            "required": self.required,
            "additionalProperties": False,
        }
        return {"name": self.name, "description": self.description, "parameters": schema}

    @property
    def properties(self) -> dict[str, Any]:
        return dict(self.parameters.get("properties", {}))

    @property
    def required(self) -> list[str]:
        return list(self.parameters.get("required", []))


@dataclass(frozen=True)
class ToolCall:
    """A parsed, validated call: a known tool and arguments that match its schema."""

    tool: str
    args: dict[str, Any]

    def render(self) -> str:
        """The canonical action string for this call."""
        return json.dumps({"tool": self.tool, "args": self.args}, ensure_ascii=False)


class ToolCallError(ValueError):
    """An action that is not a valid tool call; the message says how to write one."""


def string_param(description: str, **extra: Any) -> dict[str, Any]:
    """A JSON-schema string property."""
    return {"type": "string", "description": description, **extra}


def integer_param(description: str, **extra: Any) -> dict[str, Any]:
    """A JSON-schema integer property."""
    return {"type": "integer", "description": description, **extra}


def object_schema(required: Sequence[str] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON-schema object with these properties."""
    return {"type": "object", "properties": properties, "required": list(required)}


def format_hint(tools: Sequence[ToolSpec], max_calls: int = 1) -> str:
    """How an action must look, naming the tools (used in every parse error)."""
    names = ", ".join(t.name for t in tools)
    several = (
        f' A turn may also be a JSON list of up to {max_calls} such objects: [{{"tool": ...}}, ...].'
        if max_calls > 1
        else ""
    )
    return (
        'Send one tool call as JSON: {"tool": "<name>", "args": {...}}.'
        f"{several} Tools: {names}."
    )


def parse_tool_calls(
    action: str, tools: Sequence[ToolSpec], *, max_calls: int = 1
) -> list[ToolCall]:
    """The tool calls an action asks for, validated against `tools`.

    Raises ToolCallError (with the expected format in its message) for anything that is not
    1..max_calls valid calls.
    """
    by_name = {t.name: t for t in tools}
    hint = format_hint(tools, max_calls)
    text = action.strip() if isinstance(action, str) else ""
    if not text or text == EMPTY_ACTION:
        raise ToolCallError(f"Empty action. {hint}")
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    bare = _BARE_CALL.match(text)
    if bare and bare.group(1) in by_name:
        spec = by_name[bare.group(1)]
        if spec.required:
            raise ToolCallError(f"{spec.name} needs arguments ({', '.join(spec.required)}). {hint}")
        return [ToolCall(spec.name, {})]
    value = _load_json(text)
    if value is None:
        raise ToolCallError(f"The action is not JSON: {_clip(text)!r}. {hint}")
    items: list[Any]
    if isinstance(value, list):
        if max_calls == 1:
            raise ToolCallError(f"Send one tool call per turn, not a list. {hint}")
        if not value:
            raise ToolCallError(f"The list of tool calls is empty. {hint}")
        if len(value) > max_calls:
            raise ToolCallError(
                f"{len(value)} tool calls in one turn; at most {max_calls} are allowed. {hint}"
            )
        items = value
    else:
        items = [value]
    return [_parse_one(item, by_name, hint) for item in items]


def _load_json(text: str) -> Any:
    """The JSON value in `text`, also when prose surrounds exactly one object or list."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    decoder = json.JSONDecoder()
    try:
        value, end = decoder.raw_decode(text, min(starts))
    except ValueError:
        return None
    # Two JSON values in one message are ambiguous: which one is the action?
    if "{" in text[end:]:
        return None
    return value if isinstance(value, dict | list) else None


def _parse_one(item: Any, by_name: dict[str, ToolSpec], hint: str) -> ToolCall:
    if isinstance(item, str) and _BARE_CALL.match(item.strip()):
        return _parse_one({"tool": item.strip().rstrip("()").strip()}, by_name, hint)
    if not isinstance(item, dict):
        raise ToolCallError(f"A tool call must be a JSON object, got {_clip(item)!r}. {hint}")
    data = dict(item)
    # OpenAI's tool_call shape: {"type": "function", "function": {"name", "arguments"}}.
    function = data.get("function")
    if isinstance(function, dict):
        data = {**{k: v for k, v in data.items() if k not in ("function", "type", "id")}}
        data.update(function)
    name_key = next((k for k in _NAME_KEYS if isinstance(data.get(k), str)), None)
    if name_key is None:
        raise ToolCallError(f'The tool call has no "tool" name: {_clip(item)!r}. {hint}')
    name = str(data.pop(name_key)).strip()
    spec = by_name.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, list(by_name), n=1)
        guess = f" Did you mean {close[0]!r}?" if close else ""
        raise ToolCallError(f"Unknown tool {name!r}.{guess} {hint}")
    args_key = next((k for k in _ARGS_KEYS if k in data), None)
    raw_args: Any
    if args_key is not None:
        # Other keys next to "args" (a "thought", an id) are not arguments: ignored.
        raw_args = data.pop(args_key)
    else:
        # Arguments written next to the tool name: unambiguous once the name is removed.
        raw_args = {k: v for k, v in data.items() if k not in ("type", "id")}
    if isinstance(raw_args, str):
        stripped = raw_args.strip()
        if not stripped:
            raw_args = {}
        else:
            try:
                raw_args = json.loads(stripped)
            except ValueError:
                raw_args = _single_string_argument(spec, stripped, hint)
    if raw_args is None:
        raw_args = {}
    if not isinstance(raw_args, dict):
        raise ToolCallError(f'{name}: "args" must be a JSON object, got {_clip(raw_args)!r}.')
    return ToolCall(name, validate_args(spec, raw_args))


def _single_string_argument(spec: ToolSpec, value: str, hint: str) -> dict[str, Any]:
    """`"args": "text"` for a tool whose only required argument is a string."""
    strings = [k for k in spec.required if spec.properties.get(k, {}).get("type") == "string"]
    if len(spec.required) == 1 and len(strings) == 1:
        return {strings[0]: value}
    raise ToolCallError(f'{spec.name}: "args" must be a JSON object. {hint}')


def validate_args(spec: ToolSpec, args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments checked and coerced against the tool's schema (a small JSON-schema subset)."""
    properties = spec.properties
    given = {str(k): v for k, v in args.items()}
    unknown = [k for k in given if k not in properties]
    missing = [k for k in spec.required if k not in given or given[k] is None]
    # One unexpected key standing in for the one missing string argument: a renamed argument.
    if len(unknown) == 1 and len(missing) == 1:
        wanted = properties[missing[0]]
        if wanted.get("type") == "string" and isinstance(given[unknown[0]], str):
            given[missing[0]] = given.pop(unknown[0])
            unknown, missing = [], []
    accepted = (
        ", ".join(f"{k}{'' if k in spec.required else ' (optional)'}" for k in properties) or "none"
    )
    if unknown:
        raise ToolCallError(
            f"{spec.name}: unknown argument(s) {', '.join(unknown)}; accepted: {accepted}."
        )
    if missing:
        raise ToolCallError(
            f"{spec.name}: missing argument(s) {', '.join(missing)}; accepted: {accepted}."
        )
    cleaned: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        cleaned[key] = _coerce(
            spec.name, key, properties[key], value, key in spec.required, spec.canonical.get(key)
        )
    return cleaned


def _coerce(
    tool: str,
    key: str,
    schema: Mapping[str, Any],
    value: Any,
    required: bool,
    canonical: Callable[[str], str] | None = None,
) -> Any:
    kind = schema.get("type", "string")
    where = f"{tool}: argument {key!r}"
    result: Any
    if kind == "string":
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ToolCallError(f"{where} must be a string, got {_clip(value)!r}.")
        # The value as sent (a program's indentation, a message's line breaks are data).
        result = str(value)
        if required and not result.strip():
            raise ToolCallError(f"{where} must not be empty.")
        if canonical is not None:
            result = canonical(result.strip())
        elif schema.get("enum") is not None:
            result = result.strip()  # one of a closed set of names, not free text
    elif kind == "integer":
        try:
            if isinstance(value, bool):
                raise ValueError
            result = int(value) if not isinstance(value, float) or value.is_integer() else None
            if result is None:
                raise ValueError
        except (TypeError, ValueError):
            raise ToolCallError(f"{where} must be an integer, got {_clip(value)!r}.") from None
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and result < low:
            raise ToolCallError(f"{where} must be at least {low}.")
        if high is not None and result > high:
            raise ToolCallError(f"{where} must be at most {high}.")
    elif kind == "boolean":
        if isinstance(value, bool):
            result = value
        elif isinstance(value, str) and value.strip().lower() in ("true", "false"):
            result = value.strip().lower() == "true"
        else:
            raise ToolCallError(f"{where} must be true or false, got {_clip(value)!r}.")
    elif kind == "array":
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in items):
            raise ToolCallError(f"{where} must be a list of strings.")
        result = [str(v) for v in items if str(v).strip()]
    else:
        result = value
    allowed = schema.get("enum")
    if allowed is not None and result not in allowed:
        raise ToolCallError(f"{where} must be one of {', '.join(map(str, allowed))}.")
    return result


def _clip(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def clip_lines(lines: Sequence[str], *, max_lines: int, max_chars: int, what: str) -> str:
    """Join lines, keeping the output readable: at most `max_lines` lines and `max_chars` chars.

    The last line says how much was left out and how to see it.
    """
    kept: list[str] = []
    size = 0
    for line in lines[:max_lines]:
        if size + len(line) + 1 > max_chars and kept:
            break
        kept.append(line)
        size += len(line) + 1
    omitted = len(lines) - len(kept)
    if omitted:
        kept.append(f"[... {omitted} more {what} not shown; narrow the query to see them]")
    return "\n".join(kept)


class ToolEnvironment(BudgetedEnvironment):
    """A budgeted environment whose actions are tool calls; observations carry the tools.

    A subclass gives `tool_specs` and `fallback_call`, and sets `calls_per_turn` when one
    action may carry several calls (a JSON list). Every observation then carries the tool
    schemas, `max_calls` and, while the episode runs, the fallback action the harness sends
    for a step where the policy produced none. `kind` is "diagnosis"; an execution benchmark
    built on tools sets it to "execution".
    """

    kind: TaskKind = "diagnosis"
    calls_per_turn: int = 1
    free_text_actions = False

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The tools the agent may call."""
        raise NotImplementedError

    @property
    def fallback_call(self) -> ToolCall:
        """A valid, harmless, read-only call: what the harness sends when the policy gave no
        usable action (never a submission, never a text-game action such as "look")."""
        raise NotImplementedError

    def step(self, action: str) -> Observation:
        # The base class explains an empty action in terms of admissible actions; route it to
        # the tool parser instead, whose message shows the JSON format.
        return super().step(EMPTY_ACTION if is_empty_action(action) else action)

    def _observation(self, result: BackendResult, *, budget_exhausted: bool) -> Observation:
        observation = super()._observation(result, budget_exhausted=budget_exhausted)
        observation.info.pop("expert_action", None)
        observation.tools = None if result.done else [t.as_dict() for t in self.tool_specs]
        observation.max_calls = self.calls_per_turn
        observation.fallback_action = None if result.done else self.fallback_call.render()
        return observation

    def tool_instructions(self, example: str) -> str:
        """The first observation's lines naming the tools and the action format, with
        `example` (one rendered call) to show it."""
        return (
            f"Tools: {', '.join(t.name for t in self.tool_specs)}.\n"
            f'Action format: {{"tool": "<name>", "args": {{...}}}}, e.g. {example}.'
        )

    def parse_turn(self, action: str) -> list[ToolCall] | BackendResult:
        """The tool calls of one action, or the invalid-action result saying what was wrong
        (with the environment's info, and its failure metrics on the last unit of budget)."""
        try:
            return parse_tool_calls(action, self.tool_specs, max_calls=self.calls_per_turn)
        except ToolCallError as error:
            invalid = self.invalid_result(str(error))
            invalid.extra.update(self._base_info())
            return self._pending(invalid)

    def _base_info(self) -> dict[str, Any]:
        """What every result of this environment carries in `extra`."""
        return {}

    def _pending(self, result: BackendResult) -> BackendResult:
        """A non-terminal result as the environment returns it (a subclass adds its failure
        metrics when the budget is spent)."""
        return result


def tool_schema_problems(spec: ToolSpec) -> list[str]:
    """What keeps a tool's argument schema from being complete (empty when it is complete).

    Complete: every argument has a `type` and a `description`, a closed set of values is an
    `enum` of that type, and `required` names only declared arguments. The policy schema is
    built from these (a union over the tools), so constrained decoding and strict servers can
    only produce calls the parser accepts.
    """
    problems: list[str] = []
    properties = spec.properties
    if spec.parameters.get("type", "object") != "object":
        problems.append(f"{spec.name}: parameters must be a JSON object schema")
    for key, schema in properties.items():
        where = f"{spec.name}.{key}"
        kind = schema.get("type")
        if kind not in ("string", "integer", "number", "boolean", "array"):
            problems.append(f"{where}: no supported type ({kind!r})")
        if not str(schema.get("description", "")).strip():
            problems.append(f"{where}: no description")
        if kind == "array" and not isinstance(schema.get("items"), Mapping):
            problems.append(f"{where}: an array needs an `items` schema")
        allowed = schema.get("enum")
        if allowed is not None:
            python_type = {"string": str, "integer": int, "number": int | float}.get(str(kind))
            if not isinstance(allowed, list | tuple) or not allowed:
                problems.append(f"{where}: enum must be a non-empty list")
            elif python_type is not None and not all(isinstance(v, python_type) for v in allowed):
                problems.append(f"{where}: enum values must be of type {kind}")
        if key in spec.canonical and allowed is None:
            problems.append(f"{where}: a canonical spelling needs an enum to map onto")
    unknown = [key for key in spec.required if key not in properties]
    if unknown:
        problems.append(f"{spec.name}: required names undeclared {', '.join(unknown)}")
    return problems


def repository_root() -> Path:
    """The checkout this package runs from (src/pos_agent/envs -> repository root)."""
    return Path(__file__).resolve().parents[3]


def locate_data(
    name: str, *, data_dir: str | Path | None, env_var: str, what: str, marker: str
) -> Path:
    """The data folder of a diagnosis benchmark.

    Order: the `data_dir` option, then the `env_var` environment variable, then the folder
    `pos data get <name>` prepared (`pos_agent.data`). `marker` describes what the folder must
    contain (for the error message).
    """
    how = (
        f"pass data_dir=PATH (suite YAML `env_options: {{data_dir: PATH}}`, or "
        f"`pos play -o data_dir=PATH`) or set {env_var}=PATH"
    )
    chosen = data_dir if data_dir not in (None, "") else os.environ.get(env_var) or None
    if chosen is not None:
        path = Path(chosen).expanduser()
        if not path.is_dir():
            source = "data_dir" if data_dir not in (None, "") else env_var
            raise EnvError(
                f"{what} data folder {path} (from {source}) does not exist; it must hold "
                f"{marker}. Fix the path: {how}."
            )
        return path.resolve()
    ready = prepared(name)
    if ready is not None:
        return ready
    raise EnvError(
        f"No {what} data: nothing at {dataset_dir(name)} and {env_var} is not set. "
        f"Get it with `pos data get {name}` (`--from PATH` takes a local copy or archive), "
        f"or {how} to a folder that holds {marker}."
    )
