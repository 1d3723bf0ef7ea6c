"""`pos` loads each command only when it runs: `pos --help` lists them all without importing
their modules, and a command whose extra is missing names that extra when it is run, while
the other commands still work."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pos_agent.cli.app import COMMANDS, load_command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_listed_help_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    assert command is not None
    own = " ".join((command.help or "").split("\n\n")[0].split())
    assert COMMANDS[name].help == own


def _pos(args: list[str], blocked: str | None = None) -> subprocess.CompletedProcess[str]:
    """`pos ARGS` in a fresh interpreter; `blocked` is a top-level module made unimportable, as
    if its extra were not installed. Prints the command modules loaded at exit."""
    script = (
        "import atexit, sys\n"
        + (f"sys.modules[{blocked!r}] = None\n" if blocked else "")
        + "atexit.register(lambda: print('LOADED', sorted(m for m in sys.modules "
        "if m.startswith('pos_agent.cli.') and m not in ('pos_agent.cli.app',))))\n"
        + f"sys.argv = ['pos', *{args!r}]\n"
        + "from pos_agent.cli import main\nmain()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )


def test_help_lists_every_command_and_imports_none() -> None:
    done = _pos(["--help"])
    assert done.returncode == 0, done.stderr
    for name in [*COMMANDS, "trapbench", "version"]:
        assert name in done.stdout
    loaded = done.stdout.rpartition("LOADED")[2]
    for module in {c.module for c in COMMANDS.values()}:
        assert module not in loaded


def test_a_command_loads_only_its_own_module() -> None:
    done = _pos(["envs", "--help"])
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.rpartition("LOADED")[2]
    assert "pos_agent.cli.envs" in loaded
    assert "pos_agent.cli.bench" not in loaded and "pos_agent.cli.serve" not in loaded


def test_a_missing_extra_is_named_when_its_command_runs_and_only_then() -> None:
    # Without numpy (the bench extra), `pos serve --help` still works ...
    serve = _pos(["serve", "--help"], blocked="numpy")
    assert serve.returncode == 0, serve.stderr
    assert "upstream" in serve.stdout.lower()
    # ... and `pos bench` says which extra to install, with no traceback.
    bench = _pos(["bench", "--help"], blocked="numpy")
    assert bench.returncode == 2
    assert 'pip install "pos-agent[bench]"' in bench.stderr
    assert "Traceback" not in bench.stderr


def test_an_unknown_command_is_refused() -> None:
    done = _pos(["no-such-command"])
    assert done.returncode == 2
    assert "No such command" in done.stderr


def test_a_plugin_that_is_not_installed_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    import pos_agent.cli.app as cli_app

    monkeypatch.setattr(cli_app, "_plugins", dict)
    result = CliRunner().invoke(cli_app.app, ["trapbench", "eval"])
    assert result.exit_code == 2
    assert 'pip install "pos-agent[trapbench]"' in result.output


def test_doctor_runs_with_the_cli_extra_alone() -> None:
    # `pos doctor` shares cli/common.py with `pos run`; PACE's scorer (numpy, the bench extra)
    # is imported only where it is used.
    done = _pos(["doctor", "--model", "scripted"], blocked="numpy")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "pos_agent.cli.doctor" in done.stdout.rpartition("LOADED")[2]
