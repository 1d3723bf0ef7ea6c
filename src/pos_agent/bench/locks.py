"""Advisory file locks that say who holds them: one writer per run folder and per case folder.

`fcntl.flock` locks belong to an open file, so the kernel drops them when the holder exits,
however it exits (`kill -9` included): a lock can never be left behind by a dead process.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType


class LockHeld(RuntimeError):
    """Another process holds the lock; `holder` is its pid when it wrote one."""

    def __init__(self, path: Path, holder: int | None) -> None:
        who = f"process {holder}" if holder else "another process"
        super().__init__(f"{path} is locked by {who}")
        self.path = path
        self.holder = holder


class FileLock:
    """An exclusive, non-blocking lock on `path` (created if missing), held until `release`.

    The lock file keeps the holder's pid so that a refusal can name it. It is never deleted:
    deleting a lock file another process is about to open would let two holders coexist.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> FileLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise LockHeld(self.path, holder) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file drops the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
