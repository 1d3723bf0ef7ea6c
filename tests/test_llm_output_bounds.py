"""Model output is read within a depth and a size bound: past them a reply is malformed (a repair
turn, then a schema failure the agent degrades on), never an exception or a transport error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from llm_fakes import Canned, FakeServer, chat, chat_body
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.llm import (
    MAX_JSON_DEPTH,
    MAX_REPLY_CHARS,
    Message,
    ModelFailure,
    ModelOptions,
    ScriptedModel,
    load_model,
    loads_bounded,
)
from pos_agent.llm._native_tools import decision_text
from pos_agent.trace import SCORED_STATUSES

pytest_plugins = ["llm_fixtures"]

ASK = [Message("user", "What next?")]


class Answer(BaseModel):
    action: str


def nested(depth: int) -> str:
    """A valid JSON object nested `depth` levels deep."""
    return '{"action": "look", "x": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [400, 5_000, 200_000])
def test_deeply_nested_json_is_repaired_not_a_transport_error(depth: int) -> None:
    model = ScriptedModel([nested(depth), '{"action": "look"}'])
    answer = model.complete(ASK, schema=Answer)
    assert answer.parsed == Answer(action="look")
    assert answer.repairs == 1
    repair = model.requests[1].messages[-1].content
    assert f"more than {MAX_JSON_DEPTH} levels deep" in repair


def test_deeply_nested_json_every_time_is_a_schema_failure() -> None:
    model = ScriptedModel([nested(1_000)] * 3, options=ModelOptions(max_repairs=2))
    with pytest.raises(ModelFailure) as caught:
        model.complete(ASK, schema=Answer)
    assert caught.value.kind == "schema"
    assert not caught.value.unavailable


def test_json_within_the_depth_bound_is_read() -> None:
    model = ScriptedModel([nested(MAX_JSON_DEPTH - 2)])
    assert model.complete(ASK, schema=Answer).parsed == Answer(action="look")


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    text = json.dumps({"action": "[" * 5_000})
    assert ScriptedModel([text]).complete(ASK, schema=Answer).parsed is not None


def test_an_oversized_reply_is_malformed_not_parsed() -> None:
    huge = '{"action": "' + "a" * (MAX_REPLY_CHARS + 1) + '"}'
    model = ScriptedModel([huge, '{"action": "look"}'])
    answer = model.complete(ASK, schema=Answer)
    assert answer.repairs == 1
    assert "characters a reply is read up to" in model.requests[1].messages[-1].content


def test_loads_bounded_raises_value_errors_only() -> None:
    with pytest.raises(ValueError, match="levels deep"):
        loads_bounded("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError):
        loads_bounded("{not json")
    assert loads_bounded('{"a": [1, 2]}') == {"a": [1, 2]}


def test_native_tool_arguments_nested_deep_stay_text() -> None:
    message = {
        "content": "",
        "tool_calls": [{"function": {"name": "ls", "arguments": "[" * 50_000 + "]" * 50_000}}],
    }
    text = decision_text(message, several=False)
    assert text is not None
    assert isinstance(json.loads(text)["call"]["args"], str)


def test_a_server_body_nested_past_the_stack_is_a_malformed_reply(server: FakeServer) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    body = json.dumps(chat_body("x"))[:-1] + ', "extra": ' + deep + "}"
    server.queue(Canned(200, body), chat('{"action": "look"}'))
    model = load_model(
        "openai:fake-model", ModelOptions(base_url=server.base_url, max_retries=0, timeout_s=5.0)
    )
    answer = model.complete(ASK, schema=Answer)
    assert answer.parsed == Answer(action="look")
    assert answer.repairs == 1


def test_a_case_whose_model_nests_json_deep_stays_scored_with_degraded_steps(
    tmp_path: Path,
) -> None:
    """The probe's failure at the case level: every reply nested 400 levels deep used to end
    the case `infra_error` (a transport error), rerun by --resume forever."""
    spec = CaseSpec(env="toy", task="heat-mug", agent="raw", model="scripted", max_steps=2)
    model = ScriptedModel(lambda _request: nested(400))
    result = run_case(spec, tmp_path / "c", run_name="r", load=lambda _s, _r: model)
    assert result.status in SCORED_STATUSES, f"{result.status}: {result.error}"
    assert result.degraded_steps > 0
