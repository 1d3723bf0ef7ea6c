"""`pos trapbench make|eval`: labelled trap corpora (real TextWorld games; a tool-using agent
in a simulated workspace), and the detector comparison on them."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from pos_agent.cli.common import progress_bar, shown
from pos_trapbench.families import FAMILY_CHOICES
from pos_trapbench.pool import KILL_FACTOR, MEMORY_LIMIT_MB, TIME_LIMIT_S

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from pos_trapbench.corpus import CorpusMaker, SlotResult
    from pos_trapbench.pool import Running

console = Console(highlight=False, soft_wrap=True)
trapbench_app = typer.Typer(
    help=(
        "Trap detection benchmark: two labelled corpus families (real TextWorld games; a "
        "tool-using agent in a simulated workspace), each with injected traps and productive "
        "repetition, and detectors compared on them."
    ),
    no_args_is_help=True,
)

SLOW_S = 60.0
"""A game still running after this many seconds is named in the output (normal: seconds)."""


OutOption = Annotated[Path, typer.Option(help="Corpus folder to create or resume.")]
GamesOption = Annotated[
    int, typer.Option(help="Game slots; half tw-cooking, half custom quests.", min=1)
]
SeedOption = Annotated[int, typer.Option(help="Seed of the whole corpus (games and segments).")]
WorkersOption = Annotated[
    int | None,
    typer.Option(help="Worker processes (default: 2, or 1 on a one-core machine).", min=1),
]
FamilyOption = Annotated[
    str, typer.Option(help="Which corpus family to build: textworld, tools, tools-b or all.")
]
TrajectoriesOption = Annotated[
    int, typer.Option(help="Tool-agent trajectories (the tools family).", min=1)
]
TimeLimitOption = Annotated[
    float,
    typer.Option(
        help="Seconds one game may take before its worker is stopped and it fails.", min=1
    ),
]
MemoryLimitOption = Annotated[
    int,
    typer.Option(
        help="MB a worker may use for one game: past it the game is skipped (a worker past "
        f"{KILL_FACTOR:g} times it is stopped and the game fails).",
        min=64,
    ),
]


@trapbench_app.command()
def make(
    out: OutOption = Path("traps"),
    games: GamesOption = 40,
    seed: SeedOption = 1,
    workers: WorkersOption = None,
    family: FamilyOption = "all",
    trajectories: TrajectoriesOption = 120,
    time_limit: TimeLimitOption = TIME_LIMIT_S,
    memory_limit: MemoryLimitOption = MEMORY_LIMIT_MB,
) -> None:
    """Build the corpus families: TextWorld games (offline) and the tool-agent workspace.

    The tools family (`--family tools`) is a scripted tool-using agent in a simulated
    workspace (files, a test runner, an HTTP service, a job queue, a search tool), generated
    from the seed in seconds into OUT/tools/: injected repeats, alternations, cycles of 3-5
    calls, semantic loops and polls that never finish, and productive repetition that must not
    alarm (tests re-run after real edits, paging, many distinct files, a poll that finishes).

    Each game slot gets the game's walkthrough and three runs along the winning plan with
    injected segments: static (a repeated no-op), cycle (2-3 rooms or one container toggled),
    drift (changing goal-irrelevant things) and productive exploration (the hard negative).
    Seeds whose game cannot be won as generated, or whose searches go past their bounds
    (steps, or --memory-limit), are replaced, and the manifest says why. Every trajectory is won
    in the real game, or discarded. A game whose worker dies or passes --time-limit fails: the
    build goes on, and the next run builds it again.

    The folder gets games/ (the .z8 and .json of each game), trajectories/ (one JSONL per
    game), manifest.json and, once every game is done, corpus.jsonl. Rerunning the same
    command resumes: finished games are kept, the rest is redone.

    Example: pos trapbench make --games 40 --seed 1 --out traps
    """
    if family not in FAMILY_CHOICES:
        console.print(f"[red]error:[/] --family must be one of {', '.join(FAMILY_CHOICES)}")
        raise typer.Exit(2)
    for tools_family in ("tools", "tools-b"):
        if family in (tools_family, "all"):
            _make_tools(out, trajectories, seed, tools_family)
    if family in ("tools", "tools-b"):
        console.print(f"next: pos trapbench eval {out}")
        return
    _make_games(out, games, seed, workers, time_limit, memory_limit)


def _make_tools(out: Path, trajectories: int, seed: int, family: str) -> None:
    """One tool-agent corpus family, generated from the seed."""
    from pos_trapbench.toolagent.corpus import write_tools_corpus

    started = time.monotonic()
    path, built = write_tools_corpus(out, trajectories, seed, family)
    segments = ", ".join(f"{k} {n}" for k, n in built.segments.items())
    console.print(
        f"{family} corpus: {path}  ({built.trajectories} trajectories, "
        f"{built.steps} steps; segments: {segments}; {time.monotonic() - started:.1f}s)"
    )


def _make_games(
    out: Path,
    games: int,
    seed: int,
    workers: int | None,
    time_limit: float,
    memory_limit: int,
) -> None:
    """The TextWorld family: the games built (or resumed) in worker processes."""
    from pos_trapbench.corpus import CorpusMaker, remove_scratch
    from pos_trapbench.pool import Limits

    count = workers or min(2, os.cpu_count() or 1)
    try:
        maker = CorpusMaker(
            out,
            games,
            seed,
            workers=count,
            limits=Limits(time_s=time_limit, memory_mb=memory_limit),
        )
    except ValueError as exc:
        console.print(f"[red]error:[/] {shown(exc)}")
        raise typer.Exit(2) from None
    except ImportError as exc:
        console.print(
            f"[red]error:[/] TextWorld is not installed ({shown(exc)}). It comes with the envs extra: "
            "`uv sync --extra envs` (or `pip install 'pos-agent[envs]'`)."
        )
        raise typer.Exit(2) from None
    remove_scratch(out)
    todo = maker.pending()
    console.print(
        f"[bold]pos trapbench make[/] {games} games, seed {seed} -> {out}  "
        f"({games - len(todo)} done already, {len(todo)} to build, {count} worker(s))"
    )
    started = time.monotonic()
    with progress_bar(console) as bar:
        shown_progress = _GameProgress(bar, bar.add_task("games", total=len(todo)), time_limit)
        try:
            corpus = maker.run(on_slot=shown_progress.slot, on_progress=shown_progress.running)
            bar.update(shown_progress.task, description="games")
        except KeyboardInterrupt:
            console.print(
                f"\n[yellow]Interrupted.[/] Finished games are kept in {out}; "
                "run the same command again to resume."
            )
            raise typer.Exit(130) from None
    _report_games(maker, corpus, out, time.monotonic() - started)


class _GameProgress:
    """The progress of a games build: a line per finished slot, the running games on the bar,
    and a line for a game that is slow."""

    def __init__(self, bar: Progress, task: TaskID, time_limit: float) -> None:
        self.bar = bar
        self.task = task
        self.time_limit = time_limit
        self.warned: dict[str, float] = {}

    def slot(self, result: SlotResult) -> None:
        bar = self.bar
        used = [e for e in result.entries if e.status == "used"]
        skipped = [e for e in result.entries if e.status == "skipped"]
        note = f"  ({len(skipped)} seed(s) replaced)" if skipped else ""
        if used:
            bar.console.print(
                f"[green]ok[/] {used[0].id:<12} {used[0].family:<10} "
                f"{used[0].trajectories} trajectories, {used[0].steps} steps{note}"
            )
        elif result.failed:
            bar.console.print(
                f"[red]failed[/] {result.entries[-1].id}: {shown(result.entries[-1].reason)}"
            )
        else:
            bar.console.print(f"[yellow]gave up[/] {result.slot}: {shown(skipped[-1].reason)}")
        bar.advance(self.task)

    def running(self, running: list[Running]) -> None:
        parts = []
        for game in sorted(running, key=lambda r: r.worker):
            parts.append(f"{game.key} {game.seconds:.0f}s {game.rss_mb:.0f}MB")
            # A slow game is named once it passes SLOW_S, and again each time it doubles.
            if game.seconds >= self.warned.get(game.key, SLOW_S):
                self.warned[game.key] = 2 * max(game.seconds, SLOW_S)
                self.bar.console.print(
                    f"[yellow]slow[/] {game.key}: {game.seconds:.0f}s so far, "
                    f"{game.rss_mb:.0f} MB (stopped at {self.time_limit:.0f}s)"
                )
        self.bar.update(self.task, description="games: " + ", ".join(parts) if parts else "games")


def _report_games(maker: CorpusMaker, corpus: Path | None, out: Path, seconds: float) -> None:
    """What the build made: skipped seeds, memory peaks, failed games (exit 1) or the corpus."""
    manifest = maker.manifest
    used = sum(g.status == "used" for g in manifest.games)
    skipped = [g for g in manifest.games if g.status == "skipped"]
    for entry in skipped:
        console.print(f"[dim]skipped {entry.id} (seed {entry.seed}): {shown(entry.reason)}[/]")
    peaks = ", ".join(
        f"#{number} {peak.mb:.0f} MB ({peak.key})"
        for number, peak in sorted(maker.peaks.items())
        if peak.key
    )
    if peaks:
        console.print(f"peak memory per worker: {peaks}")
    elapsed = f"{seconds:.0f}s"
    if corpus is None:
        for result in maker.failed:
            console.print(
                f"[red]failed[/] {result.entries[-1].id}: {shown(result.entries[-1].reason)}"
            )
        console.print(
            f"[red]{len(maker.failed)} game(s) failed[/] ({used} games used, {len(skipped)} "
            f"seeds skipped; {elapsed}); the finished games are kept in {out}: run the same "
            "command again to build the failed ones."
        )
        raise typer.Exit(1)
    console.print(f"corpus: {corpus}  ({used} games used, {len(skipped)} seeds skipped; {elapsed})")
    console.print(f"next: pos trapbench eval {out}")


@trapbench_app.command("eval")
def evaluate_command(
    corpus: Annotated[Path, typer.Argument(help="Corpus folder made by `pos trapbench make`.")],
    out: Annotated[
        Path | None, typer.Option(help="Where to write the tables (default: CORPUS/results).")
    ] = None,
) -> None:
    """Run every detector over each corpus family and print one table per family and overall.

    Detectors: belief health `improved` and `paper` (Eq. 5-6), each with the belief written
    from the true state (TextWorld's oracle facts, the workspace's seen facts) and model-free
    (actions and observations only), through `pos_agent.monitor.TrapMonitor`; and the anchors'
    rules at their current documented behaviour: the OpenHands SDK, Gemini CLI, OpenRouter's
    doomLoop, a hashed-call proxy and AgentBoard. Columns: recall per trap kind (a segment
    counts when an alarm starts in it or within 2 steps after), median delay (steps from the
    segment's first step to that start), alarmed steps and new alarm starts per 100 non-trap
    steps, the share of productive segments with any alarm, pattern right (the diagnosis at the
    detecting start), and the share of clean runs with any alarm. Writes table.md, table.csv
    and table.png.

    Example: pos trapbench eval traps
    """
    from pos_trapbench.evaluate import (
        TARGETED,
        evaluate,
        load_families,
        markdown_table,
        overall,
        summary_line,
        target_check,
        write_outputs,
    )

    try:
        families = load_families(corpus)
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/] {shown(exc)}")
        raise typer.Exit(2) from None
    if not any(families.values()):
        console.print(f"[red]error:[/] {corpus} holds no trajectories")
        raise typer.Exit(2)
    started = time.monotonic()
    evaluations = [
        evaluate(runs, family=name, on_detector=lambda n: console.print(f"[dim]running {n}[/]"))
        for name, runs in families.items()
        if runs
    ]
    if len(evaluations) > 1:
        evaluations.append(overall(evaluations))
    for evaluation in evaluations:
        console.print(f"\n[bold]{evaluation.family}[/]  {summary_line(evaluation)}")
        console.print(markdown_table(evaluation), markup=False)
    console.print()
    for evaluation in evaluations:
        for name in TARGETED:
            for line in target_check(evaluation, name):
                console.print(line, markup=False)
    paths = write_outputs(evaluations, out or corpus / "results")
    console.print(
        f"table: {paths['markdown']}  csv: {paths['csv']}  figure: {paths['figure']}  "
        f"({time.monotonic() - started:.1f}s)"
    )
