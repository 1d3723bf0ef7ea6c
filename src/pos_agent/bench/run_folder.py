"""A run folder is one experiment, written by one `pos bench` at a time.

`runs/<run>/config.json` records the run's identity (see `identity.py`): the settings hash of
every case and the model options that change results. It is written once, when the run starts,
and never rewritten: a later command that would change the experiment (other models, budgets or
cases) is refused before it touches anything, with a message saying what differs. A lock file
(`runs/<run>/.lock`) keeps a second `pos bench` out of a run that is in progress.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from pos_agent.bench.case import CaseSpec
from pos_agent.bench.identity import (
    describe_changes,
    git_commit,
    pos_version,
    result_options,
    run_identity,
    served_models,
    settings_hash,
    spec_settings,
)
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.recorder import RecordError
from pos_agent.llm import ModelOptions, printable
from pos_agent.trace import write_json_atomic

logger = logging.getLogger(__name__)

CONFIG_VERSION = 2  # 2: identity, per-case settings hashes, provenance
CONFIG_NAME = "config.json"
LOCK_NAME = ".lock"
RESUMES_NAME = "resumes.jsonl"  # one line per resume: the code that continued the run


class RunFolderError(ValueError):
    """The run folder cannot be used as asked; the message says why and what to do."""


@dataclass(frozen=True)
class RunPlan:
    """The settings of every case of a run, and the run's identity."""

    cases: dict[str, dict[str, Any]]  # case folder -> its spec settings
    hashes: dict[str, str]  # case folder -> settings hash
    model_options: dict[str, Any]
    identity: str

    @classmethod
    def of(cls, specs: Sequence[CaseSpec], options: ModelOptions) -> RunPlan:
        """Each case is hashed with the options as its own models see them (the server they
        call), as its result records them; the run's options cover every case's models."""
        every_model = [model for spec in specs for model in served_models(spec)]
        model_options = result_options(options, every_model)
        cases = {spec.folder: spec_settings(spec) for spec in specs}
        hashes = {
            spec.folder: settings_hash(
                cases[spec.folder], result_options(options, served_models(spec))
            )
            for spec in specs
        }
        return cls(cases, hashes, model_options, run_identity(hashes))


def check_run_name(name: str) -> str:
    """The name, if it names one folder inside `--out` and prints as itself; RunFolderError
    otherwise (a newline or an escape sequence in a name would forge lines of the terminal
    output and the reports)."""
    path = PurePath(name)
    unprintable = [ch for ch in name if not ch.isprintable()]
    if unprintable:
        raise RunFolderError(
            f"run name {name!r} has characters that do not print "
            f"({', '.join(sorted({repr(ch) for ch in unprintable}))}); use letters, digits, "
            "'-', '_' and '.', e.g. --run alfworld-test"
        )
    if (
        not name.strip()
        or name != name.strip()
        or name in (".", "..")
        or path.is_absolute()
        or len(path.parts) != 1
        or "\\" in name
    ):
        raise RunFolderError(
            f"run name {name!r} must be one folder name inside --out "
            "(no '/', '\\', '..', absolute paths or spaces at its ends), e.g. --run alfworld-test"
        )
    return name


def prepare_out(out: Path) -> None:
    """Make sure `out` is a folder that exists (creating it) and can be written."""
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"--out {out} is a file; give the folder that holds runs")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunFolderError(
            f"cannot create --out {out}: {exc.strerror or exc}; choose a folder you can write"
        ) from None
    try:
        tempfile.TemporaryFile(dir=out).close()
    except OSError as exc:
        raise RunFolderError(
            f"cannot write in --out {out}: {exc.strerror or exc}; choose a folder you can write"
        ) from None


