"""`pos serve`'s parts: the history parsers (and a parser of one's own), the session store's
bounds, session keys, text formats through the proxy, and belief mode."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from pos_agent.events import BeliefInitEvent, DegradedEvent, HealthEvent
from pos_agent.monitor import ToolCall, TrapMonitor
from pos_agent.serve import (
    DEFAULT_PARSERS,
    ReActParser,
    Session,
    SessionStore,
    SmolagentsParser,
    Step,
    parse_answer,
    parse_history,
    session_id,
)
from pos_agent.trace import read_trace
from test_serve_fakes import (
    BLOCK_MARK,
    NUDGE_MARK,
    Upstream,
    history_text,
    pos_auth,
    serving,
)

# -- parsers -------------------------------------------------------------------------------------


def test_tool_calls_with_parallel_calls_and_their_results() -> None:
    messages: list[Any] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "cat", "arguments": '{"f": 1}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": "B out"},
        {"role": "tool", "tool_call_id": "a", "content": "A out"},
        {"role": "assistant", "content": "thinking, no call"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "function": {"name": "ls", "arguments": "{}"}}],
        },
    ]
    steps, name = parse_history(messages)
    assert name == "tool_calls"
    assert steps == [
        Step((ToolCall("ls", "{}"), ToolCall("cat", '{"f": 1}')), "A out\n\nB out", 3)
    ]  # the last call has no result yet: not a step


def test_smolagents_text_history_with_an_error_step() -> None:
    call = "[{'id': 'call_1', 'type': 'function', 'function': {'name': 'read', 'arguments': {'path': 'a.py'}}}]"
    messages: list[Any] = [
        {"role": "system", "content": [{"type": "text", "text": "You are an agent."}]},
        {"role": "user", "content": [{"type": "text", "text": "New task:\nfix a.py"}]},
        {"role": "assistant", "content": [{"type": "text", "text": f"Calling tools:\n{call}"}]},
        {"role": "user", "content": [{"type": "text", "text": "Observation:\nprint(1)"}]},
        {"role": "assistant", "content": f"I will read it again.\nCalling tools:\n{call}"},
        {"role": "user", "content": "Call id: call_1\nError:\nfile busy\nNow let's retry"},
    ]
    steps, name = parse_history(messages)
    assert name == "smolagents"
    assert [s.action for s in steps] == [ToolCall("read", {"path": "a.py"})] * 2
    assert [s.observation for s in steps] == ["print(1)", "file busy\nNow let's retry"]
    assert SmolagentsParser().calls({"content": "no calls here"}) == []


def test_react_text_in_messages_and_in_one_scratchpad() -> None:
    separate = [
        {
            "role": "system",
            "content": "Use this format:\nAction: the action to take, one of [search, lookup]\n"
            "Action Input: the input to the action\nObservation: the result of the action",
        },
        {"role": "user", "content": "Question: where is the bug?"},
        {
            "role": "assistant",
            "content": 'Thought: look\nAction: search\nAction Input: {"q": "bug"}',
        },
        {"role": "user", "content": "Observation: 3 results"},
        {"role": "assistant", "content": "Thought: more\nAction: lookup[main.py]"},
        {"role": "user", "content": "Observation: line 4"},
    ]
    steps, name = parse_history(separate)
    assert name == "react"
    assert [(s.action, s.observation) for s in steps] == [
        (ToolCall("search", '{"q": "bug"}'), "3 results"),
        (ToolCall("lookup", "main.py"), "line 4"),
    ]
    scratchpad = [
        {
            "role": "user",
            "content": "Question: q\nThought: a\nAction: ls\nAction Input: /tmp\nObservation: x y\n"
            "Thought: b\nAction: ls\nAction Input: /tmp\nObservation: x y z\nThought:",
        }
    ]
    steps, _ = parse_history(scratchpad)
    assert [s.observation for s in steps] == ["x y", "x y z"]
    assert ReActParser().calls({"content": "Final Answer: 42"}) == []


def test_a_history_with_no_steps_and_odd_messages_never_raises() -> None:
    odd: list[Any] = [
        {"role": "assistant", "tool_calls": "not a list"},
        {"role": "assistant", "content": "Calling tools:\n[not python"},
        {"role": "tool", "content": None},
        {"role": "user", "content": [{"type": "image_url"}, 3]},
    ]
    assert parse_history(odd) == ([], None)
    assert parse_answer({"tool_calls": [{"function": "x"}]}) == ([], None)


class CommandParser:
    """A format of one's own: "$ cmd" in assistant text, "out: ..." in the next user message."""

    name = "shell"

    def steps(self, messages: Sequence[Any]) -> list[Step]:
        found = []
        for index in range(1, len(messages)):
            before, after = messages[index - 1], messages[index]
            if before["role"] == "assistant" and before["content"].startswith("$ "):
                found.append(Step(before["content"][2:], after["content"], index))
        return found

    def calls(self, message: Any) -> list[ToolCall]:
        text = message.get("content") or ""
        return [ToolCall("shell", {"cmd": text[2:]})] if text.startswith("$ ") else []


