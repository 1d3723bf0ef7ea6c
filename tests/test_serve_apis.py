"""`pos serve` on every path an agent uses: the OpenAI Responses API and the Anthropic Messages
API, whole and streamed, through the real `openai` and `anthropic` clients against a scripted
upstream on 127.0.0.1: the history's tool calls and results become monitor steps, the verdict
comes in the headers, and the policy applies in the API's own shape (the note as the API's
message, the refusal as its answer)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from serve_api_fakes import ApiUpstream, messages_loop, responses_loop, serving_apis, until
from test_serve_fakes import BLOCK_MARK, NUDGE_MARK

MAX_TURNS = 20
DONE = "I will stop repeating myself. Done."


def _first(bodies: list[dict[str, Any]], mark: str) -> int:
    return next(i for i, b in enumerate(bodies) if mark in json.dumps(b))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_api_loop_is_watched_and_nudged_out(stream: bool) -> None:
    upstream = ApiUpstream(until(NUDGE_MARK))
    with serving_apis(upstream, policy="nudge") as (root, app):
        headers, items, text = responses_loop(root, stream=stream, max_turns=MAX_TURNS)
        session = app.state.proxy.store.peek("resp")
    assert text == DONE and len(headers) < MAX_TURNS
    assert session is not None and session.format == "tool_calls" and session.steps >= 3
    assert [h["x-pos-session"] for h in headers] == ["resp"] * len(headers)
    onset = [h for h in headers if h["x-pos-advice"] == "inject"]
    assert len(onset) == 1 and onset[0]["x-pos-trapped"] == "true"
    assert onset[0]["x-pos-pattern"] == "static"
    # The note reached the model as a Responses message item, right after the tool output it
    # follows, and not in the agent's own input.
    sent = upstream.bodies[-1]["input"]
    at = next(i for i, item in enumerate(sent) if NUDGE_MARK in json.dumps(item))
    assert sent[at]["type"] == "message" and sent[at]["role"] == "user"
    assert sent[at]["content"][0]["type"] == "input_text"
    assert sent[at - 1]["type"] == "function_call_output"
    assert NUDGE_MARK not in json.dumps(items)
    assert all(path == "/v1/responses" for path in upstream.paths)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_api_block_nudges_first_then_answers_with_the_refusal(stream: bool) -> None:
    upstream = ApiUpstream(until(BLOCK_MARK))
    with serving_apis(upstream, policy="block") as (root, _):
        headers, items, text = responses_loop(root, stream=stream, max_turns=MAX_TURNS)
    # The note first: the answer to the request that carried it still ran its call.
    noted = _first(upstream.bodies, NUDGE_MARK)
    assert noted < len(upstream.bodies) - 1
    assert [h["x-pos-escalation"] for h in headers][noted] == "nudge"
    # Then, at the block level, the call became an assistant message with the refusal.
    assert text is not None and text.startswith(BLOCK_MARK)
    assert 'read_file {"path":"app.py"}' in text
    assert items[-1]["type"] == "message" and items[-1]["role"] == "assistant"
    assert headers[-1]["x-pos-escalation"] == "block"
    if not stream:
        assert headers[-1]["x-pos-blocked"] == "true"
    # The upstream did answer with the call: the proxy replaced it.
    assert BLOCK_MARK not in json.dumps(upstream.bodies)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_messages_api_loop_is_watched_and_nudged_out(stream: bool) -> None:
    upstream = ApiUpstream(until(NUDGE_MARK))
    with serving_apis(upstream, policy="nudge") as (root, app):
        headers, messages, text = messages_loop(root, stream=stream, max_turns=MAX_TURNS)
        session = app.state.proxy.store.peek("msgs")
    assert text == DONE and len(headers) < MAX_TURNS
    assert session is not None and session.steps >= 3
    assert sum(h["x-pos-advice"] == "inject" for h in headers) == 1
    # The note is a text block after the tool results of the user message it follows: the
    # history keeps the user/assistant alternation the API requires.
    sent = upstream.bodies[-1]["messages"]
    noted = next(m for m in sent if NUDGE_MARK in json.dumps(m))
    assert noted["role"] == "user"
    assert [b["type"] for b in noted["content"]] == ["tool_result", "text"]
    assert NUDGE_MARK in noted["content"][-1]["text"]
    roles = [m["role"] for m in sent]
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert NUDGE_MARK not in json.dumps(messages)
    assert all(path == "/v1/messages" for path in upstream.paths)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_messages_api_block_nudges_first_then_answers_with_the_refusal(stream: bool) -> None:
    upstream = ApiUpstream(until(BLOCK_MARK))
    with serving_apis(upstream, policy="block") as (root, _):
        headers, messages, text = messages_loop(root, stream=stream, max_turns=MAX_TURNS)
    noted = _first(upstream.bodies, NUDGE_MARK)
    assert noted < len(upstream.bodies) - 1
    assert text is not None and text.startswith(BLOCK_MARK)
    final = messages[-1]
    assert final["role"] == "assistant" and [b["type"] for b in final["content"]] == ["text"]
    assert headers[-1]["x-pos-escalation"] == "block"
    assert BLOCK_MARK not in json.dumps(upstream.bodies)


def test_openai_agents_default_responses_path_is_watched_and_blocked() -> None:
    agents = pytest.importorskip("agents")
    import asyncio

    from openai import AsyncOpenAI

    from test_serve_fakes import KEY, run_tool

    agents.set_tracing_disabled(True)
    clock = itertools.count()

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return run_tool("read_file", json.dumps({"path": path}), clock)

    upstream = ApiUpstream(until(BLOCK_MARK))
    with serving_apis(upstream, policy="block") as (root, app):
        client = AsyncOpenAI(
            base_url=f"{root}/v1",
            api_key=KEY,
            max_retries=0,
            default_headers={"X-PoS-Session": "oa"},
        )
        # The SDK's default model class: the Responses API.
        model = agents.OpenAIResponsesModel(model="fake", openai_client=client)
        agent = agents.Agent(
            name="fixer", instructions="Fix app.py.", tools=[read_file], model=model
        )
        result = asyncio.run(
            agents.Runner.run(agent, "Why does app.py exit 1?", max_turns=MAX_TURNS)
        )
        session = app.state.proxy.store.peek("oa")
    assert all(path == "/v1/responses" for path in upstream.paths)
    assert session is not None and session.steps >= 3
    assert _first(upstream.bodies, NUDGE_MARK) < len(upstream.bodies) - 1
    assert str(result.final_output).startswith(BLOCK_MARK)
