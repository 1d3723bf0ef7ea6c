"""The study's plan as `--dry-run` prints it: what will run, and what it will cost, before
anything is sent (pure: text from the study, its cases and the estimate)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from pos_agent.bench.paper import PAPER_EMBED_MODEL, PAPER_ENV_MODEL, published
from pos_agent.bench.study.estimate import (
    CALIBRATION_BACKBONE,
    CALIBRATION_FAMILY,
    COMPONENTS,
    TABLE2_COMPONENTS,
    CellEstimate,
    calibrated,
    calibration,
    measured,
    totals,
)
from pos_agent.bench.study.spec import Study
from pos_agent.cost import PriceTable

SHORT = {"policy": "policy", "belief": "belief", "sentinel": "sentinel", "baseline": "own"}
SHORT.update({"provider": "provider", "judge": "judge"})


@dataclass(frozen=True)
class Plan:
    """What the dry run shows: the study, its cells' estimates and the prices."""

    study: Study
    cells: list[CellEstimate]
    cases: int
    run: str
    prices: PriceTable | None
    max_cost: float | None = None
    already_spent: float = 0.0


def plan_text(plan: Plan) -> str:
    """The whole plan, as printed."""
    study = plan.study
    backbones = study.backbone_list()
    lines = [
        f"Plan: {len(plan.cells)} cells ({len(backbones)} backbone(s) x {len(study.suites)} "
        f"suite(s) x {len(study.methods)} method(s)), {plan.cases:,} cases, into {plan.run}",
        "",
        "Backbones:",
    ]
    for b in backbones:
        paper = b.compared_with
        against = f"compared with the paper's {paper}" if paper else "no published counterpart"
        lines.append(f"  {b.label} = {b.model} ({against})")
    lines += _settings(study)
    lines += ["", *_estimate_method(), ""]
    lines = _wrapped(lines)
    lines += _table(plan)
    lines += _wrapped(["", *_table2_check(), *_prices(plan), *_limit(plan)])
    return "\n".join(lines)


def _wrapped(lines: list[str], width: int = 100) -> list[str]:
    """Prose lines wrapped at `width`, continuation lines indented under their first."""
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()))
        out += textwrap.wrap(line, width, subsequent_indent=indent + "  ") or [""]
    return out


def _settings(study: Study) -> list[str]:
    env = {
        "paper": f"the paper's LLM ({PAPER_ENV_MODEL})",
        "backbone": "each backbone itself",
        "offline": "the offline stand-ins (retrieval, matcher), not the paper's LLM",
    }.get(study.env_model, study.env_model)
    embed = {
        "paper": f"{PAPER_EMBED_MODEL} (the paper's)",
        "tfidf": "TF-IDF offline, not the paper's embeddings",
    }.get(study.embed_model, study.embed_model)
    return [
        f"ClinDiag's provider and judge: {env}",
        f"PACE's relevance embeddings: {embed} (embedding calls are not in the estimate)",
        "Settings: every suite's own (the paper's budgets, generation lengths and baseline "
        "parameters); PoS at the paper's Table 8 (K=8, L=4, eps_W=0.15, eps=0.30, "
        "theta_H=0.25, theta_R=0.75), temperature 0",
    ]


def _estimate_method() -> list[str]:
    model = measured()
    factors = calibration()
    shown = ", ".join(
        f"{method} {component} x{value:.2f}"
        for (method, component), value in sorted(factors.items())
        if method != "*"
    )
    return [
        "Estimate (how): a measured model calibrated on the paper's Table 2. Measured: per "
        "benchmark and method, one scripted episode played through the harness at the suite's "
        f"whole step budget (`{model.command}`, {model.measured}): the harness's own prompts, "
        "calls per component, ~4 characters a token. Calibrated: each component's tokens "
        "scaled by the paper's Table 2 (RCA-100, Qwen3.7-Plus) over the measured RCA episode "
        f"({shown}; methods Table 2 does not list take raw's task-agent factor and PoS's belief "
        "and Sentinel factors), the same on every benchmark. Upper bounds: every case spends its "
        "whole budget, no prompt token is served from a cache.",
        "Columns: cases; model calls; thousands of tokens (prompt + completion) per component "
        "(policy = the task agent; own = the baselines' own calls: summaries, compressions, "
        "LongHorizon's roles; provider and judge = ClinDiag's); total; money from the price "
        "table.",
    ]


