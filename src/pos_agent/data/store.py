"""Preparing a data set so that it is either ready or visibly not: temp folder, manifest, rename.

`preparing(name)` holds a lock on the data set, hands out a fresh temporary folder beside the
final one, and only when the body finishes writes the manifest (every file's size and SHA-256,
where it came from) as the last file and renames the folder into place. An interrupted prepare
leaves a `.NAME.partial-*` folder, which is never read and is removed by the next `get`; a
folder without a manifest (or with an older format) is never taken as ready.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.data.errors import DataError
from pos_agent.data.home import data_home

MANIFEST = "pos-data-manifest.json"
FORMAT = 1


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_table(root: Path) -> dict[str, dict[str, Any]]:
    """Every file below `root` (but the manifest): its size and SHA-256, by relative path."""
    table: dict[str, dict[str, Any]] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative == MANIFEST or path.is_dir() or path.is_symlink():
            continue
        table[relative] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
    return table


@dataclass
class Manifest:
    """What a ready folder holds and where it came from."""

    name: str
    source: dict[str, Any]
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    prepared_at: str = ""
    format: int = FORMAT

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "name": self.name,
            "prepared_at": self.prepared_at,
            "source": self.source,
            "notes": self.notes,
            "files": self.files,
        }


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest of a ready folder; None when there is none or it is not current."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    return Manifest(
        name=str(data.get("name", "")),
        source=dict(data.get("source") or {}),
        files=dict(data.get("files") or {}),
        notes=list(data.get("notes") or []),
        prepared_at=str(data.get("prepared_at", "")),
    )


def check_files(folder: Path, manifest: Manifest, *, hashes: bool) -> list[str]:
    """What differs from the manifest: missing files, sizes and (with `hashes`) contents."""
    problems = []
    for relative, expected in manifest.files.items():
        path = folder / relative
        if not path.is_file():
            problems.append(f"{relative} is missing")
        elif path.stat().st_size != expected.get("size"):
            problems.append(f"{relative} has {path.stat().st_size} bytes, not {expected['size']}")
        elif hashes and sha256_file(path) != expected.get("sha256"):
            problems.append(f"{relative} does not match its SHA-256")
    return problems


@contextmanager
def _lock(name: str) -> Iterator[None]:
    home = data_home()
    home.mkdir(parents=True, exist_ok=True)
    with (home / f".{name}.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise DataError(
                f"Another `pos data get {name}` is preparing it now; wait for it to finish."
            ) from exc
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _writable_tree(root: Path) -> None:
    """Make a folder removable even when its files were copied from a read-only source."""
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)


def remove_tree(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        _writable_tree(path)
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextmanager
def preparing(name: str, source: Mapping[str, Any]) -> Iterator[tuple[Path, Manifest]]:
    """A temporary folder to build `name` in, and its manifest to add notes to; on a clean exit
    the manifest is written last and the folder replaces `<home>/<name>`."""
    home = data_home()
    with _lock(name):
        for stale in home.glob(f".{name}.partial-*"):
            remove_tree(stale)
        work = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=home))
        manifest = Manifest(name=name, source=dict(source))
        try:
            yield work, manifest
        except BaseException:
            remove_tree(work)
            raise
        manifest.files = file_table(work)
        manifest.prepared_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        _writable_tree(work)
        text = json.dumps(manifest.as_dict(), indent=1, ensure_ascii=False)
        with (work / MANIFEST).open("w", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        final = home / name
        old = home / f".{name}.old-{os.getpid()}"
        if final.exists():
            final.rename(old)
        work.rename(final)
        remove_tree(old)