def test_a_parser_of_ones_own_feeds_the_monitor(tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> dict[str, Any]:
        return (
            {"content": "done"}
            if NUDGE_MARK in history_text(body["messages"])
            else {"content": "$ make"}
        )

    upstream = Upstream(script)
    with serving(
        upstream, policy="nudge", trace_dir=tmp_path, parsers=[CommandParser(), *DEFAULT_PARSERS]
    ) as (url, app):
        messages: list[dict[str, Any]] = [{"role": "user", "content": "build it"}]
        for _ in range(12):
            answer = httpx.post(
                f"{url}/chat/completions", json={"model": "m", "messages": messages}
            )
            content = answer.json()["choices"][0]["message"]["content"]
            messages.append({"role": "assistant", "content": content})
            if content == "done":
                break
            messages.append({"role": "user", "content": "make: *** [all] Error 2"})
        session = next(iter(app.state.proxy.store))
    assert content == "done"
    assert session.format == "shell" and session.report.trapped


# -- text formats through the proxy ----------------------------------------------------------------


def test_a_react_agent_is_blocked_in_its_own_text_format(tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> dict[str, Any]:
        if BLOCK_MARK in history_text(body["messages"]):
            return {"content": "Final Answer: the config is missing"}
        return {"content": 'Thought: check again\nAction: read_file\nAction Input: {"path": "cfg"}'}

    upstream = Upstream(script)
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Question: why no config?"}]
        seen = []
        for _ in range(15):
            answer = httpx.post(
                f"{url}/chat/completions", json={"model": "m", "messages": messages}
            )
            seen.append(answer.headers)
            content = answer.json()["choices"][0]["message"]["content"]
            messages.append({"role": "assistant", "content": content})
            if content.startswith("Final Answer"):
                break
            messages.append({"role": "user", "content": "Observation: cfg: no such file"})
    assert content.startswith("Final Answer")
    assert any(h["x-pos-blocked"] == "true" for h in seen)
    assert any(m["content"].startswith(BLOCK_MARK) for m in messages if m["role"] == "assistant")


# -- sessions -------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _new(key: str) -> Session:
    return Session(key, TrapMonitor())


def test_the_store_drops_the_least_recently_used_and_the_idle() -> None:
    clock = Clock()
    gone: list[tuple[str, str]] = []
    store = SessionStore(
        max_sessions=2, ttl_s=10, clock=clock, on_evict=lambda s, why: gone.append((s.id, why))
    )
    a = store.get("a", _new)
    store.get("b", _new)
    assert store.get("a", _new) is a  # a is now the most recent
    store.get("c", _new)
    assert gone == [("b", "lru")] and {s.id for s in store} == {"a", "c"}
    clock.now = 5
    store.get("c", _new)
    clock.now = 12  # a idle for 12 s, c for 7 s
    store.expire()
    assert gone[-1] == ("a", "ttl") and [s.id for s in store] == ["c"]
    store.close()
    assert gone[-1] == ("c", "shutdown") and len(store) == 0
    with pytest.raises(ValueError):
        SessionStore(max_sessions=0)


def test_session_keys() -> None:
    first = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    grown = [*first, {"role": "assistant", "content": "x"}]
    assert session_id(None, first) == session_id(None, grown)
    only_task = [{"role": "user", "content": "task"}]
    assert session_id(None, only_task) == session_id(None, [*only_task, grown[-1]])
    assert session_id(None, first) != session_id(
        None, [first[0], {"role": "user", "content": "t2"}]
    )
    assert session_id("../../etc/passwd", first) == "etc_passwd"
    assert session_id("run 7/agent:a", first) == "run_7_agent_a"
    assert session_id("..", first).startswith("h-")  # nothing safe left: the hash


def test_a_rewritten_history_starts_the_session_again(tmp_path: Path) -> None:
    upstream = Upstream(lambda body: {"content": "ok"})

    def history(outputs: list[str]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
        for i, out in enumerate(outputs):
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "ls", "arguments": "{}"},
            }
            messages += [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": out},
            ]
        return messages

    with serving(upstream, trace_dir=tmp_path) as (url, _):

        def post(outputs: list[str]) -> httpx.Headers:
            body = {"model": "m", "messages": history(outputs)}
            return httpx.post(
                f"{url}/chat/completions", json=body, headers={"X-PoS-Session": "s"}
            ).headers

        assert post(["a", "b", "c"])["x-pos-step"] == "3"
        assert post(["a", "b", "c", "d"])["x-pos-step"] == "4"
        assert post(["a", "X"])["x-pos-step"] == "2"  # trimmed and changed: replayed from 1
    events, _ = read_trace(tmp_path / "s")
    assert any(isinstance(e, DegradedEvent) and e.reason == "history rewritten" for e in events)


# -- belief mode ----------------------------------------------------------------------------------


def _loop_history(steps: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find out why app.py fails."}]
    for i in range(steps):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "app.py"}'},
        }
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "app.py: raise SystemExit(1)"},
        ]
    return messages


