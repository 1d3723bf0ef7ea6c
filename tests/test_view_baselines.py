"""`pos view` on the baselines' traces: the context each method built is shown with the step its
decision led to, next to its internal calls; and the page renders it in a real browser."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from agent_fixtures import KitchenEnv
from context_fixtures import RoleScript, run_baseline, user_text
from pos_agent.bench.view import build_view, write_view
from pos_agent.llm.backend import GenerationRequest
from pos_agent.trace import read_events
from test_view import CHROMIUM_FLAGS, chromium

AUDIT = "Status: incomplete\nIntegrity: clean\nContract audit: aligned\n\nFacts: still closed."
PLAN = (
    "Task state:\nCompleted: nothing\nTask contract:\n- C1: the microwave is open; verified by: "
    "examine it\nDependencies: none\nNext: work\nSubtask: open the microwave\n"
    "Acceptance criteria: it is open\nRelated audit rounds: none\nBoundaries: none"
)


def act(request: GenerationRequest) -> str:
    """go to sink 1 (the auditor: a read-only query), `finish` once the executor acted twice or
    the auditor queried once in its turn; a subgoal when the schema asks for one."""
    assert request.schema is not None
    answer: dict[str, Any] = {"thought": "t"}
    if "new_subgoal" in request.schema["properties"]:
        text = user_text(request)
        starts = {"find the mug": "Current subgoal" not in text, "heat it": "[step 2]" in text}
        starts["heat it"] = starts["heat it"] and "heat it" not in text
        answer["new_subgoal"] = next((goal for goal, now in starts.items() if now), "")
    offered = request.schema["properties"]["action"].get("enum") or ["go to sink 1"]
    mine = user_text(request).split("Your actions in this subtask:")[-1].count("[step ")
    finished = mine >= {"executor": 2, "auditor": 1}.get(request.role, mine + 1)
    walk = "go to sink 1" if "go to sink 1" in offered else offered[0]  # the auditor examines
    answer["action"] = "finish" if finished else walk
    return json.dumps(answer)


SCRIPT = {
    "policy": act,
    "executor/act": act,
    "auditor/query": act,
    "summarizer": lambda r: "went to the sink",
    "compressor": lambda r: "### REASONING\nwent to the sink\n### COMPLETED\n- nothing",
    "manager": lambda r: PLAN,
    "executor/report": lambda r: "went to the sink twice",
    "auditor/audit": lambda r: AUDIT,
}


def traced(method: str, case_dir: Path, steps: int = 5) -> dict[str, Any]:
    options = {"threshold_tokens": 10, "summary_tokens": 64} if method == "acon" else {}
    run_baseline(method, RoleScript(dict(SCRIPT)), KitchenEnv(max_steps=steps), case_dir, options)
    return build_view(read_events(case_dir), None)


def kinds(view: dict[str, Any], step: int) -> list[str]:
    (found,) = [s for s in view["steps"] if s["step"] == step]
    return [c["kind"] for c in found["context"]]


def test_each_baselines_context_is_shown_with_the_step_its_decision_led_to(
    tmp_path: Path,
) -> None:
    acon = traced("acon", tmp_path / "acon")
    assert kinds(acon, 1) == ["acon_context"]
    assert "compression" in {k for s in acon["steps"] for k in kinds(acon, s["step"])}
    pace = traced("pace", tmp_path / "pace")
    assert kinds(pace, 4) == ["pace_context"]
    (step4,) = [s for s in pace["steps"] if s["step"] == 4]
    assert [c["role"] for c in step4["calls"]] == ["summarizer", "summarizer", "policy"]
    assert [c["level"] for c in step4["context"][0]["chunks"]][-2:] == ["full", "full"]
    hiagent = traced("hiagent", tmp_path / "hiagent")
    assert kinds(hiagent, 1) == ["hiagent_context", "subgoal"]
    assert "subgoal" in kinds(hiagent, 3), "the new subgoal at step 2 leads to step 3"
    lh = traced("lh_harness", tmp_path / "lh", steps=6)
    assert kinds(lh, 1) == ["round_plan"]
    audit_steps = [s["step"] for s in lh["steps"] if "round_audit" in kinds(lh, s["step"])]
    # Rounds of 2 executor actions and 1 auditor query: the first audit precedes step 4; the
    # second comes after the last action (step 6), with no observation after it.
    assert audit_steps == [4, 7]
    assert {"manager", "executor", "auditor"} <= set(lh["tokens"])
    for view in (acon, pace, hiagent, lh):
        assert view["has_belief"] is False
        assert [s["step"] for s in view["steps"]] == list(range(len(view["steps"])))


def test_a_baseline_trace_renders_its_context_in_headless_chromium(tmp_path: Path) -> None:
    binary = chromium()
    for method, step, text in (
        ("pace", 4, "PACE context: pressure"),
        ("lh_harness", 1, "Round 1: manager route work"),
        ("hiagent", 3, "New subgoal 2: heat it"),
    ):
        case = tmp_path / method
        traced(method, case, steps=6)
        page = write_view(case)
        url = page.resolve().as_uri() + f"#step={step}"
        profile = [f"--user-data-dir={tmp_path / 'profile'}"]
        dom = subprocess.run(
            [binary, *CHROMIUM_FLAGS, *profile, "--window-size=1400,900", "--dump-dom", url],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert 'data-rendered="ok"' in dom.stdout and "data-js-error" not in dom.stdout
        assert "Context (what the method built for this decision)" in dom.stdout, method
        assert text in dom.stdout, method
        assert "the Context section shows what it conditions on" in dom.stdout
