"""The `pos` command line: one module per command group, all registered on the Typer app
`pos_agent.cli.app.app` (import it from there: `pos_agent.cli.app` is also the module's name, so
`from pos_agent.cli import app` would give the module once it has been imported).

The command line is an extra: `pip install "pos-agent[harness]"` (or `[cli]` for the commands
alone). Without it, `pos` says which extra to install instead of printing a traceback.
"""

from __future__ import annotations

import sys

__all__ = ["main", "missing_extra_message"]

from pos_agent.cli.extras import missing_extra_message


def main() -> None:
    """Console-script entry point."""
    try:
        # Commands load lazily (see `pos_agent.cli.app`): a command's module, and the extra it
        # needs, is imported only when that command runs.
        from pos_agent.cli.app import app
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if not missing or missing == "pos_agent":
            raise
        print(missing_extra_message(missing), file=sys.stderr)
        raise SystemExit(2) from None
    app()
