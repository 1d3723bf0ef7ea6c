"""Real agent frameworks behind `pos serve`, changed in nothing but their base URL (and the
session header where the framework can send one): smolagents 1.26 and openai-agents 0.24.

The scripted upstream loops on one tool call until the proxy's note (or refusal) is in the
history; with `observe` the agent stays in its loop until its own step limit."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from pos_agent.events import HealthEvent
from pos_agent.trace import read_trace
from test_serve_fakes import (
    BLOCK_MARK,
    KEY,
    NUDGE_MARK,
    Upstream,
    history_text,
    loops_until,
    run_tool,
    serving,
)

MAX_STEPS = 14


def _trapped_steps(folder: Path) -> list[int]:
    """The steps the session's trace records as trapped."""
    events, _ = read_trace(folder / "events.jsonl")
    return [e.step for e in events if isinstance(e, HealthEvent) and e.trapped and e.step]


def _final_answer() -> dict[str, Any]:
    return {"tool_calls": [("final_answer", {"answer": "app.py exits on purpose"})]}


def _smolagents_run(url: str) -> tuple[Any, int]:
    smolagents = pytest.importorskip("smolagents")
    clock = itertools.count()

    @smolagents.tool
    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: The file to read.
        """
        return run_tool("read_file", json.dumps({"path": path}), clock)

    model = smolagents.OpenAIModel(
        model_id="fake",
        api_base=url,
        api_key=KEY,
        client_kwargs={"default_headers": {"X-PoS-Session": "smol"}, "max_retries": 0},
    )
    agent = smolagents.ToolCallingAgent(
        tools=[read_file], model=model, max_steps=MAX_STEPS, verbosity_level=0
    )
    result = agent.run("Find out why app.py exits with status 1.")
    return result, len(agent.memory.steps)


@pytest.mark.parametrize("policy", ["observe", "nudge"])
def test_smolagents_leaves_its_loop_only_when_nudged(tmp_path: Path, policy: str) -> None:
    upstream = Upstream(loops_until(NUDGE_MARK, finish=_final_answer))
    with serving(upstream, policy=policy, trace_dir=tmp_path) as (url, app):
        result, _ = _smolagents_run(url)
        session = app.state.proxy.store.peek("smol")
    # The proxy read smolagents' text history ("Calling tools:" / "Observation:").
    assert session is not None and session.format == "smolagents"
    assert session.report is not None and session.report.step >= 3
    chat_requests = len(upstream.bodies)
    if policy == "nudge":
        assert result == "app.py exits on purpose"
        assert chat_requests < MAX_STEPS
        assert NUDGE_MARK in history_text(upstream.bodies[-1]["messages"])
    else:
        assert result != "app.py exits on purpose"  # it ran out of steps in its loop
        assert chat_requests >= MAX_STEPS
        assert _trapped_steps(tmp_path / "smol")


def test_smolagents_reads_the_refusal_of_a_blocked_call(tmp_path: Path) -> None:
    upstream = Upstream(loops_until(BLOCK_MARK, finish=_final_answer))
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        result, _ = _smolagents_run(url)
    assert result == "app.py exits on purpose"
    assert len(upstream.bodies) < MAX_STEPS
    # The refusal is in smolagents' own memory: the agent sent it back as history.
    assert BLOCK_MARK in history_text(upstream.bodies[-1]["messages"])


def _openai_agents_run(url: str) -> tuple[Any, Any]:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)
    clock = itertools.count()

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return run_tool("read_file", json.dumps({"path": path}), clock)

    client = AsyncOpenAI(
        base_url=url, api_key=KEY, max_retries=0, default_headers={"X-PoS-Session": "oa"}
    )
    agent = agents.Agent(
        name="fixer",
        instructions="You fix the failing program app.py.",
        tools=[read_file],
        model=agents.OpenAIChatCompletionsModel(model="fake", openai_client=client),
    )

    async def run() -> Any:
        try:
            return await agents.Runner.run(agent, "Why does app.py exit 1?", max_turns=MAX_STEPS)
        except agents.exceptions.MaxTurnsExceeded as stuck:
            return stuck

    return asyncio.run(run()), agents


@pytest.mark.parametrize("policy", ["observe", "nudge"])
def test_openai_agents_leaves_its_loop_only_when_nudged(tmp_path: Path, policy: str) -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream, policy=policy, trace_dir=tmp_path) as (url, app):
        outcome, agents = _openai_agents_run(url)
        session = app.state.proxy.store.peek("oa")
    assert session is not None and session.format == "tool_calls"
    if policy == "nudge":
        assert outcome.final_output == "I will stop repeating myself. Done."
        assert len(upstream.bodies) < MAX_STEPS
    else:
        assert isinstance(outcome, agents.exceptions.MaxTurnsExceeded)
        assert _trapped_steps(tmp_path / "oa")


def test_openai_agents_reads_the_refusal_of_a_blocked_call(tmp_path: Path) -> None:
    upstream = Upstream(loops_until(BLOCK_MARK))
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        outcome, _ = _openai_agents_run(url)
    # The refusal came back as the assistant's text: the run ends with it, out of the loop.
    assert str(outcome.final_output).startswith(BLOCK_MARK)
    assert len(upstream.bodies) < MAX_STEPS
