"""`pos serve` against a scripted upstream: the plain `openai` SDK tool loop, each policy,
streaming, pass-through, upstream errors, key redaction and fail-open."""

from __future__ import annotations

import json
import logging
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from pos_agent.bench.view import build_view, write_view
from pos_agent.events import EpisodeStartEvent
from pos_agent.monitor import TrapMonitor
from pos_agent.trace import read_trace
from test_serve_fakes import (
    BLOCK_MARK,
    KEY,
    NUDGE_MARK,
    READ_TOOL,
    Upstream,
    history_text,
    loops_until,
    pos_auth,
    productive,
    sdk_loop,
    serving,
)

MAX_TURNS = 20


def _trapped(headers: list[dict[str, str]]) -> list[bool]:
    return [h["x-pos-trapped"] == "true" for h in headers]


# -- the SDK loop and the policies ---------------------------------------------------------------


def test_a_productive_run_gets_no_alarm(tmp_path: Path) -> None:
    upstream = Upstream(productive(8))
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        headers, _messages, text = sdk_loop(url)
    assert text == "All files read. Done."
    assert len(headers) == 9
    assert not any(_trapped(headers)), [h["x-pos-pattern"] for h in headers]
    assert [h["x-pos-step"] for h in headers] == [str(i) for i in range(9)]
    # Nothing was added to what the model saw.
    assert all(NUDGE_MARK not in history_text(b["messages"]) for b in upstream.bodies)


def test_observe_leaves_the_loop_alone_but_reports_it(tmp_path: Path) -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream, policy="observe", trace_dir=tmp_path) as (url, _):
        headers, _, text = sdk_loop(url, max_turns=MAX_TURNS)
    assert len(headers) == MAX_TURNS  # the agent never left its loop
    assert text is None
    assert any(_trapped(headers))
    trapped = [h for h in headers if h["x-pos-trapped"] == "true"]
    assert {h["x-pos-pattern"] for h in trapped} == {"static"}
    assert all(NUDGE_MARK not in history_text(b["messages"]) for b in upstream.bodies)


@pytest.mark.parametrize("health", ["improved", "paper"])
def test_nudge_takes_the_sdk_loop_out(tmp_path: Path, health: str) -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream, policy="nudge", health=health, trace_dir=tmp_path) as (url, app):
        headers, messages, text = sdk_loop(url, max_turns=MAX_TURNS)
        diagnosis = app.state.proxy.store.peek("sdk").monitor.config.diagnosis
    assert text == "I will stop repeating myself. Done."
    assert len(headers) < MAX_TURNS
    onset = [h for h in headers if h["x-pos-advice"] == "inject"]
    assert len(onset) == 1 and onset[0]["x-pos-trapped"] == "true"
    # The note went to the model, not into the agent's own history.
    assert NUDGE_MARK in history_text(upstream.bodies[-1]["messages"])
    assert NUDGE_MARK not in history_text(messages)
    assert diagnosis == health


def test_the_note_stays_where_it_was_given_on_later_requests(tmp_path: Path) -> None:
    # A model that ignores the note: every later request still carries it, at the same place.
    upstream = Upstream(loops_until("never said"))
    with serving(upstream, policy="nudge", trace_dir=tmp_path) as (url, _):
        headers, _, _ = sdk_loop(url, max_turns=10)
    given = next(i for i, h in enumerate(headers) if h["x-pos-advice"] == "inject")
    positions = []
    for body in upstream.bodies[given:]:
        notes = [
            i for i, m in enumerate(body["messages"]) if NUDGE_MARK in (m.get("content") or "")
        ]
        positions.append(notes[:1])
    assert positions[0] and all(p == positions[0] for p in positions)
    assert upstream.bodies[given]["messages"][positions[0][0] - 1]["role"] == "tool"


def test_block_refuses_the_repeated_call_and_the_agent_reads_why(tmp_path: Path) -> None:
    upstream = Upstream(loops_until(BLOCK_MARK))
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        headers, messages, text = sdk_loop(url, max_turns=MAX_TURNS)
    assert len(headers) < MAX_TURNS
    assert text is not None and text.startswith(BLOCK_MARK)
    assert 'read_file {"path":"app.py"}' in text
    assert headers[-1]["x-pos-blocked"] == "true"
    assert messages[-1]["role"] == "assistant" and "tool_calls" not in messages[-1]
    # The upstream did answer the call: it was the proxy that replaced it.
    assert upstream.bodies and all(
        BLOCK_MARK not in history_text(b["messages"]) for b in upstream.bodies
    )


