"""Where `pos data` keeps what it prepares: `$POS_DATA`, else the user's cache.

One folder per data set (`<home>/<name>/`); a folder is ready when its manifest, written last,
is there (`store.py`). Downloads are kept apart (`<home>/.downloads/`) so an interrupted one
can be told from a finished one.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV_VAR = "POS_DATA"
DOWNLOADS = ".downloads"


def data_home() -> Path:
    """`$POS_DATA`, else `$XDG_CACHE_HOME/pos-agent/data`, else `~/.cache/pos-agent/data`."""
    chosen = os.environ.get(DATA_ENV_VAR)
    if chosen:
        return Path(chosen).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser().resolve() / "pos-agent" / "data"


def dataset_dir(name: str) -> Path:
    """The folder `pos data get NAME` prepares (ready or not)."""
    return data_home() / name


def downloads_dir() -> Path:
    return data_home() / DOWNLOADS
