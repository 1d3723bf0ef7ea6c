"""The LOCA bridge runs as a script in LOCA's own runtime, where `pos_agent` is not importable:
its helpers beside it (the process tree, the environment's size) must load by their file names.
No LOCA checkout is needed for the protocol's own requests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pos_agent.envs.loca.bridge_client import BRIDGE_SCRIPT


def test_the_bridge_answers_as_a_script_without_the_project_on_its_path(tmp_path: Path) -> None:
    # -S: no site-packages, so neither pos_agent nor anything installed is importable, as in a
    # runtime that has only LOCA's checkout on PYTHONPATH.
    bridge = subprocess.Popen(
        [sys.executable, "-S", str(BRIDGE_SCRIPT), "--log", str(tmp_path / "bridge.log")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert bridge.stdin is not None and bridge.stdout is not None
    try:
        ready = json.loads(bridge.stdout.readline())
        assert ready["ok"] and ready["ready"] and ready["pid"] == bridge.pid
        answers = []
        for op in ("pids", "evaluate", "close"):
            bridge.stdin.write(json.dumps({"op": op}) + "\n")
            bridge.stdin.flush()
            answers.append(json.loads(bridge.stdout.readline()))
        assert answers[0] == {"ok": True, "pids": {}}
        assert answers[1]["ok"] is False and answers[1]["kind"] == "usage"
        assert "out-of-order" in answers[1]["error"]
        assert answers[2]["ok"] is True
        assert bridge.wait(timeout=30) == 0
    finally:
        if bridge.poll() is None:
            bridge.kill()
            bridge.wait()
