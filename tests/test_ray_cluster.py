"""`pos bench --executor ray` on a real two-node Ray cluster on 127.0.0.1 (CI).

A head and one more worker node are started with `ray start` (loopback only, free ports, their
own temp folders, no dashboard, a small object store, no usage stats), each in its own session
so that every process it starts can be found and stopped by its session id. An alfworld-mini
bench plays through the cluster; the worker node is killed while it plays a case, and that
case is recorded `infra_error` (never scored, no retries asked); `--resume` plays it again on
the head; then every result equals the local executor's for the same cases, and no process
either node or the bench started is left.

The model is the tests' scripted OpenAI-compatible server (tests/fake_openai.py: the smallest
valid answer to every schema, after a fixed latency), so that a case lasts long enough to be
killed in the middle of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fake_openai import Behaviour, fake_openai
from pos_agent.events import ActionEvent
from pos_agent.trace import read_events

BIN = Path(sys.executable).parent
POS, RAY = str(BIN / "pos"), str(BIN / "ray")
CASES = 4
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path(RAY).exists(), reason="no ray")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def processes() -> Iterator[tuple[int, int, str, str]]:
    """(pid, session id, state, command line) of every process."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        yield int(entry.name), int(fields[3]), fields[0], cmdline


def left_over(sessions: set[int], marker: str) -> list[str]:
    """Live processes of these sessions, or whose command line names `marker`."""
    return [
        f"{pid} {cmd[:100]}"
        for pid, sid, state, cmd in processes()
        if state != "Z" and pid != os.getpid() and (sid in sessions or marker in cmd)
    ]


def kill_sessions(sessions: set[int], marker: str) -> None:
    for pid, sid, state, cmd in processes():
        if state != "Z" and pid != os.getpid() and (sid in sessions or marker in cmd):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


class Node:
    """One `ray start --block` in its own session (the session id is its pid)."""

    def __init__(self, root: Path, name: str, env: dict[str, str], *args: str) -> None:
        self.name = name
        self.tmp = root / f"{name}-tmp"  # where this node's case runners keep their scratch
        self.tmp.mkdir()
        self.log = root / f"{name}.log"
        command = [
            RAY, "start", "--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
            "--object-store-memory", str(80 * 1024 * 1024), "--disable-usage-stats",
            "--node-manager-port", str(free_port()), "--object-manager-port", str(free_port()),
            "--metrics-export-port", str(free_port()),
            "--runtime-env-agent-port", str(free_port()),
            "--dashboard-agent-listen-port", str(free_port()),
            "--dashboard-agent-grpc-port", str(free_port()),
            *args,
        ]  # fmt: skip
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                command,
                env={**env, "TMPDIR": str(self.tmp)},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def started(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"ray start of the {self.name} exited:\n{self.log.read_text()}")
        return "Ray runtime started" in self.log.read_text()

    def playing(self, run: str) -> bool:
        """A case is in progress in this node's scratch folder (2 steps played at least)."""
        for trace in self.tmp.glob(f"pos-ray-cases-*/{run}/*/events.jsonl"):
            try:
                if trace.read_text().count('"observation"') >= 2:
                    return True
            except OSError:
                continue
        return False


def bench(out: Path, run: str, url: str, env: dict[str, str], *extra: str) -> Any:
    command = [
        POS, "bench", "alfworld-mini", "--agents", "raw", "--limit", str(CASES),
        "--model", "openai:m", "--base-url", url, "--out", str(out), "--run", run, *extra,
    ]  # fmt: skip
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def finish(process: Any, timeout: float = 600) -> tuple[int, str]:
    output, _ = process.communicate(timeout=timeout)
    return process.returncode, output.decode("utf-8", "replace")


