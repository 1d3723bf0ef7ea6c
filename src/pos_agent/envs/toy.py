"""`toy`: a tiny household world in pure Python, so the harness runs with no environment extra.

Six tasks shaped like ALFWorld's (same ids as alfworld-mini: heat-mug, cool-apple, clean-cloth,
examine-book, two-cds, put-keychain), with ALFWorld's verbs ("go to", "take X from Y", "heat X
with Y", ...), admissible actions on every observation and a planner expert: the first action of
a shortest plan (breadth-first search) from the current state. Everything is deterministic, and
every task is winnable. It is for tests, demos without extras and checking a set-up; it is no
benchmark (results on it say nothing about an agent).

`toy-desk` is its tool-calling twin: a diagnosis desk whose agent reads logs through tools and
submits the faulty service and fault, so the tool path of the harness runs without extras too.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, replace

from pos_agent.envs._episode import BackendResult, BudgetedEnvironment
from pos_agent.envs._types import EnvError, TaskSpec, choose_split
from pos_agent.envs.tools import (
    ToolCall,
    ToolEnvironment,
    ToolSpec,
    object_schema,
    string_param,
)

TOY_ENV = "toy"
DESK_ENV = "toy-desk"
SPLIT = "test"
DEFAULT_MAX_STEPS = 30
DESK_MAX_STEPS = 8

# Where things are done to an object: the appliance a verb needs, and the state it gives.
_TREATMENTS = {
    "heat": ("microwave 1", "hot"),
    "cool": ("fridge 1", "cool"),
    "clean": ("sinkbasin 1", "clean"),
}
_LAMP = "desklamp 1"
_NOTHING = "Nothing happens."


@dataclass(frozen=True)
class ToyTask:
    """One task: where things start, which receptacles open, and the facts that win it.

    A fact is "OBJECT in PLACE" or "OBJECT is STATE" (STATE: hot, cool, clean, examined).
    """

    task_id: str
    category: str
    goal: str
    places: tuple[str, ...]
    start: tuple[tuple[str, str], ...]
    """(object, place) at the start."""
    closed: frozenset[str]
    """Receptacles that start closed and must be opened to reach inside."""
    facts: tuple[str, ...]


_KITCHEN = (
    "cabinet 1",
    "countertop 1",
    "drawer 1",
    "fridge 1",
    "microwave 1",
    "sinkbasin 1",
)
_ROOM = ("desk 1", "drawer 1", "safe 1", "shelf 1", "sofa 1", _LAMP)

TASKS: tuple[ToyTask, ...] = (
    ToyTask(
        "heat-mug",
        "Transform",
        "heat some mug and put it in cabinet",
        _KITCHEN,
        (("mug 1", "countertop 1"), ("apple 1", "countertop 1")),
        frozenset({"cabinet 1", "fridge 1", "microwave 1"}),
        ("mug 1 is hot", "mug 1 in cabinet 1"),
    ),
    ToyTask(
        "cool-apple",
        "Transform",
        "cool some apple and put it in countertop",
        _KITCHEN,
        (("apple 1", "sinkbasin 1"), ("mug 1", "cabinet 1")),
        frozenset({"cabinet 1", "fridge 1", "microwave 1"}),
        ("apple 1 is cool", "apple 1 in countertop 1"),
    ),
    ToyTask(
        "clean-cloth",
        "Transform",
        "clean some cloth and put it in drawer",
        _KITCHEN,
        (("cloth 1", "countertop 1"), ("mug 1", "countertop 1")),
        frozenset({"drawer 1", "fridge 1", "microwave 1"}),
        ("cloth 1 is clean", "cloth 1 in drawer 1"),
    ),
    ToyTask(
        "examine-book",
        "Inspect",
        "examine the book with the desklamp",
        _ROOM,
        (("book 1", "sofa 1"), ("keychain 1", "desk 1")),
        frozenset({"drawer 1", "safe 1"}),
        ("book 1 is examined",),
    ),
    ToyTask(
        "two-cds",
        "Place",
        "put two cd in shelf",
        _ROOM,
        (("cd 1", "desk 1"), ("cd 2", "drawer 1"), ("book 1", "shelf 1")),
        frozenset({"drawer 1", "safe 1"}),
        ("cd 1 in shelf 1", "cd 2 in shelf 1"),
    ),
    ToyTask(
        "put-keychain",
        "Place",
        "put a keychain in safe",
        _ROOM,
        (("keychain 1", "drawer 1"), ("cd 1", "desk 1")),
        frozenset({"drawer 1", "safe 1"}),
        ("keychain 1 in safe 1",),
    ),
)
_BY_ID = {task.task_id: task for task in TASKS}


@dataclass(frozen=True)
class _World:
    """The state of one episode; frozen, so the planner can search over it."""

    at: str | None
    holding: str | None
    where: tuple[tuple[str, str], ...]
    """(object, place), sorted; a held object is in no place."""
    closed: frozenset[str]
    states: frozenset[str]
    """Facts "OBJECT is STATE"."""

    def inside(self, place: str) -> list[str]:
        return [obj for obj, spot in self.where if spot == place]

    def facts(self) -> set[str]:
        return {f"{obj} in {spot}" for obj, spot in self.where} | set(self.states)


def _start(task: ToyTask) -> _World:
    return _World(None, None, tuple(sorted(task.start)), task.closed, frozenset())


def _admissible(task: ToyTask, world: _World) -> list[str]:
    """Every command that does something here, in a stable order (then look and inventory)."""
    actions = [f"go to {place}" for place in task.places if place != world.at]
    here = world.at
    if here is not None:
        if here in world.closed:
            actions.append(f"open {here}")
        elif here in task.closed:
            actions.append(f"close {here}")
        if here not in world.closed:
            if world.holding is None:
                actions += [f"take {obj} from {here}" for obj in world.inside(here)]
            elif here != _LAMP:
                actions.append(f"put {world.holding} in/on {here}")
        for verb, (appliance, _) in _TREATMENTS.items():
            if here == appliance and world.holding is not None and here not in world.closed:
                actions.append(f"{verb} {world.holding} with {appliance}")
        if here == _LAMP:
            actions.append(f"use {_LAMP}")
        actions.append(f"examine {here}")
    return [*actions, "look", "inventory"]


def _describe(world: _World, place: str) -> str:
    if place in world.closed:
        return f"The {place} is closed."
    things = world.inside(place)
    listed = ", ".join(_article(obj) for obj in things) if things else "nothing"
    return f"On the {place}, you see {listed}."


def _article(obj: str) -> str:
    return f"{'an' if obj[0] in 'aeiou' else 'a'} {obj}"


def _apply(task: ToyTask, world: _World, action: str) -> tuple[_World, str]:
    """The next world and the observation text; the world is unchanged by anything useless."""
    if action not in _admissible(task, world):
        return world, _NOTHING
    here = str(world.at)  # every action but "go to" is admissible only at a place
    if action.startswith("go to "):
        place = action.removeprefix("go to ")
        moved = replace(world, at=place)
        return moved, f"You arrive at {place}. {_describe(moved, place)}"
    if action.startswith("open "):
        opened = replace(world, closed=world.closed - {here})
        return opened, f"You open the {here}. {_describe(opened, here)}"
    if action.startswith("close "):
        return replace(world, closed=world.closed | {here}), f"You close the {here}."
    if action.startswith("take "):
        obj = action.removeprefix("take ").rsplit(" from ", 1)[0]
        where = tuple(pair for pair in world.where if pair[0] != obj)
        return replace(world, holding=obj, where=where), f"You pick up the {obj} from the {here}."
    if action.startswith("put "):
        obj = str(world.holding)
        where = tuple(sorted((*world.where, (obj, here))))
        return replace(world, holding=None, where=where), f"You put the {obj} in/on the {here}."
    verb = action.split(" ", 1)[0]
    if verb in _TREATMENTS:
        obj, state = str(world.holding), _TREATMENTS[verb][1]
        states = world.states | {f"{obj} is {state}"}
        return replace(world, states=states), f"You {verb} the {obj} using the {here}."
    if action == f"use {_LAMP}":
        if world.holding is None:
            return world, f"You turn on the {_LAMP}."
        states = world.states | {f"{world.holding} is examined"}
        return replace(world, states=states), (
            f"You turn on the {_LAMP} and look at the {world.holding} in its light."
        )
    if action == "inventory":
        return world, f"You are carrying: {_article(world.holding)}." if world.holding else (
            "You are not carrying anything."
        )
    if action.startswith("examine "):
        return world, _describe(world, here)
    return world, _room_text(task, world)


def _room_text(task: ToyTask, world: _World) -> str:
    where = f"You are at the {world.at}." if world.at else "You are in the middle of a room."
    return f"{where} Looking quickly around you, you see {', '.join(task.places)}."


def _won(task: ToyTask, world: _World) -> bool:
    return set(task.facts) <= world.facts()


def _plan_first_action(task: ToyTask, world: _World) -> str | None:
    """The first action of a shortest plan to the goal (None when already there or stuck)."""
    if _won(task, world):
        return None
    seen = {world}
    frontier: deque[tuple[_World, str]] = deque()
    for action in _admissible(task, world):
        following, _ = _apply(task, world, action)
        if following not in seen:
            seen.add(following)
            frontier.append((following, action))
    while frontier:
        state, first = frontier.popleft()
        if _won(task, state):
            return first
        for action in _admissible(task, state):
            following, _ = _apply(task, state, action)
            if following not in seen:
                seen.add(following)
                frontier.append((following, first))
    return None


def _task(task_id: str, env: str, tasks: dict[str, str]) -> str:
    if task_id not in tasks:
        raise EnvError(f"Unknown {env} task {task_id!r}; use one of {', '.join(tasks)}.")
    return task_id


def list_toy_tasks(split: str | None = None) -> list[TaskSpec]:
    """The six `toy` tasks (split `test`)."""
    chosen = choose_split(split, (SPLIT,), SPLIT, TOY_ENV)
    return [TaskSpec(TOY_ENV, t.task_id, t.category, chosen, t.goal) for t in TASKS]


class ToyEnvironment(BudgetedEnvironment):
    """One `toy` task; `info["expert_action"]` is the planner's next action."""

    name = TOY_ENV

    def __init__(
        self, task_id: str, *, split: str | None = None, max_steps: int | None = None
    ) -> None:
        chosen = choose_split(split, (SPLIT,), SPLIT, TOY_ENV)
        task = _BY_ID[_task(task_id, TOY_ENV, {t.task_id: t.goal for t in TASKS})]
        super().__init__(
            task_id=task.task_id,
            max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps,
            category=task.category,
            split=chosen,
        )
        self.task = task
        self.world = _start(task)

    def _backend_reset(self) -> BackendResult:
        self.world = _start(self.task)
        self.goal = self.task.goal
        text = f"{_room_text(self.task, self.world)}\n\nYour task is to: {self.task.goal}."
        return self._result(text)

    def _backend_step(self, action: str) -> BackendResult:
        if action not in _admissible(self.task, self.world):
            return self.invalid_result(
                f"{_NOTHING} Invalid action {action!r}: it is not one of the admissible "
                "actions here."
            )
        self.world, text = _apply(self.task, self.world, action)
        return self._result(text)

    def _result(self, text: str) -> BackendResult:
        won = _won(self.task, self.world)
        return BackendResult(
            text,
            _admissible(self.task, self.world),
            done=won,
            success=won,
            score=1.0 if won else 0.0,
            expert_action=_plan_first_action(self.task, self.world),
        )

    def _backend_restart(self) -> None:
        self.world = _start(self.task)

    def _backend_close(self) -> None:
        pass


