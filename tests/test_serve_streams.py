"""Streams that fail, fail visibly: an upstream stream that stalls, dies or ends before its last
event reaches the client as an error event (its real client raises), and one that fails before
its first byte as an error status, never as a silent, truncated 200. The upstream is a real
server on 127.0.0.1 that stalls or drops the connection mid-stream."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from serve_api_fakes import ApiUpstream, serving_apis
from test_serve_fakes import KEY

TOOLS_REPLY = {"tool_calls": [("read_file", {"path": "app.py"})]}
BREAKS = ["stall", "cut", "end"]


def _reply(body: dict[str, Any]) -> dict[str, Any]:
    return TOOLS_REPLY


def _openai(root: str) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=f"{root}/v1", api_key=KEY, max_retries=0, timeout=30)


@pytest.mark.parametrize("breaks", BREAKS)
def test_a_chat_stream_that_breaks_makes_the_openai_client_raise(breaks: str) -> None:
    import openai

    upstream = ApiUpstream(_reply, breaks=breaks, break_after=2)
    with serving_apis(upstream, timeout_s=1.0) as (root, _):
        stream = _openai(root).chat.completions.create(
            model="fake", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        received = []
        with pytest.raises(openai.APIError, match="PoS proxy: the upstream"):
            for chunk in stream:
                received.append(chunk)
    assert len(received) == 2  # what came before the break was relayed as it came


@pytest.mark.parametrize("breaks", BREAKS)
def test_a_responses_stream_that_breaks_makes_the_openai_client_raise(breaks: str) -> None:
    import openai

    upstream = ApiUpstream(_reply, breaks=breaks, break_after=3)
    with serving_apis(upstream, timeout_s=1.0) as (root, _):
        stream = _openai(root).responses.create(model="fake", input="hi", stream=True)
        with pytest.raises(openai.APIError, match="PoS proxy: the upstream"):
            list(stream)


@pytest.mark.parametrize("breaks", BREAKS)
def test_a_messages_stream_that_breaks_makes_the_anthropic_client_raise(breaks: str) -> None:
    import anthropic

    upstream = ApiUpstream(_reply, breaks=breaks, break_after=3)
    with serving_apis(upstream, timeout_s=1.0) as (root, _):
        client = anthropic.Anthropic(base_url=root, api_key=KEY, max_retries=0, timeout=30)
        with (
            pytest.raises(anthropic.APIError, match="PoS proxy: the upstream"),
            client.messages.stream(
                model="fake", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
            ) as events,
        ):
            events.get_final_message()


@pytest.mark.parametrize("breaks", ["stall", "cut", "end"])
def test_a_stream_that_fails_before_its_first_byte_gets_an_error_status(breaks: str) -> None:
    import openai

    upstream = ApiUpstream(_reply, breaks=breaks, break_after=0)
    with serving_apis(upstream, timeout_s=1.0) as (root, _):
        with pytest.raises(openai.APIStatusError) as raised:
            stream = _openai(root).chat.completions.create(
                model="fake", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            list(stream)
        answer = httpx.post(
            f"{root}/v1/chat/completions",
            json={"model": "fake", "stream": True, "messages": [{"role": "user", "content": "x"}]},
            timeout=30,
        )
    expected = 504 if breaks == "stall" else 502
    assert raised.value.status_code == expected
    assert answer.status_code == expected and "x-pos-session" in answer.headers
    assert answer.json()["error"]["message"].startswith("PoS proxy: the upstream")


def test_a_whole_stream_still_ends_as_it_came() -> None:
    upstream = ApiUpstream(_reply)
    with serving_apis(upstream, timeout_s=5.0) as (root, _):
        chunks = list(
            _openai(root).chat.completions.create(
                model="fake", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert chunks[1].choices[0].delta.tool_calls[0].function.name == "read_file"
