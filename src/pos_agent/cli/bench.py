"""`pos bench`: run a suite for several methods, in parallel, resumably."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn

import typer

from pos_agent.agents.methods import uses_embeddings
from pos_agent.bench.case import AGENTS, CaseSpec, RecordError
from pos_agent.bench.executors.local import threads_each
from pos_agent.bench.run_folder import CONFIG_NAME, RunFolderError, check_run_name, prepare_out
from pos_agent.bench.runner import BenchConfig, run_bench
from pos_agent.bench.runner import Progress as BenchProgress
from pos_agent.bench.shards import Shard
from pos_agent.bench.suite import Suite, builtin_suites, load_suite
from pos_agent.cli._options import CaseOptions, case_options
from pos_agent.cli.app import app
from pos_agent.cli.bench_options import (
    AgentsOption,
    Executor,
    ExecutorOption,
    InfraRetriesOption,
    LengthsOption,
    LimitOption,
    ListOption,
    MaxConcurrencyOption,
    ModelConcurrencyOption,
    ModelRpmOption,
    PreflightOption,
    RayAddressOption,
    ResumeOption,
    RunOption,
    SeedsOption,
    ShardOption,
    SuiteArgument,
    WorkersOption,
)
from pos_agent.cli.common import console, progress_bar, shown
from pos_agent.llm import RateLimits, wants_context_per_role
from pos_agent.trace import STATUS_MEANINGS, CaseResult, is_scored


@app.command()
@case_options
def bench(
    suite: SuiteArgument = "alfworld-mini",
    agents: AgentsOption = "pos,raw",
    workers: WorkersOption = 1,
    resume: ResumeOption = False,
    limit: LimitOption = None,
    lengths: LengthsOption = None,
    seeds: SeedsOption = None,
    run_name: RunOption = None,
    infra_retries: InfraRetriesOption = 2,
    preflight: PreflightOption = True,
    list_suites: ListOption = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    max_concurrency: MaxConcurrencyOption = None,
    shard: ShardOption = None,
    model_concurrency: ModelConcurrencyOption = None,
    model_rpm: ModelRpmOption = None,
    *,
    options: CaseOptions,
) -> None:
    """Run SUITE for each method and write runs/<run>/<agent>__<case>/ records plus summary.json.

    Example: pos bench alfworld-mini --agents pos,raw --model local --workers 2

    First the cases, the run folder and every model (one small call) are checked: a broken set-up is refused, never scored. Only success and failure are scored; other statuses are listed, and --resume reruns them. Options given here override the suite's.

    Exit code: 1 when no case was scored, 3 when some cases ended unscored by a server or backend failure (--resume reruns them), 130 after Ctrl-C, SIGTERM or SIGHUP.
    """
    if list_suites:
        _list_suites()
        return
    methods = _methods(agents)
    if resume and not run_name:
        raise typer.BadParameter("--resume needs the --run name to continue", param_hint="--resume")
    placement = Placement(
        executor, workers, ray_address, max_concurrency, model_concurrency, model_rpm
    )
    placement.check()
    part = parse_shard(shard)
    loaded, specs = _cases(suite, methods, options, limit, lengths, seeds)
    if part is not None:
        everything = len(specs)
        specs = part.take(specs)
        if not specs:
            console.print(
                f"shard {part} of {everything} cases is empty; nothing to run "
                f"(at most {everything} shards hold cases)"
            )
            return
    name = _run_name(run_name, loaded, part, options)
    run_dir = options.out / name
    config = _bench_config(run_dir, placement, options, loaded, specs, methods, part)
    config = replace(config, resume=resume, infra_retries=infra_retries, preflight=preflight)
    sharded = f" (shard {part})" if part is not None else ""
    console.print(
        f"[bold]pos bench[/] {shown(loaded.name)}: {len(specs)} cases{sharded} "
        f"({shown(', '.join(methods))}), {placement.where(specs)} -> {shown(run_dir)}"
    )
    results = play_cases(specs, config, name)
    summarise(results, run_dir)


def _methods(agents: str) -> list[str]:
    """The --agents list, every one a known method (else exit 2)."""
    methods = [a.strip() for a in agents.split(",") if a.strip()]
    unknown = [a for a in methods if a not in AGENTS]
    if unknown or not methods:
        raise typer.BadParameter(
            f"unknown method(s) {unknown}; choose from {', '.join(AGENTS)}", param_hint="--agents"
        )
    return methods


def _run_name(given: str | None, loaded: Suite, part: Shard | None, options: CaseOptions) -> str:
    """The run's folder name (default: suite, time and shard), checked, with --out made."""
    default_name = f"{loaded.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if part is not None:
        default_name += f"-shard{part.index}of{part.count}"
    try:
        name = check_run_name(given or default_name)
        prepare_out(options.out)
    except RunFolderError as exc:
        _fail(str(exc))
    return name


