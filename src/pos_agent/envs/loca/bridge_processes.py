"""The bridge's process tree: every process the LOCA bridge (bridge.py) starts, read from /proc,
and stopped with it. Standard library only: it runs in LOCA's runtime."""

from __future__ import annotations

import contextlib
import os
import signal
import time


def process_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, start time) for every process in /proc."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name is in parentheses and may itself contain spaces or parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), fields[0], fields[19])
    return table


def descendants(root: int) -> dict[int, str]:
    """Live (non-zombie) descendants of `root`: pid -> start time."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: dict[int, str] = {}
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if pid in found:
            continue
        _, state, started = table[pid]
        if state != "Z":
            found[pid] = started
        stack.extend(children.get(pid, []))
    return found


def kill_tree(grace: float = 2.0) -> None:
    """Stop every descendant: SIGTERM, a short grace period, then SIGKILL."""
    me = os.getpid()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = descendants(me)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 1.0)
        while pids and time.monotonic() < deadline:
            _reap()
            time.sleep(0.05)
            pids = descendants(me)
        if not pids:
            break
    _reap()


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def shutdown_and_exit(code: int = 0) -> None:
    kill_tree()
    os._exit(code)
