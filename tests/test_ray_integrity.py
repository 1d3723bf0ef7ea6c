"""Run integrity, third pass, for the Ray executor (issue 37.3, 37.4, 37.7): the driver never
waits forever on a dead node, a stop ends every model request of the run at once and keeps what
the interrupted cases played, and a Ray started for a run listens on 127.0.0.1 only.

The driver's health logic runs against a small fake of Ray (calls that never answer, nodes that
die); the stop and the listening sockets against a real Ray started for the run (slow)."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fake_openai import Behaviour, fake_openai
from pos_agent.bench.case import CaseSpec
from pos_agent.bench.config import BenchConfig
from pos_agent.bench.executors.base import CaseQueue
from pos_agent.bench.executors.ray import ActorPool, RayUnavailableError, drive_cases
from pos_agent.bench.executors.ray_health import NodeWatch
from pos_agent.llm import (
    RequestsStopped,
    install_stop_check,
    resume_requests,
    stop_requests,
)
from pos_agent.llm._http import post_json
from pos_agent.trace import CaseResult

POS = str(Path(sys.executable).parent / "pos")


# -- a fake Ray: calls answer when the test says so, nodes die when it says so ---------------------


class FakeRef:
    def __init__(self, value: Any = None, done: bool = True) -> None:
        self.value = value
        self.done = done


class FakeActor:
    def __init__(self, cluster: FakeRay, node: str) -> None:
        self.cluster = cluster
        self.node = node
        self.where = _Method(lambda: FakeRef({"node": node, "pid": 1, "cleanup": True}))
        self.play = _Method(lambda *args: cluster.play(self, *args))


class _Method:
    def __init__(self, call: Callable[..., FakeRef]) -> None:
        self.remote = call


class _Errors:
    class RayError(Exception):
        pass

    class RayTaskError(RayError):
        pass

    class TaskCancelledError(RayError):
        pass


class FakeRay:
    """What the driver calls of Ray. Every case call hangs (as on a node marked dead whose
    calls never fail); `nodes()` reports the nodes `alive` names."""

    exceptions = _Errors

    def __init__(self, nodes: list[str]) -> None:
        self.alive = set(nodes)
        self.nodes_of = itertools.cycle(nodes)
        self.killed: list[FakeActor] = []
        self.played: list[str] = []

    def remote(self, cls: Any) -> Any:
        cluster = self

        class Handle:
            def options(self, **_: Any) -> Handle:
                return self

            def remote(self, *args: Any) -> Any:
                if cls.__name__ == "_CaseRunner":
                    return FakeActor(cluster, next(cluster.nodes_of))
                return object()  # the limiter and the stop board

        return Handle()

    def play(self, actor: FakeActor, spec: CaseSpec, *_: Any) -> FakeRef:
        self.played.append(f"{spec.folder}@{actor.node}")
        return FakeRef(done=False)

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": float(len(self.alive))}

    def available_resources(self) -> dict[str, float]:
        return {"CPU": 1.0}

    def wait(self, refs: list[FakeRef], num_returns: int, timeout: float) -> Any:
        ready = [r for r in refs if r.done][:num_returns]
        if not ready:
            time.sleep(min(timeout, 0.01))
        return ready, [r for r in refs if r not in ready]

    def get(self, ref: FakeRef) -> Any:
        return ref.value

    def kill(self, actor: Any, no_restart: bool = True) -> None:
        self.killed.append(actor)

    def nodes(self) -> list[dict[str, Any]]:
        names = {"node-a", "node-b"}
        return [
            {"NodeID": name, "Alive": name in self.alive, "Resources": {"CPU": 1.0}}
            for name in sorted(names)
        ]


def one_case(tmp_path: Path) -> tuple[CaseQueue, BenchConfig, list[CaseResult]]:
    spec = CaseSpec(env="toy", task="heat-mug", agent="raw", model="scripted", max_steps=2)
    config = BenchConfig(run_dir=tmp_path / "run", executor="ray", max_concurrency=1)
    return CaseQueue([spec], 1, 0.0), config, []


def fast_watch(monkeypatch: pytest.MonkeyPatch, **overrides: float) -> None:
    settings = {"every_s": 0.05, "answer_s": 0.5, "unreachable_s": 1.0, **overrides}
    original = NodeWatch.__init__

    def quick(self: NodeWatch, ray: Any, run_name: str, **_: float) -> None:
        original(self, ray, run_name, **settings)

    monkeypatch.setattr(NodeWatch, "__init__", quick)


def drive_in_thread(ray: FakeRay, tmp_path: Path) -> tuple[list[CaseResult], BaseException | None]:
    queue, config, delivered = one_case(tmp_path)
    pool = ActorPool(ray, config)
    outcome: list[BaseException] = []

    def drive() -> None:
        try:
            drive_cases(pool, queue, config, delivered.append)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "the driver hung"
    return delivered, outcome[0] if outcome else None


# -- 37.3 a dead node ------------------------------------------------------------------------------


def test_a_case_on_a_dead_node_is_retried_elsewhere_then_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_watch(monkeypatch)
    ray = FakeRay(["node-a", "node-b"])

    def kill_nodes_as_cases_start() -> None:
        while len(ray.played) < 2 and ray.alive:
            if ray.played:
                ray.alive.discard(ray.played[-1].split("@")[1])
            time.sleep(0.01)
        ray.alive.clear()

    threading.Thread(target=kill_nodes_as_cases_start, daemon=True).start()
    delivered, error = drive_in_thread(ray, tmp_path)
    assert len(ray.played) == 2, "the case was retried on the other node"
    assert ray.played[0].split("@")[1] != ray.played[1].split("@")[1]
    if error is None:
        assert [r.status for r in delivered] == ["infra_error"]
        assert "died" in (delivered[0].error or "")
    else:
        assert isinstance(error, RayUnavailableError)
        assert "--resume" in str(error)


def test_a_cluster_without_a_live_node_ends_the_run_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_watch(monkeypatch)
    ray = FakeRay(["node-a"])

    def kill_after_start() -> None:
        while not ray.played:
            time.sleep(0.01)
        ray.alive.clear()

    threading.Thread(target=kill_after_start, daemon=True).start()
    _, error = drive_in_thread(ray, tmp_path)
    assert isinstance(error, RayUnavailableError), error
    assert "--run run --resume" in str(error)


def test_a_cluster_that_stops_answering_ends_the_run_within_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_watch(monkeypatch, unreachable_s=0.5)
    ray = FakeRay(["node-a"])

    def hang() -> list[dict[str, Any]]:
        time.sleep(60)
        return []

    started = time.monotonic()
    monkeypatch.setattr(ray, "nodes", hang)
    _, error = drive_in_thread(ray, tmp_path)
    assert isinstance(error, RayUnavailableError) and "not said which nodes live" in str(error)
    assert time.monotonic() - started < 10


# -- 37.4 a stop ends the model requests at once ---------------------------------------------------


@pytest.fixture
def stop_state() -> Any:
    resume_requests()
    yield
    resume_requests()


def test_no_request_is_sent_once_the_run_is_stopped(stop_state: None) -> None:
    with fake_openai(Behaviour()) as (url, behaviour):
        import httpx

        with httpx.Client() as client:
            stop_requests()
            with pytest.raises(RequestsStopped):
                post_json(client, f"{url}/chat/completions", {}, {}, timeout_s=5, max_bytes=1000)
    assert behaviour.request_times == []


def test_a_request_in_flight_stops_waiting_when_a_stop_check_says_so(stop_state: None) -> None:
    stop_at = time.monotonic() + 0.5
    install_stop_check(lambda: time.monotonic() > stop_at)
    with fake_openai(Behaviour(latency_s=5.0)) as (url, _):
        import httpx

        with httpx.Client() as client:
            started = time.monotonic()
            with pytest.raises(RequestsStopped):
                post_json(client, f"{url}/chat/completions", {}, {}, timeout_s=30, max_bytes=1000)
    assert time.monotonic() - started < 2.0


# -- with a real Ray --------------------------------------------------------------------------------


def descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
            except OSError:
                continue
    found, grew = {root}, True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found - {root}


def listening(pids: set[int]) -> list[tuple[str, str]]:
    """(local address, process) of every TCP socket the processes listen on."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            found.append((line.split()[3], line.split("users:")[-1][:60]))
    return found


