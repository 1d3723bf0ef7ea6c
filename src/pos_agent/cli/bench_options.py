"""The options of `pos bench` that are its own (the ones it shares with `pos run` are
`CaseOptions`), each with the --help panel it is listed in."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from pos_agent.cli._options import OUTPUT

Executor = Literal["local", "ray"]
# --help panels of the command's own options (the shared ones have theirs).
CASES = "Cases"
EXECUTION = "Execution"
RAY = "Ray cluster (--executor ray)"

# The command's own options (the ones it shares with `pos run` are CaseOptions).
SuiteArgument = Annotated[
    str,
    typer.Argument(help="Built-in suite name (see --list) or the path of a suite YAML file."),
]
AgentsOption = Annotated[
    str,
    typer.Option(
        help="Comma-separated methods (the paper's six: raw,acon,pace,hiagent,lh_harness,pos).",
        metavar="METHODS",
        rich_help_panel=CASES,
    ),
]
WorkersOption = Annotated[
    int,
    typer.Option(
        help="Worker processes; the embedded model's cores are split between them.",
        min=1,
        metavar="N",
        rich_help_panel=EXECUTION,
    ),
]
ResumeOption = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue --run with the same settings: keep scored cases, rerun the rest.",
        rich_help_panel=OUTPUT,
    ),
]
LimitOption = Annotated[
    int | None,
    typer.Option(
        help="Only the first N tasks of the suite.", min=1, metavar="N", rich_help_panel=CASES
    ),
]
LengthsOption = Annotated[
    str | None,
    typer.Option(
        help="LOCA: only these lengths, e.g. 8k,16k.", metavar="LENGTHS", rich_help_panel=CASES
    ),
]
SeedsOption = Annotated[
    str | None,
    typer.Option(
        help="Only these of the suite's seeds, e.g. 42,123.", metavar="SEEDS", rich_help_panel=CASES
    ),
]
RunOption = Annotated[
    str | None,
    typer.Option(
        "--run",
        help="Run name, a folder in --out (default: suite and time).",
        metavar="NAME",
        rich_help_panel=OUTPUT,
    ),
]
InfraRetriesOption = Annotated[
    int,
    typer.Option(
        help="Retries of a case after an infrastructure error.",
        min=0,
        metavar="N",
        rich_help_panel=EXECUTION,
    ),
]
PreflightOption = Annotated[
    bool,
    typer.Option(
        help="Check each model with one small call before the first case.",
        rich_help_panel=EXECUTION,
    ),
]
ListOption = Annotated[
    bool,
    typer.Option("--list", help="List the built-in suites and exit.", rich_help_panel=CASES),
]
ExecutorOption = Annotated[
    Executor,
    typer.Option(
        help="local (worker processes here) or ray (a Ray cluster; the ray extra).",
        rich_help_panel=EXECUTION,
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        help="auto or HOST:PORT (default: start one here).", metavar="ADDRESS", rich_help_panel=RAY
    ),
]
MaxConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        help="Cases at once (default: one per CPU).", min=1, metavar="N", rich_help_panel=RAY
    ),
]
ShardOption = Annotated[
    str | None,
    typer.Option(
        help="Only shard I of N of the cases, e.g. 2/8 (pos report merges shards).",
        metavar="I/N",
        rich_help_panel=CASES,
    ),
]
ModelConcurrencyOption = Annotated[
    int | None,
    typer.Option(help="Requests in flight per model.", min=1, metavar="N", rich_help_panel=RAY),
]
ModelRpmOption = Annotated[
    float | None,
    typer.Option(
        help="Request starts per minute per model.", min=0.001, metavar="RPM", rich_help_panel=RAY
    ),
]
