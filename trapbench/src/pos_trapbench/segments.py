"""Planning injected segments on TextWorld's logic state before they are played for real.

Each planner looks at a copy of the game's tracked progression (`textworld.generator.game.
GameProgression`): its true facts and the actions valid in them. It returns the commands of one
segment, choosing each from the actions valid in the state the previous ones lead to, so every
command is one the game accepts. The segment is then played in the real game by the builder.

- static: one no-op (`look`, `examine X` or `inventory`) repeated;
- cycle: back and forth between 2 rooms, or over 3 rooms (A B C B A ...), or toggling one
  container open and closed;
- drift: changing goal-irrelevant things (open/close, take/drop/put/insert objects that neither
  a win fact nor the current winning plan mentions), each step to a state not held before in
  the segment, so that drift is not a cycle in disguise;
- explore (hard negative): opening containers and doors never opened yet, else walking to the
  nearest room not visited yet.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from pos_trapbench.records import SegmentKind
from pos_trapbench.session import ALWAYS_KNOWN, PLAYER, SearchLimit, current_room

# Segment lengths (the comparable study: 6-12 steps; drift 8-12).
LENGTHS: dict[SegmentKind, tuple[int, int]] = {
    "static": (6, 12),
    "cycle": (6, 12),
    "drift": (8, 12),
    "explore": (6, 12),
}
NO_OP_KINDS = ("look", "inventory")
DRIFT_KINDS = frozenset({"open/c", "close/c", "take", "take/c", "take/s", "drop", "put", "insert"})
DIRECTIONS = {"north": "south", "south": "north", "east": "west", "west": "east"}
MAX_MOVES = 5000
"""Bound on the actions one state offers a segment (games here offer tens to a few hundred)."""


@dataclass(frozen=True, slots=True)
class PlannedSegment:
    kind: SegmentKind
    commands: tuple[str, ...]
    detail: str


# Only these rules can be part of a segment, so only they are instantiated while planning.
SEGMENT_RULE_PREFIXES = (
    "look",
    "inventory",
    "examine",
    "go/",
    "open/",
    "close/",
    "take",
    "drop",
    "put",
    "insert",
)


@dataclass
class Simulation:
    """A copy of the game's logic state that planned commands are applied to.

    Only the rules a segment can use are instantiated (not cooking, cutting, locking...), which
    makes planning several times cheaper than TextWorld's own step."""

    state: Any
    """`textworld.logic.State`, owned by the simulation."""
    game: Any
    inform7: Any

    @classmethod
    def of(cls, game: Any, state: Any, inform7: Any) -> Simulation:
        return cls(state.copy(), game, inform7)

    @property
    def facts(self) -> frozenset[Any]:
        return frozenset(self.state.facts)

    def moves(self) -> dict[str, Any]:
        """Command -> logic action, for every segment action valid now."""
        rules = [
            r for name, r in self.game.kb.rules.items() if name.startswith(SEGMENT_RULE_PREFIXES)
        ]
        actions = []
        for action in self.state.all_applicable_actions(
            rules, self.game.kb.types.constants_mapping
        ):
            actions.append(action)
            if len(actions) > MAX_MOVES:
                raise SearchLimit(f"search bound: more than {MAX_MOVES} actions in one state")
        commands = self.inform7.gen_commands_from_actions(actions)
        return dict(zip(commands, actions, strict=True))

    def apply(self, action: Any) -> None:
        self.state.apply(action)


def plan_segment(
    kind: SegmentKind,
    simulation: Simulation,
    rng: random.Random,
    *,
    relevant: frozenset[str],
    visited_rooms: set[str],
    opened: set[str],
) -> PlannedSegment | None:
    """Plan one segment of `kind` from the simulation's state; None when it cannot be built
    with at least the minimum length here."""
    low, high = LENGTHS[kind]
    length = rng.randint(low, high)
    planners: dict[SegmentKind, Callable[..., PlannedSegment | None]] = {
        "static": _static,
        "cycle": _cycle,
        "drift": _drift,
        "explore": _explore,
    }
    planned = planners[kind](
        simulation,
        rng,
        length,
        relevant=relevant,
        visited_rooms=set(visited_rooms),
        opened=set(opened),
    )
    if planned is None or len(planned.commands) < low:
        return None
    return planned


