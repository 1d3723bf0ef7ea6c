"""The `pos` command line: one module per command group, all registered on `app`."""

from __future__ import annotations

from pos_agent.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    # Importing a command module registers its commands on `app`; done here, not at package
    # import, so that `import pos_agent.cli.app` stays cheap for tests.
    from pos_agent.cli import bench, doctor, envs, report, run, serve, trapbench  # noqa: F401

    app()