@pytest.mark.slow
def test_a_ray_started_for_a_run_listens_on_loopback_only() -> None:
    from pos_agent.bench.executors.ray_cluster import connected

    with connected(None) as ray:

        @ray.remote
        def pid() -> int:
            return os.getpid()

        assert ray.get(pid.remote()) != os.getpid()
        sockets = listening(descendants(os.getpid()) | {os.getpid()})
        assert len(sockets) >= 3, sockets  # GCS, raylet, workers at least
        loopback = ("127.0.0.1:", "[::1]:", "[::ffff:127.0.0.1]:")
        outside = [s for s in sockets if not s[0].startswith(loopback)]
        assert not outside, outside
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}


def write_suite(tmp_path: Path) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: stop\nenv: toy\ntasks: [heat-mug, cool-apple, clean-cloth, examine-book]\n"
        "max_steps: 40\n"
    )
    return str(path)


def _ray_bench(tmp_path: Path, url: str, scratch: Path) -> subprocess.Popen[bytes]:
    """`pos bench` of the suite on a Ray cluster of its own, against `url`, in its own session."""
    command = [
        POS, "bench", write_suite(tmp_path), "--agents", "raw", "--model", "openai:m",
        "--base-url", url, "--executor", "ray", "--max-concurrency", "2",
        "--out", str(tmp_path / "runs"), "--run", "k",
    ]  # fmt: skip
    return subprocess.Popen(
        command,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_for_requests(process: subprocess.Popen[bytes], behaviour: Behaviour, count: int) -> None:
    """Until the server has had `count` requests (the run still going), at most 240 s."""
    deadline = time.monotonic() + 240
    while len(behaviour.request_times) < count and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0].decode()
        time.sleep(0.1)


