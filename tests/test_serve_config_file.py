"""`pos serve --config FILE`: every option of the command from a YAML or TOML file, the command
line overriding it, and `--polling-tool` / `--exempt-tool` reaching the sessions' monitors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extras import skip_module_without

skip_module_without("starlette", "serve")

from typer.testing import CliRunner  # noqa: E402

import pos_agent.cli.serve  # noqa: E402,F401  (registers the command)
from pos_agent.cli.app import app  # noqa: E402


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The apps `pos serve` would have served (uvicorn is not started)."""
    import uvicorn

    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: apps.append((app, kwargs)))
    return apps


def _serve(*args: str) -> Any:
    return CliRunner().invoke(app, ["serve", *args], env={"COLUMNS": "200", "NO_COLOR": "1"})


TOML = """
upstream = "http://127.0.0.1:9/v1"
policy = "block"
port = 9123
max-sessions = 7
trace = false
polling_tools = { job_status = 12, ci = 30 }
exempt_tools = ["plan"]
"""

YAML = """
upstream: http://127.0.0.1:9/v1
policy: nudge
polling_tools: [job_status=12, wait_for_deploy]
exempt_tools: [plan, remember]
"""


def test_a_toml_file_sets_the_options(tmp_path: Path, served: list[Any]) -> None:
    config = tmp_path / "pos-serve.toml"
    config.write_text(TOML)
    done = _serve("--config", str(config))
    assert done.exit_code == 0, done.output
    (served_app, kwargs) = served[0]
    proxy = served_app.state.proxy
    assert proxy.config.policy == "block" and proxy.config.max_sessions == 7
    assert proxy.config.trace_dir is None and kwargs["port"] == 9123
    assert proxy.config.polling_tools == {"job_status": 12, "ci": 30}
    assert proxy.config.exempt_tools == ("plan",)
    # A session's monitor gets them.
    monitor = proxy.config.new_monitor("deploy")
    assert monitor.polling_tools == {"job_status": 12, "ci": 30}
    assert monitor.exempt_tools == frozenset({"plan"})


def test_a_yaml_file_and_the_command_line_over_it(tmp_path: Path, served: list[Any]) -> None:
    config = tmp_path / "pos-serve.yaml"
    config.write_text(YAML)
    done = _serve(
        "--config", str(config), "--no-trace", "--policy", "observe", "--polling-tool", "ci=3"
    )
    assert done.exit_code == 0, done.output
    proxy = served[0][0].state.proxy
    assert proxy.config.policy == "observe"  # the command line wins, option by option
    assert proxy.config.polling_tools == {"ci": 3}
    assert proxy.config.exempt_tools == ("plan", "remember")  # from the file
    done = _serve("--config", str(config), "--no-trace")
    assert served[1][0].state.proxy.config.polling_tools == {
        "job_status": 12,
        "wait_for_deploy": 10,
    }


def test_repeatable_options_on_the_command_line(served: list[Any]) -> None:
    done = _serve(
        "--upstream",
        "http://127.0.0.1:9/v1",
        "--no-trace",
        "--polling-tool",
        "job_status=5",
        "--polling-tool",
        "ci",
        "--exempt-tool",
        "plan",
        "--exempt-tool",
        "memo",
    )
    assert done.exit_code == 0, done.output
    config = served[0][0].state.proxy.config
    assert config.polling_tools == {"job_status": 5, "ci": 10}
    assert config.exempt_tools == ("plan", "memo")
    assert "polling job_status=5, ci=10" in done.output and "exempt plan, memo" in done.output


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        ("bogus = 1\n", ".toml", "unknown option 'bogus'"),
        ("policy = [\n", ".toml", "not valid TOML"),
        ("polling_tools: {job_status: 0}\n", ".yaml", "whole number >= 1"),
        ("- just\n- a list\n", ".yml", "a table of options"),
    ],
)
def test_a_bad_file_is_refused_with_a_message(
    tmp_path: Path, served: list[Any], text: str, suffix: str, message: str
) -> None:
    config = tmp_path / f"bad{suffix}"
    config.write_text(text)
    done = _serve("--config", str(config), "--upstream", "http://127.0.0.1:9/v1")
    assert done.exit_code == 2 and message in " ".join(done.output.split()), done.output
    assert not served


def test_a_bad_polling_word_is_refused(served: list[Any]) -> None:
    done = _serve("--upstream", "http://127.0.0.1:9/v1", "--polling-tool", "job=many")
    assert done.exit_code == 2 and "whole number" in done.output
    assert not served
