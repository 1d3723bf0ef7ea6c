"""The code examples of the README and the docs run as printed, so that they cannot drift from
the API: every Python block marked `<!-- name -->` runs (the marked blocks of one page share one
namespace, in page order) and prints what the page says; the README's `pos` command lines use
only options the commands have."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from extras import installed, needs_cli
from pos_agent.belief import PATCH_OPS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKED = re.compile(r"<!-- ([\w-]+) -->\s*```python\n(.*?)```", re.DOTALL)

# Blocks that need a running server or a model; each has its own test (below, and the clients of
# docs/serve.md in test_serve_docs.py).
SPECIAL = {
    "serve-example",
    "serve-chat",
    "serve-responses",
    "serve-messages",
    "serve-smolagents",
    "serve-openai-agents",
    "serve-langchain",
    "serve-litellm",
}

# What each marked block prints, where it prints something.
PRINTS = {
    "monitor-example": ["5 cycle ('go to the kitchen',)"],
    "monitor-tools-example": [
        "3 inject",
        *(f"{attempt} block True" for attempt in range(6, 11)),
        "11 stop",
    ],
    "backend-register": ["parrot: hello"],
    "own-agent-example": ["['contradicts_observation']"],
    "own-agent-updater": ["[] []"],
    "own-agent-health": ["True static achievement"],
    "health-example": ["0.0 True static achievement"],
    "recovery-example": [
        "RECOVERY (belief health 0.00; trapped: static, achievement gap blocked)",
        '- Your recent actions changed nothing. Do not repeat "go to cabinet 1" in this '
        "unchanged state.",
        '- Your next actions must produce a goal-relevant state change for g1 "heat the mug".',
        "- Keep working on the active gap g1 until it is resolved.",
        "Relevant entities: e1 mug 1, e2 microwave 1",
        "Recent steps without progress:",
        "- step 6: go to cabinet 1 -> Nothing happens.",
        "- step 7: go to cabinet 1 -> Nothing happens.",
    ],
}


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _blocks(page: Path) -> list[tuple[str, str]]:
    return MARKED.findall(page.read_text(encoding="utf-8"))


def _block(page: Path, marker: str) -> str:
    found = [code for name, code in _blocks(page) if name == marker]
    assert found, f"{page.name} has no {marker} block"
    return found[0]


def _run(code: str, name: str, namespace: dict[str, Any]) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), namespace)
    return out.getvalue().splitlines()


_RUNNER = """
import json, sys
namespace = {}
for name, code in json.load(sys.stdin):
    print("\\x00" + name, flush=True)
    exec(compile(code, name, "exec"), namespace)
"""


def _run_page(page: Path, blocks: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Run a page's blocks in order in one fresh interpreter (an example may register a backend
    or set a global; it must not leak into the tests); what each block printed."""
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(blocks),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"{page.name}: {done.stderr}"
    printed: dict[str, list[str]] = {}
    name = ""
    for line in done.stdout.splitlines():
        if line.startswith("\x00"):
            name = line[1:]
            printed[name] = []
        else:
            printed[name].append(line)
    assert list(printed) == [n for n, _ in blocks], done.stdout
    return printed


def _marked_pages() -> list[Path]:
    return [page for page in _pages() if any(n not in SPECIAL for n, _ in _blocks(page))]


