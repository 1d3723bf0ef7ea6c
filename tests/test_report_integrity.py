"""Run integrity, third pass (issue 37), for what `pos report` and `--resume` read and write:
records that cannot be sound are listed and rerun, never counted; a full disk is one clear
line with nothing half-written; no report file keeps raw control bytes; run names print as
themselves; the overflow message names --context-window once."""

from __future__ import annotations

import errno
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pos_agent.bench.case import overflow_message
from pos_agent.bench.report import load_runs, write_report
from pos_agent.bench.run_folder import RunFolderError, check_run_name
from pos_agent.bench.runner import finished
from pos_agent.cli.app import app
from pos_agent.events import EpisodeEndEvent, EpisodeStartEvent
from pos_agent.llm import ModelFailure
from pos_agent.trace import (
    CaseResult,
    TraceWriter,
    record_problems,
    write_result,
)

ESC_TITLE = "\x1b]0;pwned\x07\x1b[2Jserver said no"


def result(name: str, **fields: Any) -> CaseResult:
    values: dict[str, Any] = {
        "run": "r",
        "case": name,
        "env": "toy",
        "task": name,
        "agent": "raw",
        "status": "success",
        "success": True,
        "steps": 3,
        "max_steps": 5,
        "settings_hash": "h",
    }
    values.update(fields)
    return CaseResult(**values)


def write_case(run: Path, name: str, trace_lines: list[str] | None = None, **fields: Any) -> Path:
    folder = run / name
    with TraceWriter(folder) as trace:
        trace.emit(EpisodeStartEvent(run="r"))
        trace.emit(EpisodeEndEvent(step=3, status=fields.get("status", "success")))
    if trace_lines is not None:
        lines = (folder / "events.jsonl").read_text(encoding="utf-8").splitlines()
        (folder / "events.jsonl").write_text(
            "\n".join([lines[0], *trace_lines, lines[1]]) + "\n", encoding="utf-8"
        )
    write_result(folder, result(name, **fields))
    return folder


def forge(folder: Path, **changes: Any) -> None:
    """Edit result.json by hand, past the model's validation (as a forger would)."""
    path = folder / "result.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


# -- 37.8 records are validated before they count -------------------------------------------------


def test_forged_and_impossible_records_are_listed_not_counted(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write_case(run, "good")
    forge(write_case(run, "forged"), version=99)
    forge(write_case(run, "negative"), steps=-4)
    write_case(run, "garbage", trace_lines=["this is not json", '{"event": "action"'])
    loaded = load_runs([run])
    assert [c.case for c in loaded.cases] == ["good"]
    problems = {i.path.name: " ".join(i.problems) for i in loaded.invalid}
    assert set(problems) == {"forged", "negative", "garbage"}
    assert "unknown result version 99" in problems["forged"]
    assert "steps -4" in problems["negative"]
    assert "2 line(s)" in problems["garbage"]
    written = write_report([run], tmp_path / "out", plots=False)
    assert "Cases read: 1" in written.markdown
    assert "not a sound record" in written.markdown and "forged" in written.markdown


def test_resume_reruns_a_record_that_is_not_sound(tmp_path: Path) -> None:
    good = write_case(tmp_path, "good")
    bad = write_case(tmp_path, "garbage", trace_lines=["garbage"])
    negative = write_case(tmp_path, "negative")
    forge(negative, steps=-1)
    for folder, keep in ((good, True), (bad, False), (negative, False)):
        loaded = CaseResult.model_validate_json((folder / "result.json").read_text())
        assert finished(loaded, folder, "h") is keep, folder.name
        assert bool(record_problems(folder, loaded)) is not keep


# -- 37.9 a full disk: one line, nothing half-written ---------------------------------------------


class FullDisk:
    """A file whose every write fails as on a full disk."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()

    def write(self, _text: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)


def test_a_full_disk_is_one_clear_line_and_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "r"
    write_case(run, "good")
    out = tmp_path / "out"
    real_open = io.open

    def full_disk_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        where = os.readlink(f"/proc/self/fd/{file}") if isinstance(file, int) else str(file)
        if "w" in mode and where.startswith(str(out)):
            return FullDisk(handle)
        return handle

    monkeypatch.setattr(io, "open", full_disk_open)
    done = CliRunner().invoke(app, ["report", str(run), "--out", str(out), "--no-plots"])
    monkeypatch.undo()
    assert done.exit_code == 1, done.output
    assert isinstance(done.exception, SystemExit), "a clean exit, not a traceback"
    assert "No space left on device" in done.output and "nothing half-written" in done.output
    assert out.is_dir() and list(out.iterdir()) == [], "no 0-byte or temporary file is left"


# -- 37.10 report files escape control bytes -------------------------------------------------------


def test_report_files_escape_control_bytes(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write_case(run, "broken", status="infra_error", success=False, error=ESC_TITLE)
    write_case(run, "good")
    out = tmp_path / "out"
    write_report([run], out, plots=False)
    for path in out.iterdir():
        text = path.read_text(encoding="utf-8")
        assert "\x1b" not in text and "\x07" not in text, path.name
    assert "\\x1b]0;pwned" in (out / "problems.csv").read_text(encoding="utf-8")


# -- 37.11 run names and the overflow message ------------------------------------------------------


@pytest.mark.parametrize("name", ["two\nlines", "bell\x07", "esc\x1b[2J", "tab\there", " pad"])
def test_run_names_must_print_as_themselves(tmp_path: Path, name: str) -> None:
    with pytest.raises(RunFolderError, match="run name"):
        check_run_name(name)
    done = CliRunner().invoke(
        app, ["run", "toy", "heat-mug", "--agent", "expert", "--out", str(tmp_path), "--run", name]
    )
    assert done.exit_code == 2, done.output
    assert list(tmp_path.iterdir()) == []


def test_ordinary_run_names_pass() -> None:
    for name in ("alfworld-test", "sweep_2.shard1of4", "run with spaces"):
        assert check_run_name(name) == name


@pytest.mark.parametrize(
    "message",
    [
        "HTTP 400: maximum context length is 8192 tokens",
        "the conversation is longer than the model's context window; resending it cannot help "
        "(--context-window TOKENS makes every history-based method cut its history to fit)",
    ],
)
def test_the_overflow_message_names_the_option_once(message: str) -> None:
    text = overflow_message(ModelFailure("context_overflow", message))
    assert text.count("--context-window") == 1
