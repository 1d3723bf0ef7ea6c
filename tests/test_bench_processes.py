"""Real `pos bench` processes, really killed: workers die with their parent, Ctrl-C stops a
bench after recording what it played, and a full disk stops it without a torn record."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from extras import needs_cli
from fake_openai import Behaviour, fake_openai
from pos_agent.events import EpisodeEndEvent, EpisodeStartEvent, ObservationEvent
from pos_agent.trace import read_events

POS = str(Path(sys.executable).parent / "pos")
TASKS = "[heat-mug, cool-apple, clean-cloth, examine-book, two-cds, put-keychain]"


def write_suite(tmp_path: Path, max_steps: int) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: procs\nenv: toy\ntasks: {TASKS}\nmax_steps: {max_steps}\n")
    return str(path)


def bench_command(suite: str, out: Path, url: str, workers: int) -> list[str]:
    return [
        POS, "bench", suite, "--agents", "raw", "--model", "openai:m", "--base-url", url,
        "--workers", str(workers), "--out", str(out), "--run", "k",
    ]  # fmt: skip


def workers_of(pid: int) -> list[int]:
    """Pool workers (multiprocessing spawn children) whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def steps_played(case: Path) -> int:
    if not (case / "events.jsonl").is_file():
        return 0
    observed = [e.step or 0 for e in read_events(case) if isinstance(e, ObservationEvent)]
    return max(observed, default=0)


@pytest.mark.slow
def test_kill_9_of_bench_kills_its_workers_and_resume_is_consistent(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    run_dir = out / "k"
    with fake_openai(Behaviour(latency_s=0.05)) as (url, behaviour):
        command = bench_command(write_suite(tmp_path, 12), out, url, workers=2)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(
                lambda: len(list(run_dir.glob("*/result.json"))) >= 1
                and any(steps_played(c) >= 2 for c in run_dir.glob("raw__*") if not (c / "result.json").exists()),
                180,
                "a finished case and one in progress",
            )  # fmt: skip
            pool = workers_of(process.pid)
            assert len(pool) == 2, pool
        finally:
            process.kill()  # SIGKILL to `pos bench` alone, not to its process group
            process.wait()
        killed_at = time.monotonic()
        try:
            wait_for(lambda: not any(alive(p) for p in pool), 5, "the workers to die")
        finally:
            for pid in pool:  # a failing run must not leave orphans behind either
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(1.0)
        late = [t for t in behaviour.request_times if t > killed_at + 0.5]
        assert not late, f"{len(late)} model call(s) after the kill: a worker outlived its parent"
        finished_before = len(list(run_dir.glob("*/result.json")))
        assert finished_before < 6, "the run finished before the kill; nothing was tested"
        resumed = subprocess.run(
            [*command, "--resume"], capture_output=True, text=True, timeout=600
        )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    cases = sorted(run_dir.glob("raw__*"))
    assert len(cases) == 6
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["methods"]["raw"]["cases"] == 6 and summary["finished"] == 6
    successes = 0
    for case in cases:
        result = json.loads((case / "result.json").read_text())
        events = list(read_events(case))
        first, last = events[0], events[-1]
        assert isinstance(first, EpisodeStartEvent) and isinstance(last, EpisodeEndEvent)
        assert last.status == result["status"], f"{case.name}: trace and result disagree"
        assert steps_played(case) == result["steps"], f"{case.name}: trace and result disagree"
        successes += result["success"]
    assert summary["methods"]["raw"]["success"] == successes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("workers", "target"), [(2, "group"), (2, "parent"), (1, "group")], ids=str
)
def test_ctrl_c_stops_the_bench_records_steps_and_writes_the_summary(
    tmp_path: Path, workers: int, target: str
) -> None:
    out = tmp_path / "runs"
    run_dir = out / "k"
    with fake_openai(Behaviour(latency_s=0.05)) as (url, behaviour):
        command = bench_command(write_suite(tmp_path, 40), out, url, workers)
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group, as a terminal gives a command
        )
        try:
            wait_for(
                lambda: sum(steps_played(c) >= 3 for c in run_dir.glob("raw__*")) >= workers,
                180,
                "cases in progress",
            )
            interrupted_at, wall_at = time.monotonic(), time.time()
            if target == "group":
                os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
            else:
                os.kill(process.pid, signal.SIGINT)  # the parent alone: it must tell its workers
            output, _ = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        time.sleep(0.5)
        late = [t for t in behaviour.request_times if t > interrupted_at + 1.0]
    assert process.returncode == 130, output
    assert "Interrupted" in output and "--resume" in output
    assert not late, f"{len(late)} model call(s) after Ctrl-C: a worker went on"
    results = {c.name: json.loads((c / "result.json").read_text()) for c in run_dir.glob("raw__*")}
    interrupted = [r for r in results.values() if r["status"] == "interrupted"]
    assert interrupted, results
    assert all(r["steps"] >= 3 for r in interrupted), "the steps played, not 0"
    for case in run_dir.glob("raw__*"):
        started = (case / ".lock").stat().st_mtime
        assert started <= wall_at + 0.3, f"{case.name} started after Ctrl-C"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["methods"]["raw"]["statuses"].get("interrupted") == len(interrupted)
    assert summary["finished"] == len(results), "summary.json agrees with the case folders"


@needs_cli
def test_a_full_disk_stops_the_bench_with_a_clear_message_and_no_torn_record(
    tmp_path: Path,
) -> None:
    out = tmp_path / "runs"
    run_dir = out / "k"
    with fake_openai(Behaviour(latency_s=0.05)) as (url, _):
        command = bench_command(write_suite(tmp_path, 40), out, url, workers=1)
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            wait_for(
                lambda: any(steps_played(c) >= 2 for c in run_dir.glob("raw__*")),
                180,
                "a case in progress",
            )
            # The disk fills up mid-case: no file of this process may grow past its size now.
            trace = max(run_dir.glob("raw__*/events.jsonl"), key=lambda p: p.stat().st_size)
            limit = trace.stat().st_size + 4000
            resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (limit, limit))
            output, _ = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 1, output
    assert "File too large" in output and "--resume" in output and "Traceback" not in output
    records = list(run_dir.rglob("result.json"))
    for record in records:
        json.loads(record.read_text())  # whole, or absent
    assert not list(run_dir.rglob("*.tmp")), "no temporary file left behind"
    statuses = [json.loads(r.read_text())["status"] for r in records]
    assert statuses.count("infra_error") == 1, statuses
    assert len(records) < 6, "the bench stopped instead of failing every case"
