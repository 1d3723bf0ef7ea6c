"""Each extra's commands work with that extra alone, as getting-started.md's table says: the
wheel with `[cli]` in an empty venv runs `pos version`, `pos envs` and `pos doctor`; with
`[serve]` alone, `pos serve` starts and answers a chat request on 127.0.0.1 in front of a
scripted upstream. Neither venv has numpy (the `bench` extra).

Slow: it builds the wheel and two venvs with uv (from uv's cache, else from PyPI).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from test_core_install import ROOT, _uv, _uv_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = _uv()
    dist = tmp_path_factory.mktemp("dist")
    _uv_run(uv, "build", "--wheel", "--out-dir", str(dist), str(ROOT), env=_clean_env())
    (built,) = dist.glob("pos_agent-*.whl")
    return built


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH (it would put this checkout's sources first), no venv of ours."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("UV_PROJECT_ENVIRONMENT", None)
    return env


def _venv_with(wheel: Path, extra: str, folder: Path) -> Path:
    """An empty venv with `pos-agent[extra]` from the wheel; its bin folder."""
    uv, env = _uv(), _clean_env()
    _uv_run(uv, "venv", str(folder), "--python", sys.executable, env=env)
    python = folder / "bin" / "python"
    requirement = f"pos-agent[{extra}] @ {wheel.as_uri()}"
    _uv_run(uv, "pip", "install", "--python", str(python), requirement, env=env)
    absent = subprocess.run(
        [str(python), "-c", "import importlib.util as u; print(u.find_spec('numpy') is None)"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert absent.stdout.strip() == "True", "numpy came with the extra"
    return folder / "bin"


def _pos(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "pos"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**_clean_env(), "COLUMNS": "200", "NO_COLOR": "1"},
        cwd=cwd,
    )


def test_the_cli_extra_alone_runs_the_cli_commands(wheel: Path, tmp_path: Path) -> None:
    bin_dir = _venv_with(wheel, "cli", tmp_path / "venv")
    version = _pos(bin_dir, "version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == "0.1.0", version.stderr
    envs = _pos(bin_dir, "envs", cwd=tmp_path)
    assert envs.returncode == 0, envs.stderr[-2000:]
    assert "alfworld-mini" in envs.stdout and "Traceback" not in envs.stderr
    # The scripted model answers without any other extra: exit 0 means every check it makes
    # of a model passed; missing optional packages are warnings.
    doctor = _pos(bin_dir, "doctor", "--model", "scripted", cwd=tmp_path)
    assert doctor.returncode == 0, doctor.stdout[-2000:] + doctor.stderr[-2000:]
    assert "Traceback" not in doctor.stdout + doctor.stderr
    # A command whose extra is missing says which one, without a traceback.
    bench = _pos(bin_dir, "bench", "--help", cwd=tmp_path)
    assert bench.returncode == 2 and 'pip install "pos-agent[bench]"' in bench.stderr


class _Upstream(BaseHTTPRequestHandler):
    """A scripted chat server: every request gets the same short answer."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.seen.append(body)
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hello from upstream"},
                    "finish_reason": "stop",
                }
            ],
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture()
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _post(url: str, body: dict[str, Any], deadline: float) -> tuple[int, dict[str, str], bytes]:
    """POST with the standard library (the test's venv is not the one under test), retried
    while the server is still starting."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    while True:
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, dict(answer.headers), answer.read()
        except (ConnectionError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_serve_extra_alone_runs_pos_serve(wheel: Path, tmp_path: Path, upstream: str) -> None:
    bin_dir = _venv_with(wheel, "serve", tmp_path / "venv")
    port = _free_port()
    process = subprocess.Popen(
        [str(bin_dir / "pos"), "serve", "--upstream", upstream, "--port", str(port), "--no-trace"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_clean_env(),
        cwd=tmp_path,
    )
    try:
        status, headers, content = _post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            {"model": "fake", "messages": [{"role": "user", "content": "hi"}]},
            deadline=time.monotonic() + 60,
        )
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=60)
    assert status == 200, output
    assert json.loads(content)["choices"][0]["message"]["content"] == "hello from upstream"
    lowered = {k.lower(): v for k, v in headers.items()}
    assert lowered["x-pos-trapped"] == "false" and lowered["x-pos-step"] == "0"
    assert _Upstream.seen[-1]["messages"] == [{"role": "user", "content": "hi"}]
    assert "Traceback" not in output, output
