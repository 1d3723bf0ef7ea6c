"""The LangChain middleware against the real `create_agent` and `ChatOpenAI`, driving a scripted
Chat Completions server on 127.0.0.1 that repeats one tool call until the monitor's hint (or a
refusal) reaches it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from extras import skip_module_without

skip_module_without("langchain", "langchain")
skip_module_without("langchain_openai", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.errors import GraphRecursionError  # noqa: E402

from pos_agent.adapters import HINT_PREFIX, Guard  # noqa: E402
from pos_agent.adapters.langchain import PosMiddleware  # noqa: E402
from pos_agent.monitor import AlarmPolicy  # noqa: E402
from scripted_chat import distinct_calls, same_call, scripted_chat  # noqa: E402

FILES = {
    "README.md": "Project overview: a parser for invoices and receipts.",
    "setup.cfg": "Packaging metadata, entry points, classifiers and licence.",
    "src/parse.py": "def parse(text): tokenize lines, detect totals, vendors",
    "src/cli.py": "def main(argv): argparse options, verbose logging flag",
}
LIMIT = {"recursion_limit": 41}  # 20 model calls and their tool calls


def _agent(base_url: str, guard: Guard, calls: list[str], **options: Any) -> Any:
    @tool
    def read_file(path: str) -> str:
        """Read a file of the workspace."""
        calls.append(path)
        return FILES.get(path, f"error: {path} not found (exit code 1)")

    model = ChatOpenAI(model="scripted", base_url=base_url, api_key="test-key", max_retries=0)
    return create_agent(model, [read_file], middleware=[PosMiddleware(guard, **options)])


def _task() -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "Read config.yaml."}]}


def _count(body: dict[str, Any], text: str) -> int:
    return json.dumps(body.get("messages", [])).count(text)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_hint_reaches_the_next_model_call_as_a_user_message(mode: str) -> None:
    guard = Guard(goal="read the settings in config.yaml")
    calls: list[str] = []
    with scripted_chat(same_call("read_file", {"path": "config.yaml"})) as chat:
        agent = _agent(chat.base_url, guard, calls)
        if mode == "sync":
            state = agent.invoke(_task(), LIMIT)
        else:
            state = asyncio.run(agent.ainvoke(_task(), LIMIT))
    assert chat.hint_at is not None, "the hint never reached the model"
    onset = next(r for r in guard.reports if r.onset)
    assert onset.pattern == "static"
    assert chat.hint_at == onset.step
    note = next(m for m in chat.bodies[chat.hint_at]["messages"] if HINT_PREFIX in json.dumps(m))
    assert note["role"] == "user" and "RECOVERY" in json.dumps(note)
    assert _count(chat.bodies[-1], HINT_PREFIX) == 1  # once, kept in the conversation
    assert state["messages"][-1].content == "done"


def test_a_productive_run_gets_no_hint() -> None:
    guard = Guard(goal="review the project files")
    calls: list[str] = []
    with scripted_chat(distinct_calls("read_file", "path", list(FILES))) as chat:
        _agent(chat.base_url, guard, calls).invoke(_task(), LIMIT)
    assert calls == list(FILES)
    assert chat.hint_at is None
    assert len(guard.reports) == len(FILES)
    assert not any(r.trapped for r in guard.reports)


def test_a_blocked_call_is_answered_with_a_refusal_tool_message() -> None:
    guard = Guard(goal="read config.yaml", policy=AlarmPolicy(block_after=2, stop_after=None))
    calls: list[str] = []
    marker = "Refused: this call was not run"
    with scripted_chat(same_call("read_file", {"path": "config.yaml"}), marker=marker) as chat:
        _agent(chat.base_url, guard, calls).invoke(_task(), LIMIT)
    assert chat.hint_at is not None, "no refusal reached the model"
    refused = [m for m in chat.bodies[chat.hint_at]["messages"] if marker in json.dumps(m)]
    assert refused and refused[0]["role"] == "tool"
    assert len(calls) == chat.tool_calls - 1


def test_stop_ends_the_run_and_only_when_asked() -> None:
    guard = Guard(goal="read config.yaml", policy=AlarmPolicy(block_after=None, stop_after=2))
    calls: list[str] = []
    with scripted_chat(same_call("read_file", {"path": "config.yaml"}), marker="\0") as chat:
        state = _agent(chat.base_url, guard, calls).invoke(_task(), LIMIT)
    assert guard.stopped
    assert "Still trapped" in state["messages"][-1].content
    assert len(calls) == guard.reports[-1].step < 20
    loose = Guard(goal="read config.yaml", policy=AlarmPolicy(block_after=None, stop_after=2))
    with (
        scripted_chat(same_call("read_file", {"path": "config.yaml"}), marker="\0") as chat,
        pytest.raises(GraphRecursionError),
    ):
        _agent(chat.base_url, loose, [], end_on_stop=False).invoke(_task(), LIMIT)
