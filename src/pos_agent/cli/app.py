"""The root `pos` Typer application; subcommand modules register themselves on it."""

from __future__ import annotations

import typer

app = typer.Typer(
    help="PoS: belief-state agents with Belief-Trapping detection and recovery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@app.command()
def version() -> None:
    """Print the installed PoS version."""
    from pos_agent import __version__

    typer.echo(__version__)
