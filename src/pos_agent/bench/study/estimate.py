"""What a study will cost before it runs: calls and tokens per component, and money, per cell.

The estimate is a measured model calibrated on the paper's Table 2:

1. Measured: `estimates.json` (written by `python -m benchmarks.study_estimates`) holds, for each
   of the paper's benchmarks and methods, the calls and the prompt and completion tokens by
   component of one scripted episode played through the harness at the suite's whole step
   budget (see that module for how): the harness's own prompts, a scripted backbone.
2. Calibrated: a real backbone writes longer beliefs and audits than the scripted one, so each
   component is scaled by the ratio of the paper's Table 2 (RCA-100, Qwen3.7-Plus, tokens per
   episode) to the same component of the measured RCA episode: the task agent by each of raw,
   PoS, -CV and -TD's own ratio (the other methods' task agent and own calls by raw's), the
   belief and the Sentinel by PoS's, -CV's and -TD's (the other PoS variants by PoS's). The
   same factors apply to every benchmark; provider and judge stay as measured. So the RCA cells
   of those four methods reproduce Table 2, and the rest scale from it.

A cell's estimate is its number of cases times that episode (scaled by the ratio of step
budgets when a suite's differs from the measured one). It is an upper bound on steps (every
case is assumed to spend its whole budget) and bills every prompt token uncached.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from pos_agent.agents.context import INTERNAL_ROLES
from pos_agent.bench.identity import called_models
from pos_agent.bench.paper import benchmark_of, published
from pos_agent.bench.spec import CaseSpec
from pos_agent.cost import PriceTable, TokenCounts

COMPONENTS: tuple[str, ...] = ("policy", "belief", "sentinel", "baseline", "provider", "judge")
"""The parts of a cell's bill: PoS's three roles (the policy is every method's task agent), the
baselines' own calls (summaries, compressions, LongHorizon's roles), ClinDiag's provider and
judge."""
ENV_COMPONENTS = frozenset({"provider", "judge"})


def component_of(role: str) -> str:
    """The component a ledger role counts under."""
    if role in INTERNAL_ROLES:
        return "baseline"
    return role if role in COMPONENTS else "baseline"


@dataclass
class Usage:
    """Calls and tokens of one component."""

    calls: float = 0.0
    prompt: float = 0.0
    completion: float = 0.0

    def scaled(self, factor: float) -> Usage:
        return Usage(self.calls * factor, self.prompt * factor, self.completion * factor)

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.prompt += other.prompt
        self.completion += other.completion

    @property
    def tokens(self) -> float:
        return self.prompt + self.completion


@dataclass(frozen=True)
class Measured:
    """The measured model (`estimates.json`) and how it was made."""

    how: str
    command: str
    measured: str
    families: Mapping[str, Any]

    def episode(self, family: str, method: str, steps: int | None) -> dict[str, Usage] | None:
        """One episode of `method` on `family` at `steps` (None: the measured budget)."""
        entry = self.families.get(family)
        if not entry or method not in entry.get("methods", {}):
            return None
        scale = (steps / entry["steps"]) if steps and entry.get("steps") else 1.0
        return {
            component: Usage(v["calls"], v["prompt"], v["completion"]).scaled(scale)
            for component, v in entry["methods"][method].items()
        }


def calibrated(family: str, method: str, steps: int | None) -> dict[str, Usage] | None:
    """One episode's estimate: measured, then each component's tokens scaled to Table 2 (the
    calls stay as measured)."""
    episode = measured().episode(family, method, steps)
    if episode is None:
        return None
    out = {}
    for component, used in episode.items():
        scaled = used.scaled(factor(method, component))
        out[component] = Usage(used.calls, scaled.prompt, scaled.completion)
    return out


# Table 2's columns and the component each one is.
TABLE2_COMPONENTS = {"task_agent": "policy", "belief": "belief", "sentinel": "sentinel"}
CALIBRATION_FAMILY = "rca"
CALIBRATION_BACKBONE = "Qwen3.7-Plus"


@lru_cache(maxsize=1)
def calibration() -> dict[tuple[str, str], float]:
    """(method, component) -> the factor that takes the measured RCA episode to the paper's
    Table 2; ("*", component) is the default of the methods Table 2 does not list."""
    model, paper = measured(), published()
    factors: dict[tuple[str, str], float] = {}
    for method, row in paper.table2.get(CALIBRATION_BACKBONE, {}).items():
        episode = model.episode(CALIBRATION_FAMILY, method, None) or {}
        for column, component in TABLE2_COMPONENTS.items():
            used = episode.get(component)
            if used is not None and used.tokens > 0 and row.get(column):
                factors[(method, component)] = 1000 * row[column] / used.tokens
    if ("raw", "policy") in factors:
        factors[("*", "policy")] = factors[("*", "baseline")] = factors[("raw", "policy")]
    for component in ("belief", "sentinel"):
        if ("pos", component) in factors:
            factors[("*", component)] = factors[("pos", component)]
    return factors


def factor(method: str, component: str) -> float:
    table = calibration()
    return table.get((method, component), table.get(("*", component), 1.0))


@lru_cache(maxsize=1)
def measured() -> Measured:
    text = resources.files("pos_agent.bench.study").joinpath("estimates.json").read_text("utf-8")
    data = json.loads(text)
    return Measured(data["how"], data["command"], data["measured"], data["families"])


@dataclass(frozen=True)
class CellKey:
    """One cell of the grid: a backbone (its label), a benchmark (suite) and a method."""

    backbone: str
    suite: str
    method: str


@dataclass
class CellEstimate:
    """A cell's plan: its cases, and the calls and tokens per component they will take."""

    key: CellKey
    env: str
    cases: int = 0
    steps: int | None = None
    usage: dict[str, Usage] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    """component -> the model spec it calls (the backbone, or the environment's models)."""
    measured: bool = True
    """False when the measured model has no episode for this benchmark and method."""

    @property
    def calls(self) -> float:
        return sum(u.calls for u in self.usage.values())

    @property
    def tokens(self) -> float:
        return sum(u.tokens for u in self.usage.values())

    def cost(self, prices: PriceTable | None) -> float | None:
        """The estimate in money, every prompt token billed uncached; None when a model that
        is called has no price."""
        if prices is None or not self.measured:
            return None
        total = 0.0
        for component, used in self.usage.items():
            if not used.calls:
                continue
            counts = TokenCounts(prompt=round(used.prompt), completion=round(used.completion))
            spent = prices.cost(self.models.get(component, ""), counts)
            if spent is None:
                return None
            total += spent
        return total

    def unpriced(self, prices: PriceTable | None) -> set[str]:
        if prices is None:
            return set()
        return {
            self.models.get(c, "")
            for c, u in self.usage.items()
            if u.calls and prices.price(self.models.get(c, "")) is None
        }


