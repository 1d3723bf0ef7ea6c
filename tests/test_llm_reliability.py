"""Every path of the reliability logic, driven by the scripted backend (no network, no model)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from pos_agent.llm import (
    Completion,
    Message,
    Model,
    ModelFailure,
    ModelOptions,
    ScriptedModel,
    ScriptedReply,
    Usage,
    load_model,
)
from pos_agent.llm.backend import BackendError, GenerationRequest, backoff_delay

ASK = [Message("system", "You act in a kitchen."), Message("user", "What next?")]


class Action(BaseModel):
    thought: str
    action: Literal["look", "open microwave", "take mug"]
    confidence: float = Field(ge=0, le=1)


GOOD = Action(thought="check the microwave", action="open microwave", confidence=0.8)


def scripted(replies: object, **option_overrides: object) -> tuple[ScriptedModel, list[float]]:
    sleeps: list[float] = []
    options = ModelOptions(**option_overrides)
    model = ScriptedModel(replies, options=options, sleep=sleeps.append)  # type: ignore[arg-type]
    return model, sleeps


def test_scripted_model_satisfies_the_protocol() -> None:
    model, _ = scripted(["hi"])
    assert isinstance(model, Model)
    assert model.spec == "scripted"


def test_free_text_reply_is_returned_with_usage() -> None:
    model, _ = scripted([ScriptedReply("go north", prompt_tokens=12, completion_tokens=2)])
    answer = model.complete(ASK)
    assert isinstance(answer, Completion)
    assert answer.text == "go north"
    assert answer.parsed is None
    assert answer.usage == Usage(12, 2)
    assert answer.usage.total == 14
    assert (answer.cached, answer.repairs, answer.model) == (False, 0, "scripted")


def test_latency_covers_the_backend_time_of_every_attempt() -> None:
    def slow(reply: str) -> Callable[[GenerationRequest], str]:
        def respond(request: GenerationRequest) -> str:
            time.sleep(0.05)
            return reply if request.attempt else "not json"

        return respond

    model, _ = scripted(slow(GOOD.model_dump_json()))
    answer = model.complete(ASK, schema=Action)
    # Two backend calls (the bad one and its repair) of at least 50 ms each.
    assert answer.repairs == 1
    assert answer.latency_s >= 0.1


def test_schema_reply_is_parsed_and_the_schema_is_shown_to_the_model() -> None:
    model, _ = scripted([GOOD.model_dump_json()])
    answer = model.complete(ASK, schema=Action)
    assert answer.parsed == GOOD
    assert answer.parsed_as(Action).action == "open microwave"
    sent = model.requests[0]
    assert sent.schema is not None and "title" not in sent.schema
    assert sent.messages[0].role == "system"
    assert sent.messages[0].content.startswith("You act in a kitchen.")
    assert '"open microwave"' in sent.messages[0].content
    with pytest.raises(TypeError):
        answer.parsed_as(Message)  # type: ignore[type-var]


def test_json_in_code_fence_and_prose_is_accepted() -> None:
    fenced = f"Sure! Here it is:\n```json\n{GOOD.model_dump_json(indent=2)}\n```\nDone."
    prose = f"I think {{not json}} but then {GOOD.model_dump_json()} is my answer"
    model, _ = scripted([fenced, prose])
    assert model.complete(ASK, schema=Action).parsed == GOOD
    assert model.complete(ASK, schema=Action).parsed == GOOD


def test_schema_violation_gets_a_repair_turn_showing_own_output_and_error() -> None:
    bad = json.dumps({"thought": "hm", "action": "dance", "confidence": 3})
    model, _ = scripted([bad, GOOD.model_dump_json()])
    answer = model.complete(ASK, schema=Action)
    assert answer.parsed == GOOD
    assert answer.repairs == 1
    repair = model.requests[1].messages
    assert repair[-2] == Message("assistant", bad)
    assert repair[-1].role == "user"
    assert "action" in repair[-1].content and "confidence" in repair[-1].content


def test_usage_sums_over_repair_turns() -> None:
    model, _ = scripted(
        [
            ScriptedReply("not json", prompt_tokens=10, completion_tokens=3),
            ScriptedReply(GOOD.model_dump_json(), prompt_tokens=20, completion_tokens=7),
        ]
    )
    answer = model.complete(ASK, schema=Action)
    assert answer.usage == Usage(30, 10)


def test_malformed_json_exhausts_repairs_into_a_schema_failure() -> None:
    model, _ = scripted(['{"thought": "x", '] * 3, max_repairs=2)
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=Action)
    failure = caught.value
    assert failure.kind == "schema"
    assert failure.attempts == 3
    assert failure.last_text == '{"thought": "x", '
    assert failure.usage.total > 0
    assert failure.model == "scripted"
    assert "not valid JSON" in failure.message
    assert "schema" in str(failure)


def test_zero_repairs_fails_on_first_bad_output() -> None:
    model, _ = scripted(["nope", GOOD.model_dump_json()], max_repairs=0)
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=Action)
    assert caught.value.kind == "schema"
    assert len(model.requests) == 1


@pytest.mark.parametrize("schema", [None, Action])
def test_empty_output_is_repaired_then_fails_as_empty(schema: type[Action] | None) -> None:
    model, _ = scripted(["", "   ", "\n"], max_repairs=2)
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=schema)
    assert caught.value.kind == "empty"
    assert "empty" in model.requests[1].messages[-1].content


def test_empty_then_good_output_recovers() -> None:
    model, _ = scripted(["", "fine"])
    answer = model.complete(ASK)
    assert (answer.text, answer.repairs) == ("fine", 1)


def test_truncated_json_is_repaired_with_a_shorter_answer_request() -> None:
    cut = ScriptedReply('{"thought": "a very long', truncated=True)
    model, _ = scripted([cut, GOOD.model_dump_json()])
    answer = model.complete(ASK, schema=Action, max_tokens=8)
    assert answer.parsed == GOOD
    assert "8-token limit" in model.requests[1].messages[-1].content


def test_truncated_json_fails_as_truncated_after_repairs() -> None:
    cut = ScriptedReply('{"thought": "a very long', truncated=True)
    model, _ = scripted([cut, cut], max_repairs=1)
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=Action, max_tokens=8)
    assert caught.value.kind == "truncated"


def test_truncated_free_text_is_accepted_as_is() -> None:
    model, _ = scripted([ScriptedReply("go nor", truncated=True)])
    assert model.complete(ASK, max_tokens=2).text == "go nor"


def test_valid_object_survives_truncation_after_it() -> None:
    model, _ = scripted([ScriptedReply(GOOD.model_dump_json() + " and more", truncated=True)])
    assert model.complete(ASK, schema=Action).parsed == GOOD


def test_transient_errors_retry_with_capped_jittered_backoff() -> None:
    flaky: list[object] = [
        BackendError("timeout", "slow", retryable=True),
        BackendError("transport", "HTTP 503", retryable=True),
        BackendError("transport", "HTTP 429", retryable=True),
        "finally",
    ]
    model, sleeps = scripted(flaky, backoff_base_s=1.0, backoff_cap_s=3.0, max_retries=5)
    answer = model.complete(ASK)
    assert answer.text == "finally"
    assert len(sleeps) == 3
    for retry, delay in enumerate(sleeps):
        assert 0 <= delay <= min(3.0, 1.0 * 2**retry)


def test_retry_after_hint_is_respected_up_to_the_cap() -> None:
    hinted = BackendError("transport", "HTTP 429", retryable=True, retry_after_s=100.0)
    model, sleeps = scripted([hinted, "ok"], backoff_base_s=0.001, backoff_cap_s=2.0)
    model.complete(ASK)
    assert sleeps == [2.0]


def test_retries_are_bounded_and_end_in_a_typed_failure() -> None:
    model, sleeps = scripted([BackendError("timeout", "slow", retryable=True)] * 10, max_retries=3)
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK)
    assert caught.value.kind == "timeout"
    assert caught.value.attempts == 4
    assert len(sleeps) == 3
    assert "gave up after 3 retries" in caught.value.message


def test_non_retryable_errors_fail_at_once() -> None:
    model, sleeps = scripted([BackendError("config", "bad key", retryable=False), "never"])
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK)
    assert caught.value.kind == "config"
    assert sleeps == []


def test_unexpected_backend_exceptions_become_transport_failures() -> None:
    def broken(request: GenerationRequest) -> str:
        raise RuntimeError("segfault-ish")

    model, _ = scripted(broken)
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK)
    assert caught.value.kind == "transport"
    assert "RuntimeError" in caught.value.message


def test_bad_script_items_and_exhausted_queues_are_typed_failures() -> None:
    model, _ = scripted([42])
    with pytest.raises(ModelFailure):
        model.complete(ASK)
    empty, _ = scripted([])
    with pytest.raises(ModelFailure) as caught:
        empty.complete(ASK)
    assert caught.value.kind == "config"
    assert "no replies left" in caught.value.message


@pytest.mark.parametrize(
    ("messages", "max_tokens", "temperature"),
    [([], 10, 0.0), (ASK, 0, 0.0), (ASK, 10, -1.0), (["hello"], 10, 0.0)],
)
def test_bad_arguments_are_config_failures(
    messages: list[Message], max_tokens: int, temperature: float
) -> None:
    model, _ = scripted(["x"])
    with pytest.raises(ModelFailure) as caught:
        model.complete(messages, max_tokens=max_tokens, temperature=temperature)
    assert caught.value.kind == "config"


def test_callable_script_sees_each_request() -> None:
    seen: list[GenerationRequest] = []

    def respond(request: GenerationRequest) -> object:
        seen.append(request)
        return GOOD if request.schema else "text"

    model, _ = scripted(respond)
    assert model.complete(ASK, schema=Action, max_tokens=99, temperature=0.5).parsed == GOOD
    assert (seen[0].max_tokens, seen[0].temperature, seen[0].schema_name) == (99, 0.5, "Action")


class Nested(BaseModel):
    class Item(BaseModel):
        name: str
        kind: Literal["a", "b"]
        note: str | None = None

    items: list[Item] = Field(min_length=1)
    count: int = Field(ge=3)
    flag: bool


def test_default_scripted_model_answers_any_schema_with_a_valid_object() -> None:
    model = load_model("scripted")
    answer = model.complete(ASK, schema=Nested)
    parsed = answer.parsed_as(Nested)
    assert parsed.count == 3 and len(parsed.items) == 1
    assert model.complete(ASK).text == "ok"


def test_backoff_delay_is_full_jitter_within_the_cap() -> None:
    rng = random.Random(7)
    delays = [backoff_delay(r, base_s=0.5, cap_s=4.0, rng=rng) for r in range(8) for _ in range(50)]
    assert all(0 <= d <= 4.0 for d in delays)
    assert max(delays) > 2.0  # the cap, not the first bound, limits later retries
    assert backoff_delay(0, base_s=0.0, cap_s=4.0, rng=rng) == 0.0


def test_failures_survive_pickling_for_worker_processes() -> None:
    import pickle

    failure = ModelFailure("schema", "bad", attempts=3, last_text="{", usage=Usage(5, 1), model="m")
    clone = pickle.loads(pickle.dumps(failure))
    assert (clone.kind, clone.message, clone.attempts, clone.last_text, clone.usage) == (
        "schema",
        "bad",
        3,
        "{",
        Usage(5, 1),
    )


def test_importing_the_layer_loads_no_heavy_backend() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pos_agent.llm; "
        "print(sorted(m for m in ('llama_cpp', 'openai', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_repair_turn_that_cannot_be_sent_reports_the_original_problem() -> None:
    overflow = BackendError("config", "the prompt does not fit the context", retryable=False)
    model, _ = scripted([ScriptedReply('{"thought": ', truncated=True), overflow])
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=Action)
    assert caught.value.kind == "truncated"
    assert "does not fit the context" in caught.value.message
    assert caught.value.last_text == '{"thought": '


def test_raw_control_characters_inside_strings_are_accepted() -> None:
    from pos_agent.llm._structured import extract_json_object

    assert extract_json_object('{"thought": "line one\nline two\t!", "action": "look"}') == {
        "thought": "line one\nline two\t!",
        "action": "look",
    }
