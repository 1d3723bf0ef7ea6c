"""Polling and exempt tools in `pos serve` (`--polling-tool NAME[=N]`, `--exempt-tool NAME`,
`--config FILE`) and in the adapters (`monitor_options`): a declared polling tool repeated
within its allowance is neither nudged nor blocked; past it, it is; an exempt tool is never
judged. Through the real `openai` client and the real smolagents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pos_agent.adapters import Guard, monitor_options
from test_serve_fakes import BLOCK_MARK, KEY, NOTE_PREFIX, Upstream, serving

STATUS_TOOL = {
    "type": "function",
    "function": {
        "name": "job_status",
        "parameters": {"type": "object", "properties": {"job": {"type": "string"}}},
    },
}


def _polls(tool: str) -> Any:
    """A script: poll `tool` until the refusal comes, then stop."""

    def script(body: dict[str, Any]) -> dict[str, Any]:
        if BLOCK_MARK in json.dumps(body["messages"]):
            return {"content": "I will wait differently."}
        return {"tool_calls": [(tool, {"job": "deploy-7"})]}

    return script


def _status_loop(
    url: str, tool: str = "job_status", max_turns: int = 30
) -> tuple[int, list[Any], str | None]:
    """The `openai` client's loop: the tool calls that ran, each answer's headers, the last text."""
    from openai import OpenAI

    client: Any = OpenAI(
        base_url=url, api_key=KEY, max_retries=0, default_headers={"X-PoS-Session": "poll"}
    )
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Deploy the service and wait until it is ready."}
    ]
    ran, headers, text = 0, [], None
    for _ in range(max_turns):
        raw = client.chat.completions.with_raw_response.create(
            model="fake", messages=messages, tools=[STATUS_TOOL]
        )
        headers.append(dict(raw.headers))
        answer = raw.parse().choices[0].message
        text = answer.content
        if not answer.tool_calls:
            break
        messages.append(answer.model_dump(exclude_none=True))
        for call in answer.tool_calls:
            ran += 1
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": "deploy-7: state RUNNING"}
            )
    return ran, headers, text


def test_a_declared_polling_tool_is_left_alone_within_its_allowance(tmp_path: Path) -> None:
    upstream = Upstream(_polls("job_status"))
    with serving(
        upstream, policy="block", trace_dir=tmp_path, polling_tools={"job_status": 12}
    ) as (url, _):
        ran, headers, text = _status_loop(url)
    # Twelve identical polls are normal: no note, no refusal.
    assert all(NOTE_PREFIX not in json.dumps(b["messages"]) for b in upstream.bodies[:13])
    assert all(h["x-pos-trapped"] == "false" for h in headers[:13])
    # Past the allowance the same loop is a loop: nudged, then refused.
    assert text is not None and text.startswith(BLOCK_MARK)
    assert ran > 12
    undeclared = Upstream(_polls("job_status"))
    with serving(undeclared, policy="block", trace_dir=tmp_path / "plain") as (url, _):
        plain_ran, _, plain_text = _status_loop(url)
    assert plain_text is not None and plain_text.startswith(BLOCK_MARK)
    assert plain_ran < 12 < ran


def test_an_exempt_tool_is_never_judged(tmp_path: Path) -> None:
    upstream = Upstream(_polls("plan"))
    with serving(upstream, policy="block", trace_dir=tmp_path, exempt_tools=["plan"]) as (
        url,
        app,
    ):
        ran, headers, _ = _status_loop(url, "plan", max_turns=15)
        session = app.state.proxy.store.peek("poll")
    assert ran == 15 and all(h["x-pos-trapped"] == "false" for h in headers)
    assert session.report.reading == "exempt"
    assert NOTE_PREFIX not in json.dumps(upstream.bodies)


def test_the_adapters_take_the_same_options(tmp_path: Path) -> None:
    smolagents = pytest.importorskip("smolagents")
    from pos_agent.adapters.smolagents import StepMonitor, guard_tools
    from scripted_chat import same_call, scripted_chat

    config = tmp_path / "pos.toml"
    config.write_text('polling_tools = ["job_status=12"]\nexempt_tools = ["plan"]\n')
    options = monitor_options(config)
    assert options == {"polling_tools": {"job_status": 12}, "exempt_tools": ["plan"]}
    ran: list[int] = []

    def run(guard: Guard) -> None:
        ran.clear()

        @smolagents.tool
        def job_status(job: str) -> str:
            """The state of a job.

            Args:
                job: The job's id.
            """
            ran.append(1)
            return f"{job}: state RUNNING"

        with scripted_chat(same_call("job_status", {"job": "deploy-7"}), marker="\0") as chat:
            model = smolagents.OpenAIModel(model_id="s", api_base=chat.base_url, api_key="k")
            agent = smolagents.ToolCallingAgent(
                tools=guard_tools(guard, [job_status]),
                model=model,
                max_steps=30,
                step_callbacks=[StepMonitor(guard, interrupt_on_stop=False)],
                verbosity_level=0,
            )
            agent.run("Deploy the service and wait until it is ready.")

    declared = Guard(goal="deploy the service", **options)
    run(declared)
    first_block = next(r.step for r in declared.reports if r.advice.kind == "block")
    assert all(r.advice.kind == "none" for r in declared.reports[:12])
    assert len(ran) == first_block and first_block > 12  # refused from there on
    plain = Guard(goal="deploy the service")
    run(plain)
    assert next(r.step for r in plain.reports if r.advice.kind == "block") < 12


def test_a_moving_meter_through_pos_serve_is_never_nudged_or_blocked(tmp_path: Path) -> None:
    """An undeclared status poll whose replies move forward (`k of 9 replicas`, a percentage)
    is progress to the monitor behind `pos serve`: no note, no refusal, all nine polls run."""
    from openai import OpenAI

    def script(body: dict[str, Any]) -> dict[str, Any]:
        done = sum(1 for m in body["messages"] if m.get("role") == "tool")
        if done >= 9:
            return {"content": "The rollout is complete."}
        return {"tool_calls": [("job_status", {"job": "rollout-3"})]}

    upstream = Upstream(script)
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        client: Any = OpenAI(
            base_url=url, api_key=KEY, max_retries=0, default_headers={"X-PoS-Session": "meter"}
        )
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Roll out the new version and wait until it is done."}
        ]
        ran, headers, text = 0, [], None
        for _ in range(15):
            raw = client.chat.completions.with_raw_response.create(
                model="fake", messages=messages, tools=[STATUS_TOOL]
            )
            headers.append(dict(raw.headers))
            answer = raw.parse().choices[0].message
            text = answer.content
            if not answer.tool_calls:
                break
            messages.append(answer.model_dump(exclude_none=True))
            for call in answer.tool_calls:
                ran += 1
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": f"rollout-3: {ran} of 9 replicas ready ({ran * 11}%)",
                    }
                )
    assert ran == 9 and text == "The rollout is complete."
    assert all(h["x-pos-trapped"] == "false" for h in headers)
    assert NOTE_PREFIX not in json.dumps(upstream.bodies)
