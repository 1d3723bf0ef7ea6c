"""Belief Sentinel rules (docs/concepts/sentinel.md): deterministic checks, no LLM, run on every step.

Each rule is a pure function of the candidate belief, the observations by step and, for the
in-patch conflict, the raw patch. Findings carry the record ids, the rule name and a reason in
words the belief model can act on during revision.

The rules stay sound: they fire only where the words leave no doubt. A value is read as a polar
state (open/closed, hot/cold, ...) only when it is that one word, with at most a filler such as
"is" or "now"; "needs to be heated", "plan: open it" or "wash until clean" are plans, not states,
and never conflict with one. Evidential support is checked the same way: a polar
value recorded as observed needs a cited observation that speaks of that property at all, and an
observed relation one that names at least one of its ends.
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
    "unsupported_observation",
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


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# The words an observation uses about each property, both sides and the verbs that change it: a
# polar value recorded as observed is unsupported only when its cited observations use none.
_PROPERTY_WORDS: dict[str, frozenset[str]] = {
    "openness": _wordset("open opens opened opening close closes closed shut shuts"),
    "power": _wordset("on off turn turns turned switch switches switched toggle toggles"),
    "temperature": _wordset(
        "hot heat heats heated heating warm warms warmed cold cool cools cooled cooling "
        "chill chills chilled freeze frozen"
    ),
    "cleanliness": _wordset(
        "clean cleans cleaned cleaning wash washes washed rinse rinses rinsed dirty"
    ),
    "lock": _wordset("lock locks locked unlock unlocks unlocked"),
    "fill": _wordset("full fill fills filled empty empties emptied pour pours poured"),
}
# Words a state value may carry besides its polar word ("is open", "now hot").
_FILLERS = _wordset("is are now currently already still very fully completely turned switched")
# An attribute naming a past value, not the current one ("initial door", "previous location").
# It records history: "initial door=closed" beside "door=open" is no conflict, and the step a
# history value cites may show the change itself ("You open the door").
_HISTORY_ATTRIBUTES = _wordset(
    "initial initially original originally previous previously prior former formerly earlier "
    "before old past history historical start starting was were"
)
# An attribute naming an intention, not a property ("plan", "next step", "goal").
_PLAN_ATTRIBUTES = _wordset(
    "plan plans planned goal goals next intent intention intended todo need needs needed "
    "required requirement target desired want wanted task subgoal should must will"
)
_WORDS = re.compile(r"[a-z0-9]+")
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
    findings += unsupported(belief, states, relations, observations)
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
        # Values of one time conflict: the current ones with each other, a history attribute
        # only with itself ("initial door=closed" never with "door=open").
        polar = [(s, polar_state(s), history_of(s)) for s in states]
        for name, *_ in _POLARITIES:
            for when in sorted({h for _, _, h in polar}, key=lambda h: h or ""):
                yes = [s for s, p, h in polar if p == (name, True) and h == when]
                no = [s for s, p, h in polar if p == (name, False) and h == when]
                if not (yes and no):
                    continue
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


def history_of(state: State) -> str | None:
    """The past moment a state's attribute names ("initial door": its normalized text), or
    None for a current value."""
    attribute = normalize_text(state.attribute)
    return attribute if _HISTORY_ATTRIBUTES & set(_WORDS.findall(attribute)) else None


def contradictions(
    belief: Belief, states: Sequence[State], observations: Mapping[int, str]
) -> list[Finding]:
    """An observed value the cited observation itself contradicts, where a rule can tell: a
    sentence naming the entity states the opposite value and not the claimed one."""
    findings = []
    for state in states:
        entity = belief.entities.get(state.entity)
        polar = polar_state(state)
        if entity is None or state.source != "observed" or not state.evidence or polar is None:
            continue
        if history_of(state) is not None:
            continue  # a past value: the cited step may show the change away from it
        name = normalize_text(entity.name)
        for step in state.evidence:
            text = observations.get(step)
            if not text or not name:
                continue
            sentences = [
                normalize_text(s) for s in _SENTENCE.split(text) if name in normalize_text(s)
            ]
            for dimension, _, _, says_a, says_b in _POLARITIES:
                if dimension == polar[0]:
                    claimed, opposite = (says_a, says_b) if polar[1] else (says_b, says_a)
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


def polar_state(state: State) -> tuple[str, bool] | None:
    """(property, True for its first side) when the state's value is one polar word, such as
    door=closed or temperature=hot; None for anything else, plans and intentions included."""
    if _PLAN_ATTRIBUTES & set(_WORDS.findall(normalize_text(state.attribute))):
        return None
    words = [w for w in _WORDS.findall(normalize_text(state.value)) if w not in _FILLERS]
    if len(words) != 1:
        return None  # "on countertop 1", "not open", "needs to be heated"
    for name, value_a, value_b, _, _ in _POLARITIES:
        if value_a.fullmatch(words[0]) or value_b.fullmatch(words[0]):
            return name, bool(value_a.fullmatch(words[0]))
    return None


def unsupported(
    belief: Belief,
    states: Sequence[State],
    relations: Sequence[Relation],
    observations: Mapping[int, str],
) -> list[Finding]:
    """Observed records their cited observations do not show, where a rule can tell: a polar
    value whose observations never speak of that property ("mug temperature=hot" after "You put
    the mug 1 in/on the microwave 1."), a relation whose observations name neither end."""
    findings = []
    for state in states:
        polar = polar_state(state)
        texts = _cited(state, observations)
        if polar is None or state.source != "observed" or not texts:
            continue
        if not any(_PROPERTY_WORDS[polar[0]] & set(_WORDS.findall(t.lower())) for t in texts):
            entity = belief.entities.get(state.entity)
            name = entity.name if entity else state.entity
            findings.append(
                Finding(
                    "unsupported_observation",
                    (state.id,),
                    f"{state.id} records {name} {state.attribute}={state.value} as observed, but "
                    f"the observation at step(s) {list(state.evidence)} says nothing of its "
                    f"{polar[0]}: cite the step that shows it, or mark it inferred",
                    state.evidence[-1],
                )
            )
    for relation in relations:
        texts = _cited(relation, observations)
        if relation.source != "observed" or not texts:
            continue
        ends = [belief.entities.get(end) for end in (relation.src, relation.dst)]
        if any(end is None for end in ends):
            continue  # an end that is a state (or unknown: dangling_id) has no name to look for
        if not any(_names(end.name, t) for end in ends if end is not None for t in texts):
            findings.append(
                Finding(
                    "unsupported_observation",
                    (relation.id,),
                    f"{relation.id} ({relation.src} {relation.type} {relation.dst}) is recorded as "
                    f"observed, but the observation at step(s) {list(relation.evidence)} names "
                    "neither end: cite the step that shows it, or mark it inferred",
                    relation.evidence[-1],
                )
            )
    return findings


def _cited(record: State | Relation, observations: Mapping[int, str]) -> list[str]:
    return [observations[s] for s in record.evidence if s in observations]


def _names(name: str, text: str) -> bool:
    """`text` names the entity: one of its words of three letters or more appears in it."""
    words = {w for w in _WORDS.findall(normalize_text(name)) if len(w) >= 3 and not w.isdigit()}
    return not words or bool(words & set(_WORDS.findall(text.lower())))


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
