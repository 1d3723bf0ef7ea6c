"""World keys for the monitor from what a caller has: a `Belief`, plain facts, or only text.

Three sources, in decreasing fidelity:

- a PoS `Belief`: its record keys and its projection onto the active gap;
- `Facts`: plain fact strings such as `in(carrot, fridge)`. A fact with one argument is a state
  of that entity, with two or more a relation; its arguments are entities. Goal facts that do
  not hold are the achievement gaps, open questions the epistemic ones;
- an observation only (model-free): the observation's sentences are the states and its content
  words the entities. This is deterministic and needs no model, but it only sees what the text
  shows, so the monitor says so in its report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pos_agent.health.distance import WorldKeys

_FACT = re.compile(r"^\s*([^()\s]+)\s*\((.*)\)\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# A word names a thing only if it has a letter: numbers left after the volatile rules (a count
# that moved, a speed) are never first-seen things.
_WORD = re.compile(r"(?=[a-z0-9'_-]*[a-z])[a-z0-9][a-z0-9'_-]+")
_SPACES = re.compile(r"\s+")
# Words that name no thing; without this every observation "mentions" everything.
_FUNCTION_WORD_TEXT = (
    "a an the and or but of to in on at by for from with into onto over under is are was were "
    "be been being it its this that these those there here you your yours he she they them his "
    "her their we us our i me my as not no so if then than can cannot could would should will "
    "just also very too some any all each one two what which who whom how where when why while "
    "have has had do does did done get got see seen look looks like well now again only up out "
    "off down about around back yet still ever"
)
FUNCTION_WORDS = frozenset(_FUNCTION_WORD_TEXT.split())
_FUNCTION_WORDS = FUNCTION_WORDS

EMPTY_KEYS = WorldKeys(frozenset(), frozenset(), frozenset())


@dataclass(frozen=True, slots=True)
class Facts:
    """What an agent believes, as plain fact strings (e.g. `at(player, kitchen)`)."""

    world: frozenset[str]
    """Every fact the agent holds true now."""

    goals: frozenset[str] = frozenset()
    """Facts that must hold to win; the ones not in `world` are open achievement gaps."""

    questions: frozenset[str] = frozenset()
    """Open questions (epistemic gaps), e.g. `where(carrot)`; empty when none."""

    about: frozenset[str] | None = None
    """Entities the current subgoal is about, e.g. `{"carrot", "player"}`. The focus is every
    fact that mentions one of them, and earlier steps are projected onto the same entities.
    None: the entities of the first open goal (in sorted order); the whole world if none."""

    def __post_init__(self) -> None:
        for name in ("world", "goals", "questions", "about"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str):
                raise TypeError(f"Facts.{name} must be a collection of strings, not one string")
            object.__setattr__(self, name, frozenset(value))


@dataclass(frozen=True, slots=True)
class FactKeys:
    """One parsed fact: its key and the entities it is about."""

    key: str
    entities: tuple[str, ...]
    relation: bool


@dataclass(slots=True)
class FactParser:
    """Parses fact strings once each (facts repeat from step to step)."""

    _cache: dict[str, FactKeys] = field(default_factory=dict)

    def parse(self, fact: str) -> FactKeys:
        parsed = self._cache.get(fact)
        if parsed is None:
            parsed = _parse_fact(fact)
            if len(self._cache) < 200_000:
                self._cache[fact] = parsed
        return parsed

    def keys(self, facts: Iterable[str]) -> WorldKeys:
        """Entity, state and relation keys of a set of facts."""
        entities: set[str] = set()
        states: list[str] = []
        relations: list[str] = []
        for fact in facts:
            parsed = self.parse(fact)
            entities.update(parsed.entities)
            (relations if parsed.relation else states).append(parsed.key)
        return WorldKeys(frozenset(entities), frozenset(states), frozenset(relations))

    def about(self, facts: Iterable[str], entities: frozenset[str] | None) -> WorldKeys:
        """Keys of the facts that mention one of `entities` (all facts when None)."""
        if entities is None:
            return self.keys(facts)
        parse = self.parse
        return self.keys(f for f in facts if not entities.isdisjoint(parse(f).entities))


def _parse_fact(fact: str) -> FactKeys:
    key = _SPACES.sub(" ", fact.strip())
    match = _FACT.match(key)
    if match is None:
        return FactKeys(key, (), relation=False)
    arguments = tuple(a.strip() for a in match.group(2).split(",") if a.strip())
    return FactKeys(key, arguments, relation=len(arguments) >= 2)


def focus_entities(facts: Facts, parser: FactParser) -> frozenset[str] | None:
    """What the focus of `facts` is about: as given, else the first open goal's entities;
    None means the whole world."""
    if facts.about is not None:
        return facts.about
    open_goals = sorted(facts.goals - facts.world)
    if not open_goals:
        return None
    return frozenset(parser.parse(open_goals[0]).entities)


@dataclass(slots=True)
class TextKeys:
    """Model-free world keys of an observation: its sentences and its content words."""

    goal_words: frozenset[str] = frozenset()
    _cache: dict[str, tuple[WorldKeys, WorldKeys]] = field(default_factory=dict)
    _goal_forms: frozenset[str] | None = None
    """Every word whose singular is a goal word (the goal words and their plurals)."""

    def _forms(self) -> frozenset[str]:
        forms = self._goal_forms
        if forms is None:
            plural = {w + "s" for w in self.goal_words if len(w) > 2 and w[-1] != "s"}
            forms = frozenset(
                w for w in (*self.goal_words, *plural) if _singular(w) in self.goal_words
            )
            self._goal_forms = forms
        return forms

    def keys(self, observation: str) -> tuple[WorldKeys, WorldKeys]:
        """(world, focus) of one observation; the focus is what shares a word with the goal."""
        cached = self._cache.get(observation)
        if cached is not None:
            return cached
        text = observation.lower()
        # `" ".join(part.split())` collapses white space as `_SPACES.sub(" ", part).strip()`
        # does (both use Python's notion of white space), at a fraction of the cost.
        # Set comprehensions: cheaper than generators here.
        sentences = frozenset(
            {s for s in map(" ".join, map(str.split, _SENTENCE_END.split(text))) if s}
        )
        found = _WORD.findall(text)
        words = frozenset(
            {
                w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w  # _singular, inline
                for w in found
                if w not in _FUNCTION_WORDS
            }
        )
        world = WorldKeys(words, sentences, frozenset())
        if self.goal_words:
            forms = self._forms()
            # A word never spans a sentence break (white space), so the words of the text are
            # those of its sentences: without a goal word in the text, no sentence has one.
            in_focus = (
                frozenset(s for s in sentences if not forms.isdisjoint(_WORD.findall(s)))
                if not forms.isdisjoint(found)
                else frozenset()
            )
            focus = WorldKeys(words & self.goal_words, in_focus, frozenset())
        else:
            focus = EMPTY_KEYS
        if len(self._cache) < 50_000:
            self._cache[observation] = (world, focus)
        return world, focus


def goal_words(goal: str | None) -> frozenset[str]:
    """The content words of a goal text."""
    if not goal:
        return frozenset()
    return frozenset(_singular(w) for w in _WORD.findall(goal.lower()) if w not in _FUNCTION_WORDS)


def _singular(word: str) -> str:
    """A word and its plural are one thing (`warning`, `warnings`): a final `s` is dropped
    from words of four letters or more that do not end in `ss` (crude, but the same both
    ways, so only what it merges matters)."""
    if len(word) > 3 and word[-1] == "s" and word[-2] != "s":
        return word[:-1]
    return word
