"""A real TextWorld game with its oracle: the true facts, the winning plan, what has been seen.

The game runs as compiled (`.z8` played by Jericho); TextWorld's state tracking follows it from
the game's own action events, which gives the true facts and the game's winning policy at each
step. The oracle belief (see `OracleState`) is built from those facts:

- world: the true facts about things an observation has shown so far (the player, what it
  carries and the room it is in are always known);
- achievement gaps: the facts of the quests' win conditions that do not hold, for the quests
  not completed yet (TextWorld marks a quest completed when its condition held once: a taken
  ingredient later cooked into the meal stays done); epistemic gaps: goal objects not yet seen;
- focus: facts about the first open win fact's objects, plus the player's location;
- plan length: the length of the winning policy TextWorld tracks from the current state. It
  starts as the quest's solution, adds the reverse of every action that undid part of it and
  drops every stretch that became unnecessary, so it is the shortest plan TextWorld knows.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_trapbench.records import OracleState

# Entities that are always known to the agent: itself and what it carries.
PLAYER, INVENTORY = "P", "I"
ALWAYS_KNOWN = {PLAYER: "player", INVENTORY: "inventory"}


_PROMPT = re.compile(r"\n>[^\n]*$")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


def clean_feedback(text: str) -> str:
    """The game's text without the interpreter's trailing prompt and status line, and with
    runs of blank lines collapsed to one.

    Jericho appends `>` and the status bar (room name, score/moves) to every answer; the move
    counter would make every observation unique, which no agent harness shows as game text.
    TextWorld's state tracking removes its action tags and leaves their lines blank."""
    return _BLANK_LINES.sub("\n\n", _PROMPT.sub("", text.rstrip())).strip()


class GameError(RuntimeError):
    """The game cannot be played as needed (it failed to load, or lost its tracking)."""


class SearchLimit(RuntimeError):
    """A search of corpus building went past its bound: the game is skipped."""


MAX_PLAN_ACTIONS = 250
"""Bound on the actions of one winning plan TextWorld rebuilds (the `MAX_STEPS` of a whole
trajectory: a longer plan could not be played out anyway). Real plans have tens of actions."""


@contextmanager
def bounded_plan_tracking(limit: int = MAX_PLAN_ACTIONS) -> Iterator[None]:
    """While inside, TextWorld's rebuilding of a winning plan raises `SearchLimit` past `limit`
    actions.

    TextWorld tracks the winning policy as a dependency tree of actions; after an action that
    undid part of a quest it flattens the tree again, and every action it pops may push its
    reverse back. An action and its reverse can then be popped in turn for ever, the plan
    growing without end inside the game's step (issue 26: a custom quest grew to 10 GB). Only
    the generator is wrapped: a plan within the bound is the same action for action."""
    from textworld.generator.game import ActionDependencyTree

    original = ActionDependencyTree.flatten

    def flatten(tree: Any) -> Iterator[Any]:
        for count, action in enumerate(original(tree), 1):
            if count > limit:
                raise SearchLimit(
                    f"search bound: TextWorld's winning plan went past {limit} actions "
                    "(its policy tracking cycles)"
                )
            yield action

    ActionDependencyTree.flatten = flatten
    try:
        yield
    finally:
        ActionDependencyTree.flatten = original


@dataclass(frozen=True, slots=True)
class Move:
    """A command the game accepts now, with the logic action it performs."""

    command: str
    action: Any
    """`textworld.logic.Action`: its `added` and `removed` facts predict the next state."""

    @property
    def kind(self) -> str:
        return str(self.action.name)

    @property
    def objects(self) -> tuple[str, ...]:
        """Ids of the entities the action involves (the player excepted)."""
        return tuple(v.name for v in self.action.variables if v.name != PLAYER)


