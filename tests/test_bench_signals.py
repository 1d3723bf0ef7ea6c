"""Real signals and real kills (issue 23): SIGTERM and SIGHUP follow the Ctrl-C path, an
interrupt during the pre-flight or a local model's call is honoured with exit 130, and a worker
killed as an out-of-memory kill does costs only its own case. Every wait is on a condition,
with bounds generous enough for a loaded machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from extras import needs_cli
from fake_openai import Behaviour, fake_openai
from test_bench_processes import (
    alive,
    bench_command,
    steps_played,
    wait_for,
    workers_of,
    write_suite,
)

POS = str(Path(sys.executable).parent / "pos")


class Output:
    """A child's output, read as it comes (so a test can wait for a line)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        self.reader = threading.Thread(target=lambda: self.lines.extend(stream), daemon=True)
        self.reader.start()

    @property
    def text(self) -> str:
        self.reader.join(timeout=5)
        return "".join(self.lines)


def start(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives a command
    )


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "workers"), [(signal.SIGTERM, 2), (signal.SIGHUP, 1)], ids=["term-2", "hup-1"]
)
def test_sigterm_and_sighup_follow_the_ctrl_c_path(
    tmp_path: Path, signum: signal.Signals, workers: int
) -> None:
    out = tmp_path / "runs"
    run_dir = out / "k"
    with fake_openai(Behaviour(latency_s=0.05)) as (url, behaviour):
        process = start(bench_command(write_suite(tmp_path, 40), out, url, workers))
        output = Output(process)
        try:
            wait_for(
                lambda: sum(steps_played(c) >= 3 for c in run_dir.glob("raw__*")) >= workers,
                300,
                "cases in progress",
            )
            signalled_at = time.monotonic()
            os.kill(process.pid, signum)  # `timeout`, SLURM and `docker stop` signal the parent
            process.wait(timeout=120)
        finally:
            stop(process)
        late = [t for t in behaviour.request_times if t > signalled_at + 2.0]
    assert process.returncode == 130, output.text  # SIGTERM used to kill it outright
    assert "Interrupted" in output.text and "--resume" in output.text
    assert not late, f"{len(late)} model call(s) after {signum.name}"
    results = {c.name: json.loads((c / "result.json").read_text()) for c in run_dir.glob("raw__*")}
    interrupted = [r for r in results.values() if r["status"] == "interrupted"]
    assert interrupted and all(signum.name in (r["error"] or "") for r in interrupted), results
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["finished"] == len(results), "summary.json is fresh"
    assert summary["methods"]["raw"]["statuses"].get("interrupted") == len(interrupted)


@needs_cli
def test_ctrl_c_during_the_preflight_exits_130_without_advice_to_resume(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with fake_openai(Behaviour(latency_s=120)) as (url, behaviour):  # a pre-flight that hangs
        process = start(bench_command(write_suite(tmp_path, 4), out, url, workers=1))
        output = Output(process)
        try:
            wait_for(lambda: len(behaviour.request_times) >= 1, 120, "the pre-flight's call")
            os.killpg(process.pid, signal.SIGINT)
            process.wait(timeout=60)
        finally:
            stop(process)
    assert process.returncode == 130, output.text
    assert "Interrupted" in output.text and "--resume" not in output.text, output.text
    assert not (out / "k" / "config.json").exists(), "no run was created"


@pytest.mark.slow
def test_a_killed_worker_costs_its_own_case_and_the_run_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    run_dir = out / "k"
    with fake_openai(Behaviour(latency_s=0.05)) as (url, _):
        command = [*bench_command(write_suite(tmp_path, 12), out, url, workers=2)]
        process = start([*command, "--infra-retries", "0"])
        output = Output(process)
        try:
            wait_for(
                lambda: sum(steps_played(c) >= 2 for c in run_dir.glob("raw__*")) >= 2,
                300,
                "two cases in progress",
            )
            pool = workers_of(process.pid)
            assert len(pool) == 2, pool
            os.kill(pool[0], signal.SIGKILL)  # what the out-of-memory killer does
            process.wait(timeout=600)
        finally:
            stop(process)
    text = output.text
    assert process.returncode == 3, text  # done, with one case to resume
    assert "Free space" not in text and "Traceback" not in text, text
    results = [json.loads(p.read_text()) for p in run_dir.glob("raw__*/result.json")]
    statuses = sorted(r["status"] for r in results)
    assert len(results) == 6, statuses  # the bench used to stop here
    killed = [r for r in results if r["status"] == "infra_error"]
    assert len(killed) == 1 and "killed by SIGKILL" in killed[0]["error"], statuses
    assert not alive(pool[0])


@pytest.mark.slow
def test_ctrl_c_reaches_pos_run_during_a_local_model_call(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    command = [POS, "run", "alfworld-mini", "heat-mug", "--agent", "raw", "--model", "local",
               "--max-steps", "40", "--out", str(out), "--run", "l"]  # fmt: skip
    process = start(command)
    output = Output(process)
    case = out / "l" / "raw__alfworld-mini__heat-mug"
    try:
        wait_for(lambda: steps_played(case) >= 1, 600, "the first step of the local model")
        os.killpg(process.pid, signal.SIGINT)  # lands during a model call: most time is there
        process.wait(timeout=120)  # used to go on stepping for minutes
    finally:
        stop(process)
    assert process.returncode == 130, output.text
    result = json.loads((case / "result.json").read_text())
    assert result["status"] == "interrupted" and result["steps"] >= 1
