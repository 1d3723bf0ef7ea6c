"""ALFWorld's game files, as the `alfworld` package's `alfworld-download` lays them out.

`alfworld-download` (alfworld 0.4.2) fetches three release archives and unzips them into its
data folder (`$ALFWORLD_DATA`, default ~/.cache/alfworld): the ALFRED trajectories
(`json_2.1.1_json.zip`), their PDDL problems (`json_2.1.1_pddl.zip`) and the generated
TextWorld games (`json_2.1.1_tw-pddl.zip`), all under `json_2.1.1/<split>/<task>/<trial>/`,
and copies the package's `alfred.pddl` and `alfred.twl2` into `logic/`. This prepares the same
layout in the `pos data` folder, where the `alfworld` environment looks after $ALFWORLD_DATA.
(The detector weights it also fetches are for the visual THOR environment, not used here.)

ALFWorld publishes no checksums for these archives: a download is checked against its
announced length and every member against its CRC-32, and the SHA-256 of each archive is
recorded in the manifest.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_agent.data.acquire import extract
from pos_agent.data.download import download, is_url, local_path_of
from pos_agent.data.errors import DataError
from pos_agent.data.home import data_home, downloads_dir
from pos_agent.data.store import Manifest, remove_tree, sha256_file

RELEASES = "https://github.com/alfworld/alfworld/releases/download"
GAMES_FOLDER = "json_2.1.1"
SPLITS = ("train", "valid_seen", "valid_unseen")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Archive:
    name: str
    release: str
    sha256: str | None = None
    """Pinned when known; ALFWorld publishes none."""

    @property
    def url(self) -> str:
        return f"{RELEASES}/{self.release}/{self.name}"


ARCHIVES = (
    Archive("json_2.1.1_json.zip", "0.2.2"),
    Archive("json_2.1.1_pddl.zip", "0.2.2"),
    Archive("json_2.1.1_tw-pddl.zip", "0.4.0"),
)
SOURCE = {
    "repository": "https://github.com/alfworld/alfworld",
    "release_archives": [archive.url for archive in ARCHIVES],
}


def _remote(origin: str | None) -> bool:
    return origin is None or (is_url(origin) and local_path_of(origin) is None)


def _fetch(archive: Archive, origin: str | None, say: Progress) -> tuple[Path, str]:
    """The archive as a local file (downloaded, or found in the `--from` folder) and its
    SHA-256."""
    if origin is None or _remote(origin):
        url = archive.url if origin is None else f"{origin.rstrip('/')}/{archive.name}"
        target = downloads_dir() / archive.name
        digest = download(url, target, sha256=archive.sha256, progress=say)
        return target, digest
    base = local_path_of(origin) or Path(origin).expanduser()
    path = base / archive.name if base.is_dir() else base
    if not path.is_file():
        raise DataError(
            f"--from {origin}: {archive.name} is not there. Put the three ALFWorld archives "
            f"({', '.join(a.name for a in ARCHIVES)}) in one folder, or pass a folder that "
            f"already holds {GAMES_FOLDER}/ (what alfworld-download made)."
        )
    digest = sha256_file(path)
    if archive.sha256 is not None and digest != archive.sha256:
        raise DataError(f"{path} has SHA-256 {digest}, not the pinned {archive.sha256}.")
    return path, digest


def _copy_logic(work: Path, manifest: Manifest) -> None:
    try:
        import alfworld
    except ImportError:
        manifest.notes.append("logic/ not written: the alfworld package is not installed")
        return
    package_data = Path(alfworld.__file__).parent / "data"
    (work / "logic").mkdir(exist_ok=True)
    for name in ("alfred.pddl", "alfred.twl2"):
        shutil.copyfile(package_data / name, work / "logic" / name)


def count_games(root: Path) -> dict[str, int]:
    """Game folders (those with a game.tw-pddl) per split."""
    return {
        split: sum(1 for _ in (root / GAMES_FOLDER / split).rglob("game.tw-pddl"))
        for split in SPLITS
        if (root / GAMES_FOLDER / split).is_dir()
    }


def build(origin: str | None, work: Path, manifest: Manifest, say: Progress) -> None:
    """Fetch (or find) the three archives and unpack them into `work`."""
    prepared = Path(origin).expanduser() if origin and not is_url(origin) else None
    if prepared is not None and (prepared / GAMES_FOLDER).is_dir():
        say(f"copying {prepared / GAMES_FOLDER} (an unpacked alfworld-download folder)")
        shutil.copytree(prepared / GAMES_FOLDER, work / GAMES_FOLDER)
        manifest.notes.append(f"copied from an unpacked folder ({prepared}); archives not seen")
    else:
        scratch = Path(tempfile.mkdtemp(prefix=".alfworld-", dir=data_home()))
        try:
            digests: dict[str, Any] = {}
            for archive in ARCHIVES:
                path, digests[archive.name] = _fetch(archive, origin, say)
                say(f"unpacking {archive.name}")
                extract(path, scratch / archive.name)
                _merge(scratch / archive.name, work)
                if _remote(origin):
                    path.unlink(missing_ok=True)
            manifest.source["archive_sha256"] = digests
        finally:
            remove_tree(scratch)
    games = count_games(work)
    if not games.get("valid_unseen"):
        raise DataError(
            f"No ALFWorld games under {GAMES_FOLDER}/valid_unseen after unpacking: these are "
            "not ALFWorld's archives."
        )
    _copy_logic(work, manifest)
    manifest.notes.append(
        "games per split: " + ", ".join(f"{split} {count}" for split, count in games.items())
    )


def _merge(source: Path, target: Path) -> None:
    """Move an unpacked archive's files into `target` (the archives share `json_2.1.1/`)."""
    for item in sorted(source.rglob("*")):
        if item.is_dir():
            continue
        out = target / item.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(item, out)
