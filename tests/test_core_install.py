"""`pip install pos-agent` with no extra: the wheel alone in an empty venv gives the monitor, the
belief engine, the sentinel rules and the belief updater's prompts and schemas, with pydantic as
the only dependency; and `pos` says which extra to install instead of a traceback.

Slow: it builds the wheel and a venv with uv (from uv's cache, else from PyPI).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What pydantic brings; anything else in the venv is a dependency the core must not have.
ALLOWED = {
    "pos-agent",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-extensions",
    "typing-inspection",
}
HARNESS = ("typer", "rich", "numpy", "matplotlib", "httpx", "yaml", "llama_cpp", "starlette")

SCRIPT = (
    f"HARNESS = {list(HARNESS)!r}\n"
    + r"""
import importlib.util, json, time

start = time.perf_counter()
from pos_agent.belief import PATCH_OPS, Belief, apply_patch
from pos_agent.monitor import ToolCall, TrapMonitor
from pos_agent.sentinel import check_rules
from pos_agent import updater
import pos_agent.errors, pos_agent.events, pos_agent.health, pos_agent.kinds, pos_agent.recovery
imported = time.perf_counter() - start

monitor = TrapMonitor(goal="read the settings in a.yaml")
reports = [
    monitor.observe(ToolCall("read_file", {"path": "a.yaml"}), "error: a.yaml not found")
    for _ in range(8)
]
onset = next(r for r in reports if r.onset)

observations = {1: "You open the microwave 1. The microwave 1 is closed."}
belief, rejected = apply_patch(
    Belief(goal="heat the mug", step=1),
    [
        {"op": "upsert_entity", "name": "microwave 1"},
        {"op": "upsert_state", "entity": "microwave 1", "attribute": "door", "value": "open",
         "evidence": [1], "quote": "The microwave 1 is closed."},
    ],
)
findings = check_rules(belief, observations)
messages = updater.update_messages(belief, 2, "open microwave 1", "The microwave 1 is open.")
schema = updater.patch_json_schema()

print(json.dumps({
    "imported_s": imported,
    "onset_step": onset.step,
    "pattern": onset.pattern,
    "advice": onset.advice.kind,
    "rejected": len(rejected),
    "rules": sorted({f.rule for f in findings}),
    "ops": list(PATCH_OPS),
    "prompt_roles": [m.role for m in messages],
    "prompt_has_belief": "microwave 1" in messages[-1].content,
    "schema_ops": sorted(schema["$defs"].keys()),
    "absent": {m: importlib.util.find_spec(m) is None for m in HARNESS},
}))
"""
)


def _uv() -> str:
    found = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    if not Path(found).exists():
        pytest.skip("needs uv (pip install uv) to build the wheel and the venv")
    return found


def _uv_run(uv: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """uv from its cache first (no network); from the registry only when the cache lacks it."""
    done = subprocess.run(
        [uv, *args, "--offline"], capture_output=True, text=True, timeout=600, env=env
    )
    if done.returncode != 0:
        done = subprocess.run([uv, *args], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_the_core_installs_alone_and_runs_the_monitor_and_the_belief_engine(
    tmp_path: Path,
) -> None:
    uv = _uv()
    # A clean environment: no PYTHONPATH (it would put this checkout's sources first), no venv.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("UV_PROJECT_ENVIRONMENT", None)
    dist = tmp_path / "dist"
    _uv_run(uv, "build", "--wheel", "--out-dir", str(dist), str(ROOT), env=env)
    (wheel,) = dist.glob("pos_agent-*.whl")
    # The library and its CLI alone: the benchmark scripts (benchmarks/) and the trap benchmark
    # (the pos-trapbench package) stay out of the core wheel.
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert tops == {"pos_agent", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    venv = tmp_path / "venv"
    _uv_run(uv, "venv", str(venv), "--python", sys.executable, env=env)
    python = venv / "bin" / "python"
    _uv_run(uv, "pip", "install", "--python", str(python), str(wheel), env=env)

    listed = _uv_run(uv, "pip", "list", "--python", str(python), "--format", "json", env=env)
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    assert "pos-agent" in installed and "pydantic" in installed
    assert installed <= ALLOWED, sorted(installed - ALLOWED)

    run = subprocess.run(
        [str(python), "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert result["pattern"] == "static" and result["advice"] == "inject"
    assert result["onset_step"] <= 6
    assert result["rejected"] == 0 and "contradicts_observation" in result["rules"]
    assert len(result["ops"]) == 8
    assert result["prompt_roles"] == ["system", "user"] and result["prompt_has_belief"]
    assert {"AddGap", "UpsertState"} <= set(result["schema_ops"])
    assert all(result["absent"].values()), result["absent"]

    pos = subprocess.run(
        [str(venv / "bin" / "pos"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert pos.returncode == 2
    assert 'pip install "pos-agent[cli]"' in pos.stderr and "pos-agent[harness]" in pos.stderr
    assert "Traceback" not in pos.stderr + pos.stdout
