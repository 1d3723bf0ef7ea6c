"""A scripted world for agent tests: a tiny kitchen environment and a role-aware scripted model.

The environment is a fake (tests only) built on the real budget/termination base class, so
budgets and invalid actions behave exactly as in the real adapters. The scripted model tells the
calls apart by the role and purpose every request carries, never by the prompt's wording.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pos_agent.envs import BackendResult, BudgetedEnvironment
from pos_agent.envs.tools import (
    ToolCall,
    ToolCallError,
    ToolEnvironment,
    ToolSpec,
    object_schema,
    parse_tool_calls,
    string_param,
)
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


# (role, purpose) of every call the agents make -> the kind a script answers.
KINDS = {
    ("policy", "act"): "policy",
    ("belief", "init"): "init",
    ("belief", "update"): "update",
    ("belief", "revision"): "revision",
    ("belief", "global_revision"): "global_revision",
    ("sentinel", "audit"): "audit",
    ("sentinel", "progress"): "progress",
    ("sentinel", "global_audit"): "global_audit",
}


SERVICES = ["cart", "checkout", "payment"]
FAULTS = ["cpu", "memory", "network"]
DESK_TOOLS = (
    ToolSpec("get_alerts", "The alerts that fired.", object_schema()),
    ToolSpec(
        "read_log",
        "The log of one service.",
        object_schema(["service"], service=string_param("A service name.", enum=SERVICES)),
    ),
    ToolSpec(
        "submit",
        "Submit the culprit; this ends the case.",
        object_schema(
            ["service", "fault"],
            service=string_param("The faulty service.", enum=SERVICES),
            fault=string_param("The fault type.", enum=FAULTS),
            note=string_param("Why."),
        ),
    ),
)
DESK_FALLBACK = '{"tool": "get_alerts", "args": {}}'


class ToolDesk(ToolEnvironment):
    """A diagnosis desk with three tools and up to `max_calls` calls a turn (tests only)."""

    name = "tool-desk"

    def __init__(self, max_steps: int = 4, max_calls: int = 3) -> None:
        super().__init__(task_id="culprit", max_steps=max_steps, category="desk", split="test")
        self.calls_per_turn = max_calls
        self.received: list[str] = []

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return list(DESK_TOOLS)

    @property
    def fallback_call(self) -> ToolCall:
        return ToolCall("get_alerts", {})

    def _backend_reset(self) -> BackendResult:
        self.goal = "find the faulty service and its fault type"
        return BackendResult("An alert fired on checkout latency.", None)

    def _backend_step(self, action: str) -> BackendResult:
        self.received.append(action)
        try:
            calls = parse_tool_calls(action, DESK_TOOLS, max_calls=self.calls_per_turn)
        except ToolCallError as error:
            return self.invalid_result(str(error))
        for call in calls:
            if call.tool == "submit":
                right = call.args == {"service": "payment", "fault": "network"} or (
                    call.args.get("service"),
                    call.args.get("fault"),
                ) == ("payment", "network")
                return BackendResult("Submitted.", None, done=True, success=right, score=1.0)
        return BackendResult("; ".join(f"{c.tool}: nothing unusual" for c in calls), None)

    def _backend_restart(self) -> None:
        pass

    def _backend_close(self) -> None:
        pass


@dataclass
class Call:
    """One scripted model call, as the tests inspect it."""

    kind: str  # init, update, revision, global_revision, audit, progress, global_audit, policy
    user: str
    choices: list[str] | None
    system: str = ""
    schema: dict[str, Any] | None = None
    max_tokens: int = 0

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
    answers: Callable[[Call], list[dict[str, Any]]] | None = None  # a revision's answers
    progress: Callable[[Call], int] = lambda call: 0
    issues: Callable[[Call], list[dict[str, Any]]] = lambda call: []
    decision: Callable[[Call], dict[str, Any]] | None = None  # the policy's whole answer (tools)
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
        kind = KINDS.get((request.role, request.purpose))
        if kind is None:
            raise AssertionError(f"unexpected call: role={request.role!r} {request.purpose!r}")
        call = Call(kind, user, choices, system, request.schema, request.max_tokens)
        if request.attempt == 0:
            self.calls.append(call)
        if kind in self.malformed:
            return "I think the answer is {not json"
        if kind == "policy" and self.decision is not None:
            return json.dumps(self.decision(call))
        if kind == "policy":
            return json.dumps({"thought": "", "action": self.policy(call)})
        if kind == "init":
            return json.dumps({"ops": self.init(call)})
        if kind == "update":
            return json.dumps({"ops": self.update(call)})
        if kind in ("revision", "global_revision"):
            fix = self.revision or self.update
            answers = self.answers(call) if self.answers and kind == "revision" else []
            return json.dumps({"ops": fix(call), **({"answers": answers} if answers else {})})
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