@pytest.mark.parametrize("page", _marked_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_marked_example_runs_and_prints_what_the_page_says(page: Path) -> None:
    blocks = [(name, code) for name, code in _blocks(page) if name not in SPECIAL]
    for name, printed in _run_page(page, blocks).items():
        assert printed == PRINTS.get(name, []), name


def test_the_examples_live_where_the_readme_and_docs_promise() -> None:
    readme = [name for name, _ in _blocks(README)]
    assert readme[:2] == ["monitor-example", "serve-example"]
    assert all(f"```python\n{code}" in README.read_text() for _, code in _blocks(README))
    # Every Python block of the README is a marked, tested one.
    assert README.read_text(encoding="utf-8").count("```python") == len(readme)
    library = [name for name, _ in _blocks(DOCS / "library.md")]
    assert library == ["own-agent-example", "own-agent-updater", "own-agent-health"]
    code = _block(DOCS / "library.md", "own-agent-example")
    assert all(f'"op": "{op}"' in code for op in PATCH_OPS)
    assert _block(README, "monitor-example") == _block(DOCS / "monitor.md", "monitor-example")


@pytest.mark.skipif(
    not (installed("openai") and installed("starlette") and installed("uvicorn")),
    reason="needs the `serve` and `openai-agents` extras (starlette, uvicorn, openai)",
)
def test_the_readme_serve_example_reads_the_verdict_from_a_real_proxy() -> None:
    from test_serve_fakes import (
        KEY,
        NUDGE_MARK,
        READ_TOOL,
        Upstream,
        history_text,
        loops_until,
        serving,
    )

    code = _block(README, "serve-example")
    assert "http://127.0.0.1:8765/v1" in code
    # An agent that has read the same file three times, with the same output each time.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Find out why app.py exits with status 1."}
    ]
    for turn in range(3):
        history += [
            {"role": "assistant", "content": None, "tool_calls": [_read_call(turn)]},
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": "def main(): exit(1)"},
        ]
    upstream = Upstream(loops_until(NUDGE_MARK))
    with serving(upstream, policy="nudge") as (url, _):
        namespace = {"API_KEY": KEY, "MODEL": "fake", "history": history, "tools": [READ_TOOL]}
        printed = _run(code.replace("http://127.0.0.1:8765/v1", url), "README serve", namespace)
    # The verdict in the headers, and the note that reached the model and ended its loop.
    assert printed == ["true static inject"]
    assert NUDGE_MARK in history_text(upstream.bodies[-1]["messages"])
    answer = namespace["reply"].choices[0].message  # type: ignore[attr-defined]
    assert answer.content == "I will stop repeating myself. Done." and not answer.tool_calls


def _read_call(index: int) -> dict[str, Any]:
    return {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "app.py"}'},
    }


# -- the command lines ----------------------------------------------------------------------------

POS = re.compile(r"(?:^|\s)(?:\.venv/bin/)?pos\s+(.*)$")


def _command_lines(page: Path) -> list[list[str]]:
    """The `pos ...` command lines of a page's bash blocks, continuation lines joined."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            command = line.split("  #")[0].split(" # ")[0].split("&&")[0].rstrip(" &")
            match = POS.search(command)
            if match:
                lines.append(shlex.split(match.group(1)))
    return lines


def _help(words: list[str]) -> str:
    from typer.testing import CliRunner

    from pos_agent.cli.app import app

    done = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert done.exit_code == 0, f"pos {' '.join(words)} --help: {done.output}"
    return done.output


def _options(words: list[str]) -> set[str]:
    """The options a command line uses (`[--recovery soft|hard|both]` is `--recovery`)."""
    options = set()
    for word in words:
        word = word.strip("[]")
        if word.startswith("--"):
            options.add(re.split(r"[=|\]]", word)[0])
    return options


def _command(words: list[str]) -> tuple[str, ...]:
    """The command a line runs: its first word, and the subcommands of any group under it
    (`trapbench real build`, `data get`)."""
    from pos_agent.cli.app import load_command

    command = load_command(words[0])
    path = [words[0]]
    for word in words[1:]:
        subcommands = getattr(command, "commands", None)
        if not subcommands or word not in subcommands:
            break
        command = subcommands[word]
        path.append(word)
    return tuple(path)


@needs_cli
def test_the_command_lines_of_the_readme_and_docs_use_options_the_commands_have() -> None:
    readme = _command_lines(README)
    assert {words[0] for words in readme} >= {"serve", "doctor", "bench", "report", "view"}
    helps: dict[tuple[str, ...], str] = {}
    checked = 0
    for page in _pages():
        for words in _command_lines(page):
            command = _command(words)
            text = helps.setdefault(command, _help(list(command)))
            for option in _options(words):
                assert option in text, f"{page.name}: pos {' '.join(command)} has no {option}"
                checked += 1
    assert checked > 100
