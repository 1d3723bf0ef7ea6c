"""`pos data list` and `pos data get`: the benchmarks' data, where it comes from and whether it
is ready here, and fetching and preparing it (`pos_agent.data`)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pos_agent.cli.app import app
from pos_agent.data import SOURCES, DataError, data_home, get, status
from pos_agent.envs import EnvError
from pos_agent.envs.loca.runtime import default_runtime_dir, ensure_runtime, find_runtime

EXIT_ERROR = 1

data_app = typer.Typer(
    help="The benchmarks' data: list what is ready, get what is not.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(data_app, name="data")


def _runtime_state() -> str:
    found = find_runtime()
    return "ready" if found is not None else f"not built ({default_runtime_dir()})"


@data_app.command("list")
def list_command(
    verify: Annotated[
        bool, typer.Option("--verify", help="Re-hash every prepared file against its manifest.")
    ] = False,
) -> None:
    """Each data set: where it comes from (repository, commit, licence), where it is here, and
    whether it is ready."""
    console = Console()
    table = Table(title=f"pos data ({data_home()})", show_lines=False)
    for column in ("name", "source", "licence", "state", "where"):
        table.add_column(column, overflow="fold")
    problems: list[str] = []
    for name in SOURCES:
        found = status(name, verify=verify)
        state = found.state + (f" ({found.detail})" if found.detail else "")
        if name == "loca":
            state += f"; runtime {_runtime_state()}"
        table.add_row(name, found.source.upstream, found.source.licence, state, str(found.path))
        problems.extend(f"{name}: {problem}" for problem in found.problems[:5])
    console.print(table)
    for name, found_source in SOURCES.items():
        if found_source.note:
            console.print(f"{name}: {found_source.note}", highlight=False)
    for line in problems:
        console.print(f"[yellow]{line}[/yellow]")
    console.print(
        "Get one with `pos data get NAME` (`--from PATH` for a local copy); the environment "
        "variables " + ", ".join(f"${s.env_var}" for s in SOURCES.values()) + " override it."
    )


@data_app.command("get")
def get_command(
    name: Annotated[str, typer.Argument(help=f"The data set: {', '.join(SOURCES)}.")],
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="A local copy instead of the pinned URL: a git directory, a checkout, a "
            "folder, an archive, or a file:// / https:// URL.",
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Prepare it again even when it is ready.")] = False,
    runtime: Annotated[
        bool, typer.Option(help="loca: also build LOCA's runtime (its venv and npm servers).")
    ] = True,
) -> None:
    """Fetch data set NAME at its pinned version, check it and prepare it into $POS_DATA."""

    def say(message: str) -> None:
        typer.echo(message, err=True)

    try:
        path = get(name, source, force=force, progress=say)
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    typer.echo(f"{name}: ready at {path}")
    if name == "loca" and runtime:
        say("building LOCA's runtime (once; `--no-runtime` skips it)")
        try:
            ensure_runtime(progress=say)
        except EnvError as exc:
            typer.echo(
                f"error: the checkout is ready, but LOCA's runtime could not be built ({exc}); "
                "run `make loca-runtime` (or `pos data get loca` again) once PyPI and npm "
                "can be reached.",
                err=True,
            )
            raise typer.Exit(EXIT_ERROR) from None
