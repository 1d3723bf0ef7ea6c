"""What a patch is applied to, and what applying it yields (`apply_patch`, patch.py).

`Draft` holds copy-on-write tables of the belief and indexes built on first use, kept in step
as the operations (ops.py) change it; `Reject` is how an operation says it is invalid, with a
reason a model can act on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pos_agent.belief.model import Belief, Entity, Relation, State, normalize_text

MAX_TEXT = 2_000  # longer strings are truncated: they would only bloat every later prompt


@dataclass(frozen=True, slots=True)
class RejectedOp:
    """An operation `apply_patch` did not apply, with the reason in words a model can act on."""

    index: int  # position in the patch; -1 when the patch itself was unusable
    op: Any
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "op": jsonable(self.op), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class PatchOutcome:
    """Everything `apply_patch_detailed` knows about one patch."""

    belief: Belief
    rejected: list[RejectedOp]
    applied: list[dict[str, Any]]  # the accepted ops, normalized (resolved ids, defaults filled)
    changed: frozenset[str]  # ids of records created, changed or removed


class Reject(Exception):
    """One operation is invalid (never escapes `apply_patch`)."""


# -- the draft: copy-on-write tables and lazily built indexes ----------------------------------


class Draft:
    """The belief a patch is being applied to: its tables, the ops applied and the ids changed."""

    def __init__(self, belief: Belief, *, checked: bool = True) -> None:
        self.base = belief
        self.checked = checked
        self.step = belief.step
        self.entities = dict(belief.entities)
        self.states = dict(belief.states)
        self.relations = dict(belief.relations)
        self.gaps = dict(belief.gaps)
        self.active_gap_id = belief.active_gap_id
        self.next_id = dict(belief.next_id)
        self.applied: list[dict[str, Any]] = []
        self.changed: set[str] = set()
        self.slot_values: dict[tuple[str, str], list[str]] = {}
        self._names: dict[str, list[str]] | None = None
        self._slots: dict[tuple[str, str], str] | None = None
        self._triples: dict[tuple[str, str, str], str] | None = None

    def fresh_id(self, prefix: str) -> str:
        number = self.next_id.get(prefix, 1)
        self.next_id[prefix] = number + 1
        return f"{prefix}{number}"

    # indexes, built on first use and kept in step with the draft
    @property
    def names(self) -> dict[str, list[str]]:
        if self._names is None:
            self._names = {}
            for entity in self.entities.values():
                self._names.setdefault(normalize_text(entity.name), []).append(entity.id)
        return self._names

    @property
    def slots(self) -> dict[tuple[str, str], str]:
        if self._slots is None:
            self._slots = {state.slot: state.id for state in self.states.values()}
        return self._slots

    @property
    def triples(self) -> dict[tuple[str, str, str], str]:
        if self._triples is None:
            self._triples = {rel.triple: rel.id for rel in self.relations.values()}
        return self._triples

    def put_entity(self, entity: Entity, old: Entity | None) -> None:
        if self._names is not None:
            if old is not None:
                ids = self._names.get(normalize_text(old.name), [])
                if entity.id in ids:
                    ids.remove(entity.id)
            self._names.setdefault(normalize_text(entity.name), []).append(entity.id)
        self.entities[entity.id] = entity
        self.changed.add(entity.id)

    def put_state(self, state: State) -> None:
        self.states[state.id] = state
        self.slots[state.slot] = state.id
        self.changed.add(state.id)

    def drop_state(self, state: State) -> None:
        del self.states[state.id]
        self.slots.pop(state.slot, None)
        self.changed.add(state.id)
        for rel in [r for r in self.relations.values() if state.id in (r.src, r.dst)]:
            self.drop_relation(rel)
        self.strip_gap_refs(state.id)

    def put_relation(self, relation: Relation, old: Relation | None) -> None:
        if old is not None:
            self.triples.pop(old.triple, None)
        self.relations[relation.id] = relation
        self.triples[relation.triple] = relation.id
        self.changed.add(relation.id)

    def drop_relation(self, relation: Relation) -> None:
        del self.relations[relation.id]
        self.triples.pop(relation.triple, None)
        self.changed.add(relation.id)
        self.strip_gap_refs(relation.id)

    def strip_gap_refs(self, record_id: str) -> None:
        for gap in list(self.gaps.values()):
            if record_id in gap.refs:
                self.gaps[gap.id] = replace(gap, refs=tuple(r for r in gap.refs if r != record_id))

    def finish(self, rejected: list[RejectedOp]) -> PatchOutcome:
        belief = Belief(
            goal=self.base.goal,
            entities=self.entities,
            states=self.states,
            relations=self.relations,
            gaps=self.gaps,
            active_gap_id=self.active_gap_id,
            step=self.step,
            next_id=self.next_id,
        )
        return PatchOutcome(belief, rejected, self.applied, frozenset(self.changed))


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of whatever the model sent (for traces)."""
    if depth > 8:
        return repr(value)[:200]
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, depth + 1) for v in value]
    return repr(value)[:200]
