"""`pos doctor`: is this machine ready? Packages, Java, ALFWorld data, and a real model call."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import typer
from rich.console import Console
from rich.table import Table

from pos_agent.cli.app import app
from pos_agent.cli.common import shown
from pos_agent.envs import env_entries
from pos_agent.envs.alfworld import alfworld_data_dir
from pos_agent.llm import ModelOptions, StructuredMode, probe, wants_context_per_role
from pos_agent.llm.backend import MODE_NAMES

Status = Literal["ok", "warn", "fail"]
MIN_PYTHON = (3, 11)

# (module, distribution, what it is for, how to get it)
PACKAGES: tuple[tuple[str, str, str, str], ...] = (
    ("pydantic", "pydantic", "schemas", "uv sync --frozen"),
    ("llama_cpp", "llama-cpp-python", "the local model", "uv sync --frozen --extra local"),
    ("httpx", "httpx", "OpenAI-compatible servers", "uv sync --frozen --extra openai"),
)
JAVA_FIX = "apt-get install default-jre-headless (ScienceWorld and TextWorldExpress run on Java)"


@dataclass(frozen=True)
class Check:
    """One line of the report; `fix` says what to do when the status is not ok."""

    name: str
    status: Status
    detail: str
    fix: str = ""


def check_python() -> Check:
    version = platform.python_version()
    if sys.version_info[:2] >= MIN_PYTHON:
        return Check("python", "ok", version)
    return Check("python", "fail", version, "use Python 3.11 or newer")


def check_package(module: str, distribution: str, purpose: str, install: str) -> Check:
    name = f"package {module}"
    try:
        importlib.import_module(module)
    except Exception as exc:
        return Check(
            name,
            "warn",
            f"not importable ({type(exc).__name__}: {exc})",
            f"needed for {purpose}: {install}",
        )
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        version = "version unknown"
    return Check(name, "ok", version)


def check_environments() -> list[Check]:
    """One line per environment that needs an extra: ok when its packages import, else which
    extra installs them (the environments without an extra always run)."""
    checks = []
    for entry in env_entries():
        if entry.extra is None:
            continue
        name = f"env {entry.name}"
        problem = entry.unavailable()
        if problem is None:
            checks.append(Check(name, "ok", f"{', '.join(entry.modules)} installed"))
            continue
        missing = ", ".join(entry.missing_modules())
        checks.append(
            Check(
                name,
                "warn",
                f"needs the `{entry.extra}` extra ({missing} not installed)",
                f"uv sync --frozen --extra {entry.extra} (or pip install 'pos-agent[{entry.extra}]')",
            )
        )
    return checks


def check_java() -> Check:
    java = shutil.which("java")
    if java is None:
        return Check("java", "warn", "not on PATH", JAVA_FIX)
    try:
        run = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("java", "warn", f"{java} does not run: {exc}", JAVA_FIX)
    output = (run.stderr or run.stdout).strip()
    first_line = output.splitlines()[0] if output else ""
    if run.returncode != 0 or not first_line:
        return Check("java", "warn", f"{java} -version failed: {first_line}", JAVA_FIX)
    found = re.search(r'version "([^"]+)"', first_line)
    return Check("java", "ok", f"{found.group(1) if found else first_line} ({java})")


def check_alfworld_data(environ: Mapping[str, str] | None = None) -> Check:
    path = alfworld_data_dir(environ)
    fix = (
        "run `alfworld-download` (or set ALFWORLD_DATA to the data folder); "
        "alfworld-mini runs without it"
    )
    if not path.is_dir():
        return Check("ALFWorld data", "warn", f"{path} does not exist", fix)
    if not any(path.iterdir()):
        return Check("ALFWorld data", "warn", f"{path} is empty", fix)
    return Check("ALFWorld data", "ok", str(path))


def check_cpu() -> Check:
    """The CPU's relevant flags against what the installed llama.cpp was compiled to use."""
    from pos_agent.llm import (
        PORTABLE_BUILD_NEEDS,
        REBUILD,
        REPORTED_FLAGS,
        compiled_cpu_features,
        cpu_flags,
        cpu_model,
        llama_features,
        missing_cpu_features,
        uses_amx,
    )

    flags = cpu_flags()
    reported = ", ".join(f for f in REPORTED_FLAGS if flags and f in flags) or "unknown"
    detail = f"{cpu_model()}; flags: {reported}"
    features = llama_features()
    if features:
        detail += f"; llama.cpp built for: {', '.join(compiled_cpu_features(features)) or 'none'}"
        missing = missing_cpu_features(features, flags)
        if missing:
            return Check("cpu", "fail", detail, f"this CPU lacks {', '.join(missing)}: {REBUILD}")
        if uses_amx(features):
            detail += " (AMX build: the runtime keeps its extra buffer types off)"
    lacking = [f for f in PORTABLE_BUILD_NEEDS if flags is not None and f not in flags]
    if lacking:
        return Check(
            "cpu",
            "warn",
            detail,
            f"the embedded model's portable build needs {', '.join(PORTABLE_BUILD_NEEDS)}; "
            f"this CPU lacks {', '.join(lacking)}: use an API model (--model openai:...)",
        )
    return Check("cpu", "ok", detail)


