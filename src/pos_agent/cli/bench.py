"""`pos bench`: run a suite for several methods, in parallel, resumably."""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from pos_agent.bench.case import AGENTS
from pos_agent.bench.env_models import parse_env_models
from pos_agent.bench.runner import (
    BenchConfig,
    run_bench,
    write_config,
)
from pos_agent.bench.runner import (
    Progress as BenchProgress,
)
from pos_agent.bench.suite import builtin_suites, load_suite
from pos_agent.cli.app import app
from pos_agent.cli.run import (
    BOUND_HELP,
    CONTEXT_HELP,
    EMBED_HELP,
    GENERATION_HELP,
    PROFILE_HELP,
    checked_bounds,
    checked_embed_model,
    checked_profile,
)
from pos_agent.trace import CaseResult

console = Console(highlight=False, soft_wrap=True)


@app.command()
def bench(
    suite: Annotated[
        str,
        typer.Argument(help="Built-in suite name (see --list) or the path of a suite YAML file."),
    ] = "alfworld-mini",
    agents: Annotated[
        str,
        typer.Option(
            help=f"Comma-separated methods: {', '.join(AGENTS)} (the paper's six: "
            "raw,acon,pace,hiagent,lh_harness,pos)."
        ),
    ] = "pos,raw",
    model: Annotated[
        str, typer.Option(help="Model spec for every role (local, openai:MODEL, ...).")
    ] = "local",
    workers: Annotated[int, typer.Option(help="Worker processes.", min=1)] = 1,
    resume: Annotated[
        bool, typer.Option(help="Continue --run: skip finished cases, rerun the rest whole.")
    ] = False,
    limit: Annotated[
        int | None, typer.Option(help="Only the first N tasks of the suite.", min=1)
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder that holds runs.")] = Path("runs"),
    run_name: Annotated[
        str | None, typer.Option("--run", help="Run name (default: suite and time).")
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL.")] = None,
    cache: Annotated[
        str, typer.Option(help="Response cache: off, read, write or readwrite.")
    ] = "off",
    infra_retries: Annotated[
        int, typer.Option(help="Retries of a case after an infrastructure error.", min=0)
    ] = 2,
    env_model: Annotated[
        list[str] | None,
        typer.Option(
            help="The environment's own model roles (clindiag: provider and judge), the same "
            "for every method: SPEC for every role or ROLE=SPEC, repeatable. Default: the "
            "suite's env_model (built-in clindiag suites: the offline retrieval and matcher)."
        ),
    ] = None,
    list_suites: Annotated[
        bool, typer.Option("--list", help="List the built-in suites and exit.")
    ] = False,
    generation_tokens: Annotated[
        int | None, typer.Option(help=GENERATION_HELP + " Overrides the suite's.", min=16)
    ] = None,
    profile: Annotated[str | None, typer.Option(help=PROFILE_HELP)] = None,
    bound: Annotated[list[str] | None, typer.Option(help=BOUND_HELP)] = None,
    context_window: Annotated[int | None, typer.Option(help=CONTEXT_HELP, min=512)] = None,
    embed_model: Annotated[str, typer.Option(help=EMBED_HELP)] = "tfidf",
) -> None:
    """Run SUITE for each method and write runs/<run>/<agent>__<case>/ records plus summary.json.

    Example: pos bench alfworld-mini --agents pos,raw --model local --workers 2
    """
    if list_suites:
        for name in builtin_suites():
            loaded = load_suite(name)
            budget = loaded.generation_tokens or "paper default"
            console.print(
                f"[bold]{name}[/]  env={loaded.env}  tokens={budget}  {loaded.description}"
            )
        return
    methods = [a.strip() for a in agents.split(",") if a.strip()]
    unknown = [a for a in methods if a not in AGENTS]
    if unknown or not methods:
        raise typer.BadParameter(
            f"unknown method(s) {unknown}; choose from {', '.join(AGENTS)}", param_hint="--agents"
        )
    if cache not in ("off", "read", "write", "readwrite"):
        raise typer.BadParameter("choose off, read, write or readwrite", param_hint="--cache")
    overrides: dict[str, object] = {
        key: value
        for key, value in (
            ("generation_tokens", generation_tokens),
            ("profile", checked_profile(profile)),
            ("context_window", context_window),
        )
        if value is not None
    }
    bounds = checked_bounds(bound)
    embed = checked_embed_model(embed_model)
    try:
        requested = parse_env_models(env_model)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--env-model") from None
    try:
        loaded = load_suite(suite)
        if bounds:
            overrides["bounds"] = {**loaded.bounds, **bounds}
        loaded = loaded.model_copy(update=overrides)
        specs = loaded.cases(methods, model, limit, env_models=requested)
        specs = [replace(s, embed_model=embed) for s in specs]
    except ValueError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    except Exception as exc:  # e.g. missing environment data: say what to do, no traceback
        console.print(f"[red]error:[/] could not list the cases of {suite}: {exc}")
        raise typer.Exit(2) from None
    if resume and not run_name:
        raise typer.BadParameter("--resume needs the --run name to continue", param_hint="--resume")
    name = run_name or f"{loaded.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = out / name
    options = {"base_url": base_url, "cache_mode": cache}
    write_config(
        run_dir,
        {
            "suite": loaded.model_dump(),
            "agents": methods,
            "model": model,
            "env_models": specs[0].env_models if specs else {},
            "workers": workers,
            "cases": [asdict(s) for s in specs],
        },
    )
    config = BenchConfig(
        run_dir=run_dir,
        workers=workers,
        resume=resume,
        infra_retries=infra_retries,
        model_options=options,
    )
    console.print(
        f"[bold]pos bench[/] {loaded.name}: {len(specs)} cases ({', '.join(methods)}), {workers} worker(s) -> {run_dir}"
    )
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
    ) as bar:
        task = bar.add_task("starting", total=len(specs))

        def show(result: CaseResult, progress: BenchProgress) -> None:
            mark = {"success": "[green]ok[/]", "failure": "[red]fail[/]"}.get(
                result.status, f"[yellow]{result.status}[/]"
            )
            bar.console.print(
                f"{mark} {result.agent:<16} {result.case}  steps {result.steps}"
                + (f"  {result.error}" if result.error else "")
            )
            bar.update(
                task,
                completed=progress.skipped + progress.done,
                description=progress.success_line(),
            )

        try:
            results = run_bench(specs, config, on_result=show)
        except ValueError as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            console.print(
                f"\n[yellow]Interrupted.[/] Finished cases are kept; continue with --run {name} --resume"
            )
            raise typer.Exit(130) from None
    infra = sum(r.status == "infra_error" for r in results)
    console.print(
        f"done: {len(results)} cases; summary {run_dir / 'summary.json'}"
        + (f"; {infra} infrastructure errors (not scored)" if infra else "")
    )
    console.print(f"report: pos report {run_dir}")
