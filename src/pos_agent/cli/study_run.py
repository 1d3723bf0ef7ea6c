"""The run of a study (`pos paper`): plan it, print the plan (dry run) or check it against
`--max-cost`, then play every case through the bench runner, counting the spend."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import typer

from pos_agent.bench.config import BenchConfig
from pos_agent.bench.run_folder import RunFolderError, RunPlan, check_run_name, prepare_out
from pos_agent.bench.runner import pending
from pos_agent.bench.signals import stop_on_signals
from pos_agent.bench.spec import CaseSpec
from pos_agent.bench.study import Study, estimate_cells, study_cases, study_suites
from pos_agent.bench.study.plan import Plan, plan_text
from pos_agent.bench.study.spend import SpendGuard, SpendLimitReached, run_spend
from pos_agent.bench.suite import Suite
from pos_agent.cli.bench import parse_shard, play_cases, summarise
from pos_agent.cli.common import checked_embed_model, console, shown
from pos_agent.cli.study_options import RunOptions
from pos_agent.cost import PriceTable, load_prices
from pos_agent.llm import ModelOptions
from pos_agent.trace import CaseResult


def run_study(study: Study, options: RunOptions) -> None:
    """Plan the study; print the plan (dry run) or check it against --max-cost, then run it.
    Ctrl-C, SIGTERM and SIGHUP at any point exit 130 (the run itself: bench/signals.py)."""
    with stop_on_signals():
        try:
            _plan_and_run(study, options)
        except KeyboardInterrupt:
            console.print("\n[yellow]Interrupted[/] before any case started; nothing to resume.")
            raise typer.Exit(130) from None


def _plan_and_run(study: Study, options: RunOptions) -> None:
    if options.limit is not None:
        study = study.model_copy(update={"limit": options.limit})
    specs, suite_of = _cases(study, options)
    part = parse_shard(options.shard)
    if part is not None:
        specs = part.take(specs)
    name = _run_name(options.run_name, study, options.out, dry=options.dry_run)
    run_dir = options.out / name
    prices = _prices(options.price_table, options.price_as)
    todo = _todo(specs, run_dir, options) if options.resume else specs
    plan = Plan(
        study,
        estimate_cells(todo if not options.dry_run else specs, suite_of),
        len(specs),
        str(run_dir),
        prices,
        options.max_cost,
        _spent(run_dir, specs, prices) if options.resume and prices is not None else 0.0,
    )
    if options.dry_run:
        console.print(f"[bold]pos paper[/] {shown(study.name)} (dry run: nothing is sent)")
        console.print(plan_text(plan), markup=False)
        return
    guard = _guard(plan, run_dir, specs, options)
    _check_embeddings(specs)
    config = _bench_config(run_dir, study, specs, suite_of, options)
    console.print(
        f"[bold]pos paper[/] {shown(study.name)}: {len(specs)} cases in {len(plan.cells)} cells, "
        f"{options.placement.where(specs)} -> {shown(run_dir)}"
    )
    _play_guarded(specs, config, name, guard)


def _cases(study: Study, options: RunOptions) -> tuple[list[CaseSpec], dict[str, str]]:
    """The study's cases and the suite of each; in a dry run a suite whose data is missing
    counts its cases under placeholders (said), in a real run it is an error."""
    loca = str(options.loca_root.expanduser().resolve()) if options.loca_root else None

    def missing(suite: Suite, exc: Exception) -> None:
        why = str(exc).splitlines()[0].split(". ")[0][:160] if str(exc).strip() else "-"
        console.print(
            f"[yellow]note:[/] {shown(suite.name)}: its data is not there yet ({shown(why)}); "
            "the plan counts the cases the suite holds once it is (pos data get)"
        )

    try:
        specs = study_cases(study, loca_root=loca, missing=missing if options.dry_run else None)
    except ValueError as exc:
        fail(str(exc))
    except Exception as exc:  # missing data, a broken environment: say what, no traceback
        fail(f"could not list the study's cases: {exc}")
    suite_of = _suite_of(study, specs)
    return specs, suite_of


def _suite_of(study: Study, specs: list[CaseSpec]) -> dict[str, str]:
    """Case folder -> the name of the suite it came from (the estimate's and report's cell)."""
    names: dict[tuple[str, str | None], str] = {}
    for suite, _ in study_suites(study):
        names.setdefault((suite.env, suite.split), suite.name)
    return {s.folder: names.get((s.env, s.split), s.env) for s in specs}


def _run_name(given: str | None, study: Study, out: Path, *, dry: bool) -> str:
    try:
        name = check_run_name(given or f"{study.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        if not dry:
            prepare_out(out)
    except RunFolderError as exc:
        fail(str(exc))
    return name


def _prices(path: Path | None, price_as: str | None) -> PriceTable:
    """The price table (over the shipped examples); with `price_as`, every model at that
    model's price."""
    try:
        table = load_prices(path)
    except (OSError, ValueError) as exc:
        fail(f"price table: {exc}")
    if price_as is None:
        return table
    price = table.price(price_as)
    if price is None:
        fail(f"--price-as {price_as}: no such model in the price table ({', '.join(table.models)})")
    return PriceTable({"*": price}, table.currency, table.per_tokens)