def check_prompt_batch(spec: str = "local", timeout_s: float = 600.0) -> Check:
    """A multi-token prompt through the embedded model, in a child process.

    This is the path that crashed llama.cpp on AMX Xeons (SIGSEGV in the AMX matmul); a child
    process lets the doctor report a crash instead of dying of it.
    """
    name = f"prompt batch {spec}"
    command = [sys.executable, "-m", "pos_agent.llm._prompt_batch"]
    if spec.startswith("gguf:"):
        command.append(str(Path(spec.removeprefix("gguf:")).expanduser()))
    try:
        run = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return Check(name, "fail", f"no answer within {timeout_s:.0f}s", "run `pos doctor` again")
    if run.returncode < 0:
        signal_name = {-11: "SIGSEGV", -4: "SIGILL", -9: "SIGKILL"}.get(
            run.returncode, f"signal {-run.returncode}"
        )
        from pos_agent.llm import REBUILD

        return Check(name, "fail", f"llama.cpp crashed ({signal_name})", REBUILD)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return Check(name, "fail", last[:300], "see the message; `pos doctor --model local`")
    try:
        figures = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Check(name, "fail", f"unreadable probe output {run.stdout[-200:]!r}", "")
    return Check(
        name,
        "ok",
        f"a {figures['prompt_tokens']}-token prompt evaluated at {figures['tokens_per_s']} tok/s",
    )


def check_model(spec: str, base_url: str | None = None) -> Check:
    """One real structured call: ok only when the model answers a schema-valid object. The
    detail says how the output was held to the schema (for a server: the mode it accepted)."""
    name = f"model {spec}"
    outcome = probe(spec, ModelOptions(base_url=base_url))
    if outcome.failure is not None:
        failure = outcome.failure
        tried = f"; structured output: {_mode(failure.structured_mode)}"
        detail = str(failure) + (tried if failure.structured_mode else "")
        return Check(name, "fail", detail, outcome.advice)
    assert outcome.answer is not None
    answer = outcome.answer
    return Check(
        name,
        "ok",
        f"schema-valid answer {answer.text.strip()!r} in {answer.latency_s:.2f}s "
        f"({answer.usage.prompt_tokens} prompt + {answer.usage.completion_tokens} completion "
        f"tokens, {answer.repairs} repairs); structured output: {_mode(answer.structured_mode)}",
    )


def _mode(mode: StructuredMode | None) -> str:
    return f"{mode} ({MODE_NAMES[mode]})" if mode is not None else "none"


def run_checks(models: list[str], base_url: str | None) -> list[Check]:
    checks = [check_python()]
    checks += [check_package(*package) for package in PACKAGES]
    checks += check_environments()
    checks += [check_java(), check_alfworld_data()]
    local = [spec for spec in models if wants_context_per_role(spec)]
    llama_cpp_installed = importlib.util.find_spec("llama_cpp") is not None
    if local and llama_cpp_installed:
        checks.append(check_cpu())
    for spec in models:
        batch = check_prompt_batch(spec) if spec in local and llama_cpp_installed else None
        if batch is not None:
            checks.append(batch)
        if batch is not None and batch.status == "fail":
            # Calling it in-process would crash the doctor the same way.
            checks.append(Check(f"model {spec}", "fail", "not called: " + batch.detail, batch.fix))
        else:
            checks.append(check_model(spec, base_url))
    return checks


def render(checks: list[Check]) -> Table:
    table = Table(title="pos doctor", show_lines=False)
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    table.add_column("what to do", overflow="fold")
    style = {"ok": "green", "warn": "yellow", "fail": "bold red"}
    for check in checks:
        table.add_row(
            shown(check.name),
            f"[{style[check.status]}]{check.status}[/]",
            shown(check.detail),
            shown(check.fix) if check.status != "ok" else "",
        )
    return table


@app.command()
def doctor(
    model: list[str] = typer.Option(  # noqa: B008 - Typer declares options this way
        ["local"], "--model", "-m", help="Model spec to check with one real call; repeatable."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible server for openai:/dashscope: specs."
    ),
) -> None:
    """Check the set-up; exit code 0 only when every checked model answered a schema-valid object."""
    checks = run_checks(model, base_url)
    Console(width=max(shutil.get_terminal_size().columns, 120)).print(render(checks))
    model_checks = [c for c in checks if c.name.startswith("model ")]
    raise typer.Exit(0 if all(c.status == "ok" for c in model_checks) else 1)
