"""`--max-cost`: what a run has spent, and the stop before it would pass the limit.

Spend is priced from the results themselves (each role's tokens, its cached and written prompt
tokens apart, at its model's price), every result in the run folder counted, unscored ones
included: an interrupted case spent what it spent. A case rerun by a resume counts once, with
its latest record.

Before the run, the plan's estimate of the cases still to play plus what the folder has already
spent must fit the limit, or nothing starts. During the run the spend is checked as each case
finishes: when it plus the estimate of the cases in flight (one per worker, at the largest
per-case estimate of the study) would pass the limit, the run stops the way Ctrl-C stops it
(`SpendLimitReached`): the cases in progress record themselves `interrupted`, finished results
stay, and `--resume` continues with the same settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pos_agent.cost import PriceTable, token_counts
from pos_agent.trace import CaseResult, read_result


class SpendLimitReached(KeyboardInterrupt):
    """The run stopped at `--max-cost`; it is resumable like an interrupted one."""


def role_model(result: CaseResult, role: str) -> str:
    """The model a role of `result` called: its own, the environment's, else the backbone."""
    if role in result.models:
        return result.models[role]
    labels = result.extra.get("env_models")
    if isinstance(labels, dict) and isinstance(labels.get(role), str):
        return str(labels[role])
    return result.models.get("policy", "")


def case_cost(result: CaseResult, prices: PriceTable) -> tuple[float, set[str]]:
    """What a result's calls cost, and the models that have no price (not counted)."""
    total, unpriced = 0.0, set()
    for role, used in result.tokens.items():
        if not used.calls:
            continue
        model = role_model(result, role)
        spent = prices.cost(model, token_counts(used.model_dump()))
        if spent is None:
            unpriced.add(model)
        else:
            total += spent
    return total, unpriced


def run_spend(run_dir: Path, prices: PriceTable, folders: Iterable[str]) -> float:
    """What the listed case folders of a run have spent so far."""
    total = 0.0
    for folder in folders:
        result = read_result(run_dir / folder)
        if result is not None:
            total += case_cost(result, prices)[0]
    return total


@dataclass
class SpendGuard:
    """Adds up the spend as cases finish and stops the run before it would pass `limit`."""

    limit: float
    prices: PriceTable
    in_flight: int
    """Cases that may be playing at once (the workers, or Ray's concurrency)."""
    per_case: float
    """The largest per-case estimate of the study: what one case in flight may still spend."""
    spent: float = 0.0
    tripped: bool = False
    counted: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        run_dir: Path,
        folders: Iterable[str],
        *,
        limit: float,
        prices: PriceTable,
        in_flight: int,
        per_case: float,
    ) -> SpendGuard:
        """A guard that starts from what the run's cases have already spent."""
        guard = cls(limit, prices, in_flight, per_case)
        for folder in folders:
            result = read_result(run_dir / folder)
            if result is not None:
                guard.counted[folder] = case_cost(result, prices)[0]
        guard.spent = sum(guard.counted.values())
        return guard

    def projected(self) -> float:
        return self.spent + self.in_flight * self.per_case

    def seen(self, result: CaseResult, folder: str) -> None:
        """Count a finished case (a rerun replaces its earlier cost); raise SpendLimitReached
        once, when the spend plus the cases in flight would pass the limit."""
        cost, _ = case_cost(result, self.prices)
        self.spent += cost - self.counted.get(folder, 0.0)
        self.counted[folder] = cost
        if not self.tripped and self.projected() > self.limit:
            self.tripped = True
            raise SpendLimitReached(
                f"spent {self.spent:.4f} of --max-cost {self.limit:.4f}; the cases in flight "
                f"may spend up to {self.in_flight * self.per_case:.4f} more"
            )