def test_belief_mode_keeps_a_belief_per_session(tmp_path: Path) -> None:
    upstream = Upstream(lambda body: {"content": "ok"})
    with serving(upstream, belief_model="scripted", show_belief=True, trace_dir=tmp_path) as (
        url,
        app,
    ):
        for n in (1, 6):
            answer = httpx.post(
                f"{url}/chat/completions",
                json={"model": "m", "messages": _loop_history(n)},
                headers={"X-PoS-Session": "b"},
            )
            assert answer.status_code == 200 and "x-pos-error" not in answer.headers
        session = app.state.proxy.store.peek("b")
        status = httpx.get(url.removesuffix("/v1") + "/pos/sessions", headers=pos_auth(app)).json()
    assert session.report.belief_source == "belief"
    assert session.belief.belief is not None
    assert status["belief_model"] == "scripted" and status["sessions"][0]["belief"] is True
    events, _ = read_trace(tmp_path / "b")
    assert sum(isinstance(e, BeliefInitEvent) for e in events) == 1
    assert sum(e.event == "belief_commit" for e in events) == 5
    # The belief was shown to the agent, as a note at the end of the forwarded request.
    assert "Your belief so far" in upstream.bodies[-1]["messages"][-1]["content"]


def test_a_failing_belief_model_degrades_to_model_free_for_that_step(tmp_path: Path) -> None:
    class Broken:
        def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("belief server gone")

    upstream = Upstream(lambda body: {"content": "ok"})
    with serving(
        upstream,
        policy="nudge",
        belief_model="scripted",
        belief_model_factory=Broken,
        trace_dir=tmp_path,
    ) as (url, app):
        answer = httpx.post(
            f"{url}/chat/completions",
            json={"model": "m", "messages": _loop_history(6)},
            headers={"X-PoS-Session": "b"},
        )
        session = app.state.proxy.store.peek("b")
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "ok"
    assert answer.headers["x-pos-error"] == "belief model failed; step read model-free"
    assert session.report.belief_source == "observations" and session.report.trapped
    # The policy still applied: the model-free alarm's note went to the model.
    assert NUDGE_MARK in history_text(upstream.bodies[-1]["messages"])
    events, _ = read_trace(tmp_path / "b")
    degraded = [e for e in events if isinstance(e, DegradedEvent) and e.role == "belief"]
    assert len(degraded) == 6 and "belief server gone" in degraded[0].reason
    assert sum(isinstance(e, HealthEvent) for e in events) == 6


def test_forwarded_json_keeps_the_agents_own_fields(tmp_path: Path) -> None:
    upstream = Upstream(lambda body: {"content": "ok"})
    with serving(upstream, policy="nudge", trace_dir=tmp_path) as (url, _):
        body = {
            "model": "m",
            "messages": _loop_history(4),
            "temperature": 0.3,
            "seed": 7,
            "tool_choice": "auto",
            "user": "u1",
        }
        httpx.post(f"{url}/chat/completions", json=body)
    sent = upstream.bodies[-1]
    assert {k: sent[k] for k in ("temperature", "seed", "tool_choice", "user")} == {
        "temperature": 0.3,
        "seed": 7,
        "tool_choice": "auto",
        "user": "u1",
    }
    notes = [m for m in sent["messages"] if NUDGE_MARK in (m.get("content") or "")]
    theirs = [m for m in sent["messages"] if m not in notes]
    assert json.dumps(theirs) == json.dumps(body["messages"])
    # The onset was step 3 of the 4 (the third identical call and output): its note follows
    # the 3rd tool result.
    assert len(notes) == 1 and sent["messages"].index(notes[0]) == 7


def test_the_docs_parser_example_runs() -> None:
    import re

    docs = (Path(__file__).resolve().parents[1] / "docs" / "serve.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", docs, re.S) if "ShellParser" in b)
    namespace: dict[str, Any] = {"URL": "http://127.0.0.1:9/v1"}
    exec(compile(block, "docs/serve.md", "exec"), namespace)
    parser = namespace["ShellParser"]()
    history = [
        {"role": "user", "content": "build"},
        {"role": "assistant", "content": "$ make"},
        {"role": "user", "content": "Error 2"},
    ]
    assert parse_history(history, [parser]) == ([Step("make", "Error 2", 2)], "shell")
    assert parser.calls({"content": "$ make"}) == [ToolCall("shell", {"cmd": "make"})]
    assert namespace["app"].state.proxy.config.parsers[0] is not None


