"""A broken set-up is a configuration failure that says what to do, never bad model output;
and secrets stay out of everything written or shown (issue 11, items 1 and "Also fix")."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from pydantic import BaseModel, SecretStr

from llm_fakes import Canned, FakeServer, chat, error
from pos_agent.llm import Message, ModelFailure, ModelOptions, load_model, preflight
from pos_agent.llm._secrets import _warned_hosts

# The fake server fixture, and forgetting what the process learnt about servers.
pytest_plugins = ["llm_fixtures"]


ASK = [Message("user", "Where is the mug?")]
SECRET = "sk-test-DO-NOT-LEAK-4242"
PASSWORD = "hunter2-pass-word"


class Where(BaseModel):
    place: str


def failure_of(server: FakeServer, reply: Canned, **options: Any) -> ModelFailure:
    server.queue(reply, reply, reply, reply)
    model = load_model(
        "openai:fake", ModelOptions(base_url=server.base_url, **options), sleep=lambda _: None
    )
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=Where)
    return caught.value


def with_credentials(base_url: str, password: str, query: str = "") -> str:
    """`base_url` (a loopback server) with user `admin` and `password` in its user info."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(netloc=f"admin:{password}@{parts.netloc}", query=query))


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_rejected_key_is_a_config_failure_naming_the_variable(server: FakeServer) -> None:
    failure = failure_of(server, error(401, "Incorrect API key"), api_key=SecretStr(SECRET))
    assert failure.kind == "config"
    assert "OPENAI_API_KEY" in failure.message and "--api-key" not in failure.message
    assert len(server.seen) == 1  # not retried, not repaired


def test_a_server_that_wants_a_key_says_so(server: FakeServer) -> None:
    failure = failure_of(server, error(403, "Forbidden"))
    assert failure.kind == "config" and "wants an API key" in failure.message


def test_dashscope_names_its_own_variable(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", SECRET)
    server.queue(error(401, "invalid key"))
    model = load_model("dashscope:qwen-plus", ModelOptions(base_url=server.base_url))
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK)
    assert caught.value.kind == "config" and "DASHSCOPE_API_KEY" in caught.value.message


def test_an_unknown_model_is_a_config_failure(server: FakeServer) -> None:
    failure = failure_of(server, error(404, "The model `nope` does not exist"))
    assert failure.kind == "config" and "--base-url" in failure.message


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (
            Canned(200, "<html><body>Welcome to nginx!</body></html>", content_type="text/html"),
            "text/html, not a chat completion",
        ),
        (Canned(200, {"object": "list", "data": [{"id": "m"}]}), "no choices; it has: data"),
        (Canned(200, {"id": "x", "object": "chat.completion", "choices": []}), "no choices"),
        (Canned(200, {"choices": [{"index": 0, "text": "hi"}]}), "no message"),
        (Canned(200, {"error": {"message": "model is loading"}}), "model is loading"),
        (Canned(200, b""), "not a chat completion"),
    ],
    ids=["html", "other-json", "empty-choices", "completions-endpoint", "error-200", "empty"],
)
def test_a_200_that_is_not_a_chat_completion_is_a_config_failure(
    server: FakeServer, reply: Canned, says: str
) -> None:
    failure = failure_of(server, reply)
    assert failure.kind == "config", failure
    assert says in failure.message
    assert len(server.seen) == 1  # neither retried nor "repaired" as if the model spoke


def test_preflight_passes_a_working_setup_and_a_weak_model(server: FakeServer) -> None:
    assert preflight("scripted") is None
    server.queue(chat("I cannot answer in JSON"), chat("nor now"), chat("nor now"))
    # The server works; the model answers badly. That is a result, not a broken set-up.
    assert preflight("openai:fake", ModelOptions(base_url=server.base_url)) is None


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (error(401, "Incorrect API key"), "OPENAI_API_KEY"),
        (error(404, "no such model"), "check the model name"),
        (Canned(200, "<html></html>", content_type="text/html"), "not a chat completion"),
    ],
)
def test_preflight_gives_the_doctors_advice_on_a_broken_setup(
    server: FakeServer, reply: Canned, says: str
) -> None:
    server.queue(reply)
    advice = preflight("openai:fake", ModelOptions(base_url=server.base_url))
    assert advice is not None and says in advice and "docs/models.md" in advice


