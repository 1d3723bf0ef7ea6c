"""Several run folders in one report: shards of one sweep merge, two experiments do not.

`pos report runA runB ...` pools the runs' cases into one row per method. That is right for
the shards of one sweep (`pos bench --shard I/N` on N machines) and for runs of different
methods with the same settings, and wrong for one method run twice with other settings (another
model, budget or bound): its row would average two experiments. So before pooling, each method's
settings are compared across the runs that hold it, from their config.json files:

- a setting counts when it has one value for all of the method's cases in a run (the task, the
  seed and any setting that varies between the cases of a run are the cases' own);
- the result-changing model options of the runs are compared as they are;
- a case in two runs (overlapping shards, a run copied twice) would be counted twice.

Each problem is one line saying what differs; `--split-runs` reports each run as its own method
instead, to compare configurations side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pos_agent.bench.identity import flat_settings
from pos_agent.bench.run_folder import CONFIG_NAME, read_config

PER_CASE_SETTINGS = frozenset({"task", "seed"})


def run_configs(run_dirs: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """{run folder (as given or found): its config.json} for every run under `run_dirs`."""
    found: dict[Path, dict[str, Any]] = {}
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            continue
        for path in sorted(run_dir.rglob(CONFIG_NAME)):
            run = path.parent
            key = run.resolve()
            if key in found:
                continue
            config = read_config(run)
            if config is not None and isinstance(config.get("cases"), list):
                found[key] = {**config, "_path": str(run)}
    return {str(config["_path"]): config for config in found.values()}


def merge_problems(run_dirs: Sequence[Path]) -> list[str]:
    """What keeps these runs from being pooled into one report (empty when they merge)."""
    configs = run_configs(run_dirs)
    if len(configs) < 2:
        return []
    problems = _overlaps(configs)
    constant: dict[str, dict[str, dict[str, str]]] = {}  # run -> agent -> setting -> value
    per_case: dict[str, set[str]] = {}  # agent -> settings that vary inside some run
    for run, config in configs.items():
        options = flat_settings(config.get("model_options") or {}, "model_options.")
        for agent, specs in _specs_by_agent(config).items():
            values: dict[str, set[str]] = {}
            for spec in specs:
                for name, value in flat_settings(spec).items():
                    values.setdefault(name, set()).add(value)
            per_case.setdefault(agent, set()).update(n for n, v in values.items() if len(v) > 1)
            settled = {name: next(iter(v)) for name, v in values.items() if len(v) == 1}
            constant.setdefault(run, {})[agent] = {**settled, **options}
    for agent in sorted({a for by_agent in constant.values() for a in by_agent}):
        holders = [run for run in constant if agent in constant[run]]
        first = holders[0]
        for other in holders[1:]:
            a, b = constant[first][agent], constant[other][agent]
            for name in sorted(set(a) & set(b)):
                if name in per_case[agent] or name.split(".", 1)[0] in PER_CASE_SETTINGS:
                    continue
                if a[name] != b[name]:
                    problems.append(
                        f"{agent}: {name} is {a[name]} in {first} but {b[name]} in {other}"
                    )
    return problems


def _overlaps(configs: dict[str, dict[str, Any]]) -> list[str]:
    owner: dict[str, str] = {}
    twice: dict[tuple[str, str], list[str]] = {}
    for run, config in configs.items():
        for entry in config["cases"]:
            folder = entry.get("folder") if isinstance(entry, dict) else None
            if not isinstance(folder, str):
                continue
            if folder in owner and owner[folder] != run:
                twice.setdefault((owner[folder], run), []).append(folder)
            else:
                owner[folder] = run
    return [
        f"{len(folders)} case(s) are in both {a} and {b} (overlapping shards?), e.g. {folders[0]}"
        for (a, b), folders in twice.items()
    ]


def _specs_by_agent(config: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for entry in config["cases"]:
        spec = entry.get("spec") if isinstance(entry, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("agent"), str):
            by_agent.setdefault(spec["agent"], []).append(spec)
    return by_agent