def _table(plan: Plan) -> list[str]:
    header = ["backbone", "suite", "method", "cases", "calls", *(SHORT[c] for c in COMPONENTS)]
    header += ["tokens(K)", f"cost({plan.prices.currency if plan.prices else '-'})"]
    rows = [header]
    for cell in plan.cells:
        usage = [_k(cell.usage[c].tokens) if c in cell.usage else "-" for c in COMPONENTS]
        cost = cell.cost(plan.prices)
        rows.append(
            [
                cell.key.backbone,
                cell.key.suite,
                cell.key.method + ("" if cell.measured else "*"),
                str(cell.cases),
                f"{cell.calls:,.0f}",
                *usage,
                _k(cell.tokens),
                _money(cost),
            ]
        )
    for label, chosen in _groups(plan.cells):
        calls, tokens, cost = totals(chosen, plan.prices)
        cases = sum(c.cases for c in chosen)
        blank = ["" for _ in COMPONENTS]
        rows.append(
            [label, "", "", f"{cases:,}", f"{calls:,.0f}", *blank, _k(tokens), _money(cost)]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    out = [
        "  ".join(
            v.rjust(w) if i >= 3 else v.ljust(w)
            for i, (v, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
    if any(not c.measured for c in plan.cells):
        out.append("* no measured episode for this benchmark and method: not in the estimate")
    return out


def _groups(cells: Sequence[CellEstimate]) -> list[tuple[str, list[CellEstimate]]]:
    backbones = list(dict.fromkeys(c.key.backbone for c in cells))
    groups = [(f"total {b}", [c for c in cells if c.key.backbone == b]) for b in backbones]
    if len(backbones) > 1:
        groups.append(("total", list(cells)))
    return groups


def _table2_check() -> list[str]:
    paper = published().table2.get(CALIBRATION_BACKBONE, {})
    lines = [
        f"Check against the paper's Table 2 ({CALIBRATION_FAMILY.upper()}, "
        f"{CALIBRATION_BACKBONE}, tokens per episode, K): estimate / paper"
    ]
    for method, row in paper.items():
        episode = calibrated(CALIBRATION_FAMILY, method, None) or {}
        parts = []
        for column, component in TABLE2_COMPONENTS.items():
            ours = episode[component].tokens if component in episode else 0.0
            parts.append(f"{column} {_k(ours)} / {row[column]:.1f}")
        total = sum(u.tokens for u in episode.values())
        parts.append(f"total {_k(total)} / {row['total']:.1f}")
        lines.append(f"  {method}: " + ", ".join(parts))
    lines.append(
        "  (-CV's Sentinel: this project's -CV makes no Sentinel call on diagnosis tasks, where "
        "Eq. 4 gives the progress label, so its estimate has none.)"
    )
    return lines


def _prices(plan: Plan) -> list[str]:
    if plan.prices is None:
        return ["", "Prices: none given (--price-table): no money in the plan."]
    models = sorted({m for c in plan.cells for m in c.models.values() if m})
    lines = ["", f"Prices ({plan.prices.currency} per {plan.prices.per_tokens:,} tokens):"]
    for model in models:
        price = plan.prices.price(model)
        if price is None:
            lines.append(f"  {model}: no price (add it with --price-table)")
            continue
        lines.append(
            f"  {model}: as {price.name}: input {price.input}, output {price.output} "
            f"(cached input {price.cached_input}, not used by the estimate); taken "
            f"{price.taken or '?'}, {price.source or 'no source given'}"
        )
    return lines


def _limit(plan: Plan) -> list[str]:
    if plan.max_cost is None:
        return []
    _, _, cost = totals(plan.cells, plan.prices)
    need = cost + plan.already_spent
    if math.isnan(need):
        return ["", f"--max-cost {plan.max_cost}: cannot be checked, a model has no price"]
    verdict = "fits" if need <= plan.max_cost else "passes it: nothing would start"
    spent = f" (already spent {plan.already_spent:.2f})" if plan.already_spent else ""
    return ["", f"--max-cost {plan.max_cost:.2f}: the estimate {need:.2f}{spent} {verdict}"]


def _k(tokens: float) -> str:
    return f"{tokens / 1000:,.1f}"


def _money(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.2f}"
