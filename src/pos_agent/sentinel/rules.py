"""Belief Sentinel rules (DESIGN §3.1): deterministic checks, no LLM, run on every step.

Each rule is a pure function of the candidate belief, the observations by step and, for the
in-patch conflict, the raw patch. Findings carry the record ids, the rule name and a reason in
words the belief model can act on during revision.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pos_agent.belief.model import Belief, Relation, State, normalize_text

RULES: tuple[str, ...] = (
    "slot_conflict",
    "internal_conflict",
    "contradicts_observation",
    "dangling_id",
    "missing_evidence",
    "evidence_unavailable",
    "quote_not_found",
    "confidence_range",
    "active_gap_not_open",
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem with a candidate belief."""

    rule: str
    records: tuple[str, ...]
    reason: str
    step: int | None = None  # the evidence step the finding is about, when there is one

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "records": list(self.records),
            "reason": self.reason,
            "step": self.step,
        }


# Mutually exclusive values: (name, value says A, value says B, observation says A, observation
# says B). In a value, "on"/"off" count only as the whole value, since "on countertop 1" is a
# location; in an observation only "is/turned/switched on" reads as a power state.
_NOT = r"(?<!not )(?<!no )(?<!never )(?<!un)"


def _word(words: str) -> re.Pattern[str]:
    return re.compile(rf"\b{_NOT}({words})\b")


_POWER_ON = re.compile(r"^(turned |switched )?on$")
_POWER_OFF = re.compile(r"^(turned |switched )?off$")
_POLARITIES: tuple[
    tuple[str, re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]], ...
] = (
    (
        "openness",
        _word("open|opened"),
        _word("closed|shut"),
        _word("open|opened"),
        _word("closed|shut"),
    ),
    (
        "power",
        _POWER_ON,
        _POWER_OFF,
        re.compile(r"\b(turned|switched|is) on\b"),
        re.compile(r"\b(turned|switched|is) off\b"),
    ),
    (
        "temperature",
        _word("hot|heated|warm"),
        _word("cold|cooled|chilled"),
        _word("hot|heated|warm"),
        _word("cold|cooled|chilled"),
    ),
    (
        "cleanliness",
        _word("clean|cleaned|washed"),
        _word("dirty"),
        _word("clean|cleaned|washed"),
        _word("dirty"),
    ),
    (
        "lock",
        _word("locked"),
        re.compile(r"\bunlocked\b"),
        _word("locked"),
        re.compile(r"\bunlocked\b"),
    ),
    ("fill", _word("full"), _word("empty"), _word("full"), _word("empty")),
)
_SENTENCE = re.compile(r"(?<=[.!?\n])\s*")
_QUOTE_CHARS = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_SPACES = re.compile(r"\s+")


def check_rules(
    belief: Belief,
    observations: Mapping[int, str],
    *,
    patch: Any = None,
    changed: Iterable[str] | None = None,
) -> list[Finding]:
    """All rule findings for `belief`. With `changed`, record-level rules look only at those
    records (and the entities they concern), which keeps the per-step cost independent of the
    belief's size; without it every record is checked."""
    scope = None if changed is None else frozenset(changed)
    states = _in_scope(belief.states, scope)
    relations = _in_scope(belief.relations, scope)
    findings: list[Finding] = []
    if patch is not None:
        findings += slot_conflicts(belief, patch)
    entity_ids = {s.entity for s in states}
    if scope is not None:
        entity_ids |= {i for i in scope if i in belief.entities}
    findings += internal_conflicts(belief, entity_ids if scope is not None else None)
    findings += contradictions(belief, states, observations)
    findings += dangling_ids(belief, states, relations, scope)
    findings += provenance(belief, [*states, *relations], observations)
    findings += confidence_range([*states, *relations])
    findings += active_gap(belief)
    return findings


def slot_conflicts(belief: Belief, patch: Any) -> list[Finding]:
    """Two different values for one entity+attribute slot inside one patch."""
    ops = patch if isinstance(patch, list | tuple) else []
    if isinstance(patch, Mapping):
        ops = next(
            (patch[k] for k in ("ops", "patch", "operations") if isinstance(patch.get(k), list)), []
        )
    names: dict[str, str] = {normalize_text(e.name): e.id for e in belief.entities.values()}
    values: dict[tuple[str, str], list[str]] = {}
    for op in ops:
        if not isinstance(op, Mapping) or op.get("op") != "upsert_state":
            continue
        entity, attribute, value = op.get("entity"), op.get("attribute"), op.get("value")
        if not all(isinstance(x, str | int | float) for x in (entity, attribute, value)):
            continue
        entity_id = (
            str(entity)
            if str(entity) in belief.entities
            else names.get(normalize_text(str(entity)), str(entity))
        )
        slot = (entity_id, normalize_text(str(attribute)))
        normalized = normalize_text(str(value))
        seen = values.setdefault(slot, [])
        if normalized not in seen:
            seen.append(normalized)
    return [
        Finding(
            "slot_conflict",
            (entity_id,),
            f"the patch gives {entity_id}.{attribute} {len(vals)} values ({' / '.join(vals)}); "
            "one slot holds one current value",
        )
        for (entity_id, attribute), vals in values.items()
        if len(vals) > 1
    ]


