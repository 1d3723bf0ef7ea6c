"""Structured output that adapts to each server: json_schema, json_object with a schema, plain
json_object, or the schema in the prompt; found out once and remembered per server."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from llm_fakes import FakeServer, chat, error, llama_cpp_refusal
from pos_agent.llm import Message, ModelFailure, ModelOptions, ReliableModel, load_model
from pos_agent.llm.backend import known_mode

# The fake server fixture, and forgetting what the process learnt about servers.
pytest_plugins = ["llm_fixtures"]


ASK = [Message("system", "You find things."), Message("user", "Where is the mug?")]


class Where(BaseModel):
    place: str


def model_for(
    server: FakeServer, sleeps: list[float], spec: str = "openai:smollm", **overrides: Any
) -> ReliableModel:

    options = ModelOptions(base_url=server.base_url, max_retries=3, **overrides)
    return load_model(spec, options, sleep=sleeps.append)


def test_llama_cpp_server_500_refusal_steps_down_without_retries(server: FakeServer) -> None:
    server.queue(llama_cpp_refusal(), chat('{"place": "sink"}'))
    sleeps: list[float] = []
    answer = model_for(server, sleeps).complete(ASK, schema=Where)
    assert answer.parsed == Where(place="sink")
    assert answer.structured_mode == "json_object_schema"
    assert sleeps == [] and len(server.seen) == 2  # no retry was spent on the refusal
    resent = server.seen[1].body["response_format"]
    assert resent["type"] == "json_object" and resent["schema"]["required"] == ["place"]


def test_the_mode_is_remembered_per_server_and_model_for_the_process(server: FakeServer) -> None:
    server.queue(llama_cpp_refusal(), chat('{"place": "sink"}'), chat('{"place": "shelf"}'))
    first = model_for(server, [])
    assert first.complete(ASK, schema=Where).structured_mode == "json_object_schema"
    # A new model of the same server and model (another role, another case) starts there.
    second = model_for(server, [])
    assert second.complete(ASK, schema=Where).structured_mode == "json_object_schema"
    assert [s.body["response_format"]["type"] for s in server.seen] == [
        "json_schema",
        "json_object",
        "json_object",
    ]
    assert known_mode(first.backend.base_url or "", "smollm") == "json_object_schema"
    # Another model behind the same URL is asked afresh.
    assert known_mode(first.backend.base_url or "", "other") is None


def test_a_500_that_is_not_a_validation_message_is_still_retried(server: FakeServer) -> None:
    server.queue(error(500, "CUDA error: response_format kernel crashed"), chat('{"place": "a"}'))
    sleeps: list[float] = []
    answer = model_for(server, sleeps).complete(ASK, schema=Where)
    assert answer.structured_mode == "json_schema" and len(sleeps) == 1


def test_an_invalid_request_500_is_not_retried(server: FakeServer) -> None:
    refusal = "1 validation error for CreateChatCompletionRequest\nseed\n  Input should be an int"
    server.queue(error(500, refusal), chat("never"))
    sleeps: list[float] = []
    with pytest.raises(ModelFailure) as caught:
        model_for(server, sleeps).complete(ASK)
    assert caught.value.kind == "config" and sleeps == [] and len(server.seen) == 1
    assert "rejected the request as invalid" in caught.value.message


def test_free_text_calls_send_no_response_format_and_record_no_mode(server: FakeServer) -> None:
    server.queue(chat("the sink"))
    answer = model_for(server, []).complete(ASK)
    assert answer.structured_mode is None
    assert "response_format" not in server.seen[0].body


def test_scripted_and_prompt_modes_are_recorded() -> None:
    from pos_agent.llm import ScriptedModel

    answer = ScriptedModel(['{"place": "sink"}']).complete(ASK, schema=Where)
    assert answer.structured_mode == "prompt"


def test_the_mode_survives_a_cache_replay(server: FakeServer, tmp_path: Any) -> None:
    server.queue(llama_cpp_refusal(), chat('{"place": "sink"}'))
    options: dict[str, Any] = {"cache_path": tmp_path / "c.sqlite", "cache_mode": "readwrite"}
    assert model_for(server, [], **options).complete(ASK, schema=Where).structured_mode == (
        "json_object_schema"
    )
    replay = model_for(server, [], **options).complete(ASK, schema=Where)
    assert replay.cached and replay.structured_mode == "json_object_schema"
    assert len(server.seen) == 2