class GameSession:
    """One compiled game played through Jericho, with TextWorld's true-state tracking."""

    def __init__(self, game_file: Path) -> None:
        import textworld

        infos = textworld.EnvInfos(
            facts=True,
            policy_commands=True,
            admissible_commands=True,
            objective=True,
            score=True,
            won=True,
            lost=True,
        )
        try:
            with warnings.catch_warnings():
                # Jericho does not list TextWorld's games as supported (score and move detection);
                # TextWorld tracks their state itself, which is what the oracle reads.
                warnings.filterwarnings("ignore", message=".*not fully supported.*")
                self._env = textworld.start(str(game_file), request_infos=infos)
        except Exception as exc:  # TextWorld and Jericho raise many types on a bad file
            raise GameError(f"cannot start {game_file}: {type(exc).__name__}: {exc}") from exc
        self.game = textworld.Game.load(str(game_file.with_suffix(".json")))
        from textworld.generator.inform7 import Inform7Game

        self.inform7 = Inform7Game(self.game)
        """Turns logic actions into the game's commands."""
        self.names = entity_names(self.game)
        self.state: Any = None

    def close(self) -> None:
        self._env.close()

    def reset(self) -> str:
        self.state = self._env.reset()
        return clean_feedback(str(self.state.feedback))

    def step(self, command: str) -> str:
        self.state, _, _ = self._env.step(command)
        return clean_feedback(str(self.state.feedback))

    @property
    def objective(self) -> str:
        return str(self.state["objective"] or "")

    @property
    def facts(self) -> frozenset[Any]:
        """The true facts (`textworld.logic.Proposition`s) of the current state."""
        return frozenset(self.state["_facts"])

    @property
    def won(self) -> bool:
        return bool(self.state["won"])

    @property
    def lost(self) -> bool:
        return bool(self.state["lost"])

    @property
    def score(self) -> int:
        return int(self.state["score"] or 0)

    @property
    def plan(self) -> list[str]:
        """The winning policy from here, as commands; empty once won or when untrackable."""
        return list(self.state["policy_commands"] or [])

    @property
    def plan_actions(self) -> list[Any]:
        return list(self.state["_winning_policy"] or [])

    def moves(self) -> list[Move]:
        """Every command the game accepts now, with its logic action (sorted by command)."""
        actions = list(self.state["_valid_actions"])
        commands = self.inform7.gen_commands_from_actions(actions)
        unique = {command: action for command, action in zip(commands, actions, strict=True)}
        return [Move(c, unique[c]) for c in sorted(unique)]

    def admissible(self) -> set[str]:
        return set(self.state["admissible_commands"] or [])

    def open_goal_facts(self) -> list[Any]:
        """Win-condition facts that do not hold, of the quests not completed yet (in quest
        order, then fact order)."""
        facts = self.facts
        missing: list[Any] = []
        for quest in self.state["_game_progression"].quest_progressions:
            if quest.quest.optional or quest.completed or not quest.win_events:
                continue
            condition = quest.win_events[0].event.condition.preconditions
            missing += [f for f in sorted(condition, key=str) if f not in facts]
        return missing

    def goal_objects(self) -> set[str]:
        """Ids of the things any quest's win conditions mention (rooms and the player excepted)."""
        ids: set[str] = set()
        for quest in self.game.quests:
            for event in quest.win_events:
                ids.update(n for f in event.condition.preconditions for n in f.names)
        return {i for i in ids if i not in ALWAYS_KNOWN and not i.startswith("r_")}


def entity_names(game: Any) -> dict[str, str]:
    """A readable, unique name per entity id (`red apple`; `box #c_2` when names repeat)."""
    raw = {}
    for entity_id, info in game.infos.items():
        raw[entity_id] = ALWAYS_KNOWN.get(entity_id) or (info.name or entity_id)
    counts: dict[str, int] = {}
    for name in raw.values():
        counts[name] = counts.get(name, 0) + 1
    return {i: (n if counts[n] == 1 else f"{n} #{i}") for i, n in raw.items()}


def format_fact(fact: Any, names: dict[str, str]) -> str:
    """`in(red apple, fridge)`: a fact with entity names instead of ids."""
    return f"{fact.name}({', '.join(names.get(n, n) for n in fact.names)})"


class Oracle:
    """Builds the oracle belief of each step from the true facts and the observations."""

    def __init__(self, session: GameSession) -> None:
        self.session = session
        self.names = session.names
        self.goal_objects = sorted(session.goal_objects())
        self._patterns = {
            entity_id: re.compile(rf"\b{re.escape(_plain(name))}\b")
            for entity_id, name in session.names.items()
            if entity_id not in ALWAYS_KNOWN
        }
        self.seen: set[str] = set(ALWAYS_KNOWN)
        self._previous: frozenset[str] = frozenset()

    def observe(self, text: str, plan_length: int) -> OracleState:
        """The oracle state after an observation, as a diff against the previous one."""
        facts = self.session.facts
        lowered = text.lower()
        for entity_id, pattern in self._patterns.items():
            if entity_id not in self.seen and pattern.search(lowered):
                self.seen.add(entity_id)
        room = current_room(facts)
        if room is not None:
            self.seen.add(room)
        # The agent knows what it carries, described or not.
        self.seen.update(f.names[0] for f in facts if f.name == "in" and f.names[1] == INVENTORY)
        seen_facts = [f for f in facts if all(n in self.seen for n in f.names)]
        known = frozenset(format_fact(f, self.names) for f in seen_facts)
        open_goals = [] if self.session.won else self.session.open_goal_facts()
        about = {PLAYER}
        if open_goals:
            about |= {n for n in open_goals[0].names if n != INVENTORY}
        state = OracleState(
            added=sorted(known - self._previous),
            removed=sorted(self._previous - known),
            about=sorted(self.names[n] for n in about),
            focus=sorted(
                format_fact(f, self.names) for f in seen_facts if about.intersection(f.names)
            ),
            open_goals=[format_fact(f, self.names) for f in open_goals],
            unseen_goal_objects=[self.names[o] for o in self.goal_objects if o not in self.seen],
            plan_length=plan_length,
        )
        self._previous = known
        return state


def current_room(facts: Iterable[Any]) -> str | None:
    """The id of the room the player is in."""
    for fact in facts:
        if fact.name == "at" and fact.names[0] == PLAYER:
            return str(fact.names[1])
    return None


def _plain(name: str) -> str:
    return name.split(" #")[0].lower()
