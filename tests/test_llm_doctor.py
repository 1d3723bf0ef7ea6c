"""`pos doctor`: the checks one by one, and the command's exit code."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pos_agent.cli.doctor as doctor
from llm_fakes import Canned, FakeServer, chat, error, llama_cpp_refusal
from pos_agent.cli.app import app

# The fake server fixture, and forgetting what the process learnt about servers.
pytest_plugins = ["llm_fixtures"]


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


def test_doctor_says_which_structured_mode_a_server_got(server: FakeServer) -> None:
    server.queue(llama_cpp_refusal(), chat('{"status": "ok", "answer": 5}'))
    check = doctor.check_model("openai:smollm", server.base_url)
    assert check.status == "ok", check
    assert check.detail.endswith(
        "structured output: json_object_schema (response_format json_object with a schema)"
    )


def test_doctor_shows_a_full_json_schema_server_as_such(server: FakeServer) -> None:
    server.queue(chat('{"status": "ok", "answer": 5}'), chat('{"status": "ok", "answer": 5}'))
    result = runner.invoke(app, ["doctor", "-m", "openai:m", "--base-url", server.base_url])
    assert result.exit_code == 0, result.output
    check = doctor.check_model("openai:m", server.base_url)
    assert "structured output: json_schema (response_format json_schema)" in check.detail


def test_doctor_reports_a_rejected_key_with_the_variable_to_set(server: FakeServer) -> None:
    server.queue(error(401, "Incorrect API key provided"))
    check = doctor.check_model("openai:m", server.base_url)
    assert check.status == "fail" and "OPENAI_API_KEY" in check.detail
    assert "--api-key" not in check.detail + check.fix


def test_doctor_reports_a_page_that_is_not_a_chat_server(server: FakeServer) -> None:
    server.queue(Canned(200, "<html>It works!</html>", content_type="text/html"))
    result = runner.invoke(app, ["doctor", "-m", "openai:m", "--base-url", server.base_url])
    assert result.exit_code == 1
    server.queue(Canned(200, "<html>It works!</html>", content_type="text/html"))
    check = doctor.check_model("openai:m", server.base_url)
    assert check.status == "fail" and "not a chat completion" in check.detail


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