def family_of(env: str) -> str:
    found = benchmark_of(env)
    return found.key if found is not None else env


def estimate_cells(specs: Sequence[CaseSpec], suite_of: Mapping[str, str]) -> list[CellEstimate]:
    """The estimate of every cell of these cases (`suite_of`: case folder -> its suite), in
    the order the cells first appear."""
    cells: dict[CellKey, CellEstimate] = {}
    for spec in specs:
        key = CellKey(spec.tag or spec.model, suite_of.get(spec.folder, spec.env), spec.agent)
        cell = cells.get(key)
        if cell is None:
            cell = cells[key] = CellEstimate(key, spec.env, steps=spec.max_steps)
        cell.cases += 1
        episode = calibrated(family_of(spec.env), spec.agent, spec.max_steps)
        if episode is None:
            cell.measured = False
            continue
        for component, used in episode.items():
            if component in ENV_COMPONENTS and not _env_model_called(spec, component):
                continue
            cell.usage.setdefault(component, Usage()).add(used)
            cell.models[component] = _model_of(spec, component)
    return list(cells.values())


def _env_model_called(spec: CaseSpec, role: str) -> bool:
    return role in called_models(spec)


def _model_of(spec: CaseSpec, component: str) -> str:
    if component in ENV_COMPONENTS:
        return called_models(spec).get(component, "")
    roles = spec.models()
    return roles.get(component) or roles.get("policy") or spec.model


def totals(cells: Iterable[CellEstimate], prices: PriceTable | None) -> tuple[float, float, float]:
    """(calls, tokens, cost) over the cells; cost NaN when a called model has no price."""
    calls = tokens = cost = 0.0
    for cell in cells:
        calls += cell.calls
        tokens += cell.tokens
        spent = cell.cost(prices)
        cost = float("nan") if spent is None else cost + spent
    return calls, tokens, cost
