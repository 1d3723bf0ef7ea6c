"""LOCA-Bench's cases, read from a checkout: 15 tasks x 7 lengths x 5 seeds = 525 (paper App. C).

A task id is `<Task>-<length>` (`WoocommerceStockAlert-8k`); the seed picks one of the five
environment states of that task and length. Splits are the lengths (`8k`, ..., `256k`) or `all`.
Only the checkout's `task-configs/final_<length>_set_config.json` are read; LOCA's code runs in
its own runtime (bridge.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pos_agent.data import dataset_dir, prepared
from pos_agent.envs._types import EnvError, TaskSpec

ENV_NAME = "loca"
ROOT_ENV_VAR = "POS_LOCA_ROOT"
REPOSITORY = "https://github.com/hkust-nlp/LOCA-bench"
COMMIT = "8cd474d"
# Environment-description lengths and environment seeds of the paper (App. C, Table 6).
LENGTHS = ("8k", "16k", "32k", "64k", "96k", "128k", "256k")
SEEDS = (42, 123, 456, 789, 2024)
ALL_SPLIT = "all"
# The paper's grouping (the repository has none), five tasks each.
CATEGORIES = {
    "CanvasArrangeExam": "cross-source",
    "CourseAssistant": "cross-source",
    "ApplyPhDEmail": "cross-source",
    "SetConfCrDdl": "cross-source",
    "PayableInvoiceChecker": "cross-source",
    "ABTesting": "analytics",
    "AcademicWarning": "analytics",
    "ExcelMarketResearch": "analytics",
    "MachineOperating": "analytics",
    "NhlB2bAnalysis": "analytics",
    "CanvasListTest": "env-ops",
    "FilterLowSellingProducts": "env-ops",
    "UpdateMaterialInventory": "env-ops",
    "WoocommerceNewWelcome": "env-ops",
    "WoocommerceStockAlert": "env-ops",
}
CATEGORY_TITLES = {
    "cross-source": "Cross-source workflows",
    "analytics": "Structured analytics",
    "env-ops": "Environment operations",
}
_CLASS_SUFFIX = "S2LEnv"


def length_tokens(label: str) -> int:
    """The nominal size of a length label: `8k` -> 8000... (LOCA's K is a thousand tokens)."""
    return int(label.lower().rstrip("k")) * 1000


def normalize_length(label: str) -> str:
    cleaned = label.strip().lower()
    if cleaned.isdigit():
        cleaned += "k"
    if cleaned not in LENGTHS:
        raise EnvError(f"Unknown LOCA length {label!r}; use one of {', '.join(LENGTHS)}.")
    return cleaned


@dataclass(frozen=True)
class LocaCase:
    """One configured environment state: a task at one length and seed, as LOCA's config says."""

    task: str
    length: str
    seed: int
    env_class: str
    env_params: dict[str, Any]
    mcp_servers: dict[str, Any]

    @property
    def task_id(self) -> str:
        return f"{self.task}-{self.length}"

    @property
    def category(self) -> str:
        return CATEGORIES.get(self.task, "other")

    def config(self) -> dict[str, Any]:
        """The config entry in LOCA's own format (what bridge.py sets up)."""
        return {
            "name": f"{self.task}{_CLASS_SUFFIX}",
            "env_class": self.env_class,
            "env_params": dict(self.env_params),
            "mcp_servers": dict(self.mcp_servers),
        }


def missing_checkout_help() -> str:
    return (
        f"Get LOCA-Bench (MIT) at its pinned commit with `pos data get loca` (it goes to "
        f"{dataset_dir('loca')}; `--from PATH` takes a clone or an archive), or clone it "
        f"yourself (git clone {REPOSITORY}.git LOCA-bench && git -C LOCA-bench checkout "
        f"{COMMIT}) and pass --loca-root PATH (suite YAML: env_options: {{loca_root: PATH}}) or "
        f"set {ROOT_ENV_VAR}=PATH."
    )


def locate_checkout(loca_root: str | Path | None = None) -> Path:
    """The LOCA-Bench checkout: `loca_root`, else $POS_LOCA_ROOT, else the checkout
    `pos data get loca` prepared."""
    chosen = loca_root if loca_root not in (None, "") else os.environ.get(ROOT_ENV_VAR) or None
    if chosen is not None:
        path = Path(chosen).expanduser().resolve()
        source = "--loca-root" if loca_root not in (None, "") else ROOT_ENV_VAR
        if not _is_checkout(path):
            raise EnvError(
                f"{path} (from {source}) is not a LOCA-Bench checkout: it needs gem/ and "
                f"task-configs/final_8k_set_config.json. {missing_checkout_help()}"
            )
        return path
    ready = prepared(ENV_NAME)
    if ready is not None and _is_checkout(ready):
        return ready
    raise EnvError(f"No LOCA-Bench checkout found. {missing_checkout_help()}")


def _is_checkout(path: Path) -> bool:
    return (path / "gem").is_dir() and (
        path / "task-configs" / "final_8k_set_config.json"
    ).is_file()


@lru_cache(maxsize=32)
def _read_length(root: Path, length: str) -> tuple[LocaCase, ...]:
    path = root / "task-configs" / f"final_{length}_set_config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EnvError(f"Cannot read {path} ({exc}); is {root} a complete checkout?") from exc
    entries = data.get("configurations") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise EnvError(f"{path} has no `configurations` list.")
    cases = []
    for entry in entries:
        try:
            name = str(entry["name"])
            params = dict(entry["env_params"])
            cases.append(
                LocaCase(
                    task=name.removesuffix(_CLASS_SUFFIX),
                    length=length,
                    seed=int(params["seed"]),
                    env_class=str(entry["env_class"]),
                    env_params=params,
                    mcp_servers=dict(entry["mcp_servers"]),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EnvError(
                f"{path}: an entry lacks name/env_class/env_params.seed ({exc})."
            ) from exc
    return tuple(cases)


def read_cases(
    loca_root: str | Path | None = None, lengths: tuple[str, ...] = LENGTHS
) -> list[LocaCase]:
    """Every configured (task, length, seed) of the checkout, lengths in paper order."""
    root = locate_checkout(loca_root)
    available = [
        n for n in lengths if (root / "task-configs" / f"final_{n}_set_config.json").exists()
    ]
    return [case for length in available for case in _read_length(root, length)]


def split_lengths(split: str | None) -> tuple[str, ...]:
    chosen = (split or ALL_SPLIT).strip().lower()
    if chosen == ALL_SPLIT:
        return LENGTHS
    return (normalize_length(chosen),)


def parse_task_id(task_id: str) -> tuple[str, str | None]:
    """`WoocommerceStockAlert-8k` -> (task, length); a bare task name has no length."""
    cleaned = task_id.strip().removesuffix(_CLASS_SUFFIX)
    base, sep, tail = cleaned.rpartition("-")
    if sep and tail.lower().rstrip("k").isdigit():
        return base.removesuffix(_CLASS_SUFFIX), normalize_length(tail)
    return cleaned, None


def find_case(
    task_id: str, seed: int | None, split: str | None, loca_root: str | Path | None
) -> LocaCase:
    """The configured case for a task id (or task name plus a length split) and a seed."""
    task, length = parse_task_id(task_id)
    if length is None:
        lengths = split_lengths(split)
        if len(lengths) != 1:
            raise EnvError(
                f"LOCA task {task_id!r} needs a length: write it as {task}-8k (lengths: "
                f"{', '.join(LENGTHS)}) or pass the length as the split."
            )
        length = lengths[0]
    cases = [c for c in read_cases(loca_root, (length,)) if c.task.lower() == task.lower()]
    if not cases:
        known = sorted({c.task for c in read_cases(loca_root, (length,))})
        raise EnvError(
            f"Unknown LOCA task {task!r} at {length}; tasks: {', '.join(known)} "
            "(`pos envs loca` lists them)."
        )
    chosen_seed = cases[0].seed if seed is None else seed
    for case in cases:
        if case.seed == chosen_seed:
            return case
    seeds = ", ".join(str(c.seed) for c in cases)
    raise EnvError(f"LOCA {cases[0].task_id} has no seed {seed}; its seeds are {seeds}.")


def list_loca_tasks(
    split: str | None = None, loca_root: str | Path | None = None
) -> list[TaskSpec]:
    """One TaskSpec per task and length (each has five seeds); split = a length or `all`.

    Task-major order (a task at every length, then the next task), so that the first N tasks
    of a run over several lengths cover all of them.
    """
    lengths = split_lengths(split)
    by_task: dict[str, list[LocaCase]] = {}
    order: dict[str, int] = {}
    for case in read_cases(loca_root, lengths):
        by_task.setdefault(case.task_id, []).append(case)
        order.setdefault(case.task, len(order))
    ranked = sorted(
        by_task.items(),
        key=lambda item: (order[item[1][0].task], LENGTHS.index(item[1][0].length)),
    )
    specs = []
    for task_id, cases in ranked:
        first = cases[0]
        servers = ", ".join(first.mcp_servers)
        seeds = "/".join(str(c.seed) for c in cases)
        specs.append(
            TaskSpec(
                env=ENV_NAME,
                task_id=task_id,
                category=first.category,
                split=(split or ALL_SPLIT).lower(),
                description=f"{first.length.upper()} environment, seeds {seeds}; MCP: {servers}",
            )
        )
    return specs
