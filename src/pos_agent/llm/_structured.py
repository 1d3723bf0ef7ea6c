"""Pure helpers for structured output: schemas for prompts and grammars, parsing, repair turns."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from pos_agent.llm._types import Message

JsonSchema = dict[str, Any]
ProblemKind = Literal["schema", "empty", "truncated"]

# Keys whose value maps names to schemas (so a property called "title" is not a keyword there).
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
# Keys whose value is a list of schemas.
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
# Keys whose value is one schema.
_SCHEMA_ONE = ("items", "additionalProperties", "not")
# Noise for the model and for grammar converters.
_DROPPED_KEYWORDS = ("title",)

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_MAX_OBJECT_STARTS = 32
_MAX_REPORTED_ERRORS = 8
_SURROGATE = re.compile("[\ud800-\udfff]")
# A repair turn shows the model its own reply, but never more than this many characters per
# token of the budget: a reply within max_tokens is shown whole (JSON averages well under 8
# characters a token), a runaway or oversized one only in part.
_ECHO_CHARS_PER_TOKEN = 8
_MIN_ECHO_CHARS = 4_000
# Model output is read within these bounds; past them it is a malformed reply (a repair turn,
# then a degraded step), never an exception: a hostile or broken server can send JSON nested
# deep enough to exhaust Python's stack, or megabytes of it.
MAX_JSON_DEPTH = 100
MAX_REPLY_CHARS = 4 * 1024 * 1024
# A string literal (skipped whole, so brackets inside it do not count) or one bracket.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class JsonBoundError(ValueError):
    """Model output past the size or nesting bound: read as malformed, not parsed."""


def json_depth(text: str) -> int:
    """The deepest nesting of brackets outside string literals in `text` (cheap, no parsing;
    counting stops just past `MAX_JSON_DEPTH`)."""
    depth = deepest = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    break
        elif token in "]}":
            depth = max(0, depth - 1)
    return deepest


def check_json_bounds(text: str) -> None:
    """Raise JsonBoundError when `text` is too long or nested too deep to be parsed safely."""
    if len(text) > MAX_REPLY_CHARS:
        raise JsonBoundError(
            f"the reply is {len(text)} characters long, more than the {MAX_REPLY_CHARS} "
            "characters a reply is read up to"
        )
    if json_depth(text) > MAX_JSON_DEPTH:
        raise JsonBoundError(
            f"the reply nests JSON more than {MAX_JSON_DEPTH} levels deep; reply with a flat object"
        )


def loads_bounded(text: str) -> Any:
    """`json.loads` for model output: JsonBoundError (a ValueError) past the size or depth
    bound, json.JSONDecodeError (also a ValueError) for invalid JSON."""
    check_json_bounds(text)
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonBoundError("the reply nests JSON too deep to be read") from None


def json_schema_of(schema: type[BaseModel]) -> JsonSchema:
    """The schema as sent to models: pydantic's JSON schema without titles.

    `$defs` references stay as they are: llama.cpp's grammar converter and OpenAI-compatible
    servers resolve them, and they keep prompts short when a model is used twice.
    """
    return _strip_schema(schema.model_json_schema())


def _strip_schema(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYWORDS and not isinstance(value, dict):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _strip_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_strip_schema(sub) for sub in value]
        elif key in _SCHEMA_ONE:
            out[key] = _strip_schema(value)
        else:
            out[key] = value
    return out


def schema_name_of(schema: type[BaseModel]) -> str:
    """A name that OpenAI's json_schema response format accepts (letters, digits, _ and -)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64]
    return name or "answer"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_instruction(schema: JsonSchema) -> str:
    return (
        "Reply with one JSON object and nothing else. It must match this JSON schema:\n"
        + json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    )


def with_schema_instruction(messages: Sequence[Message], schema: JsonSchema) -> list[Message]:
    """Tell the model the expected shape: appended to the system message, or as a new one."""
    instruction = schema_instruction(schema)
    if messages and messages[0].role == "system":
        # Appended: the message's cache breakpoints stay where they were.
        first = replace(messages[0], content=f"{messages[0].content}\n\n{instruction}")
        return [first, *messages[1:]]
    return [Message("system", instruction), *messages]


def extract_json_object(text: str) -> Any:
    """The first JSON object in `text`, tolerating code fences and prose around it.

    Raises ValueError saying what is wrong when there is none.
    """
    check_json_bounds(text)
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text
    # strict=False: a raw newline or tab inside a string (small models under a grammar write
    # them) is read as that character instead of failing the whole answer.
    decoder = json.JSONDecoder(strict=False)
    first_error: json.JSONDecodeError | None = None
    starts = [i for i, ch in enumerate(candidate) if ch == "{"][:_MAX_OBJECT_STARTS]
    for start in starts:
        try:
            value, _ = decoder.raw_decode(candidate, start)
        except RecursionError:
            raise JsonBoundError("the reply nests JSON too deep to be read") from None
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
            continue
        if isinstance(value, dict):
            return value
    if first_error is not None:
        raise ValueError(f"the reply is not valid JSON ({first_error})")
    raise ValueError("the reply contains no JSON object (no '{' found)")


