"""Belief updates as patches (DESIGN §2): validate each operation, apply the valid ones.

`apply_patch` is pure and total: whatever JSON a model writes — wrong types, unknown ops, ids it
made up, NaN confidences, a dict where a list belongs — comes back as rejected operations with
reasons, never as an exception. Ids are assigned here; the model refers to existing records by
id, or to entities by their (unique) name, which lets one patch create an entity and describe it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from pos_agent.belief.model import (
    SOURCES,
    Belief,
    Entity,
    Gap,
    GapKind,
    Relation,
    Scalar,
    SourceKind,
    State,
    normalize_text,
)
from pos_agent.kinds import GAP_KINDS

# The patch-operation names, spelled once: the handler table below (`_<name>` for each) and the
# model's patch schema (updater/schemas.py, tied by a test) derive from them.
PatchOpName = Literal[
    "upsert_entity",
    "upsert_state",
    "remove_state",
    "upsert_relation",
    "remove_relation",
    "add_gap",
    "resolve_gap",
    "set_active_gap",
]
PATCH_OPS: tuple[PatchOpName, ...] = get_args(PatchOpName)
MAX_TEXT = 2_000  # longer strings are truncated: they would only bloat every later prompt


@dataclass(frozen=True, slots=True)
class RejectedOp:
    """An operation `apply_patch` did not apply, with the reason in words a model can act on."""

    index: int  # position in the patch; -1 when the patch itself was unusable
    op: Any
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "op": _jsonable(self.op), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class PatchOutcome:
    """Everything `apply_patch_detailed` knows about one patch."""

    belief: Belief
    rejected: list[RejectedOp]
    applied: list[dict[str, Any]]  # the accepted ops, normalized (resolved ids, defaults filled)
    changed: frozenset[str]  # ids of records created, changed or removed


class _Reject(Exception):
    """Internal: one operation is invalid (never escapes this module)."""


def apply_patch(belief: Belief, patch: Any) -> tuple[Belief, list[RejectedOp]]:
    """Apply the valid operations of `patch` to `belief`; return the new belief and the rejects."""
    outcome = apply_patch_detailed(belief, patch)
    return outcome.belief, outcome.rejected


def apply_patch_detailed(belief: Belief, patch: Any, *, checked: bool = True) -> PatchOutcome:
    """`apply_patch` plus the normalized accepted ops and the ids they touched.

    `checked=False` (the no_consistency ablation: only schema validity) skips the structural
    consistency checks: two values for one slot in one patch (the last one stands), an unknown
    entity named by a state, relation or gap (it is created under that name), and evidence steps
    outside the episode (kept as given). What cannot be applied at all (removing or resolving a
    record that does not exist) is still reported."""
    ops, rejected = _as_op_list(patch)
    draft = _Draft(belief, checked=checked)
    for index, raw in enumerate(ops):
        try:
            if not isinstance(raw, Mapping):
                raise _Reject(f"an operation must be a JSON object, got {type(raw).__name__}")
            name = raw.get("op")
            handler = _HANDLERS.get(name) if isinstance(name, str) else None
            if handler is None:
                raise _Reject(f"unknown op {name!r}; expected one of {', '.join(PATCH_OPS)}")
            draft.applied.append(handler(draft, raw))
        except _Reject as exc:
            rejected.append(RejectedOp(index, raw, str(exc)))
        except Exception as exc:  # defensive: a bug here must not kill an episode
            rejected.append(RejectedOp(index, raw, f"internal error: {exc!r}"))
    return draft.finish(rejected)


# -- the draft: copy-on-write tables and lazily built indexes ----------------------------------


class _Draft:
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


# -- field readers: each raises _Reject with a reason a model can act on -----------------------


def _text(raw: Mapping[str, Any], key: str, *, required: bool = True, scalar: bool = False) -> str:
    value = raw.get(key)
    if value is None:
        if required:
            raise _Reject(f"missing field {key!r}")
        return ""
    if scalar and isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise _Reject(f"field {key!r} must be finite")
        value = str(value)
    elif scalar and isinstance(value, bool):
        value = "true" if value else "false"
    if not isinstance(value, str):
        raise _Reject(f"field {key!r} must be a string, got {type(value).__name__}")
    value = value.strip()[:MAX_TEXT]
    if required and not value:
        raise _Reject(f"field {key!r} must not be empty")
    return value


def _confidence(raw: Mapping[str, Any], default: float) -> float:
    value = raw.get("confidence")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Reject(f"confidence must be a number in [0, 1], got {value!r}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise _Reject(f"confidence {value!r} is outside [0, 1]")
    return float(value)


def _evidence(raw: Mapping[str, Any], step: int, *, checked: bool = True) -> tuple[int, ...]:
    value = raw.get("evidence")
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple) else [value]
    steps: list[int] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise _Reject(f"evidence must be step numbers, got {item!r}")
        if isinstance(item, float) and (not math.isfinite(item) or item != int(item)):
            raise _Reject(f"evidence step {item!r} is not a whole number")
        number = int(item)
        if checked and (number < 0 or number > step):
            raise _Reject(f"evidence step {number} does not exist (current step is {step})")
        if number not in steps:
            steps.append(number)
    return tuple(steps)


def _source(raw: Mapping[str, Any], evidence: tuple[int, ...]) -> SourceKind:
    value = raw.get("source")
    if value is None:
        return "observed" if evidence else "inferred"
    if isinstance(value, str):
        lowered = value.strip().lower()
        for source in SOURCES:
            if lowered == source:
                return source
    raise _Reject(f"source must be 'observed' or 'inferred', got {value!r}")


def _quote(raw: Mapping[str, Any]) -> str | None:
    value = raw.get("quote")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Reject(f"quote must be a string, got {type(value).__name__}")
    return value[:MAX_TEXT]


def _resolve(draft: _Draft, ref: Any, *, kinds: str, field_name: str) -> str:
    """Resolve a reference to a record id. `kinds` is a subset of 'esrg'; entities also by name."""
    if not isinstance(ref, str) or not ref.strip():
        raise _Reject(f"{field_name} must be a record id or entity name, got {ref!r}")
    ref = ref.strip()
    tables: dict[str, Mapping[str, object]] = {
        "e": draft.entities,
        "s": draft.states,
        "r": draft.relations,
        "g": draft.gaps,
    }
    for kind in kinds:
        if ref in tables[kind]:
            return ref
    if "e" in kinds:
        ids = draft.names.get(normalize_text(ref), [])
        if len(ids) == 1:
            return ids[0]
        if len(ids) > 1:
            raise _Reject(
                f"{field_name} {ref!r} names several entities ({', '.join(ids)}); use an id"
            )
        if not ids and not draft.checked and field_name in _NAMING_FIELDS:
            return _new_entity(draft, ref)
    raise _Reject(
        f"{field_name} {ref!r} is not a known id" + (" or entity name" if "e" in kinds else "")
    )


_NAMING_FIELDS = ("entity", "src", "dst", "ref")  # fields that may name an entity


def _new_entity(draft: _Draft, name: str) -> str:
    """An entity for a name no record has (unchecked patches: the reference is taken as given)."""
    entity = Entity(id=draft.fresh_id("e"), name=name, type="object", attrs=())
    draft.put_entity(entity, None)
    return entity.id


# -- one handler per op: validate fully, then change the draft, return the normalized op -------


def _upsert_entity(draft: _Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    given_id = raw.get("id")
    name = _text(raw, "name", required=given_id is None)
    etype = _text(raw, "type", required=False) or None
    attrs_raw = raw.get("attrs")
    attrs: dict[str, Scalar] | None = None
    if attrs_raw is not None:
        if not isinstance(attrs_raw, Mapping):
            raise _Reject("attrs must be an object of scalar values")
        attrs = {}
        for key, value in attrs_raw.items():
            if not isinstance(key, str) or not isinstance(value, str | int | float | bool):
                raise _Reject(f"attrs[{key!r}] must be a string, number or boolean")
            if isinstance(value, float) and not math.isfinite(value):
                raise _Reject(f"attrs[{key!r}] must be finite")
            attrs[key] = value
    old: Entity | None = None
    if given_id is not None:
        entity_id = _resolve(draft, given_id, kinds="e", field_name="id")
        old = draft.entities[entity_id]
    else:
        ids = draft.names.get(normalize_text(name), [])
        if len(ids) > 1:
            raise _Reject(f"name {name!r} matches several entities ({', '.join(ids)}); give the id")
        old = draft.entities[ids[0]] if ids else None
        entity_id = old.id if old is not None else draft.fresh_id("e")
    entity = Entity(
        id=entity_id,
        name=name or (old.name if old else ""),
        type=etype or (old.type if old else "object"),
        attrs=tuple(sorted(attrs.items())) if attrs is not None else (old.attrs if old else ()),
    )
    if entity != old:
        draft.put_entity(entity, old)
    return {"op": "upsert_entity", "id": entity.id, "name": entity.name, "type": entity.type}


def _upsert_state(draft: _Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    existing: State | None = None
    if raw.get("id") is not None:
        existing = draft.states[_resolve(draft, raw.get("id"), kinds="s", field_name="id")]
    if raw.get("entity") is not None or existing is None:
        entity_id = _resolve(draft, raw.get("entity"), kinds="e", field_name="entity")
    else:
        entity_id = existing.entity
    attribute = _text(raw, "attribute", required=existing is None) or (
        existing.attribute if existing else ""
    )
    value = _text(raw, "value", scalar=True)
    evidence = _evidence(raw, draft.step, checked=draft.checked)
    source = _source(raw, evidence)
    confidence = _confidence(raw, 1.0 if source == "observed" else 0.5)
    quote = _quote(raw)
    slot = (entity_id, normalize_text(attribute))
    seen = draft.slot_values.setdefault(slot, [])
    if seen and normalize_text(value) not in seen and draft.checked:
        raise _Reject(
            f"conflict: this patch already set {entity_id}.{attribute} to {seen[0]!r}; "
            "one slot holds one value"
        )
    slot_owner = draft.slots.get(slot)
    if existing is not None and slot_owner not in (None, existing.id):
        raise _Reject(f"slot {entity_id}.{attribute} already belongs to state {slot_owner}")
    seen.append(normalize_text(value))
    state_id = existing.id if existing else slot_owner or draft.fresh_id("s")
    previous = draft.states.get(state_id)
    if previous is not None and previous.slot != slot:
        draft.slots.pop(previous.slot, None)
    state = State(state_id, entity_id, attribute, value, confidence, source, evidence, quote)
    if state != previous:
        draft.put_state(state)
    return {
        "op": "upsert_state",
        "id": state_id,
        "entity": entity_id,
        "attribute": attribute,
        "value": value,
        "confidence": confidence,
        "source": source,
        "evidence": list(evidence),
        "quote": quote,
    }


def _remove_state(draft: _Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    if raw.get("id") is not None:
        state = draft.states[_resolve(draft, raw.get("id"), kinds="s", field_name="id")]
    else:
        entity_id = _resolve(draft, raw.get("entity"), kinds="e", field_name="entity")
        attribute = _text(raw, "attribute")
        state_id = draft.slots.get((entity_id, normalize_text(attribute)))
        if state_id is None:
            raise _Reject(f"no state {entity_id}.{attribute} to remove")
        state = draft.states[state_id]
    draft.drop_state(state)
    return {"op": "remove_state", "id": state.id}


def _upsert_relation(draft: _Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    existing: Relation | None = None
    if raw.get("id") is not None:
        existing = draft.relations[_resolve(draft, raw.get("id"), kinds="r", field_name="id")]
    src = (
        _resolve(draft, raw.get("src"), kinds="es", field_name="src")
        if raw.get("src") is not None or existing is None
        else existing.src
    )
    dst = (
        _resolve(draft, raw.get("dst"), kinds="es", field_name="dst")
        if raw.get("dst") is not None or existing is None
        else existing.dst
    )
    rtype = _text(raw, "type", required=existing is None) or (existing.type if existing else "")
    if src == dst:
        raise _Reject(f"a relation needs two different ends, got {src} twice")
    evidence = _evidence(raw, draft.step, checked=draft.checked)
    source = _source(raw, evidence)
    confidence = _confidence(raw, 1.0 if source == "observed" else 0.5)
    triple = (src, normalize_text(rtype), dst)
    owner = draft.triples.get(triple)
    if existing is not None and owner not in (None, existing.id):
        raise _Reject(f"relation {src} {rtype} {dst} already exists as {owner}")
    relation_id = existing.id if existing else owner or draft.fresh_id("r")
    previous = draft.relations.get(relation_id)
    relation = Relation(relation_id, src, rtype, dst, confidence, source, evidence, _quote(raw))
    if relation != previous:
        draft.put_relation(relation, previous)
    return {
        "op": "upsert_relation",
        "id": relation_id,
        "src": src,
        "type": rtype,
        "dst": dst,
        "confidence": confidence,
        "source": source,
        "evidence": list(evidence),
    }


def _remove_relation(draft: _Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    if raw.get("id") is not None:
        relation = draft.relations[_resolve(draft, raw.get("id"), kinds="r", field_name="id")]
    else:
        src = _resolve(draft, raw.get("src"), kinds="es", field_name="src")
        dst = _resolve(draft, raw.get("dst"), kinds="es", field_name="dst")
        relation_id = draft.triples.get((src, normalize_text(_text(raw, "type")), dst))
        if relation_id is None:
            raise _Reject(f"no relation {src} {raw.get('type')} {dst} to remove")
        relation = draft.relations[relation_id]
    draft.drop_relation(relation)
    return {"op": "remove_relation", "id": relation.id}


def _gap_kind(value: Any) -> GapKind:
    if isinstance(value, str):
        lowered = value.strip().lower()
        for kind in GAP_KINDS:
            if lowered == kind:
                return kind
    raise _Reject(f"kind must be 'epistemic' or 'achievement', got {value!r}")


def _refs(draft: _Draft, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
    refs: list[str] = []
    for item in items:
        ref = _resolve(draft, item, kinds="esr", field_name="ref")
        if ref not in refs:
            refs.append(ref)
    return tuple(refs)


def _add_gap(draft: _Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    kind = _gap_kind(raw.get("kind"))
    text = _text(raw, "text")
    refs = _refs(draft, raw.get("refs"))
    duplicate = next(
        (
            g
            for g in draft.gaps.values()
            if g.is_open and g.kind == kind and normalize_text(g.text) == normalize_text(text)
        ),
        None,
    )
    gap = duplicate or Gap(draft.fresh_id("g"), kind, text, refs, opened_at=draft.step)
    if duplicate is None:
        draft.gaps[gap.id] = gap
        draft.changed.add(gap.id)
    if raw.get("activate") is True:
        draft.active_gap_id = gap.id
    return {"op": "add_gap", "id": gap.id, "kind": kind, "text": text, "refs": list(gap.refs)}


def _open_gap(draft: _Draft, raw: Mapping[str, Any]) -> Gap:
    gap_id = _resolve(draft, raw.get("id"), kinds="g", field_name="id")
    gap = draft.gaps[gap_id]
    if not gap.is_open:
        raise _Reject(f"gap {gap_id} was already resolved at step {gap.resolved_at}")
    return gap


def _resolve_gap(draft: _Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    gap = _open_gap(draft, raw)
    draft.gaps[gap.id] = replace(gap, resolved_at=draft.step)
    draft.changed.add(gap.id)
    if draft.active_gap_id == gap.id:
        draft.active_gap_id = None
    return {"op": "resolve_gap", "id": gap.id}


def _set_active_gap(draft: _Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    gap = _open_gap(draft, raw)
    draft.active_gap_id = gap.id
    return {"op": "set_active_gap", "id": gap.id}


_Handler = Callable[[_Draft, Mapping[str, Any]], dict[str, Any]]
_HANDLERS: dict[str, _Handler] = {name: globals()[f"_{name}"] for name in PATCH_OPS}


def _as_op_list(patch: Any) -> tuple[list[Any], list[RejectedOp]]:
    """Accept a list of ops, or an object wrapping one under `ops`/`patch`/`operations`."""
    if isinstance(patch, Mapping):
        for key in ("ops", "patch", "operations"):
            if isinstance(patch.get(key), list):
                return list(patch[key]), []
        if isinstance(patch.get("op"), str):
            return [patch], []
    if isinstance(patch, list | tuple):
        return list(patch), []
    return [], [RejectedOp(-1, patch, "a patch must be a list of operations")]


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of whatever the model sent (for traces)."""
    if depth > 8:
        return repr(value)[:200]
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v, depth + 1) for v in value]
    return repr(value)[:200]
