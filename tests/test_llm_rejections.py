"""What a server says is what the model layer reports (issue 23, items 1, 5, 11 and 13): a
context-length rejection is its own outcome, never a broken set-up and never retried; a 200
that is not a well-formed chat reply is refused, the pre-flight included; usage numbers are
checked before they are stored."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel

from llm_fakes import Canned, FakeServer, chat, chat_body, error
from pos_agent.events import ModelCallEvent
from pos_agent.llm import Message, ModelFailure, ModelOptions, load_model, preflight
from pos_agent.llm._local import LlamaCppBackend
from pos_agent.llm.backend import BackendError, GenerationRequest

pytest_plugins = ["llm_fixtures"]

ASK = [Message("user", "Where is the mug?")]


class Where(BaseModel):
    place: str


def model(server: FakeServer, sleeps: list[float] | None = None, **options: Any) -> Any:
    settings: dict[str, Any] = {"base_url": server.base_url, "max_retries": 2, **options}
    sink = sleeps if sleeps is not None else []
    return load_model("openai:m", ModelOptions(**settings), sleep=sink.append)


# -- 23.1: a context-length rejection is context_overflow, by what the server says -----------------

# What each server answers when the prompt does not fit (wordings from their issue trackers).
OVERFLOWS = {
    "openai": Canned(
        400,
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your "
                "messages resulted in 9120 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    "vllm": Canned(
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 2048 tokens. However, you "
            "requested 11352 tokens (11320 in the messages, 32 in the completion). Please reduce "
            "the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    "vllm-max-tokens": error(
        400,
        "'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum "
        "context length is 4096 tokens and your request has 300 input tokens (4000 > 4096 - 300)",
    ),
    "llama.cpp-server": Canned(
        400,
        {
            "error": {
                "code": 400,
                "message": "request (4476 tokens) exceeds the available context size (4096 "
                "tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 4476,
                "n_ctx": 4096,
            }
        },
    ),
    "llama-cpp-python-server": error(400, "Requested tokens (5000) exceed context window of 2048"),
    "ollama": error(500, "input length exceeds the context length"),
    "dashscope": Canned(
        400,
        {
            "error": {
                "code": "invalid_parameter_error",
                "message": "<400> InternalError.Algo.InvalidParameter: Range of input length "
                "should be [1, 30720]",
                "param": None,
                "type": "invalid_request_error",
            }
        },
    ),
}


@pytest.mark.parametrize("server_kind", sorted(OVERFLOWS))
def test_a_context_length_rejection_is_context_overflow_and_never_retried(
    server: FakeServer, server_kind: str
) -> None:
    server.queue(*[OVERFLOWS[server_kind]] * 4)
    sleeps: list[float] = []
    with pytest.raises(ModelFailure) as caught:
        model(server, sleeps).complete(ASK, schema=Where)
    failure = caught.value
    assert failure.kind == "context_overflow", f"{server_kind}: read as {failure.kind}"
    assert not failure.unavailable, "an overflow is the conversation's length, not an outage"
    assert len(server.seen) == 1 and sleeps == [], "resending the same prompt cannot help"
    assert "--context-window" in failure.message, "the message says what cuts the history"
    assert "too long" in failure.message


def test_an_overflow_inside_a_200_error_body_is_context_overflow_too(server: FakeServer) -> None:
    server.queue(Canned(200, {"error": {"message": "prompt too long; exceeded max context"}}))
    with pytest.raises(ModelFailure) as caught:
        model(server).complete(ASK)
    assert caught.value.kind == "context_overflow"


def test_other_400s_stay_config_errors_with_the_servers_message(server: FakeServer) -> None:
    server.queue(error(400, "Unrecognized request argument supplied: frequency_boost"))
    with pytest.raises(ModelFailure) as caught:
        model(server).complete(ASK)
    assert caught.value.kind == "config"
    assert "Unrecognized request argument supplied: frequency_boost" in caught.value.message
    assert len(server.seen) == 1


def test_a_repair_turn_that_overflows_reports_the_output_problem_it_repaired(
    server: FakeServer,
) -> None:
    server.queue(chat("not json at all"), OVERFLOWS["openai"])
    with pytest.raises(ModelFailure) as caught:
        model(server).complete(ASK, schema=Where)
    assert caught.value.kind == "schema", "the real cause is the output that needed repair"
    assert "repair turn failed" in caught.value.message


def test_the_local_backends_prompt_too_long_is_context_overflow(
    monkeypatch: Any, tmp_path: Path
) -> None:
    class Overflowing:
        def create_chat_completion(self, **_: Any) -> Any:
            # llama-cpp-python's own wording (Llama._create_completion).
            raise ValueError("Requested tokens (3000) exceed context window of 2048")

    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")  # never loaded: the loaded model is the stand-in below
    backend = LlamaCppBackend(weights, n_ctx=2048, n_threads=1)
    loaded = SimpleNamespace(llama=Overflowing(), lock=threading.Lock())
    monkeypatch.setattr(backend, "_loaded", lambda: loaded)
    request = GenerationRequest(
        messages=tuple(ASK), schema=None, schema_name=None, max_tokens=8, temperature=0, seed=0
    )
    with pytest.raises(BackendError) as caught:
        backend.generate(request)
    assert caught.value.kind == "context_overflow" and not caught.value.retryable
    assert "2048-token context" in caught.value.message


# -- 23.5: only a well-formed chat reply is an answer; the pre-flight refuses the rest --------------


def reply_with(message: dict[str, Any]) -> Canned:
    body = chat_body("x")
    body["choices"][0]["message"] = {"role": "assistant", **message}
    return Canned(200, body)


MALFORMED = {
    "content-int": (reply_with({"content": 42}), "content is a number (42)"),
    "content-dict": (reply_with({"content": {"status": "ok"}}), "content is an object"),
    "tool-calls-only": (
        reply_with(
            {
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            }
        ),
        "tool_calls only and no text",
    ),
}


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_preflight_refuses_a_200_that_is_no_well_formed_chat_reply(
    server: FakeServer, shape: str
) -> None:
    reply, says = MALFORMED[shape]
    server.queue(reply, reply)
    advice = preflight("openai:m", ModelOptions(base_url=server.base_url, max_retries=0))
    assert advice is not None, f"{shape} passed the pre-flight"
    assert says in advice


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_a_malformed_reply_mid_run_is_a_config_error_not_a_scored_bad_answer(
    server: FakeServer, shape: str
) -> None:
    reply, says = MALFORMED[shape]
    server.queue(reply, reply, reply)
    with pytest.raises(ModelFailure) as caught:
        model(server).complete(ASK, schema=Where)
    assert caught.value.kind == "config" and says in caught.value.message
    assert len(server.seen) == 1, "no repair turn: the server is broken, not the answer"


def test_text_parts_are_still_read_as_text(server: FakeServer) -> None:
    server.queue(reply_with({"content": [{"type": "text", "text": '{"place": "sink"}'}]}))
    assert model(server).complete(ASK, schema=Where).parsed == Where(place="sink")


# -- 23.13: a `choices` that is not a list is described as what it is -------------------------------


def test_choices_that_is_a_string_gets_an_accurate_message(server: FakeServer) -> None:
    server.queue(Canned(200, {"id": "x", "choices": "none today"}))
    with pytest.raises(ModelFailure) as caught:
        model(server).complete(ASK)
    message = caught.value.message
    assert "its choices are a string, not a list" in message
    assert "no choices" not in message


# -- 23.11: usage numbers are checked before they are stored ---------------------------------------


def with_usage(usage: Any) -> Canned:
    body = chat_body('{"place": "sink"}')
    body["usage"] = usage
    return Canned(200, body)


@pytest.mark.parametrize(
    ("usage", "says"),
    [
        ({"prompt_tokens": -5, "completion_tokens": 7}, "prompt_tokens was negative (-5)"),
        ({"prompt_tokens": 10**12, "completion_tokens": 7}, "more than this request can produce"),
        ({"prompt_tokens": 11, "completion_tokens": 1e12}, "completion_tokens was 1000000000000.0"),
        ({"prompt_tokens": "11", "completion_tokens": 7}, "prompt_tokens was '11', not an integer"),
        ({"prompt_tokens": 11, "completion_tokens": True}, "not an integer"),
    ],
)
def test_implausible_usage_is_not_stored_as_sent_and_the_call_says_so(
    server: FakeServer, usage: dict[str, Any], says: str
) -> None:
    server.queue(with_usage(usage))
    answer = model(server).complete(ASK, schema=Where)
    assert answer.usage.prompt_tokens >= 0 and answer.usage.completion_tokens >= 0
    assert answer.usage.prompt_tokens < 10**6 and answer.usage.completion_tokens < 10**6
    assert answer.usage_note is not None and says in answer.usage_note
    event = ModelCallEvent.of(answer, step=1, role="policy", purpose="act")
    assert event.usage_note == answer.usage_note, "the call event says so"
    assert event.prompt_tokens == answer.usage.prompt_tokens


def test_plausible_usage_is_stored_exactly_as_sent(server: FakeServer) -> None:
    server.queue(with_usage({"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}))
    answer = model(server).complete(ASK, schema=Where)
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (11, 7)
    assert answer.usage_note is None
    assert ModelCallEvent.of(answer, step=1, role="policy", purpose="act").usage_note is None
