"""`pos doctor`: the checks one by one, and the command's exit code."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pos_agent.cli.doctor as doctor
from pos_agent.cli.app import app

runner = CliRunner()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_alfworld_data_check(tmp_path: Path) -> None:
    missing = doctor.check_alfworld_data({"ALFWORLD_DATA": str(tmp_path / "none")})
    assert missing.status == "warn" and "alfworld-download" in missing.fix
    (tmp_path / "empty").mkdir()
    assert doctor.check_alfworld_data({"ALFWORLD_DATA": str(tmp_path / "empty")}).status == "warn"
    (tmp_path / "data" / "json_2.1.1").mkdir(parents=True)
    found = doctor.check_alfworld_data({"ALFWORLD_DATA": str(tmp_path / "data")})
    assert found.status == "ok" and found.detail == str(tmp_path / "data")
    assert doctor.alfworld_data_dir({}) == Path.home() / ".cache" / "alfworld"


def test_java_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    check = doctor.check_java()
    assert check.status == "warn" and "default-jre-headless" in check.fix


def test_missing_package_is_a_warning_with_the_install_command() -> None:
    check = doctor.check_package("no_such_module_xyz", "no-such", "testing", "uv sync --extra x")
    assert check.status == "warn" and "uv sync --extra x" in check.fix
    assert doctor.check_package("pydantic", "pydantic", "schemas", "").status == "ok"


def test_doctor_passes_with_the_scripted_model() -> None:
    result = runner.invoke(app, ["doctor", "--model", "scripted"])
    assert result.exit_code == 0, result.output
    assert "model scripted" in result.output and "schema-valid" in result.output


def test_doctor_fails_and_says_what_to_do_when_the_server_is_down() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = runner.invoke(app, ["doctor", "--model", "openai:any", "--base-url", url])
    assert result.exit_code == 1
    assert "fail" in result.output and "server is running" in result.output


def test_doctor_fails_on_an_unknown_spec() -> None:
    result = runner.invoke(app, ["doctor", "--model", "nonsense"])
    assert result.exit_code == 1 and "gguf:PATH" in result.output


def test_every_model_must_answer() -> None:
    result = runner.invoke(app, ["doctor", "-m", "scripted", "-m", "nonsense"])
    assert result.exit_code == 1


@pytest.mark.slow
def test_doctor_with_the_embedded_model_exits_zero() -> None:
    result = runner.invoke(app, ["doctor", "--model", "local"])
    assert result.exit_code == 0, result.output
    assert "model local" in result.output
