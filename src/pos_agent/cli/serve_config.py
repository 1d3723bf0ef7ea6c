"""`pos serve`'s polling and exempt tools, and `--config FILE`: the options of `pos serve` from a
YAML or TOML file, each one a default that the command line overrides.

    # pos-serve.toml
    upstream = "http://127.0.0.1:8080/v1"
    policy = "block"
    polling_tools = { job_status = 12, wait_for_deploy = 30 }
    exempt_tools = ["plan"]

Keys are the options' names (`max-sessions` or `max_sessions`); `polling_tools` and
`exempt_tools` (or `polling_tool` / `exempt_tool`) are the repeatable `--polling-tool NAME[=N]`
and `--exempt-tool NAME`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pos_agent.adapters.options import (
    exempt_option,
    polling_option,
    polling_tools,
    read_config_file,
)

__all__ = ["ConfigOption", "ExemptOption", "PollingOption", "load_config", "polling_table"]

# File keys that name a repeatable option by its plural.
ALIASES = {"polling_tools": "polling_tool", "exempt_tools": "exempt_tool"}


def load_config(ctx: typer.Context, value: Path | None) -> Path | None:
    """The `--config` callback (eager): the file's options become the command's defaults."""
    if value is None:
        return value
    try:
        data = read_config_file(value)
        defaults = _defaults(ctx, data)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--config") from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def _defaults(ctx: typer.Context, data: dict[str, Any]) -> dict[str, Any]:
    known = {p.name for p in ctx.command.params if p.name and p.name != "config_file"}
    defaults: dict[str, Any] = {}
    for key, value in data.items():
        name = ALIASES.get(key, key)
        if name not in known:
            raise ValueError(f"unknown option {key!r} (known: {', '.join(sorted(known))})")
        if name == "polling_tool":
            value = [f"{tool}={n}" for tool, n in polling_tools(value).items()]
        elif name == "exempt_tool":
            value = exempt_option(value)
        defaults[name] = value
    return defaults


def polling_table(words: list[str] | None) -> dict[str, int]:
    """`--polling-tool` words as {name: N} (exit 2 on a bad one)."""
    try:
        return dict(polling_option(word) for word in words or ())
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--polling-tool") from None


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Read the options from a YAML or TOML file; the command line overrides them.",
        is_eager=True,
        callback=load_config,
    ),
]
PollingOption = Annotated[
    list[str] | None,
    typer.Option(
        "--polling-tool",
        help="A polling tool: NAME or NAME=N, N calls in a row are normal (default 10); repeatable.",
    ),
]
ExemptOption = Annotated[
    list[str] | None,
    typer.Option("--exempt-tool", help="A tool the monitor never judges; repeatable."),
]
