"""A scripted world for agent tests: a tiny kitchen environment and a role-aware scripted model.

The environment is a fake (tests only) built on the real budget/termination base class, so
budgets and invalid actions behave exactly as in the real adapters.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pos_agent.agents import prompts
from pos_agent.envs._episode import BackendResult, BudgetedEnvironment
from pos_agent.llm import ScriptedModel
from pos_agent.llm.backend import GenerationRequest

ACTIONS = ["examine microwave 1", "open microwave 1", "go to countertop 1", "go to sink 1"]


class KitchenEnv(BudgetedEnvironment):
    """Open the microwave to win; everything else changes nothing (or moves the agent)."""

    name = "kitchen"

    def __init__(self, max_steps: int = 20, winning: str = "open microwave 1") -> None:
        super().__init__(
            task_id="heat-mug", max_steps=max_steps, category="Transform", split="test"
        )
        self.winning = winning
        self.closed_backends = 0

    def _backend_reset(self) -> BackendResult:
        self.goal = "heat some mug and put it in cabinet"
        return BackendResult("You are in a kitchen. The microwave 1 is closed.", list(ACTIONS))

    def _backend_step(self, action: str) -> BackendResult:
        if action not in ACTIONS:
            return self.invalid_result("Nothing happens.")
        if action == self.winning:
            return BackendResult(
                "You open the microwave 1. The microwave 1 is open.",
                list(ACTIONS),
                done=True,
                success=True,
                score=1.0,
            )
        if action.startswith("go to"):
            return BackendResult(f"You arrive at {action[6:]}.", list(ACTIONS))
        return BackendResult("Nothing happens. The microwave 1 is closed.", list(ACTIONS))

    def _backend_restart(self) -> None:
        pass

    def _backend_close(self) -> None:
        self.closed_backends += 1


@dataclass
class Call:
    """One scripted model call, as the tests inspect it."""

    kind: str  # init, update, revision, global_revision, audit, progress, global_audit, policy, raw
    user: str
    choices: list[str] | None
    system: str = ""

    @property
    def observed_step(self) -> int:
        """The step of the observation a belief update is about."""
        return int(self.user.split("Observation at step ")[1].split(":")[0])


Policy = Callable[[Call], str]
Patch = Callable[[Call], list[dict[str, Any]]]


@dataclass
class Script:
    """Role-aware scripted replies; every call is recorded in `calls`."""

    policy: Policy = lambda call: ACTIONS[0]
    init: Patch = lambda call: [
        {"op": "upsert_entity", "name": "mug 1"},
        {"op": "upsert_entity", "name": "microwave 1"},
        {
            "op": "add_gap",
            "kind": "achievement",
            "text": "heat the mug",
            "refs": ["mug 1", "microwave 1"],
            "activate": True,
        },
    ]
    update: Patch = lambda call: []
    revision: Patch | None = None
    progress: Callable[[Call], int] = lambda call: 0
    issues: Callable[[Call], list[dict[str, Any]]] = lambda call: []
    malformed: set[str] = field(default_factory=set)  # call kinds answered with junk
    calls: list[Call] = field(default_factory=list)

    def __call__(self, request: GenerationRequest) -> str:
        system = request.messages[0].content
        user = request.messages[1].content  # the first user turn (repair turns come after it)
        choices = None
        if request.schema and "enum" in json.dumps(
            request.schema.get("properties", {}).get("action", {})
        ):
            choices = list(request.schema["properties"]["action"]["enum"])
        kind = _kind(system, user)
        call = Call(kind, user, choices, system)
        if request.attempt == 0:
            self.calls.append(call)
        if kind in self.malformed:
            return "I think the answer is {not json"
        if kind in ("policy", "raw"):
            return json.dumps({"thought": "", "action": self.policy(call)})
        if kind == "init":
            return json.dumps({"ops": self.init(call)})
        if kind == "update":
            return json.dumps({"ops": self.update(call)})
        if kind in ("revision", "global_revision"):
            fix = self.revision or self.update
            return json.dumps({"ops": fix(call)})
        if kind == "audit":
            return json.dumps(
                {"issues": self.issues(call), "progress": self.progress(call), "reason": "scripted"}
            )
        if kind == "progress":
            return json.dumps({"progress": self.progress(call), "reason": "scripted"})
        return json.dumps({"issues": []})

    def of(self, kind: str) -> list[Call]:
        return [c for c in self.calls if c.kind == kind]

    def model(self) -> ScriptedModel:
        return ScriptedModel(self)


def _kind(system: str, user: str) -> str:
    if system.startswith(prompts.POLICY_SYSTEM):
        return "policy"
    if system.startswith(prompts.RAW_SYSTEM):
        return "raw"
    if system.startswith(prompts.PROGRESS_SYSTEM):
        return "progress"
    if system.startswith(prompts.AUDIT_SYSTEM.split("{")[0]):
        return "global_audit" if user.startswith("Whole belief") else "audit"
    if user.startswith("Goal:"):
        return "init"
    if user.startswith("Current belief (before your patch)"):
        return "revision"
    if "A full audit found" in user:
        return "global_revision"
    return "update"
