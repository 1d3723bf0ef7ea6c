"""The options every `pos paper` command shares, declared once (as `pos bench`'s shared ones
are in `_options.py`): where and how the study runs, its limits and the plan. A command takes
`options: RunOptions`; the `run_options` decorator adds the parameters to its signature."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from pos_agent.cli.bench import Placement
from pos_agent.cli.bench_options import (
    ExecutorOption,
    InfraRetriesOption,
    MaxConcurrencyOption,
    ModelConcurrencyOption,
    ModelRpmOption,
    PreflightOption,
    RayAddressOption,
    ResumeOption,
    ShardOption,
    WorkersOption,
)
from pos_agent.cli.common import CASE_TIMEOUT_HELP, RETRIES_HELP, TIMEOUT_HELP, model_options
from pos_agent.llm import CacheMode


@dataclass(frozen=True)
class RunOptions:
    """How a study runs: where, with which model options, and under which limits."""

    dry_run: bool
    """Print the plan and its cost; send nothing."""
    max_cost: float | None
    """Stop before the estimate or the spend would pass this."""
    price_table: Path | None
    """A price table over the shipped examples."""
    price_as: str | None
    """Bill every model at this model's price (a what-if)."""
    run_name: str | None
    out: Path
    resume: bool
    limit: int | None
    """Only the first N tasks of every suite."""
    placement: Placement
    shard: str | None
    infra_retries: int
    preflight: bool
    model_options: dict[str, Any]
    case_timeout: float | None
    loca_root: Path | None


_PARAMETERS: tuple[tuple[str, Any, Any], ...] = (
    (
        "dry_run",
        Annotated[bool, typer.Option(help="Print the plan and its cost; send nothing.")],
        False,
    ),
    (
        "max_cost",
        Annotated[
            float | None,
            typer.Option(
                help="Stop before the estimate or the spend would pass this (in the price "
                "table's currency); a stop is clean and resumable.",
                min=0.0,
            ),
        ],
        None,
    ),
    (
        "price_table",
        Annotated[
            Path | None, typer.Option(help="A price table (YAML) over the shipped examples.")
        ],
        None,
    ),
    (
        "price_as",
        Annotated[
            str | None,
            typer.Option(
                help="Bill every model of the study at this model's price from the price table "
                "(a what-if, e.g. gpt-4o-mini)."
            ),
        ],
        None,
    ),
    ("run_name", Annotated[str | None, typer.Option("--run", help="Run name inside --out.")], None),
    ("out", Annotated[Path, typer.Option(help="Folder that holds runs.")], Path("runs")),
    ("resume", ResumeOption, False),
    (
        "limit",
        Annotated[int | None, typer.Option(help="Only the first N tasks of every suite.", min=1)],
        None,
    ),
    ("workers", WorkersOption, 1),
    ("executor", ExecutorOption, "local"),
    ("ray_address", RayAddressOption, None),
    ("max_concurrency", MaxConcurrencyOption, None),
    ("model_concurrency", ModelConcurrencyOption, None),
    ("model_rpm", ModelRpmOption, None),
    ("shard", ShardOption, None),
    ("infra_retries", InfraRetriesOption, 2),
    ("preflight", PreflightOption, True),
    ("base_url", Annotated[str | None, typer.Option(help="OpenAI-compatible server URL.")], None),
    ("cache", Annotated[CacheMode, typer.Option(help="Response cache.")], "off"),
    ("timeout", Annotated[float | None, typer.Option(help=TIMEOUT_HELP, min=0.001)], None),
    ("max_retries", Annotated[int | None, typer.Option(help=RETRIES_HELP, min=0)], None),
    (
        "case_timeout",
        Annotated[float | None, typer.Option(help=CASE_TIMEOUT_HELP, min=0.001)],
        None,
    ),
    ("loca_root", Annotated[Path | None, typer.Option(help="LOCA-Bench checkout.")], None),
)


def _options(values: dict[str, Any]) -> RunOptions:
    placement = Placement(
        values.pop("executor"),
        values.pop("workers"),
        values.pop("ray_address"),
        values.pop("max_concurrency"),
        values.pop("model_concurrency"),
        values.pop("model_rpm"),
    )
    placement.check()
    options = model_options(
        base_url=values.pop("base_url"),
        cache=values.pop("cache"),
        timeout_s=values.pop("timeout"),
        max_retries=values.pop("max_retries"),
    )
    if values.get("resume") and not values.get("run_name"):
        raise typer.BadParameter("--resume needs the --run name to continue", param_hint="--resume")
    return RunOptions(placement=placement, model_options=options, **values)


def run_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command` the shared options: they join its signature (after its own) and reach it
    as `options: RunOptions`."""
    own = inspect.signature(command, eval_str=True)
    shared = [
        inspect.Parameter(
            name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind
        )
        for name, kind, default in _PARAMETERS
    ]
    parameters = [p for p in own.parameters.values() if p.name != "options"] + shared

    @functools.wraps(command)
    def with_options(**values: Any) -> None:
        options = _options({name: values.pop(name) for name, _, _ in _PARAMETERS})
        command(options=options, **values)

    with_options.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    return with_options
