"""Record keys of a belief and its projection onto a gap, as `WorldKeys` sets."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pos_agent.belief.model import Belief, Gap
from pos_agent.health.distance import WorldKeys

_WORD = re.compile(r"[a-z0-9]+")
# Words that carry no reference to a record; without this every gap "overlaps" everything.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "is",
        "are",
        "be",
        "it",
        "its",
        "this",
        "that",
        "with",
        "from",
        "by",
        "into",
        "onto",
        "some",
        "any",
        "find",
        "where",
        "what",
        "which",
        "how",
        "whether",
        "there",
        "here",
        "put",
        "place",
        "take",
        "get",
        "make",
        "your",
        "you",
        "task",
        "goal",
        "need",
        "needs",
        "not",
        "no",
        "yes",
        "do",
        "does",
        "done",
    ]
)


@dataclass(frozen=True, slots=True)
class Projection:
    """The part of the world a gap concerns: record ids by kind."""

    entities: frozenset[str]
    states: frozenset[str]
    relations: frozenset[str]

    @property
    def ids(self) -> frozenset[str]:
        return self.entities | self.states | self.relations


def world_keys(belief: Belief) -> WorldKeys:
    """The entity, state and relation key sets of the whole world."""
    return WorldKeys(
        entities=frozenset(belief.entities),
        states=frozenset(s.key for s in belief.states.values()),
        relations=frozenset(r.key for r in belief.relations.values()),
    )


def focus_keys(belief: Belief, gap: Gap | str | None) -> WorldKeys:
    """The key sets of the world projected onto one gap (`W^Delta`); empty without a gap.

    `gap` is a gap id of this belief, or a `Gap` record, which may come from another belief:
    health projects every past world of its window onto the *current* active gap (its refs and
    text), whether or not that past belief had the gap.
    """
    projection = project(belief, gap)
    return WorldKeys(
        entities=projection.entities,
        states=frozenset(belief.states[i].key for i in projection.states),
        relations=frozenset(belief.relations[i].key for i in projection.relations),
    )


def project(belief: Belief, gap: Gap | str | None) -> Projection:
    """Entities the gap refers to (directly or through a state/relation), their one-hop
    neighbours through relations, the states of those entities and the relations among them.
    A gap without refs falls back to word overlap between its text and the records.

    `gap` is an id looked up in `belief`, or a `Gap` record applied as it is: refs the belief
    does not hold select nothing, so a world from before the gap projects to what it already
    held of the gap's records."""
    if isinstance(gap, str):
        gap = belief.gaps.get(gap)
    if gap is None:
        return Projection(frozenset(), frozenset(), frozenset())
    seeds = _seed_entities(belief, gap)
    # A relation end is an entity or a state; either way it stands for an entity here.
    ends: dict[str, tuple[str | None, str | None]] = {
        rel.id: (belief.entity_of(rel.src), belief.entity_of(rel.dst))
        for rel in belief.relations.values()
    }
    entities = set(seeds)
    for src, dst in ends.values():
        if src in seeds and dst is not None:
            entities.add(dst)
        if dst in seeds and src is not None:
            entities.add(src)
    states = frozenset(s.id for s in belief.states.values() if s.entity in entities)
    relations = frozenset(
        rel_id for rel_id, (src, dst) in ends.items() if src in entities and dst in entities
    )
    return Projection(frozenset(entities), states, relations)


def _seed_entities(belief: Belief, gap: Gap) -> set[str]:
    seeds: set[str] = set()
    for ref in gap.refs:
        entity = belief.entity_of(ref)
        if entity is not None:
            seeds.add(entity)
            continue
        relation = belief.relations.get(ref)
        if relation is not None:
            for end in (relation.src, relation.dst):
                end_entity = belief.entity_of(end)
                if end_entity is not None:
                    seeds.add(end_entity)
    if gap.refs:
        return seeds
    words = _words(gap.text)
    if not words:
        return seeds
    for record in belief.entities.values():
        if words & _words(f"{record.name} {record.type}"):
            seeds.add(record.id)
    for state in belief.states.values():
        if words & _words(f"{state.attribute} {state.value}"):
            seeds.add(state.entity)
    return seeds


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1}
