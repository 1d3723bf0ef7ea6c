"""The smolagents adapter against the real smolagents, driving a scripted server on 127.0.0.1.

The server repeats one tool call until the monitor's hint reaches it in a request, so a hint that
never gets into the next step's prompt leaves the agent looping to its step limit.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from extras import skip_module_without

skip_module_without("smolagents", "smolagents")

from smolagents import OpenAIModel, ToolCallingAgent, tool  # noqa: E402

from pos_agent.adapters import HINT_PREFIX, Guard  # noqa: E402
from pos_agent.adapters.smolagents import StepMonitor, guard_tools  # noqa: E402
from pos_agent.monitor import AlarmPolicy  # noqa: E402
from scripted_chat import distinct_calls, same_call, scripted_chat  # noqa: E402

FILES = {
    "README.md": "Project overview: a parser for invoices and receipts.",
    "setup.cfg": "Packaging metadata, entry points, classifiers and licence.",
    "src/parse.py": "def parse(text): tokenize lines, detect totals, vendors",
    "src/cli.py": "def main(argv): argparse options, verbose logging flag",
    "tests/test_parse.py": "def test_totals(): assert parse(sample).total == amount",
}


def _agent(base_url: str, guard: Guard, calls: list[str], *, block: bool = False) -> Any:
    @tool
    def read_file(path: str) -> str:
        """Read a file of the workspace.

        Args:
            path: The file's path.
        """
        calls.append(path)
        return FILES.get(path, f"error: {path} not found (exit code 1)")

    tools = guard_tools(guard, [read_file]) if block else [read_file]
    model = OpenAIModel(model_id="scripted", api_base=base_url, api_key="test-key")
    return ToolCallingAgent(
        tools=tools,
        model=model,
        max_steps=20,
        step_callbacks=[StepMonitor(guard)],
        verbosity_level=0,
    )


def _count(body: dict[str, Any], text: str) -> int:
    return json.dumps(body.get("messages", [])).count(text)


def test_the_hint_reaches_the_next_step_once_and_ends_the_loop() -> None:
    guard = Guard(goal="read the settings in config.yaml")
    calls: list[str] = []
    with scripted_chat(
        same_call("read_file", {"path": "config.yaml"}), final_tool="final_answer"
    ) as chat:
        result = _agent(chat.base_url, guard, calls).run("Read the settings in config.yaml.")
    assert chat.hint_at is not None, "the hint never reached the model"
    onset = next(r for r in guard.reports if r.onset)
    assert onset.pattern == "static"
    # The request right after the onset step carries it (request n, counted from 0, follows
    # step n): the trapped step's observations show the hint to the next step.
    assert chat.hint_at == onset.step, (chat.hint_at, onset.step)
    hinted = chat.hinted_requests()
    assert hinted[0] is chat.bodies[chat.hint_at]
    # Injected once: the last request holds the hint one time (it stays in the history).
    assert _count(chat.bodies[-1], HINT_PREFIX) == 1
    assert "RECOVERY" in json.dumps(hinted[0]["messages"])
    assert result == "done"


def test_a_productive_run_gets_no_hint() -> None:
    guard = Guard(goal="review the project files")
    calls: list[str] = []
    with scripted_chat(
        distinct_calls("read_file", "path", list(FILES)), final_tool="final_answer"
    ) as chat:
        _agent(chat.base_url, guard, calls).run("Review the project files.")
    assert calls == list(FILES)
    assert chat.hint_at is None
    assert not any(r.trapped for r in guard.reports)
    assert len(guard.reports) == len(FILES)


def test_guard_tools_refuses_a_blocked_call_without_running_it() -> None:
    # The script ignores the hint and ends only when a refusal reaches it.
    guard = Guard(goal="read config.yaml", policy=AlarmPolicy(block_after=2, stop_after=None))
    calls: list[str] = []
    with scripted_chat(
        same_call("read_file", {"path": "config.yaml"}),
        final_tool="final_answer",
        marker="Refused: this call was not run",
    ) as chat:
        _agent(chat.base_url, guard, calls, block=True).run("Read config.yaml.")
    assert chat.hint_at is not None, "no refusal reached the model"
    assert any(r.advice.kind == "block" for r in guard.reports)
    # Every call the model made ran, except the refused one.
    assert len(calls) == chat.tool_calls - 1


@pytest.mark.parametrize("kind", ["none", "stop"])
def test_the_callback_interrupts_the_agent_only_on_stop(kind: str) -> None:
    policy = AlarmPolicy(block_after=None, stop_after=2 if kind == "stop" else None)
    guard = Guard(goal="read config.yaml", policy=policy)
    calls: list[str] = []
    with scripted_chat(
        same_call("read_file", {"path": "config.yaml"}), final_tool="final_answer", marker="\0"
    ) as chat:
        agent = _agent(chat.base_url, guard, calls)
        if kind == "stop":
            with pytest.raises(Exception, match="interrupt"):
                agent.run("Read config.yaml.")
            assert guard.stopped
            assert len(calls) < 20
        else:
            agent.run("Read config.yaml.")
            assert not guard.stopped
            assert len(calls) == 20


def test_a_monitor_that_raises_leaves_the_run_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = Guard(goal="review the project files")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("monitor bug")

    monkeypatch.setattr(guard.monitor, "observe", broken)
    calls: list[str] = []
    with scripted_chat(
        same_call("read_file", {"path": "config.yaml"}), final_tool="final_answer"
    ) as chat:
        _agent(chat.base_url, guard, calls).run("Read config.yaml.")  # to its step limit
    assert len(calls) == 20 and guard.errors >= 20 and chat.hint_at is None  # +1: max steps


def test_a_code_agents_tool_calls_are_seen_in_its_code_and_refused_there() -> None:
    # smolagents' default agent writes code; the loop is the same read inside changing code.
    from smolagents import CodeAgent
    from smolagents.utils import AgentError

    from test_serve_fakes import ThreadServer, Upstream, upstream_app

    turns = iter(range(1000))

    def code(body: dict[str, Any]) -> dict[str, Any]:
        n = next(turns)
        return {
            "content": f"Thought: try {n}.\n<code>\nsettings_{n} = read_file(path='config.yaml')\nprint(settings_{n})\n</code>"
        }

    guard = Guard(goal="read the settings in config.yaml")
    calls: list[str] = []

    @tool
    def read_file(path: str) -> str:
        """Read a file of the workspace.

        Args:
            path: The file's path.
        """
        calls.append(path)
        return FILES.get(path, f"error: {path} not found (exit code 1)")

    upstream = Upstream(code)
    with ThreadServer(upstream_app(upstream)) as up:
        model = OpenAIModel(model_id="scripted", api_base=f"{up.url}/v1", api_key="test-key")
        agent = CodeAgent(
            tools=guard_tools(guard, [read_file]),
            model=model,
            max_steps=20,
            step_callbacks=[StepMonitor(guard)],
            verbosity_level=0,
        )
        with pytest.raises(AgentError, match="interrupted"):  # the stop
            agent.run("Read the settings in config.yaml.")
    # The monitor compared the calls inside the code, not the code (which changed each time).
    assert {str(r.forbidden_actions) for r in guard.reports if r.trapped} == {
        '(\'read_file {"path":"config.yaml"}\',)'
    }
    kinds = [r.advice.kind for r in guard.reports]
    assert kinds.index("inject") < kinds.index("block") < kinds.index("stop")
    onset = next(r.step for r in guard.reports if r.onset)
    # From the block level the tool answered with the refusal instead of running; at the stop
    # the agent was interrupted.
    assert len(calls) == onset + (guard.monitor.policy.block_after or 0)
    assert len(guard.reports) < 20
    assert "Refused:" in json.dumps(upstream.bodies[-1]["messages"])
