"""Turning "where the upstream files are" into a tree of the pinned commit's files.

A source is given as nothing (the pinned archive URL), an http(s) or `file://` URL, or a local
path: a git directory (a clone, its `.git`, a bare or snapshot repository), a folder (a copy or
an unpacked archive) or an archive file (.tar.gz, .tgz, .tar, .tar.xz, .zip). Whatever it is,
what comes out is checked against the pinned commit's git ids before anything is prepared.
"""

from __future__ import annotations

import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.data.download import download, is_url, local_path_of
from pos_agent.data.errors import DataError
from pos_agent.data.home import data_home, downloads_dir
from pos_agent.data.store import remove_tree
from pos_agent.data.tree import FolderTree, GitTree, SourceTree

Progress = Callable[[str], None]
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".tar.xz", ".tar.bz2", ".zip")


@dataclass(frozen=True)
class Pinned:
    """An upstream repository at one commit, and the git ids of the paths read from it."""

    repository: str
    """`owner/name` on GitHub."""
    commit: str
    pins: Mapping[str, str] = field(default_factory=dict)
    """Path -> git id (a folder's tree id or a file's blob id) at `commit`."""
    archive_sha256: str | None = None
    """The archive's SHA-256 when it is known to be stable; GitHub's generated archives are not
    guaranteed byte-stable, so their content is checked through `pins` instead."""

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repository}"

    @property
    def archive_url(self) -> str:
        """GitHub's tarball of the pinned commit (it unpacks to `<name>-<commit>/`)."""
        return f"https://codeload.github.com/{self.repository}/tar.gz/{self.commit}"


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def extract(archive: Path, target: Path) -> Path:
    """Unpack an archive into `target`; the single top folder if it has one, else `target`."""
    target.mkdir(parents=True, exist_ok=True)
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as bundle:
                broken = bundle.testzip()
                if broken is not None:
                    raise DataError(f"{archive}: {broken} fails its CRC check (corrupt archive).")
                for member in bundle.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise DataError(f"{archive}: member {member!r} points outside the archive.")
                bundle.extractall(target)
        else:
            with tarfile.open(archive) as bundle:
                bundle.extractall(target, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
        raise DataError(
            f"{archive} cannot be unpacked ({exc}): it is corrupt or was cut short. Download it "
            "again (or run the same `pos data get` again for the default source)."
        ) from exc
    return single_top(target)


def single_top(folder: Path) -> Path:
    """The one subfolder of a folder that holds nothing else (an archive's top folder)."""
    children = [child for child in folder.iterdir() if not child.name.startswith(".")]
    if len(children) == 1 and children[0].is_dir():
        return children[0]
    return folder


def _git_dir(path: Path) -> Path | None:
    if (path / "objects").is_dir() and (path / "HEAD").is_file():
        return path
    dot = path / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            return (path / text.split(":", 1)[1].strip()).resolve()
    return None


def _from_folder(path: Path, pinned: Pinned, stack: ExitStack) -> SourceTree:
    git_dir = _git_dir(path)
    if git_dir is not None:
        try:
            return stack.enter_context(GitTree(git_dir, pinned.commit))
        except DataError:
            if git_dir == path:
                raise
            # A work tree whose .git lacks the commit: its files may still be the pinned ones.
    return FolderTree(single_top(path) if not pinned.pins else _pinned_root(path, pinned))


def _pinned_root(path: Path, pinned: Pinned) -> Path:
    first = next(iter(pinned.pins))
    if (path / first).exists():
        return path
    return single_top(path)


@contextmanager
def open_pinned(
    pinned: Pinned, origin: str | None, *, progress: Progress | None = None
) -> Iterator[tuple[SourceTree, dict[str, Any]]]:
    """The pinned commit's files from `origin` (None: the archive URL), checked against the
    pins, with a description of where they came from for the manifest."""
    record: dict[str, Any] = {
        "repository": pinned.url,
        "commit": pinned.commit,
        "from": origin or pinned.archive_url,
    }
    with ExitStack() as stack:
        scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=_scratch_home()))
        stack.callback(remove_tree, scratch)
        path = local_path_of(origin) if origin and is_url(origin) else None
        if origin is None or (is_url(origin) and path is None):
            url = origin or pinned.archive_url
            archive = (
                downloads_dir() / f"{pinned.repository.replace('/', '+')}-{pinned.commit}.tar.gz"
            )
            record["archive_sha256"] = download(
                url, archive, sha256=pinned.archive_sha256, progress=progress
            )
            stack.callback(archive.unlink, missing_ok=True)
            tree: SourceTree = FolderTree(extract(archive, scratch), f"{url} (unpacked)")
        else:
            path = (path or Path(str(origin))).expanduser().resolve()
            if is_archive(path):
                tree = FolderTree(extract(path, scratch), f"{path} (unpacked)")
            elif path.is_dir():
                tree = _from_folder(path, pinned, stack)
            else:
                raise DataError(
                    f"--from {origin}: no such folder or archive (a git directory, a checkout, "
                    "an unpacked or packed archive, or a file:// URL)."
                )
        if progress:
            progress(
                f"checking {tree.description} against {pinned.repository}@{pinned.commit[:12]}"
            )
        tree.check_pins(pinned.pins)
        yield tree, record


def _scratch_home() -> Path:
    home = data_home()
    home.mkdir(parents=True, exist_ok=True)
    return home