def test_preflight_on_a_dead_server_and_a_bad_spec() -> None:
    dead = ModelOptions(base_url=f"http://127.0.0.1:{closed_port()}/v1", backoff_base_s=0)
    advice = preflight("openai:fake", dead)
    assert advice is not None and "server is running" in advice
    bad = preflight("nonsense")
    assert bad is not None and "gguf:PATH" in bad


def test_a_key_echoed_in_a_successful_reply_is_redacted(server: FakeServer) -> None:
    server.queue(chat(f"your key is {SECRET}, the mug is in the sink"))
    model = load_model(
        "openai:fake", ModelOptions(base_url=server.base_url, api_key=SecretStr(SECRET))
    )
    answer = model.complete(ASK)
    assert SECRET not in answer.text and "[redacted]" in answer.text


def test_base_url_credentials_stay_out_of_errors_reprs_and_caches(
    server: FakeServer, tmp_path: Path
) -> None:
    with_password = with_credentials(server.base_url, PASSWORD, "api-key=query-secret-123")
    cache_path = tmp_path / "cache.sqlite"
    options = ModelOptions(base_url=with_password, cache_path=cache_path, cache_mode="readwrite")
    server.queue(chat('{"place": "sink"}'), error(400, f"bad url {with_password}"))
    model = load_model("openai:fake", options)
    model.complete(ASK, schema=Where)
    # The credentials are used (basic auth to a proxy)...
    assert server.seen[0].headers["authorization"].startswith("Basic ")
    with pytest.raises(ModelFailure) as caught:
        model.complete([Message("user", "again")])
    # ...and appear nowhere we write or show.
    texts = [str(caught.value), repr(caught.value), repr(model), repr(options), str(options)]
    texts.append(options.public_base_url or "")
    assert model.cache is not None
    model.cache.close()
    texts += [path.read_bytes().decode("latin-1") for path in tmp_path.iterdir()]
    for text in texts:
        assert PASSWORD not in text and "query-secret-123" not in text


def test_dead_server_errors_do_not_show_the_url_password() -> None:
    url = with_credentials(f"http://127.0.0.1:{closed_port()}/v1", PASSWORD)
    model = load_model("openai:fake", ModelOptions(base_url=url, max_retries=0))
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK)
    assert caught.value.kind == "transport" and PASSWORD not in str(caught.value)


def test_a_key_over_plain_http_to_another_host_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:

    _warned_hosts.clear()
    key = SecretStr(SECRET)
    with caplog.at_level(logging.WARNING):
        # Building a model contacts nothing; the warning comes before any request.
        load_model("openai:m", ModelOptions(base_url="http://example.com:8000/v1", api_key=key))
        load_model("openai:m", ModelOptions(base_url="http://example.com:8000/v1", api_key=key))
        load_model("openai:m", ModelOptions(base_url="https://example.org/v1", api_key=key))
        load_model("openai:m", ModelOptions(base_url="http://127.0.0.1:8000/v1", api_key=key))
        load_model("openai:m", ModelOptions(base_url="http://localhost:8000/v1", api_key=key))
        load_model("openai:m", ModelOptions(base_url="http://example.org/v1"))  # no key
    warnings = [r.getMessage() for r in caplog.records if "unencrypted" in r.getMessage()]
    assert len(warnings) == 1 and "example.com" in warnings[0]
    assert SECRET not in caplog.text


def test_a_bad_base_url_is_a_config_failure() -> None:
    for bad in ("ftp://host/v1", "http://[::1"):
        with pytest.raises(ModelFailure) as caught:
            load_model("openai:m", ModelOptions(base_url=bad)).complete(ASK)
        assert caught.value.kind == "config", bad


def test_config_failure_messages_are_json_safe(server: FakeServer) -> None:
    failure = failure_of(server, Canned(200, b"\xff\xfe<html>", content_type="text/html"))
    json.dumps(failure.message)  # an undecodable body is shown, not raised
    assert failure.kind == "config"
