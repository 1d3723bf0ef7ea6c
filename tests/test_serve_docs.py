"""The client and framework snippets of docs/serve.md, run as printed (only the proxy's address
changed) against `pos serve` in front of a scripted upstream that repeats one tool call until the
proxy's note or refusal reaches it: each one's agent is watched, and told or refused."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from serve_api_fakes import READ, TASK, ApiUpstream, serving_apis, until
from test_docs_examples import _block, _run
from test_serve_fakes import BLOCK_MARK, KEY, NOTE_PREFIX, NUDGE_MARK, READ_TOOL, run_tool

DOCS = Path(__file__).resolve().parents[1] / "docs" / "serve.md"
HOST = "http://127.0.0.1:8765"
DONE = "I will stop repeating myself. Done."
OUTPUT = "app.py: def main(): raise SystemExit(1)"


def _snippet(name: str, root: str, namespace: dict[str, Any]) -> list[str]:
    code = _block(DOCS, name)
    assert HOST in code
    namespace.update({"API_KEY": KEY, "MODEL": "fake", "TASK": TASK})
    return _run(code.replace(HOST, root), f"docs/serve.md {name}", namespace)


def _sent(upstream: ApiUpstream) -> str:
    return json.dumps(upstream.bodies[-1])


def test_the_chat_snippet() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for turn in range(3):
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps(READ)},
        }
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{turn}", "content": OUTPUT},
        ]
    upstream = ApiUpstream(until(NUDGE_MARK))
    with serving_apis(upstream, policy="nudge") as (root, _):
        namespace: dict[str, Any] = {"history": history, "tools": [READ_TOOL]}
        printed = _snippet("serve-chat", root, namespace)
    assert printed == ["true static inject"]
    assert namespace["reply"].choices[0].message.content == DONE
    assert NUDGE_MARK in _sent(upstream)


def test_the_responses_snippet() -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for turn in range(3):
        items += [
            {
                "type": "function_call",
                "call_id": f"c{turn}",
                "name": "read_file",
                "arguments": json.dumps(READ),
            },
            {"type": "function_call_output", "call_id": f"c{turn}", "output": OUTPUT},
        ]
    tools = [
        {
            "type": "function",
            "name": "read_file",
            "parameters": {"type": "object", "properties": {}},
        }
    ]
    upstream = ApiUpstream(until(NUDGE_MARK))
    with serving_apis(upstream, policy="nudge") as (root, _):
        namespace: dict[str, Any] = {"items": items, "tools": tools}
        printed = _snippet("serve-responses", root, namespace)
    assert printed == ["true static inject"]
    assert namespace["response"].output_text == DONE
    assert NUDGE_MARK in _sent(upstream)


def test_the_messages_snippet() -> None:
    pytest.importorskip("anthropic")
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for turn in range(3):
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"t{turn}", "name": "read_file", "input": READ}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": OUTPUT}],
            },
        ]
    tools = [{"name": "read_file", "input_schema": {"type": "object", "properties": {}}}]
    upstream = ApiUpstream(until(NUDGE_MARK))
    with serving_apis(upstream, policy="nudge") as (root, _):
        namespace: dict[str, Any] = {"messages": messages, "tools": tools}
        printed = _snippet("serve-messages", root, namespace)
    assert printed == ["true static inject"]
    assert namespace["message"].content[0].text == DONE
    assert NUDGE_MARK in _sent(upstream)


def test_the_smolagents_snippet() -> None:
    smolagents = pytest.importorskip("smolagents")
    clock = itertools.count()

    @smolagents.tool
    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: The file to read.
        """
        return run_tool("read_file", json.dumps({"path": path}), clock)

    code = "Thought: read it.\n<code>\nprint(read_file(path='app.py'))\n</code>"
    upstream = ApiUpstream(lambda body: {"content": code})
    with serving_apis(upstream, policy="block") as (root, _):
        namespace: dict[str, Any] = {"tools": [read_file]}
        _snippet("serve-smolagents", root, namespace)
    # The CodeAgent was nudged, refused, and at the stop level ended with the stop text.
    assert str(namespace["result"]).startswith(f"{NOTE_PREFIX} Stop now.")
    assert NUDGE_MARK in _sent(upstream) and BLOCK_MARK in _sent(upstream)


def test_the_openai_agents_snippet() -> None:
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    clock = itertools.count()

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return run_tool("read_file", json.dumps({"path": path}), clock)

    upstream = ApiUpstream(until(BLOCK_MARK))
    with serving_apis(upstream, policy="block") as (root, app):
        namespace: dict[str, Any] = {"tools": [read_file]}
        _snippet("serve-openai-agents", root, namespace)
        session = app.state.proxy.store.peek("run-46")
    assert str(namespace["result"].final_output).startswith(BLOCK_MARK)
    assert session is not None and session.steps >= 3
    assert all(path == "/v1/responses" for path in upstream.paths)


def test_the_langchain_snippet() -> None:
    pytest.importorskip("langchain")
    from langchain_core.tools import tool

    clock = itertools.count()

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return run_tool("read_file", json.dumps({"path": path}), clock)

    upstream = ApiUpstream(until(NUDGE_MARK))
    with serving_apis(upstream, policy="nudge") as (root, app):
        namespace: dict[str, Any] = {"tools": [read_file]}
        _snippet("serve-langchain", root, namespace)
        session = app.state.proxy.store.peek("run-47")
    assert namespace["result"]["messages"][-1].content == DONE
    assert session is not None and session.format == "tool_calls" and session.steps >= 3