def test_block_keeps_a_call_that_is_not_forbidden(tmp_path: Path) -> None:
    def script(
        body: dict[str, Any],
    ) -> dict[str, Any]:  # a loop on app.py; once nudged, one other file, then an answer
        text = history_text(body["messages"])
        if "other.py:" in text:
            return {"content": "ok"}
        path = "other.py" if NUDGE_MARK in text else "app.py"
        return {"tool_calls": [("read_file", {"path": path})]}

    upstream = Upstream(script)
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        headers, messages, _ = sdk_loop(url, max_turns=MAX_TURNS)
    assert any(_trapped(headers))
    assert all(h["x-pos-blocked"] == "false" for h in headers)
    assert any("other.py" in json.dumps(m.get("tool_calls")) for m in messages)


# -- streaming -------------------------------------------------------------------------------------


def test_streaming_is_passed_through_chunk_by_chunk_with_the_verdict_in_headers(
    tmp_path: Path,
) -> None:
    gate = threading.Event()
    upstream = Upstream(productive(3), stream_gate=gate)
    with serving(upstream, trace_dir=tmp_path) as (url, _):
        body = {
            "model": "fake",
            "stream": True,
            "tools": [READ_TOOL],
            "messages": [{"role": "user", "content": "read the modules"}],
        }
        with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=20) as answer:
            assert answer.headers["x-pos-trapped"] == "false"
            assert answer.headers["x-pos-step"] == "0"
            lines = answer.iter_lines()
            first = next(line for line in lines if line)
            # The upstream holds the rest until the gate opens: the first chunk came through
            # on its own, so the proxy does not buffer the stream.
            assert '"role": "assistant"' in first
            gate.set()
            rest = [line for line in lines if line]
    assert rest[-1] == "data: [DONE]"
    assert any('"read_file"' in line for line in rest)


def test_a_streamed_loop_is_nudged_out(tmp_path: Path) -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream, policy="nudge", trace_dir=tmp_path) as (url, _):
        headers, _, text = sdk_loop(url, max_turns=MAX_TURNS, stream=True)
    assert len(headers) < MAX_TURNS
    assert text is not None and "Done." in text
    assert any(h["x-pos-advice"] == "inject" for h in headers)


def test_a_streamed_forbidden_call_is_replaced_by_the_refusal(tmp_path: Path) -> None:
    upstream = Upstream(loops_until(BLOCK_MARK))
    with serving(upstream, policy="block", trace_dir=tmp_path) as (url, _):
        headers, messages, text = sdk_loop(url, max_turns=MAX_TURNS, stream=True)
    assert len(headers) < MAX_TURNS
    assert text is not None and text.startswith(BLOCK_MARK)
    assert "tool_calls" not in messages[-1]


# -- pass-through and upstream errors -------------------------------------------------------------


def test_other_paths_are_passed_through(tmp_path: Path) -> None:
    upstream = Upstream(productive(1))
    with serving(upstream, trace_dir=tmp_path) as (url, _):
        models = httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {KEY}"})
        embedded = httpx.post(f"{url}/embeddings", json={"model": "e", "input": "hi"})
    assert models.status_code == 200 and models.json()["data"][0]["id"] == "fake"
    assert upstream.headers[0]["authorization"] == f"Bearer {KEY}"
    assert embedded.json()["data"][0]["embedding"] == [0.5, 0.25]
    assert upstream.bodies[-1] == {"model": "e", "input": "hi"}


