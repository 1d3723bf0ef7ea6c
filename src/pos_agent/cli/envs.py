"""`pos envs` lists environments and tasks; `pos play` plays one, as a person or as the expert."""

from __future__ import annotations

from collections import Counter
from contextlib import closing
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pos_agent.agents.expert import run_expert
from pos_agent.cli.app import app
from pos_agent.envs import (
    EnvError,
    Environment,
    InfrastructureError,
    Observation,
    canonical_env,
    env_entry,
    list_envs,
    list_tasks,
    make_env,
)
from pos_agent.llm import printable

# Exit codes of `pos play`.
EXIT_SUCCESS = 0
EXIT_FAILURE = 1
EXIT_SETUP_ERROR = 2
EXIT_INFRASTRUCTURE_ERROR = 3
EXIT_INTERRUPTED = 130

# A person can read this many numbered actions; longer lists are shown on request.
_SHOWN_ACTIONS = 30
_QUIT_WORDS = {"quit", "exit", "q"}


SUMMARIZE_ABOVE = 40  # `pos envs` summarizes environments with more tasks than this
WIDE = 110  # `pos envs` on a terminal narrower than this puts the split under the name


@app.command("envs")
def envs_command(
    env: Annotated[
        str | None, typer.Argument(help="Only this environment (lists every task).")
    ] = None,
    split: Annotated[
        str | None, typer.Option(help="Split to list (default: the environment's).")
    ] = None,
    loca_root: Annotated[
        str | None,
        typer.Option(
            help="LOCA-Bench checkout (default: $POS_LOCA_ROOT, else `pos data get loca`'s)."
        ),
    ] = None,
) -> None:
    """List the environments and their tasks."""
    console = Console()
    try:
        names = [canonical_env(env)] if env else list_envs()
    except EnvError as exc:
        console.print(Text(printable(exc), style="red"))
        raise typer.Exit(EXIT_SETUP_ERROR) from exc
    rows: list[tuple[str | Text, ...]] = []
    problems: list[str] = []
    for name in names:
        try:
            options = {"loca_root": loca_root} if name == "loca" and loca_root else {}
            specs = list_tasks(name, split, **options)
        except EnvError as exc:
            rows.append((name, split or "-", "-", "-", Text("unavailable (see below)", "yellow")))
            problems.append(f"{name}: {exc}")
            continue
        if name == "loca" and env is not None:
            # 105 (task, length) pairs x 5 seeds: one row per task says it more compactly.
            rows.extend(_loca_rows(specs))
            continue
        if env is None and len(specs) > SUMMARIZE_ABOVE:
            # ALFWorld's splits, ClinDiag and RCA hold hundreds of tasks: summarize unless asked.
            counts = Counter(spec.category for spec in specs)
            summary = ", ".join(f"{category} {n}" for category, n in sorted(counts.items()))
            rows.append(
                (name, specs[0].split, f"{len(specs)} tasks", summary, f"`pos envs {name}`")
            )
            continue
        for spec in specs:
            # Task ids and descriptions come from data files: shown as text, never as markup.
            cells = (spec.env, spec.split, spec.task_id, spec.category, spec.description)
            rows.append(tuple(Text(printable(cell)) for cell in cells))
    narrow = console.width < WIDE
    table = _task_table(rows, narrow=narrow, one_env=env is not None)
    console.print(table)
    if narrow and env is None:
        console.print("`pos envs NAME` lists an environment's tasks with their descriptions.")
    for problem in problems:
        console.print(Text(printable(problem), style="yellow"))
    # Listing needs no extra, but running does: say which extra each environment still needs.
    for name in names:
        missing = env_entry(name).unavailable()
        if missing is not None:
            console.print(Text(f"Cannot run here: {printable(missing)}", style="yellow"))


def _task_table(rows: list[tuple[str | Text, ...]], *, narrow: bool, one_env: bool) -> Table:
    """The environments' tasks as a table. On a narrow terminal the split goes under the
    environment's name and long cells wrap, so that no column is squeezed to nothing; the
    listing of every environment then leaves the descriptions to `pos envs NAME`."""
    described = one_env or not narrow
    table = Table(title="PoS environments", show_lines=narrow and described)
    table.add_column("Environment", no_wrap=not narrow, overflow="fold")
    if not narrow:
        table.add_column("Split", no_wrap=True)
    table.add_column("Task", overflow="fold", min_width=10)
    table.add_column("Category", overflow="fold", min_width=8)
    if described:
        table.add_column("Description", overflow="fold", min_width=20 if narrow else 30)
    previous = None
    for env, split, task, category, description in rows:
        cells = [task, category, description] if described else [task, category]
        if not narrow:
            table.add_row(env, split, *cells)
            continue
        # The name and split once per environment (and split), on the first of its rows.
        group = (str(env), str(split))
        where = Text()
        if group != previous:
            where = env.copy() if isinstance(env, Text) else Text(env)
            where.append("\n")
            where.append(Text(str(split), style="dim"))
        previous = group
        table.add_row(where, *cells)
    return table


def _loca_rows(specs: list[Any]) -> list[tuple[str, str, str, str, str]]:
    """One row per LOCA task: its lengths and seeds (`<Task>-<length>` is the task id)."""
    from pos_agent.envs.loca.cases import parse_task_id

    lengths: dict[str, list[str]] = {}
    first: dict[str, Any] = {}
    for spec in specs:
        task, length = parse_task_id(spec.task_id)
        lengths.setdefault(task, []).append(length or "?")
        first.setdefault(task, spec)
    rows = []
    for task, spec in sorted(first.items(), key=lambda item: (item[1].category, item[0])):
        seeds = spec.description.split("seeds ", 1)[-1].split(";", 1)[0]
        rows.append(
            (
                spec.env,
                spec.split,
                f"{task}-{{{','.join(lengths[task])}}}",
                spec.category,
                f"seeds {seeds}",
            )
        )
    return rows


