"""The openai-agents adapter against the real SDK, driving a scripted Chat Completions server on
127.0.0.1 that repeats one tool call until the monitor's hint (or a refusal) reaches it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from extras import skip_module_without

skip_module_without("agents", "openai-agents")

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool  # noqa: E402
from agents.exceptions import MaxTurnsExceeded  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from pos_agent.adapters import HINT_PREFIX, Guard, TrapStop  # noqa: E402
from pos_agent.adapters.openai_agents import PosRunHooks, guard_tool, run_config  # noqa: E402
from pos_agent.monitor import AlarmPolicy  # noqa: E402
from scripted_chat import distinct_calls, same_call, scripted_chat  # noqa: E402

FILES = {
    "README.md": "Project overview: a parser for invoices and receipts.",
    "setup.cfg": "Packaging metadata, entry points, classifiers and licence.",
    "src/parse.py": "def parse(text): tokenize lines, detect totals, vendors",
    "src/cli.py": "def main(argv): argparse options, verbose logging flag",
}


def _agent(base_url: str, guard: Guard, calls: list[str], *, block: bool = False) -> Agent[Any]:
    @function_tool
    def read_file(path: str) -> str:
        """Read a file of the workspace.

        Args:
            path: The file's path.
        """
        calls.append(path)
        return FILES.get(path, f"error: {path} not found (exit code 1)")

    client = AsyncOpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    return Agent(
        name="reader",
        instructions="Read what the task asks for.",
        tools=[guard_tool(guard, read_file) if block else read_file],
        model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
    )


def _run(agent: Agent[Any], guard: Guard, *, raise_on_stop: bool = False) -> Any:
    return asyncio.run(
        Runner.run(
            agent,
            "Read config.yaml.",
            hooks=PosRunHooks(guard, raise_on_stop=raise_on_stop),
            run_config=run_config(guard, tracing_disabled=True),
            max_turns=20,
        )
    )


def _count(body: dict[str, Any], text: str) -> int:
    return json.dumps(body.get("messages", [])).count(text)


def test_the_hint_reaches_the_next_model_call_and_stays_in_the_history() -> None:
    guard = Guard(goal="read the settings in config.yaml")
    calls: list[str] = []
    with scripted_chat(same_call("read_file", {"path": "config.yaml"})) as chat:
        result = _run(_agent(chat.base_url, guard, calls), guard)
    assert chat.hint_at is not None, "the hint never reached the model"
    onset = next(r for r in guard.reports if r.onset)
    assert onset.pattern == "static"
    assert chat.hint_at == onset.step  # the model call right after the trapped step
    hinted = chat.bodies[chat.hint_at]["messages"]
    note = next(m for m in hinted if HINT_PREFIX in json.dumps(m))
    assert note["role"] == "user" and "RECOVERY" in note["content"]
    assert result.final_output == "done"
    # The note stays where it was put, once, in every later call of the run.
    for body in chat.bodies[chat.hint_at :]:
        assert _count(body, HINT_PREFIX) == 1
    assert len(calls) == onset.step


def test_a_productive_run_gets_no_hint() -> None:
    guard = Guard(goal="review the project files")
    calls: list[str] = []
    with scripted_chat(distinct_calls("read_file", "path", list(FILES))) as chat:
        _run(_agent(chat.base_url, guard, calls), guard)
    assert calls == list(FILES)
    assert chat.hint_at is None
    assert len(guard.reports) == len(FILES)
    assert not any(r.trapped for r in guard.reports)


def test_guard_tool_answers_a_blocked_call_with_the_refusal() -> None:
    guard = Guard(goal="read config.yaml", policy=AlarmPolicy(block_after=2, stop_after=None))
    calls: list[str] = []
    marker = "Refused: this call was not run"
    with scripted_chat(same_call("read_file", {"path": "config.yaml"}), marker=marker) as chat:
        _run(_agent(chat.base_url, guard, calls, block=True), guard)
    assert chat.hint_at is not None, "no refusal reached the model"
    refused = [m for m in chat.bodies[chat.hint_at]["messages"] if marker in json.dumps(m)]
    assert refused and refused[0]["role"] == "tool"
    assert len(calls) == chat.tool_calls - 1  # the refused call did not run
    assert len(guard.reports) == chat.tool_calls  # the refused call was a step all the same


def test_the_hooks_raise_trap_stop_on_stop_and_only_when_asked() -> None:
    calls: list[str] = []
    guard = Guard(goal="read config.yaml", policy=AlarmPolicy(block_after=None, stop_after=2))
    with (
        scripted_chat(same_call("read_file", {"path": "config.yaml"}), marker="\0") as chat,
        pytest.raises(TrapStop, match="stop at step"),
    ):
        _run(_agent(chat.base_url, guard, calls), guard, raise_on_stop=True)
    assert guard.stopped and len(calls) < 20
    quiet = Guard(goal="read config.yaml", policy=AlarmPolicy(block_after=None, stop_after=2))
    with (
        scripted_chat(same_call("read_file", {"path": "config.yaml"}), marker="\0") as chat,
        pytest.raises(MaxTurnsExceeded),
    ):
        _run(_agent(chat.base_url, quiet, []), quiet)
    assert quiet.stopped


def test_guard_tool_and_raise_on_stop_together_stop_the_run() -> None:
    # The documented ladder: a hint at the onset, refusals from the block level, then the stop.
    # Refused calls never reach `on_tool_end`, so the stop must be raised elsewhere.
    guard = Guard(goal="read config.yaml")
    calls: list[str] = []
    with (
        scripted_chat(same_call("read_file", {"path": "config.yaml"}), marker="\0") as chat,
        pytest.raises(TrapStop, match="stop at step"),
    ):
        _run(_agent(chat.base_url, guard, calls, block=True), guard, raise_on_stop=True)
    kinds = [r.advice.kind for r in guard.reports]
    assert kinds.index("inject") < kinds.index("block") < kinds.index("stop")
    assert guard.stopped and chat.tool_calls < 20
    onset = next(r.step for r in guard.reports if r.onset)
    assert len(calls) == onset + (guard.monitor.policy.block_after or 0)  # refused after the block
