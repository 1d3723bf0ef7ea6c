"""The LiteLLM guardrail (`pos_agent.serve.litellm.PosGuardrail`) inside real LiteLLM from
PyPI: an agent's tool loop through `litellm.acompletion` to a scripted OpenAI-compatible
upstream on 127.0.0.1, with the guardrail registered as a LiteLLM callback. LiteLLM runs its
`async_pre_call_hook` and `async_post_call_success_hook` there as its proxy does (the
deployment-level guardrail hooks). A stuck loop is nudged first, then refused; a productive run
(different files, or one job polled while its progress meter moves) never is. LiteLLM's proxy
server itself: tests/test_adapter_litellm_proxy.py.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from test_docs_examples import _block, _run
from test_serve_fakes import (
    BLOCK_MARK,
    NOTE_PREFIX,
    NUDGE_MARK,
    READ_TOOL,
    ThreadServer,
    Upstream,
    history_text,
    loops_until,
    productive,
    run_tool,
    upstream_app,
)

# LiteLLM fetches its model price list from GitHub on import unless told to use its own copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")

from litellm.types.guardrails import GuardrailEventHooks  # noqa: E402

from pos_agent.serve.litellm import PosGuardrail, TrapBlocked  # noqa: E402

TASK = "Find out why app.py exits with status 1."
DOCS = Path(__file__).resolve().parents[1] / "docs" / "serve.md"
UPSTREAM = "http://127.0.0.1:8080"
STATUS_TOOL = {
    "type": "function",
    "function": {
        "name": "job_status",
        "description": "The deploy job's status.",
        "parameters": {"type": "object", "properties": {"job": {"type": "string"}}},
    },
}


def _loop(
    guard: PosGuardrail,
    api_base: str,
    *,
    tools: list[dict[str, Any]],
    run: Callable[[str, str], str],
    session: str = "run-1",
    max_turns: int = 20,
    start: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], list[str], Exception | None]:
    """An agent's tool loop through `litellm.acompletion`: the history it ended with, the
    content of each answer, and the error that ended it (None: it answered without a call)."""
    history: list[dict[str, Any]] = list(start or [{"role": "user", "content": TASK}])
    answers: list[str] = []

    async def turns() -> Exception | None:
        for _ in range(max_turns):
            try:
                reply = await litellm.acompletion(
                    model="openai/fake",
                    api_base=api_base,
                    api_key="sk-test",
                    messages=history,
                    tools=tools,
                    guardrails=[guard.guardrail_name],
                    metadata={"pos_session": session},
                    num_retries=0,
                )
            except Exception as error:  # the guardrail's refusal, as LiteLLM raises it
                return error
            message = reply.choices[0].message
            answers.append(message.content or "")
            calls = message.tool_calls or []
            history.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [c.model_dump() for c in calls] or None,
                }
            )
            if not calls:
                return None
            for call in calls:
                output = run(call.function.name, call.function.arguments)
                history.append({"role": "tool", "tool_call_id": call.id, "content": output})
        return None

    return history, answers, asyncio.run(turns())


@pytest.fixture
def registered() -> Iterator[Callable[..., PosGuardrail]]:
    """A guardrail registered as LiteLLM's callback for the test, taken off after it."""
    before = list(litellm.callbacks)

    def make(**options: Any) -> PosGuardrail:
        guard = PosGuardrail(**options)
        litellm.callbacks = [*before, guard]
        return guard

    yield make
    litellm.callbacks = before


def _reads(clock: Iterator[int]) -> Callable[[str, str], str]:
    return lambda name, arguments: run_tool(name, arguments, clock)


def test_a_stuck_loop_is_nudged_then_blocked(registered: Callable[..., PosGuardrail]) -> None:
    upstream = Upstream(loops_until("never"))
    guard = registered(policy="block")
    with ThreadServer(upstream_app(upstream)) as up:
        history, _, error = _loop(
            guard, f"{up.url}/v1", tools=[READ_TOOL], run=_reads(itertools.count())
        )
    sent = [history_text(body["messages"]) for body in upstream.bodies]
    nudged = next(i for i, text in enumerate(sent) if NUDGE_MARK in text)
    # The refusal reached the client as an error, after the note had gone upstream at least
    # once: nudge first, then block.
    assert isinstance(error, TrapBlocked), f"no refusal in 20 turns: {error!r}"
    assert error.message.startswith(BLOCK_MARK) and "read_file" in error.message
    assert nudged < len(sent) - 1
    assert not any(BLOCK_MARK in text for text in sent[: nudged + 1])
    # The agent's own history never holds the notes: LiteLLM's request to the upstream does.
    assert NOTE_PREFIX not in json.dumps(history)
    session = guard.proxy.store.peek("run-1")
    assert session is not None and session.report is not None
    assert session.report.trapped and session.report.escalation in ("block", "stop")


