"""One handler per patch operation: validate the operation fully, then change the
draft, and return the operation normalized (resolved ids, defaults filled); the field readers
they share raise `Reject` with a reason a model can act on."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, Literal, get_args

from pos_agent.belief.draft import MAX_TEXT, Draft, Reject
from pos_agent.belief.model import (
    SOURCES,
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

# -- field readers: each raises Reject with a reason a model can act on -----------------------


def _text(raw: Mapping[str, Any], key: str, *, required: bool = True, scalar: bool = False) -> str:
    value = raw.get(key)
    if value is None:
        if required:
            raise Reject(f"missing field {key!r}")
        return ""
    if scalar and isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise Reject(f"field {key!r} must be finite")
        value = str(value)
    elif scalar and isinstance(value, bool):
        value = "true" if value else "false"
    if not isinstance(value, str):
        raise Reject(f"field {key!r} must be a string, got {type(value).__name__}")
    value = value.strip()[:MAX_TEXT]
    if required and not value:
        raise Reject(f"field {key!r} must not be empty")
    return value


def _confidence(raw: Mapping[str, Any], default: float) -> float:
    value = raw.get("confidence")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Reject(f"confidence must be a number in [0, 1], got {value!r}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise Reject(f"confidence {value!r} is outside [0, 1]")
    return float(value)


def _evidence(raw: Mapping[str, Any], step: int, *, checked: bool = True) -> tuple[int, ...]:
    value = raw.get("evidence")
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple) else [value]
    steps: list[int] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise Reject(f"evidence must be step numbers, got {item!r}")
        if isinstance(item, float) and (not math.isfinite(item) or item != int(item)):
            raise Reject(f"evidence step {item!r} is not a whole number")
        number = int(item)
        if checked and (number < 0 or number > step):
            raise Reject(f"evidence step {number} does not exist (current step is {step})")
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
    raise Reject(f"source must be 'observed' or 'inferred', got {value!r}")


def _quote(raw: Mapping[str, Any]) -> str | None:
    value = raw.get("quote")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Reject(f"quote must be a string, got {type(value).__name__}")
    return value[:MAX_TEXT]


def _resolve(draft: Draft, ref: Any, *, kinds: str, field_name: str) -> str:
    """Resolve a reference to a record id. `kinds` is a subset of 'esrg'; entities also by name."""
    if not isinstance(ref, str) or not ref.strip():
        raise Reject(f"{field_name} must be a record id or entity name, got {ref!r}")
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
            raise Reject(
                f"{field_name} {ref!r} names several entities ({', '.join(ids)}); use an id"
            )
        if not ids and not draft.checked and field_name in _NAMING_FIELDS:
            return _new_entity(draft, ref)
    raise Reject(
        f"{field_name} {ref!r} is not a known id" + (" or entity name" if "e" in kinds else "")
    )


_NAMING_FIELDS = ("entity", "src", "dst", "ref")  # fields that may name an entity


def _new_entity(draft: Draft, name: str) -> str:
    """An entity for a name no record has (unchecked patches: the reference is taken as given)."""
    entity = Entity(id=draft.fresh_id("e"), name=name, type="object", attrs=())
    draft.put_entity(entity, None)
    return entity.id


# -- one handler per op: validate fully, then change the draft, return the normalized op -------


def _upsert_entity(draft: Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    given_id = raw.get("id")
    name = _text(raw, "name", required=given_id is None)
    etype = _text(raw, "type", required=False) or None
    attrs_raw = raw.get("attrs")
    attrs: dict[str, Scalar] | None = None
    if attrs_raw is not None:
        if not isinstance(attrs_raw, Mapping):
            raise Reject("attrs must be an object of scalar values")
        attrs = {}
        for key, value in attrs_raw.items():
            if not isinstance(key, str) or not isinstance(value, str | int | float | bool):
                raise Reject(f"attrs[{key!r}] must be a string, number or boolean")
            if isinstance(value, float) and not math.isfinite(value):
                raise Reject(f"attrs[{key!r}] must be finite")
            attrs[key] = value
    old: Entity | None = None
    if given_id is not None:
        entity_id = _resolve(draft, given_id, kinds="e", field_name="id")
        old = draft.entities[entity_id]
    else:
        ids = draft.names.get(normalize_text(name), [])
        if len(ids) > 1:
            raise Reject(f"name {name!r} matches several entities ({', '.join(ids)}); give the id")
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


def _upsert_state(draft: Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
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
        raise Reject(
            f"conflict: this patch already set {entity_id}.{attribute} to {seen[0]!r}; "
            "one slot holds one value"
        )
    slot_owner = draft.slots.get(slot)
    if existing is not None and slot_owner not in (None, existing.id):
        raise Reject(f"slot {entity_id}.{attribute} already belongs to state {slot_owner}")
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


def _remove_state(draft: Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    if raw.get("id") is not None:
        state = draft.states[_resolve(draft, raw.get("id"), kinds="s", field_name="id")]
    else:
        entity_id = _resolve(draft, raw.get("entity"), kinds="e", field_name="entity")
        attribute = _text(raw, "attribute")
        state_id = draft.slots.get((entity_id, normalize_text(attribute)))
        if state_id is None:
            raise Reject(f"no state {entity_id}.{attribute} to remove")
        state = draft.states[state_id]
    draft.drop_state(state)
    return {"op": "remove_state", "id": state.id}


def _upsert_relation(draft: Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
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
        raise Reject(f"a relation needs two different ends, got {src} twice")
    evidence = _evidence(raw, draft.step, checked=draft.checked)
    source = _source(raw, evidence)
    confidence = _confidence(raw, 1.0 if source == "observed" else 0.5)
    triple = (src, normalize_text(rtype), dst)
    owner = draft.triples.get(triple)
    if existing is not None and owner not in (None, existing.id):
        raise Reject(f"relation {src} {rtype} {dst} already exists as {owner}")
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


def _remove_relation(draft: Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    if raw.get("id") is not None:
        relation = draft.relations[_resolve(draft, raw.get("id"), kinds="r", field_name="id")]
    else:
        src = _resolve(draft, raw.get("src"), kinds="es", field_name="src")
        dst = _resolve(draft, raw.get("dst"), kinds="es", field_name="dst")
        relation_id = draft.triples.get((src, normalize_text(_text(raw, "type")), dst))
        if relation_id is None:
            raise Reject(f"no relation {src} {raw.get('type')} {dst} to remove")
        relation = draft.relations[relation_id]
    draft.drop_relation(relation)
    return {"op": "remove_relation", "id": relation.id}


def _gap_kind(value: Any) -> GapKind:
    if isinstance(value, str):
        lowered = value.strip().lower()
        for kind in GAP_KINDS:
            if lowered == kind:
                return kind
    raise Reject(f"kind must be 'epistemic' or 'achievement', got {value!r}")


def _refs(draft: Draft, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
    refs: list[str] = []
    for item in items:
        ref = _resolve(draft, item, kinds="esr", field_name="ref")
        if ref not in refs:
            refs.append(ref)
    return tuple(refs)


def _add_gap(draft: Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
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


def _open_gap(draft: Draft, raw: Mapping[str, Any]) -> Gap:
    gap_id = _resolve(draft, raw.get("id"), kinds="g", field_name="id")
    gap = draft.gaps[gap_id]
    if not gap.is_open:
        raise Reject(f"gap {gap_id} was already resolved at step {gap.resolved_at}")
    return gap


def _resolve_gap(draft: Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    gap = _open_gap(draft, raw)
    draft.gaps[gap.id] = replace(gap, resolved_at=draft.step)
    draft.changed.add(gap.id)
    if draft.active_gap_id == gap.id:
        draft.active_gap_id = None
    return {"op": "resolve_gap", "id": gap.id}


def _set_active_gap(draft: Draft, raw: Mapping[str, Any]) -> dict[str, Any]:
    gap = _open_gap(draft, raw)
    draft.active_gap_id = gap.id
    return {"op": "set_active_gap", "id": gap.id}


Handler = Callable[[Draft, Mapping[str, Any]], dict[str, Any]]
HANDLERS: dict[str, Handler] = {name: globals()[f"_{name}"] for name in PATCH_OPS}
