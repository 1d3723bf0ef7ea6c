"""Git object ids computed from plain files, to check a copy against a pinned commit.

A GitHub archive or a copied folder carries no commit, but its content does: the id git gives a
folder (its tree id) is a hash of every file's bytes, name and mode below it. Comparing the id of
a folder we were given with the id the pinned commit records for that path proves the copy is
the pinned one, whatever archive format or compression brought it here.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

BLOB_MODE = "100644"
EXEC_MODE = "100755"
LINK_MODE = "120000"
TREE_MODE = "40000"


def blob_id(data: bytes) -> str:
    """The id git gives a file with these bytes."""
    digest = hashlib.sha1(f"blob {len(data)}\0".encode())
    digest.update(data)
    return digest.hexdigest()


def file_id(path: Path) -> str:
    """The blob id of a file (or, for a symbolic link, of its target text), read in chunks."""
    if path.is_symlink():
        return blob_id(os.readlink(path).encode())
    size = path.stat().st_size
    digest = hashlib.sha1(f"blob {size}\0".encode())
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _mode(path: Path) -> str:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return LINK_MODE
    if stat.S_ISDIR(info.st_mode):
        return TREE_MODE
    return EXEC_MODE if info.st_mode & stat.S_IXUSR else BLOB_MODE


def is_build_artifact(path: Path) -> bool:
    """Python's bytecode caches, which running a checkout writes into it (never committed)."""
    return path.name == "__pycache__" or path.suffix in (".pyc", ".pyo")


def tree_id(folder: Path) -> str | None:
    """The tree id of a folder, as git would compute it; None for a folder with no file below
    it (git records no empty folder). Bytecode caches are left out."""
    entries: list[tuple[str, str, str]] = []
    for child in folder.iterdir():
        if is_build_artifact(child):
            continue
        mode = _mode(child)
        if mode == TREE_MODE:
            sub = tree_id(child)
            if sub is None:
                continue
            entries.append((child.name + "/", mode, sub))
        else:
            entries.append((child.name, mode, file_id(child)))
    if not entries:
        return None
    body = b"".join(
        f"{mode} {name.rstrip('/')}\0".encode() + bytes.fromhex(oid)
        for name, mode, oid in sorted(entries, key=lambda entry: entry[0].encode())
    )
    digest = hashlib.sha1(f"tree {len(body)}\0".encode())
    digest.update(body)
    return digest.hexdigest()


def path_id(path: Path) -> str | None:
    """The git id of a file or folder (None when missing or an empty folder)."""
    if path.is_symlink() or path.is_file():
        return file_id(path)
    if path.is_dir():
        return tree_id(path)
    return None
