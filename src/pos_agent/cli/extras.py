"""Which extra installs each third-party module the commands import, and what `pos` says when
one is missing (no third-party import here: this runs when the CLI extra itself is absent)."""

from __future__ import annotations

# Third-party modules the commands import, and the extra that installs each.
EXTRA_OF = {
    "typer": "cli",
    "rich": "cli",
    "yaml": "cli",
    "click": "cli",
    "numpy": "bench",
    "matplotlib": "plots",
    "httpx": "openai",
    "starlette": "serve",
    "uvicorn": "serve",
}


def missing_extra_message(module: str) -> str:
    """What `pos` prints when `module` (a third-party package) is not installed."""
    extra = EXTRA_OF.get(module, "harness")
    line = f'pip install "pos-agent[{extra}]"'
    if extra != "harness":
        line += ' (or "pos-agent[harness]" for every command)'
    return (
        f"pos: the command line needs the `{extra}` extra ({module} is not installed).\n"
        f"Install it with: {line}\n"
        "The core (the monitor, the belief engine, the sentinel rules) needs no extra: "
        "import pos_agent.monitor."
    )
