"""`pos bench`: run a suite for several methods, in parallel, resumably."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from pos_agent.bench.case import AGENTS, RecordError
from pos_agent.bench.env_models import parse_env_models
from pos_agent.bench.run_folder import RunFolderError, check_run_name, prepare_out
from pos_agent.bench.runner import BenchConfig, available_cores, run_bench
from pos_agent.bench.runner import Progress as BenchProgress
from pos_agent.bench.suite import builtin_suites, load_suite
from pos_agent.cli._common import (
    BOUND_HELP,
    CASE_TIMEOUT_HELP,
    CONTEXT_HELP,
    EMBED_HELP,
    GENERATION_HELP,
    HEALTH_HELP,
    LOCA_ROOT_HELP,
    PROFILE_HELP,
    RETRIES_HELP,
    TIMEOUT_HELP,
    checked_bounds,
    checked_embed_model,
    checked_profile,
    console,
    model_options,
    progress_bar,
    shown,
)
from pos_agent.cli.app import app
from pos_agent.health.window import Diagnosis
from pos_agent.llm import CacheMode, wants_context_per_role
from pos_agent.trace import STATUS_MEANINGS, CaseResult, is_scored


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
    health: Annotated[Diagnosis, typer.Option(help=HEALTH_HELP)] = "paper",
    workers: Annotated[
        int,
        typer.Option(
            help="Worker processes. With the local model, the cores are split between them.",
            min=1,
        ),
    ] = 1,
    resume: Annotated[
        bool,
        typer.Option(
            help="Continue --run with the same settings: keep scored cases, rerun the rest whole."
        ),
    ] = False,
    limit: Annotated[
        int | None, typer.Option(help="Only the first N tasks of the suite.", min=1)
    ] = None,
    lengths: Annotated[
        str | None,
        typer.Option(help="LOCA: only these environment lengths, e.g. 8k,16k (8k ... 256k)."),
    ] = None,
    seeds: Annotated[
        str | None, typer.Option(help="Only these of the suite's seeds, e.g. 42,123.")
    ] = None,
    loca_root: Annotated[Path | None, typer.Option(help=LOCA_ROOT_HELP)] = None,
    out: Annotated[Path, typer.Option(help="Folder that holds runs.")] = Path("runs"),
    run_name: Annotated[
        str | None,
        typer.Option("--run", help="Run name, a folder inside --out (default: suite and time)."),
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL.")] = None,
    cache: Annotated[CacheMode, typer.Option(help="Response cache.")] = "off",
    timeout: Annotated[float | None, typer.Option(help=TIMEOUT_HELP, min=0.001)] = None,
    max_retries: Annotated[int | None, typer.Option(help=RETRIES_HELP, min=0)] = None,
    case_timeout: Annotated[float | None, typer.Option(help=CASE_TIMEOUT_HELP, min=0.001)] = None,
    infra_retries: Annotated[
        int, typer.Option(help="Retries of a case after an infrastructure error.", min=0)
    ] = 2,
    preflight: Annotated[
        bool,
        typer.Option(help="Check each model with one small call before the first case."),
    ] = True,
    env_model: Annotated[
        list[str] | None,
        typer.Option(
            help="The environment's own model roles (clindiag: provider and judge), the same "
            "for every method: SPEC for every role or ROLE=SPEC, repeatable. Default: the "
            "suite's env_model (built-in clindiag suites: the offline retrieval and matcher)."
        ),
    ] = None,
    generation_tokens: Annotated[
        int | None, typer.Option(help=GENERATION_HELP + " Overrides the suite's.", min=16)
    ] = None,
    profile: Annotated[str | None, typer.Option(help=PROFILE_HELP)] = None,
    bound: Annotated[list[str] | None, typer.Option(help=BOUND_HELP)] = None,
    context_window: Annotated[int | None, typer.Option(help=CONTEXT_HELP, min=512)] = None,
    embed_model: Annotated[str, typer.Option(help=EMBED_HELP)] = "tfidf",
    list_suites: Annotated[
        bool, typer.Option("--list", help="List the built-in suites and exit.")
    ] = False,
) -> None:
    """Run SUITE for each method and write runs/<run>/<agent>__<case>/ records plus summary.json.

    First the cases, the run folder and every model (one small call) are checked:
    a broken set-up is refused, never scored.
    Only success and failure are scored; other statuses are listed, and --resume reruns them.
    Exits 1 when no case was scored.

    Example: pos bench alfworld-mini --agents pos,raw --model local --workers 2
    """
    if list_suites:
        for name in builtin_suites():
            loaded = load_suite(name)
            budget = loaded.generation_tokens or "paper default"
            console.print(
                f"[bold]{shown(name)}[/]  env={shown(loaded.env)}  tokens={budget}  "
                f"{shown(loaded.description)}"
            )
        return
    methods = [a.strip() for a in agents.split(",") if a.strip()]
    unknown = [a for a in methods if a not in AGENTS]
    if unknown or not methods:
        raise typer.BadParameter(
            f"unknown method(s) {unknown}; choose from {', '.join(AGENTS)}", param_hint="--agents"
        )
    if resume and not run_name:
        raise typer.BadParameter("--resume needs the --run name to continue", param_hint="--resume")
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
    embed = checked_embed_model(embed_model, used="pace" in methods)
    try:
        requested = parse_env_models(env_model)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--env-model") from None
    wanted_lengths, wanted_seeds = _split_list(lengths), _seed_list(seeds)
    try:
        loaded = load_suite(suite)
        if loca_root is not None:
            if loaded.env != "loca":
                raise ValueError(
                    f"--loca-root applies to LOCA suites; {loaded.name} runs {loaded.env}"
                )
            loaded.env_options["loca_root"] = str(loca_root.expanduser().resolve())
        if bounds:
            overrides["bounds"] = {**loaded.bounds, **bounds}
        loaded = loaded.model_copy(update=overrides)
        specs = [
            s.model_copy(update={"health": health, "embed_model": embed})
            for s in loaded.cases(
                methods,
                model,
                limit,
                env_models=requested,
                lengths=wanted_lengths,
                seeds=wanted_seeds,
            )
        ]
    except ValueError as exc:
        _fail(str(exc))
    except Exception as exc:  # e.g. missing environment data: say what to do, no traceback
        _fail(f"could not list the cases of {suite}: {exc}")
    try:
        name = check_run_name(run_name or f"{loaded.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        prepare_out(out)
    except RunFolderError as exc:
        _fail(str(exc))
    run_dir = out / name
    config = BenchConfig(
        run_dir=run_dir,
        workers=workers,
        resume=resume,
        infra_retries=infra_retries,
        model_options=model_options(
            base_url=base_url,
            cache=cache,
            timeout_s=timeout if timeout is not None else loaded.timeout_s,
            max_retries=max_retries if max_retries is not None else loaded.max_retries,
        ),
        case_timeout_s=case_timeout if case_timeout is not None else loaded.case_timeout_s,
        preflight=preflight,
        describe={
            "suite": loaded.model_dump(),
            "agents": methods,
            "model": model,
            "health": health,
            "env_models": specs[0].env_models if specs else {},
            "workers": workers,
        },
    )
    local = any(wants_context_per_role(m) for s in specs for m in s.models().values())
    threads = (
        f", {max(1, available_cores() // workers)} llama.cpp thread(s) each"
        if local and workers > 1
        else ""
    )
    console.print(
        f"[bold]pos bench[/] {shown(loaded.name)}: {len(specs)} cases ({shown(', '.join(methods))}), "
        f"{workers} worker(s){threads} -> {shown(run_dir)}"
    )
    with progress_bar(console) as bar:
        task = bar.add_task("checking the set-up", total=len(specs))

        def show(result: CaseResult, progress: BenchProgress) -> None:
            mark = {"success": "[green]ok[/]", "failure": "[red]fail[/]"}.get(
                result.status, f"[yellow]{shown(result.status)}[/]"
            )
            bar.console.print(
                f"{mark} {shown(result.agent):<16} {shown(result.case)}  steps {result.steps}"
                + (f"  {shown(result.error)}" if result.error else "")
            )
            bar.update(
                task,
                completed=progress.skipped + progress.done,
                description=progress.success_line(),
            )

        try:
            results = run_bench(specs, config, on_result=show)
        except ValueError as exc:  # set-up or run folder refused: nothing ran
            bar.stop()
            _fail(str(exc))
        except RecordError as exc:
            bar.stop()
            console.print(
                f"[red]error:[/] {shown(exc.strerror or exc)}\n"
                f"Free space or choose another --out, then continue with --run {shown(name)} --resume"
            )
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            bar.stop()
            console.print(
                f"\n[yellow]Interrupted.[/] Finished cases are kept; continue with "
                f"--run {shown(name)} --resume"
            )
            raise typer.Exit(130) from None
    unscored = Counter(r.status for r in results if not is_scored(r.status))
    console.print(
        f"done: {len(results)} cases; summary {shown(run_dir / 'summary.json')}"
        + (f"; {sum(unscored.values())} not scored (--resume reruns them):" if unscored else "")
    )
    for status, count in sorted(unscored.items()):
        console.print(f"  {count} {shown(status)}: {shown(STATUS_MEANINGS.get(status, ''))}")
    if sum(unscored.values()) == len(results):
        console.print("[red]error:[/] no case produced a scored result; see the errors above")
        raise typer.Exit(1)
    console.print(f"report: pos report {shown(run_dir)}")


def _fail(message: str) -> NoReturn:
    console.print(f"[red]error:[/] {shown(message)}")
    raise typer.Exit(2)


def _split_list(text: str | None) -> list[str] | None:
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    return items or None


def _seed_list(text: str | None) -> list[int] | None:
    items = _split_list(text)
    if items is None:
        return None
    try:
        return [int(item) for item in items]
    except ValueError:
        raise typer.BadParameter(
            "write seeds as integers, e.g. 42,123", param_hint="--seeds"
        ) from None
