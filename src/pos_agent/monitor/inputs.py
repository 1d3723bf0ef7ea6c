"""What one step's input says, before progress and novelty are known: the world keys, the focus
and the open gaps, from a PoS `Belief`, from `Facts` (or plain fact strings), or from the
observation text alone (model-free), every string through the volatile rules first."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pos_agent.belief import Belief, focus_keys, world_keys
from pos_agent.health import WorldKeys
from pos_agent.monitor.failures import failure_signature
from pos_agent.monitor.keys import FactParser, Facts, TextKeys, focus_entities, goal_words
from pos_agent.monitor.report import BeliefSource
from pos_agent.monitor.volatile import Normaliser

BeliefInput = Belief | Facts | Iterable[str] | None

# Without any goal information, one achievement gap stands for "the task is not done yet".
GOAL_GAP = frozenset({"goal"})


@dataclass(slots=True)
class StepInput:
    """What one step's input says, before progress and novelty are known (never changed once
    made; not frozen, which makes it cheaper to build)."""

    source: BeliefSource
    world: WorldKeys
    focus: WorldKeys
    epistemic: frozenset[str]
    achievement: frozenset[str]
    belief: Belief | None = None
    facts: frozenset[str] | None = None
    about: frozenset[str] | None = None
    """Facts input: the entities the focus is about (None: the whole world)."""


class InputReader:
    """Reads each step's input into keys, caching what the volatile rules and the failure
    signatures make of texts already seen (the caches outlive an episode: they depend on the
    text alone)."""

    def __init__(self, goal: str | None, normalise: Normaliser) -> None:
        self.normalise = normalise
        self.text = TextKeys(goal_words(goal))
        self.facts = FactParser()
        self._fact_cache: dict[str, str] = {}
        self._failures: dict[str, str | None] = {}

    def read(self, observation: str, belief: BeliefInput) -> StepInput:
        """World keys, focus and gaps of one step."""
        if belief is None:
            world, focus = self.text.keys(observation)
            return StepInput("observations", world, focus, frozenset(), GOAL_GAP)
        if isinstance(belief, Belief):
            return StepInput(
                "belief",
                world_keys(belief),
                focus_keys(belief, belief.active_gap_id),
                belief.open_gap_ids("epistemic"),
                belief.open_gap_ids("achievement"),
                belief=belief,
            )
        facts = self._clean_facts(
            belief if isinstance(belief, Facts) else Facts(world=frozenset(belief))
        )
        about = focus_entities(facts, self.facts)
        if facts.goals:
            achievement = facts.goals - facts.world
        else:
            achievement = frozenset() if facts.questions else GOAL_GAP
        return StepInput(
            "facts",
            self.facts.keys(facts.world),
            self.facts.about(facts.world, about),
            facts.questions,
            achievement,
            facts=facts.world,
            about=about,
        )

    def failure(self, clean: str) -> str | None:
        """The failure the observation reports (`failures.failure_signature`), once per text."""
        cache = self._failures
        if clean in cache:
            return cache[clean]
        failure = failure_signature(clean)
        if len(cache) < 50_000:
            cache[clean] = failure
        return failure

    def _clean_facts(self, facts: Facts) -> Facts:
        """`facts` with every fact string that holds a digit through the volatile rules, so
        that a new job id or timestamp in a fact is not a new thing (other facts as given)."""
        world = self._clean_set(facts.world)
        goals = self._clean_set(facts.goals)
        questions = self._clean_set(facts.questions)
        about = self._clean_set(facts.about) if facts.about is not None else None
        if (
            world is facts.world
            and goals is facts.goals
            and questions is facts.questions
            and about is facts.about
        ):
            return facts
        return Facts(world=world, goals=goals, questions=questions, about=about)

    def _clean_set(self, strings: frozenset[str]) -> frozenset[str]:
        if not strings:
            return strings
        cache = self._fact_cache
        changed = False
        out = []
        for fact in strings:
            clean = cache.get(fact)
            if clean is None:
                clean = self.normalise(fact) if _DIGITS.search(fact) else fact
                if len(cache) < 200_000:
                    cache[fact] = clean
            changed = changed or clean is not fact
            out.append(clean)
        return frozenset(out) if changed else strings


_DIGITS = re.compile(r"\d+")


def observation_key(clean: str) -> str:
    """What tells outputs apart when a belief gives the world: the normalised text with its
    spaces collapsed and the numbers the volatile rules left masked (a speed, an uptime)."""
    return _DIGITS.sub("#", " ".join(clean.split()))