def _todo(specs: list[CaseSpec], run_dir: Path, options: RunOptions) -> list[CaseSpec]:
    plan = RunPlan.of(specs, ModelOptions(**options.model_options))
    return pending(specs, run_dir, plan, resume=True)[0]


def _spent(run_dir: Path, specs: list[CaseSpec], prices: PriceTable) -> float:
    return run_spend(run_dir, prices, [s.folder for s in specs])


def _guard(
    plan: Plan, run_dir: Path, specs: list[CaseSpec], options: RunOptions
) -> SpendGuard | None:
    """Refuse a study whose estimate passes --max-cost; else the guard that stops it in time."""
    if options.max_cost is None or plan.prices is None:
        return None
    costs = [c.cost(plan.prices) for c in plan.cells]
    if any(c is None for c in costs):
        unpriced = sorted({m for c in plan.cells for m in c.unpriced(plan.prices)})
        fail(
            f"--max-cost needs a price for every model; none for {', '.join(unpriced)} "
            "(add them with --price-table)"
        )
    estimate = sum(c for c in costs if c is not None)
    if estimate + plan.already_spent > options.max_cost:
        fail(
            f"the estimate ({estimate:.2f}, plus {plan.already_spent:.2f} already spent) passes "
            f"--max-cost {options.max_cost:.2f}; nothing was sent. See the plan with --dry-run, "
            "run fewer cases (--limit) or raise --max-cost"
        )
    per_case = max(
        ((c.cost(plan.prices) or 0.0) / c.cases for c in plan.cells if c.cases), default=0.0
    )
    in_flight = options.placement.max_concurrency or options.placement.workers
    return SpendGuard.of(
        run_dir,
        [s.folder for s in specs],
        limit=options.max_cost,
        prices=plan.prices,
        in_flight=in_flight,
        per_case=per_case,
    )


def _check_embeddings(specs: list[CaseSpec]) -> None:
    """PACE's embeddings endpoint, checked (key and client) before any case runs."""
    used = sorted({s.embed_model for s in specs if s.embed_model != "tfidf"})
    for spec in used:
        checked_embed_model(spec, used=True)


def _bench_config(
    run_dir: Path,
    study: Study,
    specs: list[CaseSpec],
    suite_of: dict[str, str],
    options: RunOptions,
) -> BenchConfig:
    placement = options.placement
    config = BenchConfig(
        run_dir=run_dir,
        workers=placement.workers,
        model_options=dict(options.model_options),
        case_timeout_s=options.case_timeout,
        describe={
            "study": study.model_dump(mode="json"),
            "backbones": [b.model_dump() for b in study.backbone_list()],
            "suite_of": suite_of,
            "workers": placement.workers,
            "executor": placement.executor,
        },
        executor=placement.executor,
        ray_address=placement.ray_address,
        max_concurrency=placement.max_concurrency,
        rate_limits=placement.rate_limits(),
    )
    return replace(
        config,
        resume=options.resume,
        infra_retries=options.infra_retries,
        preflight=options.preflight,
    )


def _play_guarded(
    specs: list[CaseSpec], config: BenchConfig, name: str, guard: SpendGuard | None
) -> None:
    """Run the cases; with --max-cost, count each result's spend and stop in time (exit 4)."""
    folders = {_result_key(s.agent, s.case_id, s.models()): s.folder for s in specs}

    def count(result: CaseResult) -> None:
        folder = folders.get(_result_key(result.agent, result.case, result.models))
        if guard is None or folder is None:
            return
        try:
            guard.seen(result, folder)
        except SpendLimitReached as stop:
            console.print(f"[yellow]--max-cost:[/] {shown(stop)}; stopping")
            raise

    try:
        results = play_cases(specs, config, name, count)
    except typer.Exit as done:
        if guard is not None and guard.tripped:
            console.print(
                f"[yellow]stopped at --max-cost[/] ({guard.spent:.4f} spent); raise it and "
                f"continue with --run {shown(name)} --resume"
            )
            raise typer.Exit(4) from None
        raise done
    summarise(results, config.run_dir)
    console.print(f"paper report: pos report {shown(config.run_dir)} --paper")


def _result_key(agent: str, case: str, models: dict[str, str]) -> str:
    return f"{agent}|{case}|{sorted(models.items())}"


def fail(message: str) -> NoReturn:
    console.print(f"[red]error:[/] {shown(message)}")
    raise typer.Exit(2)