def without_surrogates(text: str) -> str:
    """`text` with lone surrogates (not encodable as UTF-8) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _surrogate_in(value: Any) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_surrogate_in(k) or _surrogate_in(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_surrogate_in(item) for item in value)
    return False


def echo_limit(max_tokens: int) -> int:
    """How many characters of a bad reply a repair turn shows back to the model."""
    return max(_MIN_ECHO_CHARS, _ECHO_CHARS_PER_TOKEN * max_tokens)


def bounded_echo(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out, and made encodable."""
    text = without_surrogates(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters not shown]"


def describe_validation_error(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:_MAX_REPORTED_ERRORS]:
        where = ".".join(str(part) for part in item["loc"]) or "(root)"
        parts.append(f"{where}: {item['msg']}")
    hidden = error.error_count() - len(parts)
    if hidden > 0:
        parts.append(f"and {hidden} more error(s)")
    return "; ".join(parts)


@dataclass(frozen=True)
class OutputProblem:
    """Why a reply cannot be used; decides the repair turn and the failure kind."""

    kind: ProblemKind
    detail: str


def interpret_output(
    text: str, *, truncated: bool, schema: type[BaseModel] | None
) -> BaseModel | OutputProblem | None:
    """Validate a raw reply: the parsed object, None for usable free text, or the problem.

    Free text (no schema) that hit max_tokens is still returned: the caller asked for at most
    that many tokens. A JSON object that validates is accepted even when cut off afterwards.
    """
    if not text.strip():
        return OutputProblem("empty", "the reply was empty")
    if _SURROGATE.search(text):
        # Not encodable as UTF-8: it would break every file and request it reached later.
        return OutputProblem("schema", "the reply contains invalid Unicode (a lone surrogate)")
    if schema is None:
        return None
    try:
        value = extract_json_object(text)
        if _surrogate_in(value):
            return OutputProblem(
                "schema", "the JSON object contains invalid Unicode (a lone surrogate escape)"
            )
        return schema.model_validate(value)
    except RecursionError:
        # The bounds above should make this unreachable; kept so that no reply can ever end a
        # case as a transport error.
        return OutputProblem("schema", "the reply nests JSON too deep to be read")
    except (ValueError, ValidationError) as exc:
        if isinstance(exc, JsonBoundError):
            return OutputProblem("schema", str(exc))
        if truncated:
            return OutputProblem(
                "truncated", "the reply hit the token limit before the JSON object was complete"
            )
        if isinstance(exc, ValidationError):
            return OutputProblem("schema", describe_validation_error(exc))
        return OutputProblem("schema", str(exc))


def repair_turns(
    text: str, problem: OutputProblem, *, max_tokens: int, structured: bool
) -> list[Message]:
    """The model's own reply (at most `echo_limit(max_tokens)` characters of it) followed by
    what was wrong with it and what to do instead."""
    if problem.kind == "empty":
        ask = (
            "Your reply was empty. Reply with one JSON object that matches the schema."
            if structured
            else "Your reply was empty. Please answer."
        )
    elif problem.kind == "truncated":
        ask = (
            f"Your reply was cut off at the {max_tokens}-token limit before the JSON object "
            "was complete. Reply again with a complete, shorter JSON object: keep strings "
            "brief and lists short."
        )
    elif structured:
        ask = (
            f"Your reply does not match the required JSON schema: {problem.detail}. "
            "Reply again with only the corrected JSON object."
        )
    else:
        ask = f"Your reply could not be used: {problem.detail}. Please answer again."
    return [Message("assistant", bounded_echo(text, echo_limit(max_tokens))), Message("user", ask)]


def minimal_instance(schema: JsonSchema) -> Any:
    """A small value that satisfies simple JSON schemas (the default scripted model's answers).

    Covers what pydantic emits for ordinary models: objects with required fields, enums,
    consts, Optional unions, lists, numbers with bounds. Anything else gets a best effort that
    validation then judges.
    """
    definitions = schema.get("$defs", {})
    return _minimal(schema, definitions, depth=0)


def _minimal(node: Any, definitions: dict[str, Any], depth: int) -> Any:
    if not isinstance(node, dict) or depth > 32:
        return None
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _minimal(definitions.get(ref.removeprefix("#/$defs/"), {}), definitions, depth + 1)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    if "default" in node:
        return node["default"]
    for union in ("anyOf", "oneOf"):
        if node.get(union):
            options = node[union]
            null_first = [o for o in options if o.get("type") == "null"] or options
            return _minimal(null_first[0], definitions, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else (kind[0] if kind else None)
    if kind == "object" or "properties" in node:
        properties = node.get("properties", {})
        return {
            name: _minimal(properties.get(name, {}), definitions, depth + 1)
            for name in node.get("required", [])
        }
    if kind == "array":
        count = int(node.get("minItems", 0))
        return [_minimal(node.get("items", {}), definitions, depth + 1) for _ in range(count)]
    if kind == "string":
        return "x" * int(node.get("minLength", 0))
    if kind in ("integer", "number"):
        value: float = 0
        if isinstance(node.get("minimum"), int | float):
            value = node["minimum"]
        elif isinstance(node.get("exclusiveMinimum"), int | float):
            value = node["exclusiveMinimum"] + 1
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    return None
