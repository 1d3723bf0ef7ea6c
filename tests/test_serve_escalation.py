"""The documented ladder under every policy, through real smolagents agents behind `pos serve`:
an agent that ignores every note and refusal keeps reading one file. The monitor's alarm starts
at step 5 (a nudge), escalates to the block level 3 steps later and to the stop level 8 steps
later (`AlarmPolicy`).

- `observe`: nothing reaches the agent; the levels are only reported.
- `nudge`: a note at each level (`Note:`, `Note:`, `Stop now.`), never a refusal.
- `block`: the note first (the call in the answer to that request still runs), refusals from the
  block level (each one a monitor step, as the adapters count them), and at the stop level the
  run ends with smolagents' own final answer.

smolagents' CodeAgent (its default agent) calls its tools inside the code it writes: the proxy
reads those calls, so the same ladder reaches it.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from pos_agent.events import ActionEvent
from pos_agent.monitor import TrapMonitor
from pos_agent.serve import NOTE_PREFIX
from pos_agent.trace import read_trace
from test_serve_fakes import BLOCK_MARK, KEY, NUDGE_MARK, Upstream, run_tool, serving

smolagents = pytest.importorskip("smolagents")

STOP_MARK = f"{NOTE_PREFIX} Stop now."
MAX_STEPS = 18
CODE = "Thought: I read the file again.\n<code>\nprint(read_file(path='app.py'))\n</code>"


def _stubborn(body: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [("read_file", {"path": "app.py"})]}


def _stubborn_code(body: dict[str, Any]) -> dict[str, Any]:
    return {"content": CODE}


def _agent(url: str, session: str, *, code: bool = False) -> Any:
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
        client_kwargs={"default_headers": {"X-PoS-Session": session}, "max_retries": 0},
    )
    kind = smolagents.CodeAgent if code else smolagents.ToolCallingAgent
    return kind(tools=[read_file], model=model, max_steps=MAX_STEPS, verbosity_level=0)


class Recording(TrapMonitor):
    """The monitor, keeping the alarm's level of every step."""

    levels: list[str]

    def observe(self, *args: Any, **kwargs: Any) -> Any:
        report = super().observe(*args, **kwargs)
        self.levels = [*getattr(self, "levels", []), report.escalation]
        return report


def _levels(monitors: list[Recording]) -> list[str]:
    """The levels the run went through, in order, each once."""
    levels = monitors[0].levels
    return [level for i, level in enumerate(levels) if i == 0 or levels[i - 1] != level]


def _first(bodies: list[dict[str, Any]], mark: str) -> int | None:
    return next((i for i, b in enumerate(bodies) if mark in json.dumps(b["messages"])), None)


def _recording(monitors: list[Recording]) -> Any:
    def new(goal: str) -> Recording:
        monitors.append(Recording(goal))
        return monitors[-1]

    return new


def test_observe_reports_every_level_and_changes_nothing(tmp_path: Path) -> None:
    upstream = Upstream(_stubborn)
    monitors: list[Recording] = []
    factory = _recording(monitors)
    with serving(upstream, policy="observe", trace_dir=tmp_path, monitor_factory=factory) as (
        url,
        _,
    ):
        _agent(url, "smol").run("Find out why app.py exits with status 1.")
    # (smolagents' last request at max_steps merges its final prompt into the last
    # observation, which reads as new: the alarm clears there.)
    assert _levels(monitors)[:4] == ["none", "nudge", "block", "stop"]
    assert NOTE_PREFIX not in json.dumps(upstream.bodies)
    assert len(upstream.bodies) >= MAX_STEPS


def test_nudge_says_each_level_and_never_refuses(tmp_path: Path) -> None:
    upstream = Upstream(_stubborn)
    monitors: list[Recording] = []
    factory = _recording(monitors)
    with serving(upstream, policy="nudge", trace_dir=tmp_path, monitor_factory=factory) as (
        url,
        _,
    ):
        _agent(url, "smol").run("Find out why app.py exits with status 1.")
    last = json.dumps(upstream.bodies[-1]["messages"])
    assert last.count(NUDGE_MARK) == 2 and last.count(STOP_MARK) == 1
    assert last.index(NUDGE_MARK) < last.index(STOP_MARK)
    assert BLOCK_MARK not in json.dumps(upstream.bodies)
    assert _levels(monitors)[:4] == ["none", "nudge", "block", "stop"]


def test_block_nudges_first_then_refuses_then_stops_the_run(tmp_path: Path) -> None:
    upstream = Upstream(_stubborn)
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, app):
        result = _agent(url, "smol").run("Find out why app.py exits with status 1.")
        session = app.state.proxy.store.peek("smol")
    noted, refused = _first(upstream.bodies, NUDGE_MARK), _first(upstream.bodies, BLOCK_MARK)
    assert noted is not None and refused is not None
    # Nudge first: after the note, the agent's calls still ran before the first refusal.
    assert refused - noted >= 2
    # The refusals counted as steps up to the stop level, where the run ended with smolagents'
    # own final answer.
    assert str(result).startswith(STOP_MARK)
    assert session.report.escalation == "stop" and len(upstream.bodies) < MAX_STEPS


def test_code_agent_calls_inside_its_code_are_seen_and_blocked(tmp_path: Path) -> None:
    upstream = Upstream(_stubborn_code)
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        result = _agent(url, "code", code=True).run("Find out why app.py exits with status 1.")
    events, _ = read_trace(tmp_path / "code" / "events.jsonl")
    actions = {e.action for e in events if isinstance(e, ActionEvent)}
    # The monitor judged the tool call inside the code, not the code as one opaque call.
    assert actions == {'read_file {"path":"app.py"}'}
    noted, refused = _first(upstream.bodies, NUDGE_MARK), _first(upstream.bodies, BLOCK_MARK)
    assert noted is not None and refused is not None and noted < refused
    assert str(result).startswith(STOP_MARK)
    assert len(upstream.bodies) < MAX_STEPS
