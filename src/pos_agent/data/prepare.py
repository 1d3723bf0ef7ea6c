"""`pos data get` and `pos data list` as functions: fetch and prepare a data set, say what is
ready, and find a ready one for an environment."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.data import alfworld, clindiag, loca, nezha
from pos_agent.data.acquire import open_pinned
from pos_agent.data.home import data_home, dataset_dir
from pos_agent.data.sources import DataSource, source
from pos_agent.data.store import check_files, preparing, read_manifest

Progress = Callable[[str], None]
_BUILDERS = {"clindiag": clindiag.build, "rca-nezha": nezha.build, "loca": loca.build}


def get(
    name: str,
    origin: str | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Fetch and prepare data set `name` from `origin` (None: its pinned URL) into the cache;
    the ready folder. A ready folder is kept unless `force`."""
    chosen = source(name)
    say = progress or (lambda _message: None)
    final = dataset_dir(name)
    if not force and read_manifest(final) is not None:
        say(f"{name} is ready at {final} (--force prepares it again)")
        return final
    record: dict[str, Any] = {
        "name": name,
        "licence": chosen.licence,
        "upstream": chosen.upstream,
    }
    if chosen.pinned is None:
        record.update(alfworld.SOURCE)
        record["from"] = origin or "the release URLs"
        with preparing(name, record) as (work, manifest):
            alfworld.build(origin, work, manifest, say)
        return final
    with (
        preparing(name, record) as (work, manifest),
        open_pinned(chosen.pinned, origin, progress=say) as (tree, where),
    ):
        manifest.source.update(where)
        say(f"preparing {name} in {work}")
        _BUILDERS[name](tree, chosen.pinned, work, manifest, say)
    return final


@dataclass
class DataStatus:
    """Where a data set is on this machine and whether it is ready."""

    source: DataSource
    path: Path
    state: str
    """`ready`, `missing`, `partial` (an interrupted prepare, or files that differ from the
    manifest) or `external` (the environment variable points at a copy of one's own)."""
    detail: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return self.state in ("ready", "external")


def status(name: str, *, verify: bool = False) -> DataStatus:
    """The state of data set `name`; `verify` re-hashes every prepared file."""
    chosen = source(name)
    override = os.environ.get(chosen.env_var)
    # `import alfworld` sets ALFWORLD_DATA to its default; only a folder with games counts.
    if override and (name != "alfworld" or (Path(override) / alfworld.GAMES_FOLDER).is_dir()):
        path = Path(override).expanduser()
        state = "external" if path.exists() else "missing"
        return DataStatus(chosen, path, state, f"from ${chosen.env_var}")
    folder = dataset_dir(name)
    manifest = read_manifest(folder)
    if manifest is None:
        partial = folder.exists() or any(data_home().glob(f".{name}.partial-*"))
        if partial:
            return DataStatus(chosen, folder, "partial", "not ready: run `pos data get` again")
        return DataStatus(chosen, folder, "missing")
    problems = check_files(folder, manifest, hashes=verify)
    if problems:
        return DataStatus(chosen, folder, "partial", "differs from its manifest", problems)
    return DataStatus(chosen, folder, "ready", f"prepared {manifest.prepared_at}")


def prepared(name: str) -> Path | None:
    """The cache folder of `name` when it is ready (manifest present), else None."""
    folder = dataset_dir(name)
    return folder if read_manifest(folder) is not None else None


def how_to_get(name: str) -> str:
    """The sentence an error about missing data ends with."""
    chosen = source(name)
    return (
        f"Get it with `pos data get {name}` (it goes to {dataset_dir(name)}; "
        f"`pos data get {name} --from PATH` takes a local copy or archive), or point "
        f"${chosen.env_var} at a prepared copy."
    )
