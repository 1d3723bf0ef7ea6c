"""Finding the corpus's source files in a folder: loose files under any name (found by their
sha256), or git directories of the source repositories (read at the manifest's commit).

A git directory is recognised by its `HEAD`, `objects/` and `refs/`; its repository by the
folder names around it: `owner+name/repo` (as the session's `fetch` leaves them),
`owner+name`, `owner/name`, or a checkout's `owner+name/.git` or `name/.git` under `owner/`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

GIT_TIMEOUT_S = 120.0
_GIT_DIR_NAMES = ("repo", ".git")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file of the manifest, and the trajectories read from it."""

    repo: str
    path: str
    commit: str | None
    sha256: str
    ids: tuple[str, ...]

    def how_to_get(self) -> str:
        """Where the file comes from, and how to put it in the folder given to the builder."""
        if self.commit is None:
            number = self.path.rsplit("/", 1)[-1]
            return (
                f"an excerpt of https://github.com/{self.repo}/issues/{number} as the gatherer "
                "saved it (not a file of the repository); put that text file in the folder "
                "under any name"
            )
        return (
            f"fetch https://github.com/{self.repo} (a clone or the `fetch` tool's snapshot) and "
            f"put its git directory in the folder as {self.repo.replace('/', '+')}/repo, or "
            f"save `git --git-dir GITDIR show {self.commit}:{self.path}` there under any name"
        )


@dataclass(frozen=True, slots=True)
class Found:
    data: bytes | None
    where: str
    """Where it was read (a path, or `git-dir@commit:path`), or why it was not."""
    problem: str | None = None
    """None: read, with the right sha256; "missing"; "different" (a file with another sha256)."""
    sha256: str | None = None
    """What was read, when it was read."""


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def repo_names(git_dir: Path) -> set[str]:
    """The `owner/name` spellings the folders around a git directory can stand for (lower
    case)."""
    base = git_dir.parent if git_dir.name in _GIT_DIR_NAMES else git_dir
    name = base.name.removesuffix(".git")
    names = {f"{base.parent.name}/{name}".lower()}
    if "+" in name:
        names.add(name.replace("+", "/", 1).lower())
    return names


@dataclass
class SourceFolder:
    """Everything the builder can read in one folder (walked once, lazily)."""

    root: Path
    by_sha256: dict[str, Path] = field(default_factory=dict)
    git_dirs: dict[str, Path] = field(default_factory=dict)
    _walked: bool = False

    def walk(self) -> None:
        if self._walked:
            return
        self._walked = True
        for folder, subfolders, files in os.walk(self.root):
            here = Path(folder)
            if is_git_dir(here):
                for name in repo_names(here):
                    self.git_dirs.setdefault(name, here)
                subfolders[:] = []
                continue
            subfolders.sort()
            for name in sorted(files):
                digest = _file_sha256(here / name)
                if digest is not None:
                    self.by_sha256.setdefault(digest, here / name)

    def read(self, source: SourceFile) -> Found:
        """The file's bytes: a loose file with its sha256, else the repository's git directory
        at the commit; else why not."""
        self.walk()
        loose = self.by_sha256.get(source.sha256)
        if loose is not None:
            try:
                return Found(loose.read_bytes(), str(loose), None, source.sha256)
            except OSError as exc:
                return Found(None, f"{loose}: {exc.strerror or exc}", "missing")
        if source.commit is None:
            return Found(
                None, "no file with this sha256 (an issue excerpt: in no repository)", "missing"
            )
        git_dir = self.git_dirs.get(source.repo.lower())
        if git_dir is None:
            return Found(
                None, "no file with this sha256, no git directory of the repository", "missing"
            )
        return _read_git(git_dir, source)


def _read_git(git_dir: Path, source: SourceFile) -> Found:
    spec = f"{source.commit}:{source.path}"
    where = f"{git_dir}@{spec}"
    try:
        shown = subprocess.run(
            ["git", "--git-dir", str(git_dir), "cat-file", "blob", spec],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        return Found(None, f"{where}: git is not installed", "missing")
    except subprocess.TimeoutExpired:
        return Found(None, f"{where}: git took over {GIT_TIMEOUT_S:g}s", "missing")
    if shown.returncode != 0:
        said = shown.stderr.decode("utf-8", "replace").strip().splitlines()
        return Found(None, f"{where}: {said[-1] if said else 'not found'}", "missing")
    digest = sha256_of(shown.stdout)
    if digest != source.sha256:
        return Found(None, where, "different", digest)
    return Found(shown.stdout, where, None, digest)
