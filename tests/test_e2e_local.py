"""A short real episode: the `pos run` command, the embedded SmolLM2 model, alfworld-mini."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pos_agent.belief import Belief
from pos_agent.events import ActionEvent, BeliefInitEvent, ModelCallEvent
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
    kinds = {e.event for e in events}
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
    roles = {e.role for e in events if isinstance(e, ModelCallEvent)}
    assert {"policy", "belief"} <= roles
    actions = [e.action for e in events if isinstance(e, ActionEvent)]
    assert len(actions) == result.steps and all(actions)
    # The final belief is stored whole: it reads back as a belief about this task, with the
    # initial belief's records (engine ids) and at least one gap.
    assert result.final_belief is not None
    final = Belief.from_dict(json.loads(json.dumps(result.final_belief)))
    init = next(e for e in events if isinstance(e, BeliefInitEvent))
    assert final.goal == init.belief["goal"] and final.goal
    assert final.gaps and set(Belief.from_dict(init.belief).gaps) <= set(final.gaps)
    # The embedded model runs on the compact profile, and the result says so.
    assert {result.settings[r]["profile"] for r in ("policy", "belief", "sentinel")} == {"compact"}
    assert result.settings["policy"]["max_tokens"] == 128


@pytest.mark.slow
def test_ctrl_c_leaves_a_readable_partial_trace_and_a_whole_result(tmp_path: Path) -> None:
    command = [
        POS,
        "run",
        "alfworld-mini",
        "heat-mug",
        "--model",
        "local",
        "--max-steps",
        "40",
        "--out",
        str(tmp_path),
        "--run",
        "int",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    case = tmp_path / "int" / "pos__alfworld-mini__heat-mug"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if (case / "events.jsonl").exists() and '"event": "action"' in (
            case / "events.jsonl"
        ).read_text():
            break
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 130, output
    assert "Interrupted" in output
    result = read_result(case)
    assert result is not None and result.status == "interrupted" and not result.success
    lines = (case / "events.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in lines), "every line of the partial trace parses"
    assert json.loads(lines[-1])["event"] == "episode_end"
    assert not list(case.glob("*.tmp")), "no half-written result file is left"