def internal_conflicts(belief: Belief, entity_ids: Iterable[str] | None = None) -> list[Finding]:
    """One entity described by mutually exclusive values (the microwave both open and closed)."""
    by_entity: dict[str, list[State]] = {}
    wanted = None if entity_ids is None else set(entity_ids)
    for state in belief.states.values():
        if wanted is None or state.entity in wanted:
            by_entity.setdefault(state.entity, []).append(state)
    findings = []
    for entity_id, states in by_entity.items():
        if len(states) < 2:
            continue
        for name, pos, neg, _, _ in _POLARITIES:
            yes = [s for s in states if pos.search(normalize_text(s.value))]
            no = [s for s in states if neg.search(normalize_text(s.value))]
            if yes and no and {s.id for s in yes} != {s.id for s in no}:
                ids = tuple(sorted({s.id for s in yes + no}))
                values = ", ".join(f"{s.attribute}={s.value}" for s in yes + no)
                findings.append(
                    Finding(
                        "internal_conflict",
                        (entity_id, *ids),
                        f"{entity_id} cannot be both ({name}): {values}",
                    )
                )
    return findings


def contradictions(
    belief: Belief, states: Sequence[State], observations: Mapping[int, str]
) -> list[Finding]:
    """An observed value the cited observation itself contradicts, where a rule can tell: a
    sentence naming the entity states the opposite value and not the claimed one."""
    findings = []
    for state in states:
        entity = belief.entities.get(state.entity)
        if entity is None or state.source != "observed" or not state.evidence:
            continue
        value = normalize_text(state.value)
        name = normalize_text(entity.name)
        for step in state.evidence:
            text = observations.get(step)
            if not text or not name:
                continue
            sentences = [
                normalize_text(s) for s in _SENTENCE.split(text) if name in normalize_text(s)
            ]
            for _, value_a, value_b, says_a, says_b in _POLARITIES:
                for value_says, claimed, opposite in (
                    (value_a, says_a, says_b),
                    (value_b, says_b, says_a),
                ):
                    if not value_says.search(value):
                        continue
                    if any(opposite.search(s) and not claimed.search(s) for s in sentences):
                        findings.append(
                            Finding(
                                "contradicts_observation",
                                (state.id,),
                                f"{state.id} says {entity.name} {state.attribute}={state.value}, "
                                f"but the observation at step {step} says otherwise",
                                step,
                            )
                        )
    return findings


def dangling_ids(
    belief: Belief,
    states: Sequence[State],
    relations: Sequence[Relation],
    scope: frozenset[str] | None,
) -> list[Finding]:
    """References to records that do not exist."""
    findings = [
        Finding("dangling_id", (s.id,), f"{s.id} describes unknown entity {s.entity}")
        for s in states
        if s.entity not in belief.entities
    ]
    for rel in relations:
        for end in (rel.src, rel.dst):
            if end not in belief.entities and end not in belief.states:
                findings.append(
                    Finding("dangling_id", (rel.id,), f"{rel.id} points at unknown {end}")
                )
    for gap in belief.gaps.values():
        if scope is not None and gap.id not in scope:
            continue
        missing = [r for r in gap.refs if belief.record(r) is None]
        if missing:
            findings.append(
                Finding(
                    "dangling_id", (gap.id,), f"{gap.id} refers to unknown {', '.join(missing)}"
                )
            )
    return findings


def provenance(
    belief: Belief, records: Sequence[State | Relation], observations: Mapping[int, str]
) -> list[Finding]:
    """Observed records need an evidence step, and a quote must appear in a cited observation."""
    findings = []
    for record in records:
        if record.source == "observed" and not record.evidence:
            findings.append(
                Finding(
                    "missing_evidence",
                    (record.id,),
                    f"{record.id} is marked observed but cites no step",
                )
            )
            continue
        available = [step for step in record.evidence if step in observations]
        if record.evidence and not available and observations:
            findings.append(
                Finding(
                    "evidence_unavailable",
                    (record.id,),
                    f"{record.id} cites step(s) {list(record.evidence)} with no recorded observation",
                )
            )
            continue
        if record.quote and available:
            needle = normalize_quote(record.quote)
            if needle and not any(needle in normalize_quote(observations[s]) for s in available):
                findings.append(
                    Finding(
                        "quote_not_found",
                        (record.id,),
                        f"the quote of {record.id} does not appear in the observation at step(s) {available}",
                        available[-1],
                    )
                )
    return findings


def confidence_range(records: Sequence[State | Relation]) -> list[Finding]:
    """Confidence must be a number in [0, 1]."""
    return [
        Finding(
            "confidence_range", (r.id,), f"{r.id} has confidence {r.confidence!r}, outside [0, 1]"
        )
        for r in records
        if not (
            isinstance(r.confidence, int | float)
            and math.isfinite(r.confidence)
            and 0 <= r.confidence <= 1
        )
    ]


def active_gap(belief: Belief) -> list[Finding]:
    """The active gap must exist and be open."""
    if belief.active_gap_id is None:
        return []
    gap = belief.gaps.get(belief.active_gap_id)
    if gap is None:
        return [
            Finding(
                "active_gap_not_open",
                (belief.active_gap_id,),
                f"active gap {belief.active_gap_id} does not exist",
            )
        ]
    if not gap.is_open:
        return [
            Finding(
                "active_gap_not_open",
                (gap.id,),
                f"active gap {gap.id} was resolved at step {gap.resolved_at}",
            )
        ]
    return []


def normalize_quote(text: str) -> str:
    """Case- and whitespace-insensitive form of a quote or an observation; the raw characters
    (quotation marks, newlines) are compared as themselves, never through JSON escaping."""
    text = text.translate(_QUOTE_CHARS).casefold()
    return _SPACES.sub(" ", text).strip().strip(".,;:").strip()


def _in_scope(table: Mapping[str, Any], scope: frozenset[str] | None) -> list[Any]:
    if scope is None:
        return list(table.values())
    return [table[i] for i in scope if i in table]
