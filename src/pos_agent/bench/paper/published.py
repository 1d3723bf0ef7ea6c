"""The paper's published Tables 1, 2 and 9 (figures only), shipped as package data
(`published.json`) so that a report can print them beside a run's own.

Transcribed from the paper (see `grid.PAPER`): Table 1 (ALF and LOCA success, RCA-100 joint
accuracy, ClinDiag overall accuracy, per backbone), Table 2 (RCA-100 with Qwen3.7-Plus: joint
accuracy and tokens per episode in thousands by role) and Table 9 (ALFWorld and LOCA-Bench by
category, RCA-100's FT, RCL and Joint, ClinDiag's Common, Rare and Overall). Values are percent
except Table 2's tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

# Table 9's columns per benchmark, in the paper's order (the last of each is Table 1's value).
TABLE9_COLUMNS: dict[str, tuple[str, ...]] = {
    "alfworld": ("Place", "Transform", "Inspect", "Overall"),
    "loca": ("Cross-source", "Analytics", "Env. Ops", "Overall"),
    "rca": ("FT", "RCL", "Joint"),
    "clindiag": ("Common", "Rare", "Overall"),
}
# Table 2's token columns (thousands per episode).
TABLE2_ROLES: tuple[str, ...] = ("task_agent", "belief", "sentinel", "total")


@dataclass(frozen=True)
class Published:
    """The published tables: `table1[backbone][method][column]`,
    `table2[backbone][method][joint|task_agent|belief|sentinel|total]` and
    `table9[backbone][method][benchmark][column]`."""

    source: str
    table1: dict[str, dict[str, dict[str, float]]]
    table2: dict[str, dict[str, dict[str, float]]]
    table9: dict[str, dict[str, dict[str, dict[str, float]]]]

    def table1_value(self, backbone: str | None, method: str, column: str) -> float | None:
        if backbone is None:
            return None
        return self.table1.get(backbone, {}).get(method, {}).get(column)

    def table9_value(
        self, backbone: str | None, method: str, benchmark: str, column: str
    ) -> float | None:
        if backbone is None:
            return None
        return self.table9.get(backbone, {}).get(method, {}).get(benchmark, {}).get(column)

    def table2_value(self, backbone: str | None, method: str, column: str) -> float | None:
        if backbone is None:
            return None
        return self.table2.get(backbone, {}).get(method, {}).get(column)


@lru_cache(maxsize=1)
def published() -> Published:
    """The shipped tables (read once)."""
    text = resources.files("pos_agent.bench.paper").joinpath("published.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return Published(
        data["source"],
        data["table1"]["values"],
        data["table2"]["values"],
        data["table9"]["values"],
    )
