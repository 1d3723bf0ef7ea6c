"""The adapter's end of bridge.py: start it in LOCA's runtime, send requests, stop everything.

The bridge cleans up its own process tree (see bridge.py). This side keeps a record of every
pid the bridge reported, with its start time, and kills what is left of them on close: that
covers a bridge that hung, or that was itself killed before it could clean up.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from pos_agent.envs.loca.runtime import LocaRuntime

BRIDGE_SCRIPT = Path(__file__).resolve().parent / "bridge.py"
READY_TIMEOUT = 60.0
CLOSE_TIMEOUT = 15.0


class BridgeFailure(Exception):
    """The LOCA side failed: an infrastructure failure (the case is retried, never scored)."""


class BridgeUsageError(Exception):
    """The LOCA side refused the case as configured (unknown server type, bad env_class)."""


def start_time(pid: int) -> str | None:
    """The kernel's start time of a live, non-zombie process (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def alive(pids: dict[int, str]) -> list[int]:
    """The recorded processes that still run (same pid and start time)."""
    return [pid for pid, started in pids.items() if start_time(pid) == started]


class BridgeClient:
    """One bridge process for one case."""

    def __init__(self, runtime: LocaRuntime, loca_root: Path, workdir: Path) -> None:
        self.log_path = workdir / "bridge.log"
        workdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            {
                "PYTHONPATH": str(loca_root),
                "PATH": f"{runtime.bin_dir}{os.pathsep}{env.get('PATH', '')}",
                "VIRTUAL_ENV": str(runtime.root / "venv"),
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
            }
        )
        env.pop("PYTHONHOME", None)
        self.process = subprocess.Popen(
            [str(runtime.python), str(BRIDGE_SCRIPT), "--log", str(self.log_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=workdir,
            env=env,
            # Its own session: a Ctrl-C in the terminal reaches the worker, which closes the
            # case; the bridge never dies half-way through a request on its own.
            start_new_session=True,
        )
        self.known: dict[int, str] = {}
        self._buffer = b""
        # True while a request waits for its answer: after an interrupt (Ctrl-C) the next
        # line on the pipe would be that old answer, so close() must not talk to the bridge.
        self._busy = False
        started = start_time(self.process.pid)
        if started:
            self.known[self.process.pid] = started
        self._receive(READY_TIMEOUT, "start")

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait for its answer; BridgeFailure when the bridge is gone."""
        if self.process.poll() is not None:
            raise BridgeFailure(f"the LOCA bridge is not running{self._log_tail()}")
        assert self.process.stdin is not None
        self._busy = True
        try:
            self.process.stdin.write((json.dumps(payload, ensure_ascii=False) + "\n").encode())
            self.process.stdin.flush()
        except OSError as exc:
            raise BridgeFailure(
                f"the LOCA bridge stopped reading ({exc}){self._log_tail()}"
            ) from exc
        answer = self._receive(timeout, str(payload.get("op")))
        self._busy = False
        if not answer.get("ok"):
            message = str(answer.get("error") or "unknown failure")
            if answer.get("kind") == "usage":
                raise BridgeUsageError(message)
            raise BridgeFailure(f"{message}{self._log_tail()}")
        return answer

    def _receive(self, timeout: float, what: str) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BridgeFailure(
                    f"the LOCA bridge did not answer {what!r} within {timeout:.0f} s"
                    f"{self._log_tail()}"
                )
            ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                code = self.process.wait(timeout=5)
                raise BridgeFailure(
                    f"the LOCA bridge exited (code {code}) during {what!r}{self._log_tail()}"
                )
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError as exc:
            raise BridgeFailure(f"the LOCA bridge sent a malformed answer: {line[:200]!r}") from exc
        for pid, started in (answer.get("pids") or {}).items():
            self.known[int(pid)] = str(started)
        return dict(answer)

    def refresh_pids(self) -> None:
        """Record every process the bridge runs now (servers and their children)."""
        with contextlib.suppress(BridgeFailure, BridgeUsageError):
            self.request({"op": "pids"}, timeout=10)

    def close(self) -> None:
        """Stop the bridge and every process it started; never raises.

        Politely when the bridge is idle; otherwise end of file on its stdin makes it stop its
        process tree at once, even in the middle of a data generation.
        """
        if not self._busy:
            self.refresh_pids()
        if self.process.poll() is None and not self._busy:
            with contextlib.suppress(OSError, BridgeFailure):
                self.request({"op": "close"}, timeout=CLOSE_TIMEOUT)
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=CLOSE_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        for pid in alive(self.known):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            if self.process.stdout is not None:
                self.process.stdout.close()

    def _log_tail(self, lines: int = 12) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return f"\n[bridge log {self.log_path}, last lines]\n" + "\n".join(tail) if tail else ""