class RunFolder:
    """Opens a run folder for one command: takes the lock, checks or records the identity."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._lock = FileLock(run_dir / LOCK_NAME)

    def check(self, plan: RunPlan, *, resume: bool) -> None:
        """Refuse (RunFolderError) a plan this folder cannot take; reads, never writes."""
        config_path = self.run_dir / CONFIG_NAME
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise RunFolderError(f"{self.run_dir} is a file; choose another --run or --out")
        config = read_config(self.run_dir)
        if config is None:
            if config_path.exists():
                raise RunFolderError(
                    f"{config_path} is unreadable; this run cannot be checked, so it cannot be "
                    "continued: choose another --run"
                )
            finished = [f for f in plan.cases if (self.run_dir / f / "result.json").exists()]
            if finished:
                raise RunFolderError(
                    f"{self.run_dir} already holds results ({len(finished)} of these cases) but "
                    "no config.json; choose another --run"
                )
            return
        if not resume:
            raise RunFolderError(
                f"{self.run_dir} already holds a run; pass --resume to continue it, "
                "or choose another --run name"
            )
        if "identity" not in config:
            raise RunFolderError(
                f"{self.run_dir} was made by an older PoS that did not record its settings, so "
                "it cannot be continued safely; start a new run with --run NEW"
            )
        if config["identity"] != plan.identity:
            old_cases = {
                c["folder"]: c.get("spec", {})
                for c in config.get("cases", [])
                if isinstance(c, dict) and "folder" in c
            }
            changes = describe_changes(
                old_cases, plan.cases, config.get("model_options", {}), plan.model_options
            )
            raise RunFolderError(
                f"{self.run_dir} holds another experiment; continuing it with these settings "
                "would mix two in one folder. What differs (run -> now):\n  "
                + "\n  ".join(changes or ["the settings hash"])
                + f"\nUse the same flags as the run (see {config_path}), "
                "or start a new run with --run NEW."
            )

    def open(self, plan: RunPlan, *, resume: bool, describe: dict[str, Any] | None = None) -> None:
        """Lock the folder, check the plan again under the lock, and write a new run's
        config.json; an existing run's config.json is never rewritten."""
        self.lock(plan, resume=resume)
        try:
            self.record(plan, describe)
        except BaseException:
            self.close()
            raise

    def lock(self, plan: RunPlan, *, resume: bool) -> None:
        """Take the folder's lock and check the plan under it; writes nothing but the lock."""
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._acquire()
        except OSError as exc:
            raise RunFolderError(
                f"cannot write in {self.run_dir}: {exc.strerror or exc}; "
                "choose an --out folder you can write"
            ) from None
        try:
            self.check(plan, resume=resume)
        except BaseException:
            self.close()
            raise

    def claim_case(self, spec: CaseSpec, options: ModelOptions) -> None:
        """For `pos run --run NAME` inside a bench run: take the run's lock and refuse a case
        the run does not list, or lists with other settings (saying what differs)."""
        plan = RunPlan.of([spec], options)
        config = read_config(self.run_dir) or {}
        self._acquire()
        listed = {
            c["folder"]: c
            for c in config.get("cases", [])
            if isinstance(c, dict) and isinstance(c.get("folder"), str)
        }
        entry = listed.get(spec.folder)
        problem = None
        if entry is None:
            problem = (
                f"{self.run_dir} is a pos bench run that does not list {spec.folder}; "
                "choose another --run"
            )
        elif entry.get("settings_hash") != plan.hashes[spec.folder]:
            changes = describe_changes(
                {spec.folder: entry.get("spec", {})},
                plan.cases,
                config.get("model_options", {}),
                plan.model_options,
            )
            problem = (
                f"{self.run_dir} is a pos bench run whose {spec.folder} has other settings; "
                "playing it here would mix two experiments. What differs (run -> now):\n  "
                + "\n  ".join(changes or ["the settings hash"])
                + "\nUse the run's settings, or choose another --run."
            )
        if problem is not None:
            self.close()
            raise RunFolderError(problem)

    def _acquire(self) -> None:
        try:
            self._lock.acquire()
        except LockHeld as held:
            who = f"process {held.holder}" if held.holder else "another process"
            raise RunFolderError(
                f"{self.run_dir} is in use by {who} (another pos command on this run); "
                "wait for it to finish, or choose another --run"
            ) from None

    def record(self, plan: RunPlan, describe: dict[str, Any] | None = None) -> None:
        """Write a new run's config.json (under the lock); RecordError when the disk refuses."""
        config = read_config(self.run_dir)
        if config is not None:
            self._note_resume(config)
            return
        try:
            self._write_config(plan, describe or {})
        except OSError as exc:
            raise RecordError(
                exc.errno, f"cannot write {self.run_dir / CONFIG_NAME}: {exc.strerror or exc}"
            ) from None

    @property
    def created(self) -> bool:
        """True once the run's config.json exists (the run can be resumed)."""
        return (self.run_dir / CONFIG_NAME).is_file()

    def close(self) -> None:
        self._lock.release()

    def _note_resume(self, config: dict[str, Any]) -> None:
        """Record which code continues the run (`resumes.jsonl`), and warn when it is not the
        code that started it: the settings are the same, but a result may differ."""
        now = {"git_commit": git_commit(), "pos_version": pos_version()}
        started = {name: config.get(name) for name in now}
        changed = [
            f"{name} {started[name]} -> {now[name]}" for name in now if started[name] != now[name]
        ]
        entry = {"resumed_at": time.time(), **now, "started_with": started}
        try:
            with (self.run_dir / RESUMES_NAME).open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, sort_keys=True) + "\n")
        except OSError as exc:
            raise RunFolderError(
                f"cannot write in {self.run_dir}: {exc.strerror or exc}; "
                "choose an --out folder you can write"
            ) from None
        if changed:
            logger.warning(
                "%s was started by other code (%s); its results will mix both (each result "
                "records its git_commit; %s lists every resume)",
                printable(self.run_dir),
                printable(", ".join(changed)),
                RESUMES_NAME,
            )

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_config(self, plan: RunPlan, describe: dict[str, Any]) -> None:
        write_json_atomic(
            self.run_dir / CONFIG_NAME,
            {
                "config_version": CONFIG_VERSION,
                "run": self.run_dir.name,
                "identity": plan.identity,
                "created_at": time.time(),
                "pos_version": pos_version(),
                "git_commit": git_commit(),
                **describe,
                "model_options": plan.model_options,
                "cases": [
                    {"folder": folder, "settings_hash": plan.hashes[folder], "spec": spec}
                    for folder, spec in plan.cases.items()
                ],
            },
        )


def read_config(run_dir: Path) -> dict[str, Any] | None:
    """The run's config.json, or None when it is missing or unreadable."""
    try:
        data = json.loads((run_dir / CONFIG_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def listed_cases(run_dir: Path) -> list[str] | None:
    """The case folders the run's config lists, or None when it lists none (older runs)."""
    config = read_config(run_dir)
    if config is None or not isinstance(config.get("cases"), list):
        return None
    folders = []
    for entry in config["cases"]:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("folder"), str):
            folders.append(entry["folder"])
        elif (folder := _legacy_folder(entry)) is not None:
            folders.append(folder)
    return folders or None


def _legacy_folder(entry: dict[str, Any]) -> str | None:
    """Config files before version 2 list the case specs themselves."""
    known = set(CaseSpec.model_fields)
    try:
        return CaseSpec(**{k: v for k, v in entry.items() if k in known}).folder
    except (TypeError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