def test_a_run_that_keeps_asking_is_stopped_before_the_upstream(
    registered: Callable[..., PosGuardrail],
) -> None:
    upstream = Upstream(loops_until("never"))
    guard = registered(policy="block")
    with ThreadServer(upstream_app(upstream)) as up:
        history, _, error = _loop(
            guard, f"{up.url}/v1", tools=[READ_TOOL], run=_reads(itertools.count())
        )
        assert isinstance(error, TrapBlocked)
        # The agent sends the same request again and again: each refused answer counts as a
        # step, until the alarm's stop level refuses the request before it goes upstream.
        errors = []
        for _ in range(12):
            _, _, again = _loop(
                guard,
                f"{up.url}/v1",
                tools=[READ_TOOL],
                run=_reads(itertools.count()),
                max_turns=1,
                start=history,
            )
            errors.append(again)
            if isinstance(again, TrapBlocked) and again.message.startswith(
                f"{NOTE_PREFIX} Stop now"
            ):
                break
        sent = len(upstream.bodies)
        _, _, last = _loop(
            guard,
            f"{up.url}/v1",
            tools=[READ_TOOL],
            run=_reads(itertools.count()),
            max_turns=1,
            start=history,
        )
    assert all(isinstance(e, TrapBlocked) for e in errors)
    assert errors[0].message.startswith(BLOCK_MARK)  # type: ignore[union-attr]
    assert errors[-1].message.startswith(f"{NOTE_PREFIX} Stop now")  # type: ignore[union-attr]
    assert isinstance(last, TrapBlocked) and len(upstream.bodies) == sent


def test_nudge_reaches_the_model_and_the_loop_ends(
    registered: Callable[..., PosGuardrail],
) -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    guard = registered(policy="nudge")
    with ThreadServer(upstream_app(upstream)) as up:
        _, answers, error = _loop(
            guard, f"{up.url}/v1", tools=[READ_TOOL], run=_reads(itertools.count())
        )
    assert error is None
    assert answers[-1] == "I will stop repeating myself. Done."
    assert NUDGE_MARK in history_text(upstream.bodies[-1]["messages"])
    assert len(upstream.bodies) < 20


def test_observe_changes_nothing(registered: Callable[..., PosGuardrail]) -> None:
    upstream = Upstream(loops_until("never"))
    guard = registered(policy="observe")
    with ThreadServer(upstream_app(upstream)) as up:
        _, _, error = _loop(
            guard, f"{up.url}/v1", tools=[READ_TOOL], run=_reads(itertools.count()), max_turns=12
        )
    assert error is None
    assert len(upstream.bodies) == 12
    assert not any(NOTE_PREFIX in json.dumps(body) for body in upstream.bodies)
    session = guard.proxy.store.peek("run-1")
    assert session is not None and session.report is not None and session.report.trapped


def test_a_productive_run_is_never_blocked(registered: Callable[..., PosGuardrail]) -> None:
    upstream = Upstream(productive(paths=12))
    guard = registered(policy="block")
    with ThreadServer(upstream_app(upstream)) as up:
        _, answers, error = _loop(
            guard, f"{up.url}/v1", tools=[READ_TOOL], run=_reads(itertools.count())
        )
    assert error is None
    assert answers[-1] == "All files read. Done."
    assert len(upstream.bodies) == 13
    assert not any(NOTE_PREFIX in json.dumps(body) for body in upstream.bodies)


def _polls(body: dict[str, Any]) -> dict[str, Any]:
    """Poll the deploy job until its output says done, then answer."""
    if "100% done" in history_text(body.get("messages", [])):
        return {"content": "The deploy finished."}
    return {"tool_calls": [("job_status", {"job": "deploy-7"})]}


def _deploy(body: dict[str, Any]) -> dict[str, Any]:
    """Poll the deploy job until its output says done, then answer."""
    if "100% done" in history_text(body.get("messages", [])):
        return {"content": "The deploy finished."}
    return {"tool_calls": [("job_status", {"job": "deploy-7"})]}


def _status() -> Callable[[str, str], str]:
    """The deploy job's status: its meter moves 7 points a poll, to 100% at the 15th."""
    percent = itertools.count(7, 7)

    def status(name: str, arguments: str) -> str:
        done = min(next(percent), 100)
        return f"deploy-7: {done}% done" if done == 100 else f"deploy-7: running, {done}% done"

    return status


