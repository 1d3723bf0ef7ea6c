"""Compact, stable, id-bearing text of a belief for prompts.

A name or gap text that says nothing (`belief.quality`) is rendered as "(no readable text)".
The text depends only on the belief — never on how many steps led to it — so the policy prompt
stays flat while a raw transcript grows. Entities come grouped with their states, then
relations, then open gaps with the active one marked. Ordering is by id number, so the same
belief always renders to the same bytes (which also keeps the model cache and the KV prefix
reusable).
"""

from __future__ import annotations

from collections.abc import Collection

from pos_agent.belief.keys import project
from pos_agent.belief.model import Belief, Relation, State, id_order
from pos_agent.belief.quality import unreadable

NO_TEXT = "(no readable text)"


def render_belief(
    belief: Belief,
    *,
    max_entities: int | None = None,
    only: Collection[str] | None = None,
) -> str:
    """Render `belief`; with `max_entities`, the active gap's entities come first and the rest
    are summarized as a count; with `only`, just those entities (and relations touching them)."""
    by_entity: dict[str, list[State]] = {}
    for state in belief.states.values():
        by_entity.setdefault(state.entity, []).append(state)

    entity_ids = sorted((i for i in belief.entities if only is None or i in only), key=id_order)
    shown = entity_ids
    if max_entities is not None and len(entity_ids) > max_entities:
        focus = project(belief, belief.active_gap_id).entities
        shown = sorted(entity_ids, key=lambda i: (i not in focus, id_order(i)))[:max_entities]
        shown.sort(key=id_order)
    shown_set = set(shown)

    lines = [f"Goal: {belief.goal}", "Entities:"]
    for entity_id in shown:
        entity = belief.entities[entity_id]
        states = sorted(by_entity.get(entity_id, []), key=lambda s: id_order(s.id))
        attrs = "".join(f", {k}={v}" for k, v in entity.attrs)
        head = f"- {entity.id} {readable(entity.name)} ({entity.type}{attrs})"
        body = "; ".join(f"{s.id} {s.attribute}={s.value} {_provenance(s)}" for s in states)
        lines.append(f"{head}: {body}" if body else head)
    if len(shown) < len(entity_ids):
        lines.append(f"- (+{len(entity_ids) - len(shown)} more entities not shown)")
    if len(lines) == 2:
        lines.append("- (none yet)")

    relations = [
        r
        for r in sorted(belief.relations.values(), key=lambda r: id_order(r.id))
        if belief.entity_of(r.src) in shown_set or belief.entity_of(r.dst) in shown_set
    ]
    if relations:
        lines.append("Relations:")
        lines.extend(f"- {r.id} {r.src} {r.type} {r.dst} {_provenance(r)}" for r in relations)

    gaps = sorted(belief.open_gaps, key=lambda g: id_order(g.id))
    lines.append("Open gaps (* = active):")
    if not gaps:
        lines.append("- (none)")
    for gap in gaps:
        mark = "*" if gap.id == belief.active_gap_id else "-"
        refs = f" [refs {', '.join(gap.refs)}]" if gap.refs else ""
        lines.append(f"{mark} {gap.id} {gap.kind}: {readable(gap.text)}{refs}")
    return "\n".join(lines)


def _provenance(record: State | Relation) -> str:
    where = f"@{record.evidence[-1]}" if record.evidence else ""
    origin = "obs" if record.source == "observed" else "inf"
    return f"({origin}{where} {record.confidence:.2f})"


def readable(text: str) -> str:
    """`text`, or a plain "(no readable text)" for filler that says nothing ("1.1.1.1"), so
    that such text is never quoted back to a model as if it were part of the belief."""
    return NO_TEXT if unreadable(text) else text