@pytest.mark.parametrize("status", [400, 401, 429, 500, 503])
def test_upstream_errors_are_relayed_unchanged(tmp_path: Path, status: int) -> None:
    error = json.dumps({"error": {"message": f"upstream says {status}", "type": "x"}}).encode()
    upstream = Upstream(productive(1), status=status, error_body=error)
    with serving(upstream, trace_dir=tmp_path) as (url, _):
        answer = httpx.post(
            f"{url}/chat/completions",
            json={"model": "fake", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert answer.status_code == status
    assert answer.content == error
    assert answer.headers["x-pos-trapped"] == "false"


def test_an_upstream_that_is_down_gives_a_clear_502(tmp_path: Path) -> None:
    from pos_agent.serve import ServeConfig, create_app
    from test_serve_fakes import ThreadServer

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    app = create_app(ServeConfig(upstream=f"http://127.0.0.1:{dead}/v1", trace_dir=tmp_path))
    with ThreadServer(app) as proxy:
        chat = httpx.post(
            f"{proxy.url}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
        models = httpx.get(f"{proxy.url}/v1/models")
    for answer in (chat, models):
        assert answer.status_code == 502
        error = answer.json()["error"]
        assert error["type"] == "upstream_unreachable"
        assert f"127.0.0.1:{dead}" in error["message"]
    assert chat.headers["x-pos-step"] == "0"


def test_a_body_that_is_not_a_chat_request_is_passed_through(tmp_path: Path) -> None:
    upstream = Upstream(productive(1), status=400, error_body=b'{"error": "bad json"}')
    with serving(upstream, trace_dir=tmp_path) as (url, _):
        answer = httpx.post(f"{url}/chat/completions", content=b'{"model": "m", "messages": 3}')
    assert answer.status_code == 400 and answer.content == b'{"error": "bad json"}'
    assert "x-pos-trapped" not in answer.headers


# -- keys, traces, sessions, fail-open ------------------------------------------------------------


def test_keys_pass_through_and_never_reach_logs_traces_or_the_status(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream, policy="nudge", trace_dir=tmp_path, trace_outputs=True) as (url, app):
        sdk_loop(url, max_turns=8)
        # A tool output that holds the key too (an `env` dump).
        messages = [
            {"role": "user", "content": "show env"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "sh", "arguments": json.dumps({"cmd": f"echo {KEY}"})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": f"OPENAI_API_KEY={KEY}"},
        ]
        httpx.post(
            f"{url}/chat/completions",
            json={"model": "fake", "messages": messages},
            headers={"Authorization": f"Bearer {KEY}", "X-PoS-Session": "leak"},
        )
        status = httpx.get(url.removesuffix("/v1") + "/pos/sessions", headers=pos_auth(app)).text
    assert all(h["authorization"] == f"Bearer {KEY}" for h in upstream.headers)
    written = "".join(p.read_text() for p in tmp_path.rglob("*.jsonl"))
    assert "OPENAI_API_KEY" in written  # the trace holds the step ...
    out, err = capfd.readouterr()
    for where in (written, status, caplog.text, out, err):
        assert KEY not in where  # ... but not the key


def test_each_session_writes_a_trace_pos_view_opens(tmp_path: Path) -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream, policy="nudge", trace_dir=tmp_path) as (url, _):
        sdk_loop(url, session="first", max_turns=MAX_TURNS)
        sdk_loop(url, session="second", max_turns=3)
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert folders == ["first", "second"]
    events, lines = read_trace(tmp_path / "first" / "events.jsonl")
    assert lines.skipped == {}  # every line is an event `pos view` knows
    kinds = [e.event for e in events]
    assert kinds[0] == "episode_start" and kinds[-1] == "episode_end"  # closed at shutdown
    start = events[0]
    assert isinstance(start, EpisodeStartEvent) and start.models == {"policy": "fake"}
    assert {"action", "observation", "health", "recovery"} <= set(kinds)
    view = build_view(events, None, lines)
    steps = view["steps"]
    assert any(s.get("health", {}) and s["health"].get("trapped") for s in steps)
    assert any(s.get("action") == 'read_file {"path":"app.py"}' for s in steps)
    page = write_view(tmp_path / "first")
    assert page.is_file() and "read_file" in page.read_text()


def test_sessions_by_header_else_by_the_first_messages(tmp_path: Path) -> None:
    upstream = Upstream(productive(2))
    with serving(upstream, trace_dir=tmp_path) as (url, app):
        sdk_loop(url, session=None)
        sdk_loop(url, session=None)  # the same conversation start: the same session
        sdk_loop(url, session="mine")
        status = httpx.get(url.removesuffix("/v1") + "/pos/sessions", headers=pos_auth(app)).json()
    sessions = {s["id"]: s for s in status["sessions"]}
    assert len(sessions) == 2 and "mine" in sessions
    hashed = next(s for key, s in sessions.items() if key.startswith("h-"))
    # The second run restarted the hashed session (its history no longer held the first's).
    assert hashed["requests"] == 6 and hashed["steps"] == 2
    assert sessions["mine"]["format"] == "tool_calls"
    assert status["policy"] == "observe"


def test_a_monitor_that_raises_fails_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(TrapMonitor):
        def observe(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("monitor bug")

    upstream = Upstream(productive(3))
    with (
        caplog.at_level(logging.ERROR, logger="pos_agent.serve"),
        serving(
            upstream, policy="block", trace_dir=tmp_path, monitor_factory=lambda goal: Broken(goal)
        ) as (url, _),
    ):
        headers, messages, text = sdk_loop(url)
    assert text == "All files read. Done."  # every request went through
    assert all("x-pos-error" in h for h in headers[1:])
    assert all(h["x-pos-trapped"] == "false" for h in headers)
    # Forwarded unchanged: the upstream got the agent's messages as they were.
    assert upstream.bodies[-1]["messages"] == messages[:-1]
    assert "monitor bug" in caplog.text and "forwarded unchanged" in caplog.text


def test_an_upstream_that_does_not_answer_in_time_gives_a_504(tmp_path: Path) -> None:
    gate = threading.Event()

    def slow(body: dict[str, Any]) -> dict[str, Any]:
        gate.wait(30)  # held until the proxy has given up
        return {"content": "late"}

    upstream = Upstream(slow)
    with serving(upstream, trace_dir=tmp_path, timeout_s=0.5) as (url, _):
        try:
            answer = httpx.post(
                f"{url}/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                timeout=30,
            )
        finally:
            gate.set()
    assert answer.status_code == 504
    assert answer.json()["error"]["type"] == "upstream_timeout"
    assert answer.headers["x-pos-trapped"] == "false"
