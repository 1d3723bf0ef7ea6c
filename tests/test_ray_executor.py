"""The Ray executor (bench/executors/ray.py): records landed by the driver, options refused with
the wrong executor, a Ray started for the run (results equal the local executor's, nothing left
running), Ctrl-C and a kill of the driver, and the raylet's clean-up of environment processes."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import pos_agent.cli.bench  # noqa: F401
from fake_openai import Behaviour, fake_openai
from pos_agent.bench.config import Timeline
from pos_agent.bench.executors import executor_for
from pos_agent.bench.executors.ray import RayUnavailableError, collect_records, land
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.runner import BenchConfig, run_bench
from pos_agent.bench.suite import load_suite
from pos_agent.cli.app import app

POS = str(Path(sys.executable).parent / "pos")
TASKS = "[heat-mug, cool-apple, clean-cloth, examine-book]"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})


def write_suite(tmp_path: Path, max_steps: int = 4) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: rayed\nenv: toy\ntasks: {TASKS}\nmax_steps: {max_steps}\n")
    return str(path)


# -- without Ray ---------------------------------------------------------------------------------


def test_the_records_shipped_are_the_case_folders_top_files(tmp_path: Path) -> None:
    case = tmp_path / "case"
    (case / "env" / "data").mkdir(parents=True)
    (case / "events.jsonl").write_text('{"event": "x"}\n')
    (case / "result.json").write_text("{}")
    (case / ".lock").write_text("123")
    (case / ".result.json.abc.tmp").write_text("half")
    (case / "env" / "data" / "big.bin").write_bytes(b"0" * 100)
    assert collect_records(case) == {"events.jsonl": b'{"event": "x"}\n', "result.json": b"{}"}
    assert collect_records(tmp_path / "missing") == {}


def test_landing_replaces_the_old_records_and_writes_the_result_last(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "raw__case"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text('{"old": true}')
    (folder / "events.jsonl").write_text("old trace\n")
    order: list[str] = []
    real_replace = os.replace

    def noting(src: Any, dst: Any) -> None:
        order.append(Path(dst).name)
        real_replace(src, dst)

    files = {"result.json": b'{"new": 1}', "events.jsonl": b"new\n", "notes.txt": b"n"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "replace", noting)
        land(files, folder)
    assert order[-1] == "result.json" and sorted(order) == sorted(files)
    assert (folder / "result.json").read_bytes() == b'{"new": 1}'
    assert (folder / "events.jsonl").read_bytes() == b"new\n"
    assert not list(folder.glob(".*.tmp"))


def test_landing_a_case_another_process_writes_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "raw__case"
    folder.mkdir()
    with FileLock(folder / ".lock"), pytest.raises(LockHeld):
        land({"result.json": b"{}"}, folder)
    assert not (folder / "result.json").exists()


@pytest.mark.parametrize(
    "extra",
    [["--max-concurrency", "2"], ["--ray-address", "auto"], ["--model-concurrency", "3"]],
    ids=str,
)
def test_ray_options_with_the_local_executor_are_refused(tmp_path: Path, extra: list[str]) -> None:
    done = invoke("bench", write_suite(tmp_path), "--model", "scripted", "--out",
                  str(tmp_path / "runs"), "--run", "x", *extra)  # fmt: skip
    assert done.exit_code == 2
    assert "--executor ray only" in done.output
    assert not (tmp_path / "runs" / "x").exists()


def test_workers_with_the_ray_executor_are_refused(tmp_path: Path) -> None:
    done = invoke("bench", write_suite(tmp_path), "--model", "scripted", "--executor", "ray",
                  "--workers", "2", "--out", str(tmp_path / "runs"), "--run", "x")  # fmt: skip
    assert done.exit_code == 2
    assert "--max-concurrency" in done.output


def test_an_unknown_executor_is_refused() -> None:
    with pytest.raises(ValueError, match="local, ray"):
        executor_for("slurm")


def test_without_ray_installed_the_run_is_refused_with_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    specs = load_suite(write_suite(tmp_path)).cases(["raw"], "scripted")
    config = BenchConfig(run_dir=tmp_path / "runs" / "x", executor="ray", preflight=False)
    with pytest.raises(RayUnavailableError, match=r"pos-agent\[ray\]"):
        run_bench(specs, config)


# -- a Ray started for the run ---------------------------------------------------------------------


def children_named(names: tuple[str, ...]) -> list[str]:
    """Live descendants of this process whose command line names one of `names`."""
    mine, found = {os.getpid()}, []
    table = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            table.append((int(entry.name), int(fields[1]), fields[0], cmd))
    grew = True
    while grew:
        grew = False
        for pid, ppid, _, _ in table:
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    for pid, _, state, cmd in table:
        if pid in mine and state != "Z" and any(n in cmd for n in names):
            found.append(f"{pid} {cmd[:80]}")
    return found


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def outcomes(run_dir: Path) -> dict[str, tuple[Any, ...]]:
    found = {}
    for case in sorted(run_dir.glob("*__*")):
        result = json.loads((case / "result.json").read_text())
        trace = (case / "events.jsonl").read_text().count("\n")
        found[case.name] = (result["status"], result["success"], result["steps"], trace)
    return found


@pytest.mark.slow
def test_a_ray_started_for_the_run_plays_as_the_local_executor_and_stops(tmp_path: Path) -> None:
    specs = load_suite(write_suite(tmp_path)).cases(["raw", "expert"], "scripted")
    timeline = Timeline()
    sigchld = signal.getsignal(signal.SIGCHLD)
    ray_results = run_bench(
        specs,
        BenchConfig(run_dir=tmp_path / "ray", executor="ray", max_concurrency=2, timeline=timeline),
    )
    assert not children_named(("raylet", "gcs_server", "_CaseRunner")), "Ray was left running"
    # Ray ignores SIGCHLD while it runs; left so, later children's exit codes read as 0
    assert signal.getsignal(signal.SIGCHLD) == sigchld
    local_results = run_bench(specs, BenchConfig(run_dir=tmp_path / "local"))
    assert len(ray_results) == len(local_results) == 8
    assert outcomes(tmp_path / "ray") == outcomes(tmp_path / "local")
    assert json.loads((tmp_path / "ray" / "summary.json").read_text())["finished"] == 8
    assert {r.run for r in ray_results} == {"ray"}
    overheads = [timeline.overhead_s(s.folder) for s in specs]
    assert all(o is not None for o in overheads), "every case's round trip was timed"


def bench_process(tmp_path: Path, url: str, scratch: Path) -> subprocess.Popen[bytes]:
    command = [
        POS, "bench", write_suite(tmp_path, 40), "--agents", "raw", "--model", "openai:m",
        "--base-url", url, "--executor", "ray", "--max-concurrency", "2",
        "--out", str(tmp_path / "runs"), "--run", "k",
    ]  # fmt: skip
    env = {**os.environ, "TMPDIR": str(scratch)}  # the case runners' scratch folders
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )


def in_session(sid: int) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                found.append(f"{entry.name} {cmd[:80]}")
    return found


def playing(scratch: Path) -> bool:
    return any(
        t.read_text().count('"observation"') >= 2
        for t in scratch.glob("pos-ray-cases-*/k/*/events.jsonl")
    )


@pytest.fixture
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="pos-ray-", dir="/tmp"))  # Ray's socket paths are short
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "kill-9"])
def test_stopping_the_driver_leaves_no_process(tmp_path: Path, scratch: Path, how: str) -> None:
    with fake_openai(Behaviour(latency_s=0.1)) as (url, behaviour):
        process = bench_process(tmp_path, url, scratch)
        try:
            wait_for(lambda: playing(scratch), 240, "a case in progress")
        except AssertionError:
            process.kill()
            raise AssertionError(process.communicate()[0].decode()) from None
        stop = {"ctrl-c": signal.SIGINT, "sigterm": signal.SIGTERM, "kill-9": signal.SIGKILL}
        os.kill(process.pid, stop[how])
        output = process.communicate(timeout=120)[0].decode("utf-8", "replace")
        stopped_at = time.monotonic()
        try:
            wait_for(lambda: not in_session(process.pid), 30, "every process of the run to end")
        finally:
            left = in_session(process.pid)
            for line in left:
                os.kill(int(line.split()[0]), signal.SIGKILL)
        assert not left, left
        time.sleep(1.0)
        late = [t for t in behaviour.request_times if t > stopped_at + 0.5]
        assert not late, f"{len(late)} model call(s) after the run stopped"
    run = tmp_path / "runs" / "k"
    if how != "kill-9":
        assert process.returncode == 130, output
        statuses = [json.loads(p.read_text())["status"] for p in run.glob("*/result.json")]
        assert "interrupted" in statuses, (statuses, output)
        assert json.loads((run / "summary.json").read_text())["finished"] == len(statuses)
    assert not list(scratch.glob("pos-ray-cases-*/k/*/result.json")) or how == "kill-9"


@pytest.mark.slow
def test_the_raylet_started_for_a_run_kills_a_killed_cases_grandchildren(tmp_path: Path) -> None:
    """Environment processes (JVMs, MCP servers) are a worker's grandchildren: when the worker
    is killed, the raylet a run starts (with the subreaper setting) kills them too."""
    from pos_agent.bench.executors.ray import connected

    pid_file = tmp_path / "sleeper.pid"

    class Spawner:
        def spawn(self, path: str) -> bool:
            from pos_agent.bench.executors.ray import raylet_cleans_up

            # `sh` starts `sleep` in the background and exits: an orphan, as a crashed
            # environment's servers are.
            subprocess.run(["sh", "-c", f"sleep 300 & echo $! > {path}"], check=True)
            return raylet_cleans_up()

    with connected(None) as ray:
        actor = ray.remote(Spawner).options(num_cpus=0).remote()
        assert ray.get(actor.spawn.remote(str(pid_file))) is True, "the raylet has the setting"
        sleeper = int(pid_file.read_text())
        assert Path(f"/proc/{sleeper}").exists()
        ray.kill(actor, no_restart=True)

        def gone() -> bool:
            try:
                state = Path(f"/proc/{sleeper}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                return True
            return state == "Z"

        try:
            wait_for(gone, 30, "the orphaned grandchild to be killed")
        finally:
            if not gone():
                os.kill(sleeper, signal.SIGKILL)


@pytest.mark.slow
def test_the_cluster_limit_keeps_one_request_in_flight_per_model(tmp_path: Path) -> None:
    from pos_agent.llm import RateLimits

    latency = 0.05
    with fake_openai(Behaviour(latency_s=latency)) as (url, behaviour):
        specs = load_suite(write_suite(tmp_path, 6)).cases(["raw"], "openai:m")[:2]
        config = BenchConfig(
            run_dir=tmp_path / "limited",
            executor="ray",
            max_concurrency=2,
            model_options={"base_url": url, "api_key": "k", "max_retries": 0},
            rate_limits=RateLimits(concurrency=1),
            preflight=False,
        )
        results = run_bench(specs, config)
        times = sorted(behaviour.request_times)
    assert all(r.status in ("success", "failure") for r in results), [r.error for r in results]
    assert len(times) >= 8
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # one request at a time: the next one arrives only after the previous one was answered
    assert min(gaps) >= latency * 0.9, sorted(gaps)[:3]


def test_the_watchdog_notes_every_descendant_of_the_driver() -> None:
    from pos_agent.bench.executors.ray_reaper import descendants

    table = {
        10: (1, "a"),  # the driver
        11: (10, "b"),  # gcs_server
        12: (10, "c"),  # raylet
        13: (12, "d"),  # an agent the raylet started
        14: (13, "e"),
        20: (1, "f"),  # another program: never touched
    }
    assert descendants(10, table) == {11: "b", 12: "c", 13: "d", 14: "e"}
    assert descendants(20, table) == {}