# -- toy-desk: the tool-calling twin -------------------------------------------------------------

SERVICES = ("cart", "checkout", "payment")
FAULTS = ("cpu", "memory", "network")
# task id -> (faulty service, fault): what the logs show and what a submission must name.
DESK_CASES = {
    "payment-network": ("payment", "network"),
    "cart-memory": ("cart", "memory"),
}
_DESK_TOOLS = (
    ToolSpec("get_alerts", "The alerts that fired.", object_schema()),
    ToolSpec(
        "read_log",
        "The recent log lines of one service.",
        object_schema(["service"], service=string_param("A service name.", enum=list(SERVICES))),
    ),
    ToolSpec(
        "submit",
        "Submit the faulty service and the fault type; this ends the case.",
        object_schema(
            ["service", "fault"],
            service=string_param("The faulty service.", enum=list(SERVICES)),
            fault=string_param("The fault type.", enum=list(FAULTS)),
        ),
    ),
)
_LOG_LINES = {
    "cpu": "thread pool saturated; cpu at 100%",
    "memory": "heap usage 98%; allocation failures",
    "network": "connection reset by peer; retransmits rising",
}


def list_desk_tasks(split: str | None = None) -> list[TaskSpec]:
    """The `toy-desk` cases (split `test`)."""
    chosen = choose_split(split, (SPLIT,), SPLIT, DESK_ENV)
    return [
        TaskSpec(DESK_ENV, task_id, "Joint", chosen, "find the faulty service and its fault")
        for task_id in DESK_CASES
    ]