@pytest.mark.slow
def test_belief_mode_with_the_embedded_model(tmp_path: Path) -> None:
    upstream = Upstream(lambda body: {"content": "ok"})
    with serving(upstream, belief_model="local", trace_dir=tmp_path, timeout_s=60) as (url, app):
        answer = httpx.post(
            f"{url}/chat/completions",
            json={"model": "m", "messages": _loop_history(3)},
            headers={"X-PoS-Session": "local"},
            timeout=900,
        )
        session = app.state.proxy.store.peek("local")
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "ok"
    assert session.report.step == 3
    events, _ = read_trace(tmp_path / "local")
    kinds = [e.event for e in events]
    # One belief outcome per step: the initial belief, then a commit or a reject (or, if the
    # model failed, a degraded step read model-free).
    assert kinds.count("belief_init") + kinds.count("degraded") >= 1
    outcomes = sum(kinds.count(k) for k in ("belief_init", "belief_commit", "belief_reject"))
    assert (
        outcomes + sum(1 for e in events if isinstance(e, DegradedEvent) and e.role == "belief")
        == 3
    )
    if "belief_init" in kinds:
        assert session.belief.belief is not None and session.belief.belief.goal.startswith("Find")


def test_a_stream_guard_that_fails_relays_the_stream_unchanged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from pos_agent.serve.policy import Verdict
    from pos_agent.serve.streaming import StreamGuard

    events = [
        b'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": '
        b'{"name": "read_file", "arguments": "{}"}}]}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    stream = b"".join(events)
    guard = StreamGuard(Verdict(None, "s", forbidden=frozenset({"read_file {}"})), None)
    calls = 0

    def broken(finish: Any) -> list[bytes]:
        nonlocal calls
        calls += 1
        raise RuntimeError("guard bug")

    monkeypatch.setattr(guard, "_settle", broken)
    out = [piece for cut in range(0, len(stream), 7) for piece in guard.feed(stream[cut : cut + 7])]
    out += guard.close()
    assert calls == 1 and b"".join(out) == stream
    assert "guard bug" in caplog.text
    # Without the bug, the same guard refuses the call.
    fresh = StreamGuard(Verdict(None, "s", forbidden=frozenset({"read_file {}"})), None)
    refused = b"".join([*fresh.feed(stream), *fresh.close()])
    assert b"Blocked: read_file {}" in refused and b'"tool_calls": [' not in refused


def test_odd_messages_and_an_unwritable_trace_never_break_a_request(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the traces should go")
    upstream = Upstream(lambda body: {"content": "ok"})
    with serving(upstream, trace_dir=blocker) as (url, _):
        odd = httpx.post(
            f"{url}/chat/completions", json={"model": "m", "messages": ["just text", 3, None]}
        )
        looped = httpx.post(
            f"{url}/chat/completions", json={"model": "m", "messages": _loop_history(6)}
        )
    assert odd.status_code == 200 and upstream.bodies[0]["messages"] == ["just text", 3, None]
    assert odd.headers["x-pos-error"].startswith("monitor failed")
    # No trace could be written, and the monitor went on without one.
    assert looped.status_code == 200 and looped.headers["x-pos-trapped"] == "true"


def test_a_growing_history_is_parsed_from_where_the_last_step_ended() -> None:
    import asyncio

    from pos_agent.serve import ServeConfig, ToolCallsParser
    from pos_agent.serve.proxy import Proxy

    class Counting(ToolCallsParser):
        def __init__(self) -> None:
            self.seen: list[int] = []

        def steps(self, messages: Sequence[Any]) -> list[Step]:
            self.seen.append(len(messages))
            return super().steps(messages)

    parser = Counting()
    proxy = Proxy(ServeConfig(upstream="http://127.0.0.1:9/v1", parsers=[parser]))
    direct = TrapMonitor("Find out why app.py fails.")
    outputs = ["app.py: raise SystemExit(1)"] * 7

    async def grow() -> list[Any]:
        reports = []
        for n in range(1, 8):
            verdict = await proxy.verdict({"x-pos-session": "g"}, _loop_history(n))
            reports.append(verdict.report)
        return reports

    reports = asyncio.run(grow())
    expected = [direct.observe(ToolCall("read_file", '{"path": "app.py"}'), out) for out in outputs]
    assert [r.to_dict() for r in reports] == [e.to_dict() for e in expected]
    # The first history whole (3 messages), then only the 2 messages of each new step.
    assert parser.seen == [3, 2, 2, 2, 2, 2, 2]
