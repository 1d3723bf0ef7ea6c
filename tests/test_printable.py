"""Text from outside never drives the terminal (issue 23, item 8): one sanitiser escapes rich
markup and neutralises control bytes (ESC/CSI/OSC, other C0 and C1, bidi overrides) in retry
warnings, `error:` lines and everything else the CLI prints from servers, models and files."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import pos_agent.cli.run  # noqa: F401  (registers `pos run`)
from fake_openai import Behaviour, fake_openai
from pos_agent.cli.app import app
from pos_agent.cli.common import console, shown
from pos_agent.llm import Message, ModelFailure, ModelOptions, load_model, printable

pytest_plugins = ["llm_fixtures"]

# A window-title OSC, a screen clear, a red CSI, a bell, a carriage return that would overwrite
# the line, a C1 CSI, a right-to-left override and rich markup.
HOSTILE = "ok\x1b]0;pwned\x07\x1b[2J\x1b[31mred\rover\x9b1m\u202eevil[bold]x[/bold]"
CONTROL = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]


def test_printable_shows_every_control_character_as_an_escape() -> None:
    cleaned = printable(HOSTILE)
    assert not any(char in cleaned for char in CONTROL), repr(cleaned)
    assert "\u202e" not in cleaned
    assert "\\x1b]0;pwned\\x07" in cleaned and "\\r" in cleaned and "\\u202e" in cleaned
    assert "[bold]x[/bold]" in cleaned, "markup is the CLI's to escape, text is kept"


def test_printable_keeps_newlines_tabs_and_ordinary_unicode() -> None:
    text = "line one\n\tindented: café, 诊断, ✓"
    assert printable(text) == text


def test_shown_escapes_markup_and_neutralises_control_bytes() -> None:
    with console.capture() as captured:
        console.print(f"[red]error:[/] {shown(HOSTILE)}")
    text = captured.get()
    assert "\x1b]" not in text and "\x07" not in text and "\r" not in text
    assert "[bold]x[/bold]" in text, "markup printed literally"
    assert "\\x1b[2J" in text


def test_retry_warnings_carry_no_raw_control_bytes(caplog: pytest.LogCaptureFixture) -> None:
    with fake_openai(Behaviour(status=503, message=HOSTILE)) as (url, _):
        model = load_model(
            "openai:m", ModelOptions(base_url=url, max_retries=1), sleep=lambda _s: None
        )
        with caplog.at_level(logging.WARNING), pytest.raises(ModelFailure):
            model.complete([Message("user", "hi")])
    warnings = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert warnings, "the retry was announced"
    for line in warnings:
        assert not any(char in line for char in CONTROL), repr(line)
        assert "\\x1b]0;pwned" in line, "the text is still there, made visible"


def test_error_lines_of_pos_run_carry_no_raw_control_bytes(tmp_path: Path) -> None:
    with fake_openai(Behaviour(status=401, message=HOSTILE)) as (url, _):
        done: Any = CliRunner().invoke(
            app,
            ["run", "alfworld-mini", "heat-mug", "--agent", "raw", "--model", "openai:m",
             "--base-url", url, "--max-retries", "0", "--out", str(tmp_path), "--run", "r",
             "--max-steps", "2"],
        )  # fmt: skip
    assert done.exit_code == 2, done.output  # the key is checked before the case starts
    assert "error:" in done.output
    assert not any(char in done.output for char in CONTROL), repr(done.output)
    assert "\\x1b]0;pwned" in done.output and "[bold]x[/bold]" in done.output
