"""A short real episode: the `pos run` command, the embedded SmolLM2 model, alfworld-mini."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pos_agent.trace import read_events, read_result

POS = str(Path(sys.executable).parent / "pos")


@pytest.mark.slow
def test_pos_run_with_the_embedded_model_end_to_end(tmp_path: Path) -> None:
    command = [
        POS,
        "run",
        "alfworld-mini",
        "heat-mug",
        "--agent",
        "pos",
        "--model",
        "local",
        "--max-steps",
        "3",
        "--out",
        str(tmp_path),
        "--run",
        "e2e",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    case = tmp_path / "e2e" / "pos__alfworld-mini__heat-mug"
    assert "result.json" in done.stdout and str(case) in done.stdout
    result = read_result(case)
    assert result is not None and result.status in ("success", "failure")
    assert result.steps == 3 or result.success
    assert result.models == {"policy": "local", "belief": "local", "sentinel": "local"}
    assert (
        result.tokens["policy"].calls >= result.steps and result.tokens["belief"].prompt_tokens > 0
    )
    events = list(read_events(case))
    kinds = {e["event"] for e in events}
    assert {
        "episode_start",
        "model_call",
        "action",
        "observation",
        "belief_init",
        "belief_patch",
        "sentinel",
        "progress",
        "episode_end",
    } <= kinds
    roles = {e["role"] for e in events if e["event"] == "model_call"}
    assert {"policy", "belief"} <= roles
    actions = [e["action"] for e in events if e["event"] == "action"]
    assert len(actions) == result.steps and all(actions)
    json.dumps(result.final_belief)  # the final belief is stored and serializable
