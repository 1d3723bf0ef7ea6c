"""Reading run folders: every result once, the traces without one, the cases a run listed but
never recorded (so a report cannot silently shrink its denominator), and the results whose
settings are not their run's (so a report never pools two experiments)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pos_agent.bench.run_folder import CONFIG_NAME, listed_cases, read_config
from pos_agent.trace import CaseResult, read_result, record_problems


class ReportError(Exception):
    """The report cannot be made (no such folder, nothing finished); the message says what to do."""


@dataclass(frozen=True)
class MissingCase:
    """A case the run's config.json lists that has no record at all in the run folder."""

    run: str
    folder: str
    agent: str


@dataclass(frozen=True)
class ForeignResult:
    """A result.json inside a run folder whose settings hash is not the one the run's
    config.json lists for that case (say, `pos run --run NAME` wrote over a bench case with
    other settings): it belongs to another experiment and is left out of the tables."""

    path: Path
    result_hash: str | None
    run_hash: str | None  # None: the run does not list this case at all


@dataclass(frozen=True)
class InvalidResult:
    """A result.json that parses but cannot be a record PoS wrote as it stands (an unknown
    version, negative counts, a trace with garbage lines): listed, never counted, and rerun
    by `pos bench --resume`."""

    path: Path
    problems: tuple[str, ...]


@dataclass(frozen=True)
class LoadedRuns:
    """What the run folders hold: finished cases, and the ones that could not be read."""

    cases: list[CaseResult]
    unfinished: list[Path] = field(default_factory=list)  # events.jsonl but no result.json
    unreadable: list[Path] = field(default_factory=list)  # a result.json that does not parse
    missing: list[MissingCase] = field(default_factory=list)  # listed, never recorded
    foreign: list[ForeignResult] = field(default_factory=list)  # other settings than the run
    invalid: list[InvalidResult] = field(default_factory=list)  # not a sound record


def load_runs(run_dirs: Sequence[Path]) -> LoadedRuns:
    """Every case under the given folders (a run, a folder of runs, or one case folder)."""
    cases: list[CaseResult] = []
    unfinished: list[Path] = []
    unreadable: list[Path] = []
    missing: list[MissingCase] = []
    foreign: list[ForeignResult] = []
    invalid: list[InvalidResult] = []
    seen: set[Path] = set()
    seen_runs: set[Path] = set()
    run_hashes: dict[Path, dict[str, str] | None] = {}
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise ReportError(f"{run_dir} is not a folder; pass run folders such as runs/<run>")
        case_dirs = {p.parent for p in run_dir.rglob("result.json")}
        case_dirs |= {p.parent for p in run_dir.rglob("events.jsonl")}
        if (run_dir / "result.json").is_file() or (run_dir / "events.jsonl").is_file():
            case_dirs.add(run_dir)
        for case_dir in sorted(case_dirs):
            key = case_dir.resolve()
            if key in seen:
                continue
            seen.add(key)
            if not (case_dir / "result.json").is_file():
                unfinished.append(case_dir)
                continue
            result = read_result(case_dir)
            if result is None:
                unreadable.append(case_dir)
                continue
            problems = record_problems(case_dir, result)
            if problems:
                invalid.append(InvalidResult(case_dir, tuple(problems)))
                continue
            other = _foreign(case_dir, result, run_hashes)
            if other is not None:
                foreign.append(other)
            else:
                cases.append(result)
        for config in sorted(run_dir.rglob(CONFIG_NAME)):
            run = config.parent
            if run.resolve() not in seen_runs:
                seen_runs.add(run.resolve())
                missing += _missing_cases(run)
    return LoadedRuns(cases, unfinished, unreadable, missing, foreign, invalid)


def _foreign(
    case_dir: Path, result: CaseResult, run_hashes: dict[Path, dict[str, str] | None]
) -> ForeignResult | None:
    """The mismatch of a result with its run's config.json (the folder above the case), or
    None when they agree or there is nothing to check against (no config, an older config
    without hashes)."""
    run = case_dir.parent
    key = run.resolve()
    if key not in run_hashes:
        run_hashes[key] = _listed_hashes(run)
    listed = run_hashes[key]
    if listed is None:
        return None
    expected = listed.get(case_dir.name)
    if expected is not None and result.settings_hash == expected:
        return None
    return ForeignResult(case_dir, result.settings_hash, expected)


def _listed_hashes(run: Path) -> dict[str, str] | None:
    """{case folder: settings hash} from the run's config.json; None when it has none."""
    if not (run / CONFIG_NAME).is_file():
        return None
    config = read_config(run)
    if config is None or not isinstance(config.get("cases"), list):
        return None
    hashes = {
        entry["folder"]: entry["settings_hash"]
        for entry in config["cases"]
        if isinstance(entry, dict)
        and isinstance(entry.get("folder"), str)
        and isinstance(entry.get("settings_hash"), str)
    }
    return hashes or None


def _missing_cases(run: Path) -> list[MissingCase]:
    folders = listed_cases(run)
    if folders is None:
        return []
    agents = _agents_by_folder(run)
    return [
        MissingCase(run.name, folder, agents.get(folder, folder.split("__", 1)[0]))
        for folder in folders
        if not any((run / folder / name).is_file() for name in ("result.json", "events.jsonl"))
    ]


def _agents_by_folder(run: Path) -> dict[str, str]:
    config = read_config(run) or {}
    agents = {}
    for entry in config.get("cases", []):
        if isinstance(entry, dict) and isinstance(entry.get("folder"), str):
            spec = entry.get("spec")
            if isinstance(spec, dict) and isinstance(spec.get("agent"), str):
                agents[entry["folder"]] = spec["agent"]
    return agents
