"""Every file a report writes: whole or absent, never raw control bytes.

Text files are written to a temporary file and renamed into place (a full disk leaves the old
file or none, never a 0-byte or half-written one), with terminal control characters (ESC, OSC,
carriage returns, bidi overrides, from a server's error in a result) shown as escapes, as the
terminal output shows them: a report opened in a terminal or a viewer cannot be rewritten by
the text it quotes. Figures go through a temporary file too. A write that fails is a
ReportError naming the file and what to do.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from pos_agent.bench.report.load import ReportError
from pos_agent.llm import printable
from pos_agent.trace import write_text_atomic


def write_report_text(path: Path, text: str) -> Path:
    """Write `text` (control characters escaped) to `path` atomically."""
    try:
        write_text_atomic(path, printable(text))
    except OSError as exc:
        raise _unwritable(path, exc) from None
    return path


def save_figure(figure: Any, path: Path) -> Path:
    """Save a matplotlib figure as PNG to `path` atomically."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            figure.savefig(handle, format="png")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _unwritable(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def make_out_dir(out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(
            f"cannot create the report folder {out_dir}: {exc.strerror or exc}; "
            "pass --out with a folder you can write"
        ) from None


def _unwritable(path: Path, exc: OSError) -> ReportError:
    return ReportError(
        f"cannot write {path}: {exc.strerror or exc}; nothing half-written was left. Free some "
        "space (or fix the folder's permissions), or pass --out with another folder, and run "
        "`pos report` again"
    )
