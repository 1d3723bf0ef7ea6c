"""The belief data model (docs/concepts/belief.md): entities, states, relations and gaps with engine ids.

Records are frozen dataclasses; a `Belief` is never mutated in place — `apply_patch` builds a
new one. Each record carries its Jaccard key, computed once when the
record is created, so the per-step health computation only gathers keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pos_agent.kinds import GapKind

SourceKind = Literal["observed", "inferred"]
SOURCES: tuple[SourceKind, ...] = ("observed", "inferred")
Scalar = str | int | float | bool

_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = ".,;:!?\"'`()[]{}"


def normalize_text(text: str) -> str:
    """Lower-case, collapse whitespace and strip edge punctuation: the comparison form of a value."""
    return _SPACES.sub(" ", text).strip().strip(_EDGE_PUNCTUATION).strip().lower()


def id_order(record_id: str) -> tuple[str, int]:
    """Sort key for engine ids (`e2` before `e10`)."""
    prefix = record_id.rstrip("0123456789")
    digits = record_id[len(prefix) :]
    return (prefix, int(digits) if digits else 0)


def round_confidence(confidence: float) -> str:
    """Confidence rounded to the nearest 0.05, as it appears in record keys."""
    return f"{round(confidence * 20) / 20:.2f}"


@dataclass(frozen=True, slots=True)
class Entity:
    """A thing in the world the task is about (an object, a place, a patient, a service)."""

    id: str
    name: str
    type: str = "object"
    attrs: tuple[tuple[str, Scalar], ...] = ()

    @property
    def key(self) -> str:
        return self.id


@dataclass(frozen=True, slots=True)
class State:
    """One attribute of one entity: a slot `(entity, attribute)` holds exactly one current value."""

    id: str
    entity: str
    attribute: str
    value: str
    confidence: float
    source: SourceKind = "inferred"
    evidence: tuple[int, ...] = ()
    quote: str | None = None
    key: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        key = "|".join(
            (
                self.entity,
                normalize_text(self.attribute),
                normalize_text(self.value),
                round_confidence(self.confidence),
            )
        )
        object.__setattr__(self, "key", key)

    @property
    def slot(self) -> tuple[str, str]:
        return (self.entity, normalize_text(self.attribute))


@dataclass(frozen=True, slots=True)
class Relation:
    """A typed edge between two entities or states (`mug inside microwave`)."""

    id: str
    src: str
    type: str
    dst: str
    confidence: float
    source: SourceKind = "inferred"
    evidence: tuple[int, ...] = ()
    quote: str | None = None
    key: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        key = "|".join(
            (self.src, normalize_text(self.type), self.dst, round_confidence(self.confidence))
        )
        object.__setattr__(self, "key", key)

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.src, normalize_text(self.type), self.dst)


@dataclass(frozen=True, slots=True)
class Gap:
    """What the agent does not yet know (epistemic) or has not yet achieved (achievement)."""

    id: str
    kind: GapKind
    text: str
    refs: tuple[str, ...] = ()
    opened_at: int = 0
    resolved_at: int | None = None

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None


@dataclass(frozen=True, slots=True)
class Belief:
    """`B = (world, goal, gaps, active_gap_id, step)`; the world is entities, states, relations.

    The dicts are owned by this belief and must be treated as read-only: every change goes through
    `apply_patch`, which copies what it changes. `next_id` holds the engine's id counters per
    record prefix so that ids are never reused, even after a removal.
    """

    goal: str
    entities: dict[str, Entity] = field(default_factory=dict)
    states: dict[str, State] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    gaps: dict[str, Gap] = field(default_factory=dict)
    active_gap_id: str | None = None
    step: int = 0
    next_id: dict[str, int] = field(default_factory=lambda: {"e": 1, "s": 1, "r": 1, "g": 1})

    @property
    def open_gaps(self) -> list[Gap]:
        return [gap for gap in self.gaps.values() if gap.is_open]

    @property
    def active_gap(self) -> Gap | None:
        gap = self.gaps.get(self.active_gap_id) if self.active_gap_id else None
        return gap if gap is not None and gap.is_open else None

    def open_gap_ids(self, kind: GapKind) -> frozenset[str]:
        return frozenset(g.id for g in self.gaps.values() if g.is_open and g.kind == kind)

    def record(self, record_id: str) -> Entity | State | Relation | Gap | None:
        """Any record by id, whatever its kind."""
        for table in (self.entities, self.states, self.relations, self.gaps):
            found = table.get(record_id)
            if found is not None:
                return found
        return None

    def entity_of(self, record_id: str) -> str | None:
        """The entity a record is about: itself, a state's entity, or None."""
        if record_id in self.entities:
            return record_id
        state = self.states.get(record_id)
        return state.entity if state is not None else None

    def at_step(self, step: int) -> Belief:
        """The same belief stamped with a new step number."""
        return replace(self, step=step)

    @property
    def size(self) -> int:
        """Number of world records (entities + states + relations)."""
        return len(self.entities) + len(self.states) + len(self.relations)

    # -- JSON ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON-able dict; `Belief.from_dict(b.to_dict()) == b`."""
        return {
            "goal": self.goal,
            "step": self.step,
            "active_gap_id": self.active_gap_id,
            "next_id": dict(self.next_id),
            "entities": [
                {"id": e.id, "name": e.name, "type": e.type, "attrs": dict(e.attrs)}
                for e in self.entities.values()
            ],
            "states": [
                _with_provenance(
                    s, {"entity": s.entity, "attribute": s.attribute, "value": s.value}
                )
                for s in self.states.values()
            ],
            "relations": [
                _with_provenance(r, {"src": r.src, "type": r.type, "dst": r.dst})
                for r in self.relations.values()
            ],
            "gaps": [
                {
                    "id": g.id,
                    "kind": g.kind,
                    "text": g.text,
                    "refs": list(g.refs),
                    "opened_at": g.opened_at,
                    "resolved_at": g.resolved_at,
                }
                for g in self.gaps.values()
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Belief:
        """Rebuild a belief written by `to_dict`; raises `ValueError` on anything else."""
        try:
            entities = {
                e["id"]: Entity(
                    id=e["id"],
                    name=e["name"],
                    type=e.get("type", "object"),
                    attrs=tuple(sorted(e.get("attrs", {}).items())),
                )
                for e in data["entities"]
            }
            states = {
                s["id"]: State(
                    id=s["id"],
                    entity=s["entity"],
                    attribute=s["attribute"],
                    value=s["value"],
                    **_provenance_of(s),
                )
                for s in data["states"]
            }
            relations = {
                r["id"]: Relation(
                    id=r["id"], src=r["src"], type=r["type"], dst=r["dst"], **_provenance_of(r)
                )
                for r in data["relations"]
            }
            gaps = {
                g["id"]: Gap(
                    id=g["id"],
                    kind=g["kind"],
                    text=g["text"],
                    refs=tuple(g.get("refs", [])),
                    opened_at=int(g.get("opened_at", 0)),
                    resolved_at=None if g.get("resolved_at") is None else int(g["resolved_at"]),
                )
                for g in data["gaps"]
            }
            return cls(
                goal=str(data["goal"]),
                entities=entities,
                states=states,
                relations=relations,
                gaps=gaps,
                active_gap_id=data.get("active_gap_id"),
                step=int(data.get("step", 0)),
                next_id={str(k): int(v) for k, v in data.get("next_id", {}).items()}
                or {"e": 1, "s": 1, "r": 1, "g": 1},
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a serialized belief: {exc!r}") from exc


def _with_provenance(record: State | Relation, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": record.id,
        **fields,
        "confidence": record.confidence,
        "source": record.source,
        "evidence": list(record.evidence),
        "quote": record.quote,
    }


def _provenance_of(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "confidence": float(data["confidence"]),
        "source": data.get("source", "inferred"),
        "evidence": tuple(int(x) for x in data.get("evidence", [])),
        "quote": data.get("quote"),
    }
