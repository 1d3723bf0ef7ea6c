"""`--health paper|improved`: from the case spec and the CLI to the PoS agent and the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_fixtures import Script
from pos_agent.agents.pos import trapping as pos_module
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.health import HealthConfig, HealthReport, WindowStep, assess_window


@pytest.mark.parametrize("health", ["paper", "improved"])
def test_the_case_setting_reaches_the_agent_and_is_recorded(
    health: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used: list[str] = []

    def recording(steps: list[WindowStep], config: HealthConfig) -> HealthReport:
        used.append(config.diagnosis)
        return assess_window(steps, config)

    monkeypatch.setattr(pos_module, "assess_window", recording)
    spec = CaseSpec(env="toy", task="heat-mug", agent="pos", max_steps=9, health=health)
    result = run_case(spec, tmp_path, run_name="h", load=lambda _s, _r: Script().model())
    assert result.extra["health"] == health
    assert used and set(used) == {health}


def test_an_unknown_health_mode_ends_the_case_with_a_clear_error(tmp_path: Path) -> None:
    spec = CaseSpec(env="toy", task="heat-mug", agent="pos", max_steps=2, health="smart")
    result = run_case(spec, tmp_path, run_name="h", load=lambda _s, _r: Script().model())
    assert result.status == "config_error" and "unknown health 'smart'" in (result.error or "")


def test_baselines_record_no_health_mode(tmp_path: Path) -> None:
    spec = CaseSpec(env="toy", task="heat-mug", agent="expert", health="improved")
    result = run_case(spec, tmp_path, run_name="h")
    assert "health" not in result.extra


@pytest.mark.parametrize("command", [["run", "toy", "heat-mug"], ["bench"]])
def test_the_cli_refuses_an_unknown_health_mode(command: list[str]) -> None:
    from pos_agent.cli import bench as _bench  # noqa: F401 (registers the commands)
    from pos_agent.cli import run as _run  # noqa: F401
    from pos_agent.cli.app import app

    result = CliRunner().invoke(app, [*command, "--health", "smart"])
    assert result.exit_code != 0
    assert "smart" in result.output and "paper" in result.output and "improved" in result.output


def test_the_cli_help_explains_the_choice() -> None:
    from pos_agent.cli import run as _run  # noqa: F401
    from pos_agent.cli.app import app

    result = CliRunner().invoke(app, ["run", "--help"], terminal_width=200)
    assert "--health" in result.output and "improved" in result.output


def test_pos_run_records_the_mode_in_the_result(tmp_path: Path, monkeypatch: Any) -> None:
    from pos_agent.bench import case as case_module
    from pos_agent.cli.app import app

    monkeypatch.setattr(
        case_module, "default_loader", lambda options: lambda s, r: Script().model()
    )
    result = CliRunner().invoke(
        app,
        [
            "run",
            "toy",
            "heat-mug",
            "--health",
            "improved",
            "--max-steps",
            "2",
            "--out",
            str(tmp_path),
            "--run",
            "r",
        ],
    )
    assert result.exit_code == 0, result.output
    recorded = (tmp_path / "r" / "pos__toy__heat-mug" / "result.json").read_text()
    assert '"health": "improved"' in recorded
