"""The paper's cells from a run's records: per backbone, benchmark and method, each case's
outcome (keyed by case, so methods can be paired), what the run listed, and what differs from
the paper (substituted data, offline stand-ins, fewer cases), for the footnotes.

A backbone is the model every agent-side role of a case called (its policy model), labelled as
the study labelled it (`config.json`'s `backbones`), else by its spec; it is compared with the
paper's backbone the study named, else the one its name is (`qwen3.7-plus` -> Qwen3.7-Plus).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.bench.paper import BENCHMARKS, PAPER_METHODS, Benchmark, benchmark_of, paper_backbone
from pos_agent.bench.report.load import LoadedRuns
from pos_agent.bench.report.merge import run_configs
from pos_agent.bench.report.stats import context_value, numeric_metrics
from pos_agent.trace import CaseResult, is_scored


@dataclass(frozen=True)
class BackboneInfo:
    """A backbone of the run: its label, spec and the paper's backbone it is compared with."""

    label: str
    model: str
    paper: str | None


@dataclass
class Outcome:
    """One scored case of a cell."""

    case: str
    success: bool
    result: CaseResult

    def metric(self, name: str) -> float | None:
        value = numeric_metrics(self.result.extra).get(name)
        return None if value is None else float(value)


@dataclass
class Cell:
    """One (backbone, benchmark, method) of the grid."""

    backbone: BackboneInfo
    benchmark: Benchmark
    method: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    unscored: Counter[str] = field(default_factory=Counter)
    listed: int = 0
    """Cases the run's config lists for this cell (0: not part of the run)."""
    envs: set[str] = field(default_factory=set)
    offline_env_models: set[str] = field(default_factory=set)
    """ClinDiag roles played by an offline stand-in."""
    lexical_scorer: bool = False
    """PACE scored relevance with TF-IDF, not embeddings."""
    categories: Counter[str] = field(default_factory=Counter)
    """Recorded cases (scored or not) per task category (ClinDiag: common, rare, other)."""

    @property
    def scored(self) -> int:
        return len(self.outcomes)

    def values(self) -> list[float]:
        return [1.0 if o.success else 0.0 for o in self.outcomes.values()]


@dataclass
class PaperData:
    """Every cell of the run, with its backbones in order."""

    backbones: list[BackboneInfo]
    cells: dict[tuple[str, str, str], Cell]
    sources: list[str]

    def cell(self, backbone: str, benchmark: str, method: str) -> Cell | None:
        return self.cells.get((backbone, benchmark, method))

    @property
    def methods(self) -> list[str]:
        seen = {key[2] for key in self.cells}
        return [m for m in PAPER_METHODS if m in seen] + sorted(seen - set(PAPER_METHODS))

    @property
    def benchmarks(self) -> list[Benchmark]:
        seen = {key[1] for key in self.cells}
        return [b for b in BENCHMARKS if b.key in seen]


def collect(loaded: LoadedRuns, run_dirs: Sequence[Path]) -> PaperData:
    """The cells of the runs' results and listed cases (results of other benchmarks and of the
    expert are left out)."""
    configs = list(run_configs(run_dirs).values())
    backbones = _backbones(configs, loaded.cases)
    by_model = {b.model: b for b in backbones}
    cells: dict[tuple[str, str, str], Cell] = {}

    def cell_of(env: str, agent: str, models: dict[str, str]) -> Cell | None:
        benchmark = benchmark_of(env)
        backbone = by_model.get(models.get("policy", ""))
        if benchmark is None or backbone is None or agent == "expert":
            return None
        key = (backbone.label, benchmark.key, agent)
        if key not in cells:
            cells[key] = Cell(backbone, benchmark, agent)
        cells[key].envs.add(env)
        return cells[key]

    for config in configs:
        for entry in config.get("cases", []):
            spec = entry.get("spec") if isinstance(entry, dict) else None
            if isinstance(spec, dict) and isinstance(spec.get("models"), dict):
                found = cell_of(str(spec.get("env")), str(spec.get("agent")), spec["models"])
                if found is not None:
                    found.listed += 1
    for result in loaded.cases:
        found = cell_of(result.env, result.agent, result.models)
        if found is None:
            continue
        _note(found, result)
        found.categories[result.category or ""] += 1
        if is_scored(result.status):
            success = result.status == "success" and result.success
            found.outcomes[result.case] = Outcome(result.case, success, result)
        else:
            found.unscored[result.status] += 1
    return PaperData(backbones, cells, [str(d) for d in run_dirs])


def _note(cell: Cell, result: CaseResult) -> None:
    labels = result.extra.get("env_models")
    if isinstance(labels, dict):
        cell.offline_env_models |= {r for r, v in labels.items() if "(offline)" in str(v)}
    scorer = result.extra.get("pace_scorer")
    if isinstance(scorer, dict) and "tfidf" in scorer:
        cell.lexical_scorer = True


def _backbones(
    configs: Iterable[dict[str, Any]], results: Iterable[CaseResult]
) -> list[BackboneInfo]:
    """The study's backbones (labels and paper names) first, then any other policy model."""
    out: dict[str, BackboneInfo] = {}
    for config in configs:
        for entry in config.get("backbones") or []:
            if isinstance(entry, dict) and isinstance(entry.get("model"), str):
                model = entry["model"]
                paper = entry.get("paper") or paper_backbone(model)
                out.setdefault(model, BackboneInfo(str(entry.get("label") or model), model, paper))
    for result in results:
        model = result.models.get("policy")
        if model and model not in out:
            out[model] = BackboneInfo(model, model, paper_backbone(model))
    return list(out.values())


def context_length(outcome: Outcome) -> float | None:
    value = context_value(outcome.result.extra, "context_length")
    return value if isinstance(value, float) else None
