"""The RCA data folder: where cases live, which ids exist, and the task listing.

A data folder holds `cases/<case_id>/` (task.json, topology.json, metrics/logs/traces/alerts
parquet), `answers/<case_id>.json` and usually `index.jsonl`. Listing reads only task.json, so
it never touches an answer.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_agent.envs._types import EnvError, TaskSpec
from pos_agent.envs.tools import locate_data

GENERIC_ENV = "rca"
NEZHA_ENV = "rca-nezha"
DATA_ENV_VAR = "POS_RCA_DATA"
DEFAULT_SPLIT = "all"
TELEMETRY_FILES = ("metrics", "logs", "traces", "alerts")
_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_case_id(case_id: str) -> str:
    """The case id, stripped; EnvError unless it is a plain folder name (no path can hide in it)."""
    cleaned = case_id.strip()
    if not _CASE_ID.match(cleaned) or cleaned.strip(".") == "":
        raise EnvError(
            f"Bad RCA case id {case_id!r}: a case id is a folder name under cases/ (letters, "
            "digits, '.', '_', '-'); `pos envs rca-nezha` lists them."
        )
    return cleaned


@dataclass(frozen=True)
class RcaData:
    """An RCA100-layout data folder."""

    root: Path

    @property
    def cases_dir(self) -> Path:
        return self.root / "cases"

    @property
    def answers_dir(self) -> Path:
        return self.root / "answers"

    @classmethod
    def locate(cls, env_name: str, data_dir: str | Path | None) -> RcaData:
        marker = "cases/<id>/ (task.json, topology.json, *.parquet) and answers/<id>.json"
        if env_name == GENERIC_ENV and data_dir in (None, "") and not os.environ.get(DATA_ENV_VAR):
            raise EnvError(
                f"The generic `rca` environment needs a data folder ({marker}): pass "
                f"data_dir=PATH (suite YAML env_options) or set {DATA_ENV_VAR}=PATH; "
                "`rca-nezha` uses the folder `pos data get rca-nezha` prepares."
            )
        root = locate_data(
            "rca-nezha", data_dir=data_dir, env_var=DATA_ENV_VAR, what="RCA", marker=marker
        )
        data = cls(root)
        if not data.cases_dir.is_dir():
            raise EnvError(f"{root} has no cases/ folder; it must hold {marker}.")
        return data

    def case_ids(self) -> list[str]:
        return sorted(
            d.name
            for d in self.cases_dir.iterdir()
            if d.is_dir() and _CASE_ID.match(d.name) and (d / "task.json").is_file()
        )

    def case_folder(self, case_id: str) -> Path:
        folder = self.cases_dir / check_case_id(case_id)
        if not (folder / "task.json").is_file():
            raise EnvError(
                f"Unknown RCA case {case_id!r}: no {folder}/task.json; "
                "`pos envs rca-nezha` (or `pos envs rca`) lists the cases."
            )
        return folder


def read_task(folder: Path) -> dict[str, Any]:
    """A case's task.json: the alert the agent sees."""
    try:
        data = json.loads((folder / "task.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EnvError(f"{folder}/task.json cannot be read ({exc}).") from exc
    if not isinstance(data, dict):
        raise EnvError(f"{folder}/task.json must hold a JSON object.")
    return data


def list_rca_tasks(
    env_name: str, split: str | None, data_dir: str | Path | None = None
) -> list[TaskSpec]:
    """Every case (split `all`) or the cases of one system (split = the system name)."""
    data = RcaData.locate(env_name, data_dir)
    chosen = split or DEFAULT_SPLIT
    specs: list[TaskSpec] = []
    systems: set[str] = set()
    for case_id in data.case_ids():
        task = read_task(data.cases_dir / case_id)
        system = str(task.get("system") or "unknown")
        systems.add(system)
        if chosen not in (DEFAULT_SPLIT, system):
            continue
        specs.append(
            TaskSpec(
                env=env_name,
                task_id=case_id,
                category=system,
                split=chosen,
                description=str(task.get("alert_title") or "Find the root cause of an alert."),
            )
        )
    if chosen != DEFAULT_SPLIT and chosen not in systems:
        raise EnvError(
            f"Unknown RCA split {chosen!r}; use `all` or a system: {', '.join(sorted(systems))}."
        )
    return specs
