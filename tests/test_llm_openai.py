"""The OpenAI-compatible backend against an in-process HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from llm_fakes import Canned, FakeServer, chat, error
from pos_agent.llm import (
    Message,
    ModelFailure,
    ModelOptions,
    ReliableModel,
    TokenLedger,
    load_model,
)
from pos_agent.llm._options import DASHSCOPE_BASE_URL
from pos_agent.llm._secrets import public_url

# The fake server fixture, and forgetting what the process learnt about servers.
pytest_plugins = ["llm_fixtures"]


ASK = [Message("system", "You find things."), Message("user", "Where is the mug?")]
SECRET = "sk-test-DO-NOT-LEAK-4242"


class Where(BaseModel):
    place: str
    sure: bool = False


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DASHSCOPE_API_KEY", "DASHSCOPE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def openai_model(
    server: FakeServer, sleeps: list[float] | None = None, **overrides: Any
) -> ReliableModel:
    settings: dict[str, Any] = {"base_url": server.base_url, "max_retries": 2, "timeout_s": 5.0}
    settings.update(overrides)
    sink: Callable[[float], None] = sleeps.append if sleeps is not None else (lambda _: None)
    return load_model("openai:fake-model", ModelOptions(**settings), sleep=sink)


def test_plain_chat_round_trip(server: FakeServer) -> None:
    server.queue(chat("The mug is in the sink."))
    answer = openai_model(server).complete(ASK, max_tokens=33, temperature=0.2)
    assert answer.text == "The mug is in the sink."
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (11, 7)
    sent = server.seen[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "fake-model"
    assert sent.body["max_tokens"] == 33 and sent.body["temperature"] == 0.2
    assert "response_format" not in sent.body
    assert [m["role"] for m in sent.body["messages"]] == ["system", "user"]


def test_schema_uses_json_schema_response_format(server: FakeServer) -> None:
    server.queue(chat('{"place": "sink", "sure": true}'))
    answer = openai_model(server).complete(ASK, schema=Where)
    assert answer.parsed == Where(place="sink", sure=True)
    response_format = server.seen[0].body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Where"
    assert response_format["json_schema"]["schema"]["required"] == ["place"]


def test_429_then_success_backs_off(server: FakeServer) -> None:
    server.queue(error(429, "slow down", {"retry-after": "0.5"}), chat('{"place": "sink"}'))
    sleeps: list[float] = []
    answer = openai_model(server, sleeps, backoff_base_s=0.01, backoff_cap_s=2.0).complete(
        ASK, schema=Where
    )
    assert answer.parsed == Where(place="sink")
    assert len(server.seen) == 2
    assert sleeps == [0.5]  # the server's Retry-After beats the tiny jittered delay


def test_500_then_success(server: FakeServer) -> None:
    server.queue(error(500, "boom"), error(503, "busy"), chat("fine"))
    sleeps: list[float] = []
    assert openai_model(server, sleeps).complete(ASK).text == "fine"
    assert len(sleeps) == 2


def test_500_until_retries_run_out(server: FakeServer) -> None:
    server.queue(*[error(500, "boom")] * 5)
    sleeps: list[float] = []
    with pytest.raises(ModelFailure) as caught:
        openai_model(server, sleeps, max_retries=2).complete(ASK)
    assert caught.value.kind == "transport"
    assert caught.value.attempts == 3 and len(server.seen) == 3 and len(sleeps) == 2
    assert "HTTP 500" in caught.value.message and "boom" in caught.value.message


def test_timeout_then_success(server: FakeServer) -> None:
    server.queue(Canned(delay_s=1.0, body={}), chat("late but fine"))
    answer = openai_model(server, timeout_s=0.2).complete(ASK)
    assert answer.text == "late but fine"


def test_timeouts_until_retries_run_out(server: FakeServer) -> None:
    server.queue(*[Canned(delay_s=1.0, body={})] * 3)
    started = time.perf_counter()
    with pytest.raises(ModelFailure) as caught:
        openai_model(server, timeout_s=0.2, max_retries=1).complete(ASK)
    assert caught.value.kind == "timeout"
    assert caught.value.attempts == 2
    assert time.perf_counter() - started < 3.0


def test_malformed_json_then_repair(server: FakeServer) -> None:
    server.queue(chat('{"place": "sink", '), chat('{"place": "sink"}'))
    answer = openai_model(server).complete(ASK, schema=Where)
    assert answer.parsed == Where(place="sink")
    assert answer.repairs == 1
    assert answer.usage.prompt_tokens == 22
    repair_messages = server.seen[1].body["messages"]
    assert repair_messages[-2] == {"role": "assistant", "content": '{"place": "sink", '}
    assert "not valid JSON" in repair_messages[-1]["content"]


def test_missing_content_and_usage_are_handled(server: FakeServer) -> None:
    server.queue(chat(None, usage=False), chat("answer", usage=False))
    answer = openai_model(server).complete(ASK)
    assert answer.text == "answer" and answer.repairs == 1
    assert answer.usage.prompt_tokens > 0  # estimated when the server reports none


def test_truncated_reply_is_reported(server: FakeServer) -> None:
    server.queue(*[chat('{"place": "a very long', finish="length")] * 3)
    with pytest.raises(ModelFailure) as caught:
        openai_model(server).complete(ASK, schema=Where, max_tokens=5)
    assert caught.value.kind == "truncated"


def test_json_schema_unsupported_falls_back_to_json_object_and_remembers(
    server: FakeServer,
) -> None:
    server.queue(
        error(400, "response_format type 'json_schema' is not supported by this server"),
        chat('{"place": "sink"}'),
        chat('{"place": "shelf"}'),
    )
    model = openai_model(server)
    first = model.complete(ASK, schema=Where)
    assert first.parsed == Where(place="sink")
    assert first.structured_mode == "json_object_schema"
    assert model.complete(ASK, schema=Where).parsed == Where(place="shelf")
    formats = [s.body["response_format"]["type"] for s in server.seen]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert server.seen[2].body["response_format"]["schema"]["required"] == ["place"]
    # JSON mode needs the shape spelled out in the prompt.
    assert '"place"' in server.seen[1].body["messages"][0]["content"]


def test_every_refused_mode_steps_down_until_prompt_only(server: FakeServer) -> None:
    server.queue(
        error(400, "Unknown json_schema"),
        error(422, "response_format: extra field 'schema' not permitted"),
        error(400, "response_format json_object unsupported"),
        chat('{"place": "sink"}'),
    )
    sleeps: list[float] = []
    answer = openai_model(server, sleeps).complete(ASK, schema=Where)
    assert answer.parsed == Where(place="sink") and answer.structured_mode == "prompt"
    sent = [s.body.get("response_format", {}) for s in server.seen]
    assert sent[0]["type"] == "json_schema"
    assert sent[1]["type"] == "json_object" and "schema" in sent[1]
    assert sent[2] == {"type": "json_object"}
    assert sent[3] == {}  # prompt only: no response_format at all
    assert sleeps == []  # refusals are answered by changing the request, not by waiting


def test_max_completion_tokens_is_used_when_the_server_demands_it(server: FakeServer) -> None:
    server.queue(
        error(400, "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead."),
        chat("ok"),
    )
    assert openai_model(server).complete(ASK, max_tokens=20).text == "ok"
    assert server.seen[1].body["max_completion_tokens"] == 20
    assert "max_tokens" not in server.seen[1].body


def test_other_400_fails_without_retry(server: FakeServer) -> None:
    server.queue(error(400, "'top_k' is not a valid parameter for this model"))
    sleeps: list[float] = []
    with pytest.raises(ModelFailure) as caught:
        openai_model(server, sleeps).complete(ASK)
    # The request is invalid as sent: a set-up problem, never worth resending. (A context
    # overflow is not one: tests/test_llm_rejections.py.)
    assert caught.value.kind == "config" and sleeps == [] and len(server.seen) == 1
    assert "'top_k' is not a valid parameter" in caught.value.message


def test_404_is_a_config_failure_saying_what_to_check(server: FakeServer) -> None:
    server.queue(error(404, "model not found"))
    with pytest.raises(ModelFailure) as caught:
        openai_model(server).complete(ASK)
    assert caught.value.kind == "config"
    assert "--base-url" in caught.value.message


def test_connection_refused_retries_then_fails(server: FakeServer) -> None:
    dead = server.base_url
    server.httpd.shutdown()
    server.httpd.server_close()
    sleeps: list[float] = []
    model = load_model(
        "openai:fake", ModelOptions(base_url=dead, max_retries=2), sleep=sleeps.append
    )
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK)
    assert caught.value.kind == "transport"
    assert len(sleeps) == 2
    assert "is the server running" in caught.value.message


def test_key_never_leaks(server: FakeServer, tmp_path: Path) -> None:
    cache_path = tmp_path / "cache" / "llm.sqlite"
    options: dict[str, Any] = {
        "api_key": SecretStr(SECRET),
        "cache_path": cache_path,
        "cache_mode": "readwrite",
        "max_repairs": 1,
    }
    server.queue(
        chat('{"place": "sink"}'),
        chat(f"echo {SECRET} not json"),
        chat(f"still {SECRET} no"),
        error(401, f"Incorrect API key provided: {SECRET}"),
    )
    model = openai_model(server, **options)
    ledger = TokenLedger()
    ledger.record("policy", model.complete(ASK, schema=Where), step=0)
    assert server.seen[0].headers["authorization"] == f"Bearer {SECRET}"  # the key is used...

    failures: list[ModelFailure] = []
    for question in ("echo", "rejected"):
        try:
            model.complete([Message("user", question)], schema=Where)
        except ModelFailure as caught:
            failures.append(caught)
            ledger.record("policy", caught, step=1)
    assert [f.kind for f in failures] == ["schema", "config"]
    assert "OPENAI_API_KEY" in failures[1].message

    # ...and appears nowhere we write or show.
    texts = [repr(model), repr(model.backend), repr(model.options), str(model.options)]
    for failure in failures:
        texts += [str(failure), repr(failure), failure.message, failure.last_text or ""]
    texts.append(json.dumps(ledger.to_dict()))
    assert all(SECRET not in text for text in texts)
    model.cache.close()  # type: ignore[union-attr]
    files = list(cache_path.parent.iterdir())
    assert files
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path.name


def test_key_from_environment_is_used_and_not_leaked(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.queue(chat("hi"))
    cache_path = tmp_path / "c.sqlite"
    model = load_model("openai:fake", ModelOptions(cache_path=cache_path, cache_mode="write"))
    model.complete(ASK)
    assert server.seen[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(model)
    model.cache.close()  # type: ignore[union-attr]
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes()


def test_dashscope_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelFailure) as caught:
        load_model("dashscope:qwen-plus")
    assert caught.value.kind == "config" and "DASHSCOPE_API_KEY" in caught.value.message


def test_dashscope_uses_its_key_and_compatible_mode(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setenv("DASHSCOPE_API_KEY", SECRET)
    server.queue(chat("ni hao"))
    model = load_model("dashscope:qwen-plus", ModelOptions(base_url=server.base_url))
    assert model.complete(ASK).text == "ni hao"
    assert server.seen[0].headers["authorization"] == f"Bearer {SECRET}"
    assert server.seen[0].body["model"] == "qwen-plus"
    default = load_model("dashscope:qwen-plus")
    assert default.backend.base_url == DASHSCOPE_BASE_URL  # only compared, never contacted


def test_public_url_drops_credentials() -> None:
    credentials = "user:pw"
    with_secrets = f"https://{credentials}@example.com:8443/v1/?key=abc#x"
    assert public_url(with_secrets) == "https://example.com:8443/v1"
    assert public_url(None) is None


def test_key_never_reaches_logs(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    server.queue(error(429, f"quota of {SECRET} exceeded"), chat("ok"))
    with caplog.at_level(logging.DEBUG):
        model = openai_model(server, api_key=SecretStr(SECRET))
        assert model.complete(ASK).text == "ok"
    assert "retry 1/2" in caplog.text
    assert SECRET not in caplog.text


def test_openai_without_key_or_server_fails_fast_with_what_to_do() -> None:
    # no_ambient_credentials (autouse) has removed OPENAI_API_KEY and OPENAI_BASE_URL.
    with pytest.raises(ModelFailure) as failure:
        load_model("openai:gpt-4o-mini")
    assert failure.value.kind == "config"
    assert "OPENAI_API_KEY" in failure.value.message and "--base-url" in failure.value.message