def _static(
    simulation: Simulation, rng: random.Random, length: int, **unused: Any
) -> PlannedSegment | None:
    moves = simulation.moves()
    choices = [c for c, a in moves.items() if a.name in NO_OP_KINDS or a.name.startswith("examine")]
    if not choices:
        return None
    command = rng.choice(sorted(choices))
    commands = _play_while_offered(simulation, repeat(command, length))
    return PlannedSegment("static", commands, f"repeat '{command}'")


def _play_while_offered(simulation: Simulation, commands: Iterable[str]) -> tuple[str, ...]:
    """The commands played in order, up to the first one the simulation does not offer."""
    played: list[str] = []
    for command in commands:
        action = simulation.moves().get(command)
        if action is None:
            break
        simulation.apply(action)
        played.append(command)
    return tuple(played)


def room_graph(facts: frozenset[Any]) -> dict[str, dict[str, str]]:
    """room -> {direction: room} over passages that are open both ways."""
    free = {(f.names[0], f.names[1]) for f in facts if f.name == "free"}
    graph: dict[str, dict[str, str]] = {}

    def link(source: str, direction: str, target: str) -> None:
        if (source, target) in free and (target, source) in free:
            graph.setdefault(source, {})[direction] = target

    for fact in facts:
        if len(fact.names) != 2:
            continue
        a, b = fact.names
        # north_of(a, b): a is north of b; west_of(a, b): a is west of b.
        for predicate, direction in (
            ("north_of", "north"),
            ("south_of", "south"),
            ("east_of", "east"),
            ("west_of", "west"),
        ):
            if fact.name == predicate:
                link(b, direction, a)
                link(a, DIRECTIONS[direction], b)
    return graph


def _go(simulation: Simulation, direction: str) -> bool:
    action = simulation.moves().get(f"go {direction}")
    if action is None:
        return False
    simulation.apply(action)
    return True


def _cycle(
    simulation: Simulation,
    rng: random.Random,
    length: int,
    *,
    visited_rooms: set[str],
    **unused: Any,
) -> PlannedSegment | None:
    facts = simulation.facts
    start = current_room(facts)
    graph = room_graph(facts)
    if start is None or not graph.get(start):
        return _toggle(simulation, rng, length)
    # One cycle in five revisits states rather than places: a container opened and closed.
    if rng.random() < 0.2:
        toggled = _toggle(simulation, rng, length)
        if toggled is not None:
            return toggled
    return _rooms(simulation, rng, length, graph, start, visited_rooms)


def _rooms(
    simulation: Simulation,
    rng: random.Random,
    length: int,
    graph: dict[str, dict[str, str]],
    start: str,
    visited_rooms: set[str],
) -> PlannedSegment | None:
    exits = graph.get(start, {})
    # A cycle revisits: rooms already visited come first when there are any.
    known = sorted(d for d, room in exits.items() if room in visited_rooms)
    direction = rng.choice(known or sorted(exits))
    middle = exits[direction]
    onward = sorted(d for d, room in graph.get(middle, {}).items() if room != start)
    route: list[str]
    if onward and rng.random() < 0.4:
        further = rng.choice(onward)
        # start -> middle -> far -> middle -> start ...: three places, period 4.
        route = [direction, further, DIRECTIONS[further], DIRECTIONS[direction]]
        detail = f"rooms {start} {middle} {graph[middle][further]}"
    else:
        route = [direction, DIRECTIONS[direction]]
        detail = f"rooms {start} {middle}"
    commands = []
    for i in range(length):
        step = route[i % len(route)]
        if not _go(simulation, step):
            break
        commands.append(f"go {step}")
    return PlannedSegment("cycle", tuple(commands), detail)


