"""`pos trapbench real build`: the real corpus rebuilt from its source files.

Each source file of the manifest is looked for in the folder given (`sources.py`); its sha256
must match. A file that is missing or different is listed, with where it comes from and how to
get it, and its trajectories are left out; the others are built. Each trajectory is its
converter's `index`-th in the file, and must have the manifest's number of steps.

The output folder is written whole into a temporary folder beside it, then renamed into place:
`trajectories.jsonl` (id, goal, steps), the `manifest.jsonl` and `labels.jsonl` lines of what
was built, and `build.json` (what was built, what was missing and why).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from pos_trapbench.real.formats import convert
from pos_trapbench.real.manifest import (
    LABELS_FILE,
    MANIFEST_FILE,
    SourceEntry,
    TrajectoryLabels,
    load_labels,
    load_manifest,
)
from pos_trapbench.real.sources import Found, SourceFile, SourceFolder
from pos_trapbench.real.steps import RealTrajectory

BUILD_VERSION = 1
TRAJECTORIES_FILE = "trajectories.jsonl"
BUILD_FILE = "build.json"


class MissingSource(BaseModel):
    """A source file that was not built from."""

    repo: str
    path: str
    commit: str | None
    sha256: str
    problem: Literal["missing", "different"]
    where: str
    """Where it was looked for, or the file read that had another sha256."""
    found_sha256: str | None = None
    trajectories: list[str]
    how_to_get: str


class Unconverted(BaseModel):
    """A trajectory whose source file was read but did not convert as the manifest says."""

    id: str
    problem: str


class BuildReport(BaseModel):
    version: int = BUILD_VERSION
    source_folder: str
    built: list[str] = Field(default_factory=list)
    splits: dict[str, int] = Field(default_factory=dict)
    """Trajectories built per split."""
    missing: list[MissingSource] = Field(default_factory=list)
    unconverted: list[Unconverted] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing and not self.unconverted


@dataclass(frozen=True, slots=True)
class Built:
    entry: SourceEntry
    trajectory: RealTrajectory


def source_files(entries: Iterable[SourceEntry]) -> list[SourceFile]:
    """The manifest's distinct source files, in first-use order, each with its trajectories."""
    ids: dict[tuple[str, str, str | None, str], list[str]] = {}
    for entry in entries:
        ids.setdefault((entry.repo, entry.path, entry.commit, entry.sha256), []).append(entry.id)
    return [SourceFile(*key, tuple(found)) for key, found in ids.items()]


def _convert(entry: SourceEntry, text: str) -> RealTrajectory | str:
    """The entry's trajectory, or why it cannot be had."""
    found = convert(entry.format, text)
    if entry.index >= len(found):
        return f"{entry.format} found {len(found)} trajectories, the manifest wants #{entry.index}"
    trajectory = found[entry.index]
    if len(trajectory.steps) != entry.steps:
        return f"converted to {len(trajectory.steps)} steps, the manifest says {entry.steps}"
    return trajectory


def _missing(source: SourceFile, found: Found) -> MissingSource:
    return MissingSource(
        repo=source.repo,
        path=source.path,
        commit=source.commit,
        sha256=source.sha256,
        problem="different" if found.problem == "different" else "missing",
        where=found.where,
        found_sha256=found.sha256,
        trajectories=list(source.ids),
        how_to_get=source.how_to_get(),
    )


def rebuild(folder: Path, entries: Sequence[SourceEntry]) -> tuple[list[Built], BuildReport]:
    """Every trajectory of `entries` whose source file is in `folder`, in manifest order."""
    sources = SourceFolder(folder)
    by_id = {e.id: e for e in entries}
    report = BuildReport(source_folder=str(folder))
    trajectories: dict[str, RealTrajectory] = {}
    for source in source_files(entries):
        found = sources.read(source)
        if found.data is None:
            report.missing.append(_missing(source, found))
            continue
        text = found.data.decode("utf-8", errors="replace")
        for trajectory_id in source.ids:
            converted = _convert(by_id[trajectory_id], text)
            if isinstance(converted, str):
                report.unconverted.append(Unconverted(id=trajectory_id, problem=converted))
            else:
                trajectories[trajectory_id] = converted
    built = [Built(e, trajectories[e.id]) for e in entries if e.id in trajectories]
    report.built = [b.entry.id for b in built]
    report.splits = dict(sorted(Counter(b.entry.split for b in built).items()))
    return built, report


def trajectory_line(trajectory_id: str, trajectory: RealTrajectory) -> str:
    record = {
        "id": trajectory_id,
        "goal": trajectory.goal,
        "steps": [s.as_dict() for s in trajectory.steps],
    }
    return json.dumps(record, ensure_ascii=False) + "\n"


def build_corpus(
    source_folder: Path,
    out: Path,
    entries: Sequence[SourceEntry] | None = None,
    labels: dict[str, TrajectoryLabels] | None = None,
) -> BuildReport:
    """Rebuild the corpus (the packaged manifest and labels by default) from `source_folder`
    into `out`, replacing it whole; raises ValueError when `out` is a folder that holds
    something other than a built corpus."""
    entries = load_manifest() if entries is None else entries
    labels = load_labels() if labels is None else labels
    _check_replaceable(out)
    built, report = rebuild(source_folder, entries)
    files = {
        TRAJECTORIES_FILE: "".join(trajectory_line(b.entry.id, b.trajectory) for b in built),
        MANIFEST_FILE: "".join(b.entry.model_dump_json() + "\n" for b in built),
        LABELS_FILE: "".join(
            labels.get(b.entry.id, TrajectoryLabels(id=b.entry.id, stretches=[])).model_dump_json()
            + "\n"
            for b in built
        ),
        BUILD_FILE: report.model_dump_json(indent=2) + "\n",
    }
    write_folder_atomic(out, files)
    return report


def _check_replaceable(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / BUILD_FILE).is_file():
        raise ValueError(
            f"{out} is not empty and holds no {BUILD_FILE}: not a corpus built here, so it is "
            "left alone (choose another --out)"
        )


def write_folder_atomic(out: Path, files: dict[str, str]) -> None:
    """Write `files` (name -> text) as the folder `out`: built beside it, then renamed into
    place, so `out` is never a half-written corpus; the previous `out` is removed after."""
    out = out.absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        staging.chmod(0o777 & ~_umask())
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
        try:
            staging.rename(out)
        except BaseException:
            if old is not None:
                old.rename(out)
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