@dataclass(frozen=True)
class Placement:
    """Where the cases play: the executor and the options it takes."""

    executor: Executor
    workers: int
    ray_address: str | None
    max_concurrency: int | None
    model_concurrency: int | None
    model_rpm: float | None

    def check(self) -> None:
        """Refuse options that the chosen executor would silently ignore."""
        if self.executor == "ray":
            if self.workers > 1:
                raise typer.BadParameter(
                    "--workers is the local executor's; with --executor ray use --max-concurrency",
                    param_hint="--workers",
                )
            return
        given = [
            flag
            for flag, value in (
                ("--ray-address", self.ray_address),
                ("--max-concurrency", self.max_concurrency),
                ("--model-concurrency", self.model_concurrency),
                ("--model-rpm", self.model_rpm),
            )
            if value is not None
        ]
        if given:
            raise typer.BadParameter(
                f"{', '.join(given)} work(s) with --executor ray only", param_hint=given[0]
            )

    def rate_limits(self) -> RateLimits | None:
        if not (self.model_concurrency or self.model_rpm):
            return None
        return RateLimits(concurrency=self.model_concurrency, per_minute=self.model_rpm)

    def where(self, specs: list[CaseSpec]) -> str:
        """Where the cases play, as the first line of the run says it."""
        if self.executor == "ray":
            size = f"{self.max_concurrency} at once" if self.max_concurrency else "one per CPU"
            return f"Ray at {shown(self.ray_address or 'a cluster started here')}, {size}"
        local = any(wants_context_per_role(m) for s in specs for m in s.models().values())
        threads = (
            f", {threads_each(self.workers)} llama.cpp thread(s) each"
            if local and self.workers > 1
            else ""
        )
        return f"{self.workers} worker(s){threads}"


def _bench_config(
    run_dir: Path,
    placement: Placement,
    options: CaseOptions,
    loaded: Suite,
    specs: list[CaseSpec],
    methods: list[str],
    part: Shard | None,
) -> BenchConfig:
    """The run's settings: the command line over the suite's."""
    case_timeout = options.case_timeout
    return BenchConfig(
        run_dir=run_dir,
        workers=placement.workers,
        model_options=options.model_options(
            timeout_s=loaded.timeout_s, max_retries=loaded.max_retries
        ),
        case_timeout_s=case_timeout if case_timeout is not None else loaded.case_timeout_s,
        describe={
            "suite": loaded.model_dump(),
            "agents": methods,
            "model": options.model,
            "health": options.health,
            "env_models": specs[0].env_models if specs else {},
            "workers": placement.workers,
            "executor": placement.executor,
            **({"shard": part.describe()} if part is not None else {}),
        },
        executor=placement.executor,
        ray_address=placement.ray_address,
        max_concurrency=placement.max_concurrency,
        rate_limits=placement.rate_limits(),
    )


def parse_shard(text: str | None) -> Shard | None:
    if text is None:
        return None
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--shard") from None


def _list_suites() -> None:
    for name in builtin_suites():
        loaded = load_suite(name)
        budget = loaded.generation_tokens or "paper default"
        console.print(
            f"[bold]{shown(name)}[/]  env={shown(loaded.env)}  tokens={budget}  "
            f"{shown(loaded.description)}"
        )


def _cases(
    suite: str,
    methods: list[str],
    options: CaseOptions,
    limit: int | None,
    lengths: str | None,
    seeds: str | None,
) -> tuple[Suite, list[CaseSpec]]:
    """The suite and its cases, with the command line's overrides."""
    overrides: dict[str, object] = {
        key: value
        for key, value in (
            ("generation_tokens", options.generation_tokens),
            ("profile", options.checked_profile()),
            ("context_window", options.context_window),
        )
        if value is not None
    }
    bounds = options.checked_bounds()
    rule = options.checked_cache_rule()
    embed = options.checked_embed_model(used=any(uses_embeddings(name) for name in methods))
    try:
        requested = options.requested_env_models()
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--env-model") from None
    wanted_lengths, wanted_seeds = _split_list(lengths), _seed_list(seeds)
    try:
        loaded = load_suite(suite)
        if options.loca_root is not None:
            if loaded.env != "loca":
                raise ValueError(
                    f"--loca-root applies to LOCA suites; {loaded.name} runs {loaded.env}"
                )
            loaded.env_options["loca_root"] = options.loca_root_option()
        if bounds:
            overrides["bounds"] = {**loaded.bounds, **bounds}
        loaded = loaded.model_copy(update=overrides)
        specs = [
            s.model_copy(
                update={
                    "health": options.health,
                    "embed_model": embed,
                    "cache_rule": rule,
                }
            )
            for s in loaded.cases(
                methods,
                options.model,
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
    return loaded, specs


def play_cases(
    specs: list[CaseSpec],
    config: BenchConfig,
    name: str,
    also: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run the bench with a progress bar; the exits of a refused, failed or stopped run.
    `also` is told each result after it is shown (`pos paper --max-cost` adds up the spend)."""
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
            if also is not None:
                also(result)

        try:
            return run_bench(specs, config, on_result=show)
        except ValueError as exc:  # set-up or run folder refused: nothing ran
            bar.stop()
            _fail(str(exc))
        except RecordError as exc:
            bar.stop()
            then = f", then continue with --run {shown(name)} --resume" if _created(config) else ""
            console.print(
                f"[red]error:[/] {shown(exc.strerror or exc)}\n"
                f"Free space or choose another --out{then}"
            )
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            bar.stop()
            if _created(config):
                console.print(
                    f"\n[yellow]Interrupted.[/] Finished cases are kept; continue with "
                    f"--run {shown(name)} --resume"
                )
            else:  # during the checks or the pre-flight: there is no run to continue
                console.print(
                    "\n[yellow]Interrupted[/] before the run started; nothing was written."
                )
            raise typer.Exit(130) from None


def _created(config: BenchConfig) -> bool:
    return (config.run_dir / CONFIG_NAME).is_file()


def summarise(results: list[CaseResult], run_dir: Path) -> None:
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
    if unscored["infra_error"]:
        # The run is incomplete, not broken: a script (SLURM, CI) can tell and --resume.
        console.print(
            f"[yellow]incomplete:[/] {unscored['infra_error']} case(s) ended unscored by a "
            f"server or backend failure after their retries; continue with --run "
            f"{shown(run_dir.name)} --resume (exit code 3)"
        )
        raise typer.Exit(3)


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