class ToyDeskEnvironment(ToolEnvironment):
    """One `toy-desk` case: read the logs, submit the culprit; `gold_action` is the answer."""

    name = DESK_ENV

    def __init__(
        self, task_id: str, *, split: str | None = None, max_steps: int | None = None
    ) -> None:
        chosen = choose_split(split, (SPLIT,), SPLIT, DESK_ENV)
        _task(task_id, DESK_ENV, {task: task for task in DESK_CASES})
        super().__init__(
            task_id=task_id,
            max_steps=DESK_MAX_STEPS if max_steps is None else max_steps,
            category="Joint",
            split=chosen,
        )
        self.culprit = DESK_CASES[task_id]

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return list(_DESK_TOOLS)

    @property
    def fallback_call(self) -> ToolCall:
        return ToolCall("get_alerts", {})

    @property
    def gold_action(self) -> str:
        """The winning submission, as an action string."""
        service, fault = self.culprit
        return ToolCall("submit", {"service": service, "fault": fault}).render()

    def _backend_reset(self) -> BackendResult:
        self.goal = "find the faulty service and its fault type, then submit them"
        example = json.dumps({"tool": "read_log", "args": {"service": SERVICES[0]}})
        text = f"An alert fired on checkout latency.\n{self.tool_instructions(example)}"
        return BackendResult(text, None)

    def _backend_step(self, action: str) -> BackendResult:
        calls = self.parse_turn(action)
        if isinstance(calls, BackendResult):
            return calls
        lines = []
        for call in calls:
            if call.tool == "submit":
                right = (call.args["service"], call.args["fault"]) == self.culprit
                verdict = "correct" if right else "wrong"
                return BackendResult(
                    f"Submitted: {verdict}.",
                    None,
                    done=True,
                    success=right,
                    score=1.0 if right else 0.0,
                )
            if call.tool == "get_alerts":
                lines.append("checkout: p99 latency above 2s")
            else:
                service = call.args["service"]
                faulty, fault = self.culprit
                lines.append(
                    f"{service}: {_LOG_LINES[fault]}" if service == faulty else f"{service}: ok"
                )
        return BackendResult("\n".join(lines), None)

    def _backend_restart(self) -> None:
        pass

    def _backend_close(self) -> None:
        pass
