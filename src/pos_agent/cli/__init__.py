"""The `pos` command line: one module per command group, all registered on `app`."""

from __future__ import annotations

from pos_agent.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    # Importing a command module registers its commands on `app`.
    import importlib

    for module in ("doctor", "envs", "run", "bench", "report"):
        try:
            importlib.import_module(f"pos_agent.cli.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"pos_agent.cli.{module}":
                raise
    app()