@pytest.mark.slow
def test_ctrl_c_under_ray_stops_the_requests_at_once_and_keeps_the_steps(tmp_path: Path) -> None:
    scratch = Path("/tmp") / f"pos-ray-stop-{os.getpid()}"  # Ray's socket paths are short
    scratch.mkdir(exist_ok=True)
    with fake_openai(Behaviour(latency_s=0.2)) as (url, behaviour):
        process = _ray_bench(tmp_path, url, scratch)
        try:
            _wait_for_requests(process, behaviour, 12)
            signalled = time.monotonic()
            os.kill(process.pid, signal.SIGINT)
            output = process.communicate(timeout=60)[0].decode("utf-8", "replace")
            exited = time.monotonic()
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
        # A request already on its way may land just after the signal; none may start later
        # than the stop's round trip (the signal, the board, the runner's next check).
        late = [t for t in behaviour.request_times if t > signalled + 1.0]
    assert process.returncode == 130, output
    assert not late, f"{len(late)} model request(s) reached the server after the stop"
    # Ray's own shutdown takes some of this; the cases themselves stop within a request.
    assert exited - signalled < 15, f"exit took {exited - signalled:.1f}s"
    folders = [p.parent for p in (tmp_path / "runs/k").glob("*/result.json")]
    interrupted = [
        (folder, result)
        for folder in folders
        if (result := json.loads((folder / "result.json").read_text()))["status"] == "interrupted"
    ]
    assert interrupted, output
    for folder, result in interrupted:
        trace = (folder / "events.jsonl").read_text() if (folder / "events.jsonl").exists() else ""
        assert result["steps"] > 0 and '"episode_end"' in trace, (result, output)


def session_processes(sid: int) -> dict[int, str]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                found[int(entry.name)] = cmd
    return found


@pytest.mark.slow
def test_a_node_dead_after_its_dashboard_agent_was_killed_never_hangs_the_run(
    tmp_path: Path,
) -> None:
    """The probe's reproduction: kill `ray::DashboardAgent` while cases play; the run used to
    hang with no message for 10 minutes. Now it ends within a bound, saying how to resume."""
    scratch = Path("/tmp") / f"pos-ray-dead-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    with fake_openai(Behaviour(latency_s=0.2)) as (url, behaviour):
        process = _ray_bench(tmp_path, url, scratch)
        try:
            _wait_for_requests(process, behaviour, 6)
            agents = [
                pid
                for pid, cmd in session_processes(process.pid).items()
                if "DashboardAgent" in cmd
            ]
            assert agents, session_processes(process.pid)
            for pid in agents:
                os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            output = process.communicate(timeout=180)[0].decode("utf-8", "replace")
            ended = time.monotonic()
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode != 0, output
    assert "--resume" in output, output
    assert ended - killed < 120, f"the run took {ended - killed:.0f}s to end"
    statuses = [
        json.loads(p.read_text())["status"] for p in (tmp_path / "runs/k").glob("*/result.json")
    ]
    assert all(s in ("success", "failure", "infra_error") for s in statuses), statuses