def test_a_declared_polling_tool_is_never_blocked(
    registered: Callable[..., PosGuardrail],
) -> None:
    upstream = Upstream(_deploy)
    guard = registered(policy="block", polling_tools=["job_status=20"])
    with ThreadServer(upstream_app(upstream)) as up:
        _, answers, error = _loop(guard, f"{up.url}/v1", tools=[STATUS_TOOL], run=_status())
    assert error is None
    assert answers[-1] == "The deploy finished."
    assert len(upstream.bodies) == 16
    assert not any(NOTE_PREFIX in json.dumps(body) for body in upstream.bodies)


def test_polling_while_the_meter_moves_is_never_blocked(
    registered: Callable[..., PosGuardrail],
) -> None:
    upstream = Upstream(_deploy)
    guard = registered(policy="block")
    with ThreadServer(upstream_app(upstream)) as up:
        _, answers, error = _loop(guard, f"{up.url}/v1", tools=[STATUS_TOOL], run=_status())
    assert error is None
    assert answers[-1] == "The deploy finished."
    assert len(upstream.bodies) == 16


def test_the_options_of_pos_serve() -> None:
    guard = PosGuardrail("block", polling_tools=["job_status=12"], exempt_tools=["plan"])
    assert guard.config.policy == "block"
    assert dict(guard.config.polling_tools) == {"job_status": 12}
    assert tuple(guard.config.exempt_tools) == ("plan",)
    with pytest.raises(ValueError, match="policy"):
        PosGuardrail("refuse")  # type: ignore[arg-type]


def test_the_session_key() -> None:
    guard = PosGuardrail()
    head = [{"role": "user", "content": TASK}]
    by_header = {"proxy_server_request": {"headers": {"X-PoS-Session": "a/b"}}, "messages": head}
    assert guard.session_key(by_header) == "a_b"
    assert guard.session_key({"metadata": {"pos_session": "run-9"}, "messages": head}) == "run-9"
    assert guard.session_key({"messages": head}) is None
    assert guard.session_key({"messages": head}, fallback=True) == guard.session_key(
        {"messages": [*head, {"role": "assistant", "content": "ok"}]}, fallback=True
    )


def test_the_core_imports_without_litellm() -> None:
    code = (
        "import sys; sys.modules['litellm'] = None\n"
        "import pos_agent, pos_agent.monitor, pos_agent.adapters, pos_agent.serve\n"
        "try:\n"
        "    import pos_agent.serve.litellm\n"
        "except ImportError:\n"
        "    print('needs litellm')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "needs litellm"


def test_the_docs_snippet() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for turn in range(5):
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": "app.py"})},
        }
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{turn}", "content": "app.py: raise SystemExit(1)"},
        ]
    code = _block(DOCS, "serve-litellm")
    assert UPSTREAM in code
    upstream = Upstream(loops_until(NUDGE_MARK))
    before = list(litellm.callbacks)
    namespace: dict[str, Any] = {"history": history, "tools": [READ_TOOL]}
    namespace.update({"API_KEY": "sk-test", "MODEL": "fake"})
    try:
        with ThreadServer(upstream_app(upstream)) as up:
            printed = _run(code.replace(UPSTREAM, up.url), "docs/serve.md serve-litellm", namespace)
    finally:
        litellm.callbacks = before
    assert printed == ["I will stop repeating myself. Done."]
    assert NUDGE_MARK in history_text(upstream.bodies[-1]["messages"])
    assert namespace["guard"].proxy.store.peek("run-47") is not None


def test_the_proxy_config_builds_the_guardrail() -> None:
    """The docs' `config.yaml` lines, read by LiteLLM's own loader and given to the class the
    way its guardrail registry does (`initialize_custom_guardrail`: name, mode, default_on and
    the other `litellm_params`)."""
    yaml = pytest.importorskip("yaml")
    from litellm.proxy.types_utils.utils import get_instance_fn
    from litellm.types.guardrails import LitellmParams

    text = DOCS.read_text(encoding="utf-8").split("<!-- serve-litellm-config -->")[1]
    config = yaml.safe_load(text.split("```yaml\n")[1].split("```")[0])
    entry = config["guardrails"][0]
    params = LitellmParams(**entry["litellm_params"])
    cls = get_instance_fn(params.guardrail)
    skip = {"guardrail", "mode", "default_on", "stream_scope"}
    extra = {k: v for k, v in params.model_dump(exclude_none=True).items() if k not in skip}
    guard = cls(
        guardrail_name=entry["guardrail_name"],
        event_hook=params.mode,
        default_on=params.default_on,
        **extra,
    )
    assert isinstance(guard, PosGuardrail)
    assert guard.guardrail_name == "pos" and guard.config.policy == "block"
    assert dict(guard.config.polling_tools) == {"job_status": 20}
    assert tuple(guard.config.exempt_tools) == ("plan",)
    assert guard.should_run_guardrail({"messages": []}, GuardrailEventHooks.pre_call)
    assert guard.should_run_guardrail({"messages": []}, GuardrailEventHooks.post_call)
