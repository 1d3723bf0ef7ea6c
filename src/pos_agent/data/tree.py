"""An upstream repository's files at one commit, read from a git directory or a plain folder.

`GitTree` reads a git directory (a clone's `.git`, a bare repository, or a snapshot such as the
ones under /work/.mirror) at the pinned commit, through the `git` command; a file the snapshot
left out (git lists it, its object is absent) reads as None, so converters can say which files
were missing. `FolderTree` reads an unpacked archive or a copied checkout. Both check what they
are given against the pinned commit's ids (`check_pins`): nothing is prepared from a copy that
differs from the commit the project cites.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pos_agent.data.errors import DataError
from pos_agent.data.gitobj import EXEC_MODE, LINK_MODE, blob_id, is_build_artifact, path_id


@dataclass(frozen=True)
class Entry:
    """One name in a folder: a file (`blob`) or a folder (`tree`)."""

    name: str
    kind: str


class SourceTree(Protocol):
    """The files of the pinned commit, however they reached this machine."""

    description: str

    def entries(self, folder: str) -> list[Entry]:
        """The names in `folder` (relative, '' for the root), sorted; [] if there is none."""
        ...

    def read(self, path: str) -> bytes | None:
        """A file's bytes; None when the source lists it but does not hold its content."""
        ...

    def has(self, path: str) -> bool:
        """Whether a file's content is here (without reading it)."""
        ...

    def check_pins(self, pins: Mapping[str, str]) -> None:
        """DataError unless every pinned path has the pinned git id."""
        ...

    def export(self, path: str, target: Path) -> None:
        """Copy a file or folder out to `target` (every file present, modes kept)."""
        ...


def walk(tree: SourceTree, folder: str) -> Iterator[str]:
    """Every file path below `folder`, in sorted order."""
    for entry in tree.entries(folder):
        path = f"{folder}/{entry.name}" if folder else entry.name
        if entry.kind == "tree":
            yield from walk(tree, path)
        else:
            yield path


def _mismatch(description: str, path: str, want: str, got: str | None) -> DataError:
    found = "is missing" if got is None else f"has git id {got[:12]}"
    return DataError(
        f"{description}: {path} {found}, but the pinned commit has {want[:12]}; this copy is "
        "not the pinned one (modified, incomplete or another commit). Nothing was prepared."
    )


class FolderTree:
    """A plain folder: an unpacked archive or a copy of the repository."""

    def __init__(self, root: Path, description: str | None = None) -> None:
        self.root = root
        self.description = description or str(root)

    def entries(self, folder: str) -> list[Entry]:
        base = self.root / folder if folder else self.root
        if not base.is_dir():
            return []
        return [
            Entry(child.name, "tree" if child.is_dir() and not child.is_symlink() else "blob")
            for child in sorted(base.iterdir(), key=lambda p: p.name)
        ]

    def read(self, path: str) -> bytes | None:
        target = self.root / path
        return target.read_bytes() if target.is_file() else None

    def has(self, path: str) -> bool:
        return (self.root / path).is_file()

    def check_pins(self, pins: Mapping[str, str]) -> None:
        for path, want in pins.items():
            got = path_id(self.root / path)
            if got != want:
                raise _mismatch(self.description, path, want, got)

    def export(self, path: str, target: Path) -> None:
        source = self.root / path
        files = [source] if not source.is_dir() else sorted(source.rglob("*"))
        for item in files:
            skipped = any(is_build_artifact(part) for part in item.relative_to(self.root).parents)
            if (item.is_dir() and not item.is_symlink()) or skipped or is_build_artifact(item):
                continue
            out = target if item == source else target / item.relative_to(source)
            out.parent.mkdir(parents=True, exist_ok=True)
            if item.is_symlink():
                out.symlink_to(item.readlink())
                continue
            shutil.copyfile(item, out)
            out.chmod(0o755 if item.stat().st_mode & stat.S_IXUSR else 0o644)