def _toggle(simulation: Simulation, rng: random.Random, length: int) -> PlannedSegment | None:
    """open X, close X, open X, ... on one container of the current room."""
    moves = simulation.moves()
    containers = sorted(c for c, a in moves.items() if a.name in ("open/c", "close/c"))
    if not containers:
        return None
    first = rng.choice(containers)
    verb, _, thing = first.partition(" ")
    other = f"{'close' if verb == 'open' else 'open'} {thing}"
    commands = _play_while_offered(
        simulation, (first if i % 2 == 0 else other for i in range(length))
    )
    return PlannedSegment("cycle", commands, f"toggle '{thing}'")


def _irrelevant(action: Any, relevant: frozenset[str]) -> bool:
    things = [v.name for v in action.variables if v.name not in ALWAYS_KNOWN and v.type != "r"]
    return bool(things) and not relevant.intersection(things)


def _drift(
    simulation: Simulation,
    rng: random.Random,
    length: int,
    *,
    relevant: frozenset[str],
    **unused: Any,
) -> PlannedSegment | None:
    held = [simulation.facts]
    commands = []
    for _ in range(length):
        moves = simulation.moves()
        candidates = sorted(
            command
            for command, action in moves.items()
            if action.name in DRIFT_KINDS and _irrelevant(action, relevant)
        )
        fresh = [c for c in candidates if _after(simulation.facts, moves[c]) not in held]
        if not fresh:
            break
        command = rng.choice(fresh)
        simulation.apply(moves[command])
        held.append(simulation.facts)
        commands.append(command)
    return PlannedSegment("drift", tuple(commands), "irrelevant objects")


def _after(facts: frozenset[Any], action: Any) -> frozenset[Any]:
    return (facts - frozenset(action.removed)) | frozenset(action.added)


def _explore(
    simulation: Simulation,
    rng: random.Random,
    length: int,
    *,
    visited_rooms: set[str],
    opened: set[str],
    **unused: Any,
) -> PlannedSegment | None:
    commands = []
    for _ in range(length):
        moves = simulation.moves()
        openings = sorted(
            c
            for c, a in moves.items()
            if a.name in ("open/c", "open/d") and _opened_thing(a) not in opened
        )
        if openings:
            command = rng.choice(openings)
            opened.add(_opened_thing(moves[command]))
        else:
            step = _towards_unvisited(simulation.facts, visited_rooms)
            if step is None or f"go {step}" not in moves:
                break
            command = f"go {step}"
        simulation.apply(moves[command])
        room = current_room(simulation.facts)
        if room is not None:
            visited_rooms.add(room)
        commands.append(command)
    return PlannedSegment("explore", tuple(commands), "unopened containers, unvisited rooms")


def _opened_thing(action: Any) -> str:
    """The id of what an open action opens (the argument of the `open(x)` it adds)."""
    return next((str(f.names[0]) for f in action.added if f.name == "open"), str(action.name))


def _towards_unvisited(facts: frozenset[Any], visited_rooms: set[str]) -> str | None:
    """The first direction of a shortest walk to a room not visited yet."""
    graph = room_graph(facts)
    start = current_room(facts)
    if start is None:
        return None
    queue: deque[tuple[str, str | None]] = deque([(start, None)])
    reached = {start}
    while queue:
        room, first = queue.popleft()
        if room not in visited_rooms:
            return first
        for direction, target in sorted(graph.get(room, {}).items()):
            if target not in reached:
                reached.add(target)
                queue.append((target, first or direction))
    return None


def relevant_objects(goal_objects: set[str], plan_actions: list[Any]) -> frozenset[str]:
    """Ids of things a win condition or the current winning plan mentions."""
    ids = set(goal_objects)
    for action in plan_actions:
        ids.update(v.name for v in action.variables)
    return frozenset(ids - {PLAYER})
