"""Broken Unicode from a model is bad output (repaired, then a schema failure), never an
infrastructure failure; the cache never fails a call over text it cannot store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from llm_fakes import Canned, FakeServer, chat, chat_body
from pos_agent.llm import (
    Message,
    ModelFailure,
    ModelOptions,
    ResponseCache,
    ScriptedModel,
    Usage,
    load_model,
)
from pos_agent.llm.backend import CachedOutcome, CacheRequest

# The fake server fixture, and forgetting what the process learnt about servers.
pytest_plugins = ["llm_fixtures"]


ASK = [Message("user", "Where is the mug?")]
LONE = "\ud800"


class Where(BaseModel):
    place: str


def surrogate_reply(text: str) -> Canned:
    # json.dumps writes a lone surrogate as the escape \ud800, as a broken server would.
    return Canned(200, json.dumps(chat_body(text)))


def options(server: FakeServer, tmp_path: Path, **overrides: Any) -> ModelOptions:
    settings: dict[str, Any] = {
        "base_url": server.base_url,
        "cache_path": tmp_path / "c.sqlite",
        "cache_mode": "readwrite",
    }
    settings.update(overrides)
    return ModelOptions(**settings)


def test_a_lone_surrogate_is_repaired_like_any_bad_output(
    server: FakeServer, tmp_path: Path
) -> None:
    server.queue(surrogate_reply(f'{{"place": "si{LONE}nk"}}'), chat('{"place": "sink"}'))
    answer = load_model("openai:m", options(server, tmp_path)).complete(ASK, schema=Where)
    assert answer.parsed == Where(place="sink") and answer.repairs == 1
    echoed = server.seen[1].body["messages"][-2]["content"]
    assert LONE not in echoed and "\ufffd" in echoed
    assert "invalid Unicode" in server.seen[1].body["messages"][-1]["content"]


def test_a_surrogate_escape_inside_the_json_is_caught_too(server: FakeServer) -> None:
    escaped = '{"place": "si\\ud800nk"}'  # valid JSON text; the decoded value is not UTF-8
    server.queue(chat(escaped), chat(escaped), chat(escaped))
    model = load_model("openai:m", ModelOptions(base_url=server.base_url))
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=Where)
    assert caught.value.kind == "schema" and "invalid Unicode" in caught.value.message


def test_surrogates_that_never_go_away_end_as_a_schema_failure_with_clean_text(
    server: FakeServer, tmp_path: Path
) -> None:
    server.queue(*[surrogate_reply(f"free text {LONE}")] * 3)
    model = load_model("openai:m", options(server, tmp_path))
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK)
    failure = caught.value
    assert failure.kind == "schema"  # an output problem, not "transport" (unscored)
    assert failure.last_text is not None and LONE not in failure.last_text
    failure.last_text.encode("utf-8")  # safe for traces and caches


def test_scripted_surrogates_behave_the_same() -> None:
    model = ScriptedModel([f"bad {LONE}", "good"])
    assert model.complete(ASK).text == "good"


def test_the_cache_swallows_text_it_cannot_encode(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    request = CacheRequest("b", "m", None, (Message("user", f"hi {LONE}"),), None, 8, 0.0, 0, 2)
    outcome = CachedOutcome(f"x {LONE}", None, Usage(1, 1), 0, 1, 0.1)
    cache.put(request, outcome)  # must not raise
    assert cache.get(request.key()) is None
    assert cache.count() == 0


def test_a_valid_answer_is_returned_when_the_cache_cannot_store_its_request(
    tmp_path: Path,
) -> None:

    cache = ResponseCache(tmp_path / "c.sqlite")
    model = ScriptedModel(['{"place": "sink"}'], cache=cache)
    # A lone surrogate in the prompt makes the request itself unstorable.
    answer = model.complete([Message("user", f"where {LONE}?")], schema=Where)
    assert answer.parsed == Where(place="sink")


def test_a_lone_surrogate_in_the_prompt_is_sent_as_a_replacement_character(
    server: FakeServer,
) -> None:
    server.queue(chat("fine"))
    model = load_model("openai:m", ModelOptions(base_url=server.base_url))
    assert model.complete([Message("user", f"tool output: {LONE}!")]).text == "fine"
    assert server.seen[0].body["messages"][-1]["content"] == "tool output: \ufffd!"
