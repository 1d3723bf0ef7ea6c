"""Scripted episodes recorded once as version-1 traces (tests/data/trace-v1/) and replayed by
`test_trace_replay.py`: the same script must give the same episode with today's code.

The scripts are deterministic functions of the prompts' observation text and of the recovery
note, on the real alfworld-mini heat-mug task. The PoS one runs into a static trap, recovers,
meets one supported audit issue (fixed by a revision), one unsupported quote (fixed by a
revision), one self-contradicting patch (rejected twice, belief kept) and one global-audit
issue (fixed by a global revision), then wins. Its active
gap never changes, so it exercises none of the semantics fixed since version 1 (projection on a
new gap, gap switching, Eq. 4 on diagnosis tasks), which is what lets it be replayed exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_fixtures import Call, Script
from pos_agent.bench.case import CaseSpec, run_case
from pos_agent.llm.backend import GenerationRequest

DATA = Path(__file__).resolve().parent / "data" / "trace-v1"
PLAN = [
    "go to countertop 2",
    "take mug 1 from countertop 2",
    "go to microwave 1",
    "heat mug 1 with microwave 1",
    "go to cabinet 1",
    "open cabinet 1",
    "move mug 1 to cabinet 1",
]


def observed(call: Call) -> tuple[int, str]:
    found = re.search(r"Observation at step (\d+):\n(.*?)\n\n", call.user, re.S)
    assert found, call.user
    return int(found.group(1)), found.group(2)


def observed_ops(step: int, text: str) -> list[dict[str, Any]]:
    """What a careful belief model writes for the heat-mug observations (the active gap kept)."""
    ops: list[dict[str, Any]] = []
    arrived = re.search(r"You arrive at (.+?)\.", text)
    if arrived:
        place = arrived.group(1)
        ops += [
            {"op": "upsert_entity", "name": place, "type": "receptacle"},
            {"op": "upsert_state", "entity": "agent", "attribute": "location", "value": place,
             "evidence": [step], "quote": f"You arrive at {place}"},
        ]  # fmt: skip
    door = re.search(r"The (\w+ \d+) is (open|closed)", text)
    if door:
        ops += [
            {"op": "upsert_entity", "name": door.group(1), "type": "receptacle"},
            {"op": "upsert_state", "entity": door.group(1), "attribute": "door",
             "value": door.group(2), "evidence": [step], "quote": door.group(0)},
        ]  # fmt: skip
    if "you see a bread 1, and a mug 1" in text:
        ops += [
            {"op": "upsert_relation", "src": "mug 1", "type": "on", "dst": "countertop 2",
             "evidence": [step], "quote": "you see a bread 1, and a mug 1"},
            {"op": "resolve_gap", "id": "g2"},
        ]  # fmt: skip
    if "You pick up the mug 1" in text:
        ops += [
            {"op": "remove_relation", "src": "mug 1", "type": "on", "dst": "countertop 2"},
            {"op": "upsert_state", "entity": "mug 1", "attribute": "location", "value": "held",
             "evidence": [step], "quote": "You pick up the mug 1"},
        ]  # fmt: skip
    if "You heat the mug 1" in text:
        ops.append(
            {"op": "upsert_state", "entity": "mug 1", "attribute": "temperature", "value": "hot",
             "evidence": [step], "quote": "You heat the mug 1"}
        )  # fmt: skip
    return ops


@dataclass
class GlobalAuditScript(Script):
    """A script whose global audit (step 8) finds one supported issue, which the global
    revision fixes. Written to work with the version-1 code too (no role on its requests)."""

    def __call__(self, request: GenerationRequest) -> str:
        user = request.messages[1].content
        if getattr(request, "purpose", "") == "global_audit" or user.startswith("Whole belief"):
            issue = {"records": ["e1"], "kind": "internal", "problem": "the agent has no place"}
            return json.dumps({"issues": [issue]})
        if getattr(request, "purpose", "") == "global_revision" or "A full audit found" in user:
            fix = {"op": "upsert_state", "entity": "agent", "attribute": "checked",
                   "value": "yes", "source": "inferred", "confidence": 0.6}  # fmt: skip
            return json.dumps({"ops": [fix]})
        return super().__call__(request)


def heat_mug_script(
    *,
    goal_gap: str,
    update_ops: Callable[[int, str], list[dict[str, Any]]],
    audit_problem: str,
    kind: type[Script] = Script,
) -> Script:
    """Stuck examining a closed cabinet until the recovery constraint, then the gold path.

    Along the way the sentinel's audit raises one supported issue (`audit_problem`) and the
    belief model writes one unsupported quote (both fixed by a revision) and one
    self-contradicting patch (rejected twice, so the belief is kept). `update_ops` is what the
    belief model writes for an observation, `goal_gap` the first active gap."""
    position = -1  # index into PLAN once the recovery note was shown

    def policy(call: Call) -> str:
        nonlocal position
        if position < 0 and "RECOVERY (" in call.user:
            position = 0
        if position >= 0:
            action = PLAN[min(position, len(PLAN) - 1)]
            position += 1
            return action
        return "examine cabinet 1" if "cabinet 1" in call.user else "go to cabinet 1"

    def init(call: Call) -> list[dict[str, Any]]:
        return [
            {"op": "upsert_entity", "name": "agent", "type": "agent"},
            {"op": "upsert_entity", "name": "mug 1", "type": "object"},
            {"op": "upsert_entity", "name": "microwave 1", "type": "appliance"},
            {"op": "upsert_entity", "name": "cabinet 1", "type": "receptacle"},
            {"op": "add_gap", "kind": "achievement", "text": goal_gap,
             "refs": ["mug 1", "microwave 1"], "activate": True},
            {"op": "add_gap", "kind": "epistemic", "text": "where is the mug 1?", "refs": ["mug 1"]},
        ]  # fmt: skip

    def update(call: Call) -> list[dict[str, Any]]:
        step, text = observed(call)
        ops = update_ops(step, text)
        if "You heat the mug 1" in text:  # a quote the observation does not contain
            ops.append(
                {"op": "upsert_state", "entity": "microwave 1", "attribute": "door",
                 "value": "open", "evidence": [step], "quote": "The microwave 1 is open"}
            )  # fmt: skip
        if "You arrive at microwave 1" in text:  # two values for one slot
            ops.append(
                {"op": "upsert_state", "entity": "microwave 1", "attribute": "door",
                 "value": "open", "evidence": [step], "quote": "microwave 1"}
            )  # fmt: skip
        return ops

    def revision(call: Call) -> list[dict[str, Any]]:
        step, text = observed(call)
        if "You arrive at microwave 1" in text:
            return update(call)  # the same contradiction again: rejected
        return update_ops(step, text)

    def progress(call: Call) -> int:
        recent = call.user.rsplit("Recent transitions:", 1)[-1].strip().splitlines()
        last = recent[-1] if recent else ""
        return int(not any(word in last for word in ("examine cabinet 1", "go to cabinet 1 ->")))

    audited = False

    def issues(call: Call) -> list[dict[str, Any]]:
        nonlocal audited
        if not audited and "-> step 3: The cabinet 1 is closed" in call.user.splitlines()[-1]:
            audited = True  # the revision answers it, so the re-check finds nothing
            return [
                {"records": ["s2"], "kind": "external", "problem": audit_problem,
                 "evidence_step": 3, "quote": "The cabinet 1 is closed",
                 "fix": "keep the belief; try another action"}
            ]  # fmt: skip
        return []

    return kind(
        policy=policy, init=init, update=update, revision=revision, progress=progress, issues=issues
    )


def steady_heat_mug_script() -> Script:
    """The PoS episode described in the module docstring (recorded: change nothing here)."""
    return heat_mug_script(
        goal_gap="heat the mug 1 and put it away",
        update_ops=observed_ops,
        audit_problem="nothing new was learned",
        kind=GlobalAuditScript,
    )


def walking_raw_script() -> Script:
    """The raw baseline: two wasted steps, then the gold path."""
    turn = 0

    def policy(call: Call) -> str:
        nonlocal turn
        turn += 1
        return "examine cabinet 1" if turn <= 2 else PLAN[min(turn - 3, len(PLAN) - 1)]

    return Script(policy=policy)


SCRIPTS = {"pos": steady_heat_mug_script, "raw": walking_raw_script}


def run_scripted(agent: str, out: Path) -> Path:
    """One scripted `run_case` on alfworld-mini heat-mug; returns the case folder."""
    script = SCRIPTS[agent]()
    spec = CaseSpec(
        env="alfworld-mini", task="heat-mug", agent=agent, model="scripted", max_steps=20
    )
    case_dir = out / spec.folder
    run_case(spec, case_dir, run_name="replay", load=lambda _spec, _role: script.model())
    return case_dir
