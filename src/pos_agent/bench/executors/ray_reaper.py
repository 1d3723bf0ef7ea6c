"""A watchdog for a Ray started by `pos bench` itself: it ends that Ray if `pos bench` is killed.

Run as a script (standard library only, so it starts in milliseconds):
`python ray_reaper.py DRIVER_PID`, with its stdin the read end of a pipe only the driver writes.

Ray's processes started by `ray.init()` mostly die with the driver, but not all: after a
`kill -9` of the driver its dashboard and runtime-env agents were seen living on, orphaned.
So while the driver lives, this process notes the driver's descendants (pid and start time)
twice a second; when the pipe closes without the word `done` (the driver died), it kills every
noted process that is still the same process, and exits. After `done` it exits quietly.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from pathlib import Path

PERIOD_S = 0.5


def _table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry.name)] = (int(fields[1]), fields[19])
    return found


def descendants(root: int, table: dict[int, tuple[int, str]]) -> dict[int, str]:
    """pid -> start time of every descendant of `root`."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = {}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child != os.getpid():
                found[child] = table[child][1]
                todo.append(child)
    return found


def main(driver: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the driver's
    noted: dict[int, str] = {}
    said = b""
    while True:
        readable, _, _ = select.select([sys.stdin.buffer], [], [], PERIOD_S)
        if readable:
            chunk = os.read(sys.stdin.fileno(), 64)
            if chunk:
                said += chunk
                continue
            if b"done" in said:
                return
            break  # the pipe closed without a word: the driver is gone
        noted.update(descendants(driver, _table()))
    table = _table()
    for pid, started in noted.items():
        if pid in table and table[pid][1] == started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main(int(sys.argv[1]))