class GitTree:
    """A git directory read at one commit with `git`; every object read is checked against its
    id. Use it as a context manager (it keeps one `git cat-file --batch` process open)."""

    def __init__(self, git_dir: Path, commit: str) -> None:
        self.git_dir = git_dir
        self.commit = commit
        self.description = f"{git_dir} at {commit[:12]}"
        if shutil.which("git") is None:
            raise DataError("Reading a git directory needs the `git` command, which is missing.")
        if self._git("cat-file", "-t", commit, check=False).strip() != "commit":
            raise DataError(
                f"{git_dir} does not hold commit {commit}; fetch it (git fetch origin {commit}) "
                "or pass another copy with --from."
            )
        self._listing: dict[str, list[tuple[str, str, str, str]]] = {}
        self._batch: subprocess.Popen[bytes] | None = None
        self._check: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> GitTree:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        for process in (self._batch, self._check):
            if process is not None and process.stdin is not None:
                process.stdin.close()
                process.wait()
        self._batch = self._check = None

    def _process(self, mode: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            ["git", "--git-dir", str(self.git_dir), "cat-file", mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def _git(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        if check and done.returncode != 0:
            raise DataError(f"git {' '.join(args)} failed in {self.git_dir}: {done.stderr.strip()}")
        return done.stdout

    def _list(self, folder: str) -> list[tuple[str, str, str, str]]:
        """(name, mode, kind, object id) of the entries of `folder`, sorted by name."""
        if folder not in self._listing:
            spec = f"{self.commit}:{folder}" if folder else f"{self.commit}^{{tree}}"
            rows = []
            for line in self._git("ls-tree", "-z", spec, check=False).split("\0"):
                if line:
                    meta, name = line.split("\t", 1)
                    mode, kind, oid = meta.split()
                    rows.append((name, mode, kind, oid))
            self._listing[folder] = sorted(rows)
        return self._listing[folder]

    def _entry(self, path: str) -> tuple[str, str, str, str] | None:
        folder, _, name = path.rpartition("/")
        return next((row for row in self._list(folder) if row[0] == name), None)

    def _object(self, oid: str) -> bytes | None:
        """An object's bytes from the batch process; None when the snapshot lacks it."""
        if self._batch is None:
            self._batch = self._process("--batch")
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(f"{oid}\n".encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().decode().split()
        if len(header) < 3 or header[1] == "missing":
            return None
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)
        return data

    def entries(self, folder: str) -> list[Entry]:
        return [
            Entry(name, "tree" if kind == "tree" else "blob")
            for name, _mode, kind, _oid in self._list(folder)
            if kind in ("tree", "blob")
        ]

    def read(self, path: str) -> bytes | None:
        entry = self._entry(path)
        if entry is None or entry[2] != "blob":
            return None
        data = self._object(entry[3])
        if data is not None and blob_id(data) != entry[3]:
            raise DataError(f"{self.description}: {path} is corrupt (it does not hash to its id).")
        return data

    def has(self, path: str) -> bool:
        entry = self._entry(path)
        if entry is None or entry[2] != "blob":
            return False
        if self._check is None:
            self._check = self._process("--batch-check")
        assert self._check.stdin is not None and self._check.stdout is not None
        self._check.stdin.write(f"{entry[3]}\n".encode())
        self._check.stdin.flush()
        return not self._check.stdout.readline().decode().rstrip().endswith("missing")

    def check_pins(self, pins: Mapping[str, str]) -> None:
        for path, want in pins.items():
            entry = self._entry(path)
            got = entry[3] if entry else None
            if got != want:
                raise _mismatch(self.description, path, want, got)

    def export(self, path: str, target: Path) -> None:
        entry = self._entry(path)
        if entry is None:
            raise DataError(f"{self.description}: {path} does not exist.")
        if entry[2] == "blob":
            self._export_file(path, target)
            return
        for file_path in walk(self, path):
            self._export_file(file_path, target / file_path[len(path) + 1 :])

    def _export_file(self, path: str, target: Path) -> None:
        entry = self._entry(path)
        data = self.read(path)
        if entry is None or data is None:
            raise DataError(
                f"{self.description}: {path} is listed but its content is absent (a partial "
                "snapshot); use a full clone or the archive."
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry[1] == LINK_MODE:
            target.symlink_to(data.decode())
            return
        target.write_bytes(data)
        target.chmod(0o755 if entry[1] == EXEC_MODE else 0o644)
