"""The openai: backend against a real OpenAI-compatible server: llama-cpp-python's own server
(its `server` extra) serving the embedded model on loopback. This is the set-up of issue 10
section 7, where every call used to fail: the server refuses response_format json_schema with
an HTTP 500, and the case ended as infra_error after five retries."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pos_agent.events import ModelCallEvent, ModelFailureEvent
from pos_agent.trace import read_events, read_result

POS = str(Path(sys.executable).parent / "pos")
STARTUP_S = 180.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_serving(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"the server did not answer within {STARTUP_S:g}s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[str]:
    yield from serve_embedded_model(tmp_path)


@pytest.fixture
def llama_tools_server(tmp_path: Path) -> Iterator[str]:
    # llama-cpp-python answers `tools` with tool_calls under its ChatML function-calling chat
    # format (SmolLM2's template is ChatML): a grammar picks a function, then its arguments.
    yield from serve_embedded_model(tmp_path, "--chat_format", "chatml-function-calling")


def serve_embedded_model(tmp_path: Path, *extra: str) -> Iterator[str]:
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python's server extra")
    from pos_agent.llm._local import embedded_gguf_path

    port = free_port()
    log = tmp_path / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(embedded_gguf_path()),
        "--model_alias",
        "smollm",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        "--n_threads",
        str(os.cpu_count() or 1),
        *extra,
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_serving(process, url, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


@pytest.mark.slow
def test_pos_run_and_doctor_against_llama_cpp_python_server(
    llama_server: str, tmp_path: Path
) -> None:
    command = [
        POS,
        "run",
        "alfworld-mini",
        "heat-mug",
        "--agent",
        "pos",
        "--model",
        "openai:smollm",
        "--base-url",
        llama_server,
        "--max-steps",
        "3",
        "--out",
        str(tmp_path),
        "--run",
        "server",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    case = tmp_path / "server" / "pos__alfworld-mini__heat-mug"
    result = read_result(case)
    assert result is not None and result.status in ("success", "failure"), output
    assert result.steps >= 1
    events = list(read_events(case))
    calls = [e for e in events if isinstance(e, ModelCallEvent)]
    failures = [e for e in events if isinstance(e, ModelFailureEvent)]
    assert calls, output
    assert {"policy", "belief"} <= {e.role for e in calls}
    assert not [f for f in failures if f.kind in ("transport", "timeout", "config")], failures
    # Every structured call after the one refusal went out as json_object with the schema.
    assert {e.structured_mode for e in calls} == {"json_object_schema"}, calls
    # The server refused json_schema once; every structured call then went out as json_object
    # carrying the schema, which this server enforces with a grammar.
    assert "refused response_format json_schema" in done.stderr, output
    assert "using response_format json_object with a schema from now on" in done.stderr
    assert done.stderr.count("refused response_format") == 1, done.stderr

    doctor = subprocess.run(
        [POS, "doctor", "--model", "openai:smollm", "--base-url", llama_server],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "json_object_schema" in doctor.stdout, doctor.stdout


@pytest.mark.slow
def test_a_native_tools_run_against_llama_cpp_python_server(
    llama_tools_server: str, tmp_path: Path
) -> None:
    """Issue 27: a tool environment's decisions (ClinDiag: a few tools, a prompt that fits the
    8K context) go as OpenAI function definitions and the server's tool_calls come back as the
    policy's calls."""
    command = [
        POS, "run", "clindiag", "10200744", "--agent", "raw", "--model", "openai:smollm",
        "--base-url", llama_tools_server, "--max-steps", "2", "--out", str(tmp_path),
        "--run", "tools",
        # The 135M model pads a tool argument until its budget runs out; the compact profile's
        # bounds (128 tokens, 60-character arguments) keep each call short on two cores.
        "--profile", "compact",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    case = tmp_path / "tools" / "raw__clindiag__10200744"
    result = read_result(case)
    assert result is not None and result.status in ("success", "failure"), output
    events = list(read_events(case))
    calls = [e for e in events if isinstance(e, ModelCallEvent) and e.role == "policy"]
    failures = [e for e in events if isinstance(e, ModelFailureEvent)]
    assert calls, output
    assert not [f for f in failures if f.kind in ("transport", "timeout", "config")], failures
    assert {e.structured_mode for e in calls} == {"tools"}, "negotiated, recorded per call"
    assert "refused native tool calling" not in done.stderr, done.stderr
    # At least one decision came back as the server's tool_calls, read into a call.
    assert any((e.output or {}).get("call", {}).get("tool") for e in calls), calls