def outcomes(run_dir: Path) -> dict[str, tuple[Any, ...]]:
    """Per case: status, success, steps and the actions played, as the trace records them."""
    found = {}
    for case in sorted(run_dir.glob("raw__*")):
        result = json.loads((case / "result.json").read_text())
        traced = (case / "events.jsonl").is_file()  # a lost case has its result alone
        actions = (
            [e.action for e in read_events(case) if isinstance(e, ActionEvent)] if traced else None
        )
        found[case.name] = (result["status"], result["success"], result["steps"], actions)
    return found


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """Ray's session folders hold Unix sockets, whose paths must stay under 108 bytes."""
    path = Path(tempfile.mkdtemp(prefix="pos-ray-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_bench_on_a_two_node_ray_cluster_survives_a_lost_node_and_leaves_nothing(
    tmp_path: Path, short_dir: Path
) -> None:
    marker = str(short_dir)
    env = {
        **os.environ,
        "RAY_DISABLE_USAGE_STATS": "1",
        "RAY_AUTH_MODE": "disabled",  # loopback only; no token file to share between nodes
        "RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper": "true",
        "RAY_process_group_cleanup_enabled": "true",
        "RAY_health_check_period_ms": "500",  # the lost node is noticed within seconds
        "RAY_health_check_timeout_ms": "500",
        "RAY_health_check_failure_threshold": "3",
    }
    out = tmp_path / "runs"
    sessions: set[int] = set()
    nodes: list[Node] = []
    try:
        gcs = free_port()
        head = Node(short_dir, "head", env, "--head", "--port", str(gcs),
                    "--include-dashboard=false", "--temp-dir", str(short_dir / "ray"))  # fmt: skip
        nodes.append(head)
        sessions.add(head.process.pid)
        wait_for(head.started, 180, "the head node")
        worker = Node(short_dir, "worker", env, "--address", f"127.0.0.1:{gcs}")
        nodes.append(worker)
        sessions.add(worker.process.pid)
        wait_for(worker.started, 180, "the worker node")

        with fake_openai(Behaviour(latency_s=0.1)) as (url, _):
            ray = ("--executor", "ray", "--ray-address", f"127.0.0.1:{gcs}")
            played = bench(out, "r", url, env, *ray, "--max-concurrency", "2",
                           "--infra-retries", "0")  # fmt: skip
            try:
                wait_for(lambda: worker.playing("r"), 300, "a case playing on the worker node")
            except AssertionError:
                played.kill()
                raise AssertionError(finish(played)[1]) from None
            worker_sessions = {worker.process.pid}
            kill_sessions(worker_sessions, str(worker.tmp))  # the node is gone, all at once
            wait_for(lambda: not left_over(worker_sessions, str(worker.tmp)), 10, "the node")
            code, output = finish(played)
            assert code == 3, output  # incomplete: an infra_error, for --resume
            first = outcomes(out / "r")
            lost = [name for name, got in first.items() if got[0] == "infra_error"]
            assert len(lost) == 1, (first, output)
            assert (
                "was lost" in json.loads((out / "r" / lost[0] / "result.json").read_text())["error"]
            )
            assert len(first) == CASES
            summary = json.loads((out / "r" / "summary.json").read_text())
            assert summary["scored"] == CASES - 1, "a lost node's case is never scored"

            code, output = finish(bench(out, "r", url, env, *ray, "--resume"))
            assert code == 0, output
            code, output = finish(bench(out, "local", url, env))
            assert code == 0, output
        on_ray, local = outcomes(out / "r"), outcomes(out / "local")
        assert set(on_ray) == set(local) and len(local) == CASES
        assert on_ray == local, "the Ray executor's results differ from the local executor's"
        # The bench's own case runners end with their driver; idle Ray workers are Ray's.
        wait_for(
            lambda: not [p for p in left_over(sessions, marker) if "_CaseRunner" in p],
            30,
            "the bench's case runners to end",
        )
    finally:
        for node in nodes:
            if node.process.poll() is None:
                node.process.terminate()  # `ray start --block` stops its node's processes
        for node in nodes:
            try:
                node.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                node.process.kill()
        try:
            wait_for(lambda: not left_over(sessions, marker), 30, "the cluster to stop")
        finally:
            leftovers = left_over(sessions, marker)
            kill_sessions(sessions, marker)
    assert not leftovers, "processes left behind:\n" + "\n".join(leftovers)
