"""The root `pos` Typer application.

Commands are registered lazily: `pos --help` lists every command from the table below without
importing any of them, and a command's module (with the extra it needs) is imported only when
that command runs. So `pos serve` works with the `serve` extra alone, and a command whose extra
is missing says which extra to install when it is run, not when another one is.

Command modules register on `app` with `@app.command()` (a group of subcommands with
`app.add_typer(sub, name=...)`); a test that imports one module and invokes `app` gets it at
once. Commands from other distributions (`pos trapbench`, from the
`pos-trapbench` package) come in through the `pos_agent.commands` entry-point group: each entry
names a Typer app whose commands become a `pos` subcommand group.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    # The click that Typer's group is built on (Typer vendors its own copy).
    from typer._click import Command, Context

PLUGIN_GROUP = "pos_agent.commands"


@dataclass(frozen=True)
class LazyCommand:
    """A command known before its module is imported."""

    module: str
    """The module that registers it (importing it needs the command's extra)."""
    help: str
    """The one-line help `pos --help` shows; a test holds it equal to the command's own."""


COMMANDS: dict[str, LazyCommand] = {
    "run": LazyCommand(
        "pos_agent.cli.run",
        "Run one episode and write runs/<run>/<case>/events.jsonl and result.json.",
    ),
    "bench": LazyCommand(
        "pos_agent.cli.bench",
        "Run SUITE for each method and write runs/<run>/<agent>__<case>/ records plus "
        "summary.json.",
    ),
    "report": LazyCommand(
        "pos_agent.cli.report",
        "Success, tokens per role, trapping and context-length tables, methods side by side.",
    ),
    "view": LazyCommand(
        "pos_agent.cli.report",
        "Render one trace as a self-contained HTML page (no network needed to view it).",
    ),
    "envs": LazyCommand("pos_agent.cli.envs", "List the environments and their tasks."),
    "play": LazyCommand(
        "pos_agent.cli.envs",
        "Play a task in the terminal (numbered choice or free text; `quit` to stop).",
    ),
    "serve": LazyCommand(
        "pos_agent.cli.serve",
        "Serve the proxy for Chat Completions, Responses and Anthropic Messages: point your "
        "agent's base_url at it.",
    ),
    "paper": LazyCommand(
        "pos_agent.cli.paper",
        "The paper's tables as one resumable run: plan and price the grid, run every cell.",
    ),
    "doctor": LazyCommand(
        "pos_agent.cli.doctor",
        "Check the set-up; exit code 0 only when every checked model answered a schema-valid "
        "object.",
    ),
    "data": LazyCommand(
        "pos_agent.cli.data", "The benchmarks' data: list what is ready, get what is not."
    ),
}

PLUGINS: dict[str, tuple[str, str]] = {
    "trapbench": (
        "trapbench",
        "Trap detection benchmark: labelled corpora and detectors compared on them.",
    ),
}
"""Commands that other distributions add, by name: the extra that installs each, and its help
when it is not installed (the command is still listed, and says how to get it)."""


def _plugins() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP)}


def _missing_extra(error: ModuleNotFoundError) -> None:
    from pos_agent.cli.extras import missing_extra_message

    missing = (error.name or "").partition(".")[0]
    if not missing or missing == "pos_agent":
        raise error
    typer.echo(missing_extra_message(missing), err=True)
    sys.exit(2)


class _LazyGroup(TyperGroup):
    """Typer's group, with commands loaded on first use."""

    def list_commands(self, ctx: Context) -> list[str]:
        names = set(super().list_commands(ctx)) | set(COMMANDS) | set(PLUGINS) | set(_plugins())
        return sorted(names)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        loaded = super().get_command(ctx, cmd_name)
        if loaded is not None:
            return loaded
        # Listing: a stand-in with the static help, so `pos --help` imports nothing.
        if cmd_name in COMMANDS:
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name].help)
        plugin = _plugins().get(cmd_name)
        if plugin is not None or cmd_name in PLUGINS:
            text = PLUGINS.get(cmd_name, ("", ""))[1]
            if plugin is not None and plugin.dist is not None and not text:
                text = plugin.dist.metadata.get("Summary", "")
            return TyperCommand(cmd_name, help=text)
        return None

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        if args and args[0] not in self.commands:
            loaded = load_command(args[0])
            if loaded is not None:
                self.add_command(loaded, args[0])
        return super().resolve_command(ctx, args)


def load_command(name: str) -> Command | None:
    """The real command `name`, its module imported now; None for a name no one knows. A
    missing extra ends the process with exit 2 and the line that installs it."""
    if name in COMMANDS:
        try:
            importlib.import_module(COMMANDS[name].module)
        except ModuleNotFoundError as error:
            _missing_extra(error)
        for info in app.registered_commands:
            callback_name = info.callback.__name__.replace("_", "-") if info.callback else None
            if (info.name or callback_name) == name:
                return typer.main.get_command_from_info(
                    info,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    rich_markup_mode=app.rich_markup_mode,
                )
        for registered in app.registered_groups:  # a command group (`pos data list|get`)
            if registered.name == name:
                return typer.main.get_group_from_info(
                    registered,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    suggest_commands=True,
                    rich_markup_mode=app.rich_markup_mode,
                )
        return None
    plugin = _plugins().get(name)
    if plugin is None:
        if name in PLUGINS:
            extra = PLUGINS[name][0]
            typer.echo(
                f"pos: `{name}` needs the `{extra}` extra, which is not installed.\n"
                f'Install it with: pip install "pos-agent[{extra}]" '
                f"(in a clone: uv sync --extra {extra})",
                err=True,
            )
            sys.exit(2)
        return None
    try:
        sub = plugin.load()
    except ModuleNotFoundError as error:
        _missing_extra(error)
    group = typer.main.get_group(sub) if isinstance(sub, typer.Typer) else sub
    group.name = name
    return group


app = typer.Typer(
    cls=_LazyGroup,
    help="PoS: belief-state agents with Belief-Trapping detection and recovery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _root() -> None:
    """PoS: belief-state agents with Belief-Trapping detection and recovery."""


@app.command()
def version() -> None:
    """Print the installed PoS version."""
    from pos_agent import __version__

    typer.echo(__version__)