@app.command("play")
def play_command(
    env: Annotated[str, typer.Argument(help="Environment, e.g. alfworld-mini.")],
    task: Annotated[str, typer.Argument(help="Task, e.g. heat-mug, boil, cookingworld.")],
    expert: Annotated[
        bool, typer.Option("--expert", help="Let the expert play; exit 0 only on success.")
    ] = False,
    split: Annotated[str | None, typer.Option(help="Split (default: the environment's).")] = None,
    seed: Annotated[
        int | None,
        typer.Option(help="Instance: ScienceWorld variation or TextWorldExpress seed."),
    ] = None,
    max_steps: Annotated[int | None, typer.Option(help="Step budget.")] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-o",
            help="Environment option KEY=VALUE, e.g. -o game_params=numLocations=3.",
        ),
    ] = None,
) -> None:
    """Play a task in the terminal (numbered choice or free text; `quit` to stop)."""
    console = Console()
    try:
        options = _parse_options(option or [])
        environment = make_env(env, task, max_steps=max_steps, split=split, seed=seed, **options)
    except EnvError as exc:
        console.print(Text(printable(exc), style="red"))
        raise typer.Exit(EXIT_SETUP_ERROR) from exc
    with closing(environment):
        try:
            if expert:
                code = _play_expert(console, environment)
            else:
                code = _play_human(console, environment)
        except InfrastructureError as exc:
            console.print(Text(printable(exc), style="red"))
            code = EXIT_INFRASTRUCTURE_ERROR
        except EnvError as exc:
            console.print(Text(printable(exc), style="red"))
            code = EXIT_SETUP_ERROR
        except KeyboardInterrupt:
            console.print(Text("\nStopped.", style="yellow"))
            code = EXIT_INTERRUPTED
    raise typer.Exit(code)


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise EnvError(f"Bad --option {pair!r}: write KEY=VALUE.")
        options[key.strip()] = _option_value(raw.strip())
    return options


def _option_value(raw: str) -> Any:
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(raw)
    except ValueError:
        return raw


def _print_header(console: Console, environment: Environment) -> None:
    console.rule(Text(printable(f"{environment.name} / {environment.task_id}"), style="bold"))


def _print_outcome(console: Console, observation: Observation, steps: int) -> int:
    style = "bold green" if observation.success else "bold red"
    verdict = "SUCCESS" if observation.success else "FAILURE"
    console.print(
        Text(f"{verdict} after {steps} steps (score {observation.score:g}).", style=style)
    )
    return EXIT_SUCCESS if observation.success else EXIT_FAILURE


def _play_expert(console: Console, environment: Environment) -> int:
    _print_header(console, environment)
    last: list[Observation] = []

    def start(observation: Observation) -> None:
        console.print(Text(printable(observation.text)))

    def show(action: str, observation: Observation) -> None:
        last[:] = [observation]
        number = observation.info.get("steps_used", "?")
        console.print(Text(printable(f"{number:>3}. {action}"), style="bold cyan"))
        console.print(Text(printable(observation.text)), style="dim")

    outcome = run_expert(environment, on_reset=start, on_step=show)
    if outcome.error and not outcome.success:
        console.print(Text(printable(outcome.error), style="yellow"))
    if last:
        return _print_outcome(console, last[0], outcome.steps)
    console.print(Text("FAILURE: the expert took no step.", style="bold red"))
    return EXIT_FAILURE


def _show_actions(console: Console, actions: list[str], *, everything: bool) -> None:
    shown = actions if everything else actions[:_SHOWN_ACTIONS]
    for number, action in enumerate(shown, start=1):
        console.print(Text(printable(f"  {number:>3}. {action}")))
    if len(shown) < len(actions):
        console.print(
            Text(
                f"  ... {len(actions) - len(shown)} more: type 'actions' to list them all.",
                style="dim",
            )
        )


def _play_human(console: Console, environment: Environment) -> int:
    _print_header(console, environment)
    observation = environment.reset()
    console.print(Text(printable(observation.text)))
    console.print(
        Text("Type a number or an action; 'actions' lists them all; 'quit' stops.", style="dim")
    )
    steps = 0
    fresh = True  # list the actions once per new observation, not after every keystroke
    while not observation.done:
        actions = observation.admissible_actions or []
        if actions and fresh:
            _show_actions(console, actions, everything=False)
        fresh = False
        try:
            line = input("> ").strip()
        except (EOFError, KeyboardInterrupt):
            console.print(Text("\nStopped.", style="yellow"))
            return EXIT_INTERRUPTED
        if line.lower() in _QUIT_WORDS:
            console.print(Text("Stopped.", style="yellow"))
            return EXIT_FAILURE
        if line.lower() == "actions":
            _show_actions(console, actions, everything=True)
            continue
        if line.isdigit():
            index = int(line) - 1
            if not 0 <= index < len(actions):
                console.print(Text(printable(f"No action numbered {line}."), style="yellow"))
                continue
            line = actions[index]
        observation = environment.step(line)
        steps += 1
        fresh = True
        style = "yellow" if observation.info.get("invalid_action") else ""
        console.print(
            Text(printable(f"[{steps}/{environment.max_steps}] {line}"), style="bold cyan")
        )
        console.print(Text(printable(observation.text), style=style))
    return _print_outcome(console, observation, steps)
