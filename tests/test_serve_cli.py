"""`pos serve` as a user starts it: the command, loopback by default, graceful shutdown; and,
marked slow, in front of llama-cpp-python's OpenAI-compatible server serving the embedded model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pos_agent.trace import read_trace
from test_serve_fakes import (
    KEY,
    NUDGE_MARK,
    READ_TOOL,
    ThreadServer,
    Upstream,
    loops_until,
    upstream_app,
)

POS = str(Path(sys.executable).parent / "pos")
STARTUP_S = 60.0


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_serving(process: subprocess.Popen[str], url: str) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"pos serve exited with {process.returncode}: {process.stderr.read() if process.stderr else ''}"
            )
        try:
            if httpx.get(f"{url}/pos/sessions", timeout=2).status_code == 401:  # no token
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    pytest.fail(f"pos serve did not answer within {STARTUP_S:g}s")


def _start(upstream: str, traces: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    process = subprocess.Popen(
        [
            POS,
            "serve",
            "--upstream",
            upstream,
            "--port",
            str(port),
            "--trace-dir",
            str(traces),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    _wait_serving(process, url)
    return process, url


def _stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        pytest.fail("pos serve did not stop on SIGTERM")
    return process.returncode, err


def _loop_messages(steps: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the tools."},
        {"role": "user", "content": "Find out why app.py exits with status 1."},
    ]
    for i in range(steps):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": "app.py"})},
        }
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": f"call_{i}",
                "content": "app.py: def main(): raise SystemExit(1)",
            },
        ]
    return messages


def test_the_command_serves_on_loopback_and_stops_gracefully(tmp_path: Path) -> None:
    upstream = Upstream(loops_until(NUDGE_MARK))
    with ThreadServer(upstream_app(upstream)) as up:
        process, url = _start(f"{up.url}/v1", tmp_path, "--policy", "nudge")
        try:
            answer = httpx.post(
                f"{url}/v1/chat/completions",
                json={"model": "fake", "messages": _loop_messages(6), "tools": [READ_TOOL]},
                headers={"Authorization": f"Bearer {KEY}", "X-PoS-Session": "cli"},
                timeout=30,
            )
        finally:
            code, err = _stop(process)
    assert answer.status_code == 200
    assert answer.headers["x-pos-trapped"] == "true" and answer.headers["x-pos-pattern"] == "static"
    assert NUDGE_MARK in json.dumps(upstream.bodies[-1]["messages"])
    # uvicorn shuts down (in-flight requests finished, the lifespan closed), then re-raises
    # the signal, as a process stopped by SIGTERM should.
    assert code in (0, -signal.SIGTERM) and "Application shutdown complete" in err, err[-2000:]
    assert "Uvicorn running on http://127.0.0.1:" in err and KEY not in err
    events, _ = read_trace(tmp_path / "cli")
    assert events[-1].event == "episode_end"  # the shutdown closed the session's trace


def test_bad_options_are_refused_with_a_message() -> None:
    done = subprocess.run(
        [POS, "serve", "--upstream", "127.0.0.1:9/v1"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "http://" in done.stderr
    done = subprocess.run(
        [POS, "serve", "--upstream", "http://127.0.0.1:9/v1", "--policy", "kill"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "observe, nudge or block" in done.stderr


# -- in front of the embedded model ---------------------------------------------------------------


@pytest.fixture
def llama_tools_server(tmp_path: Path) -> Iterator[str]:
    from test_llm_server import serve_embedded_model

    yield from serve_embedded_model(tmp_path, "--chat_format", "chatml-function-calling")


@pytest.mark.slow
def test_pos_serve_stands_in_front_of_the_embedded_model(
    tmp_path: Path, llama_tools_server: str
) -> None:
    process, url = _start(llama_tools_server, tmp_path / "traces", "--policy", "nudge")
    try:
        from openai import OpenAI

        client: Any = OpenAI(
            base_url=f"{url}/v1",
            api_key="sk-local",
            max_retries=0,
            default_headers={"X-PoS-Session": "llama"},
            timeout=300,
        )
        models = client.models.list()
        fresh = client.chat.completions.with_raw_response.create(
            model="smollm", messages=_loop_messages(0), tools=[READ_TOOL], max_tokens=64
        )
        looped = client.chat.completions.with_raw_response.create(
            model="smollm", messages=_loop_messages(6), tools=[READ_TOOL], max_tokens=64
        )
        with client.chat.completions.with_streaming_response.create(
            model="smollm", messages=_loop_messages(6)[:2], max_tokens=16, stream=True
        ) as streamed:
            stream_headers = dict(streamed.headers)
            chunks = [line for line in streamed.iter_lines() if line.startswith("data: ")]
    finally:
        code, err = _stop(process)
    assert [m.id for m in models.data] == ["smollm"]
    assert fresh.headers["x-pos-trapped"] == "false"
    assert looped.headers["x-pos-trapped"] == "true"
    # onset at step 3 (the same call and output a third time), so the level at step 6 is block;
    # under --policy nudge that level is reported and the request still goes through
    assert looped.headers["x-pos-escalation"] == "block"
    answer = looped.parse().choices[0]  # the model answered the request with the note in it
    assert answer.message.content or answer.message.tool_calls
    assert stream_headers["x-pos-session"] == "llama" and chunks[-1] == "data: [DONE]"
    assert code in (0, -signal.SIGTERM) and "Application shutdown complete" in err, err[-2000:]
