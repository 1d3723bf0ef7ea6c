"""The deterministic provider (`retrieval`, offline): the record items that best answer a question.

A section is split into items (history and examination fields sentence by sentence, tests
procedure by procedure) and ranked against the question by IDF-weighted word overlap.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pos_agent.envs.clindiag.record import ClinDiagCase, section_payload
from pos_agent.envs.clindiag.text import STOPWORDS, tokens
from pos_agent.envs.clindiag.tools import SECTION_QUERIES, SectionQuery
from pos_agent.envs.tools import clip_lines

# Values the upstream records use for "nothing recorded".
NOT_SPECIFIED = {"", "not specified", "not specified.", "n/a", "na", "none", "unknown", "-"}
HISTORY_LABELS = {
    "chief_complaint": "Chief complaint",
    "history_of_present_illness": "History of present illness",
    "past_medical_history": "Past medical history",
    "family_history": "Family history",
    "social_history": "Social history",
}
# Words that point a question at a field even when the field's text does not use them.
TITLE_HINTS = {
    "Chief complaint": "complaint main problem presenting symptom why came",
    "History of present illness": "onset duration course symptom started began progression",
    "Past medical history": "past previous prior medication drug allergy surgery operation "
    "chronic illness vaccination hospitalization",
    "Family history": "family mother father sister brother sibling parent relative hereditary "
    "inherited genetic",
    "Social history": "social travel trip abroad smoke smoking tobacco alcohol drink occupation "
    "work job drug sexual pet animal exposure living home diet",
    "Vital signs": "vital temperature fever pulse heart rate blood pressure respiratory "
    "oxygen saturation weight height bmi",
}
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9(])")


@dataclass(frozen=True)
class RecordItem:
    """One answerable piece of a section: a title (field or procedure) and its text."""

    title: str
    text: str
    group: int = 0
    """Items with the same group come from one field or entry (kept together when shown)."""


def _specified(value: str) -> bool:
    return value.strip().lower() not in NOT_SPECIFIED


def section_items(case: ClinDiagCase, query: SectionQuery) -> list[RecordItem]:
    """The items a question about this section is ranked against."""
    items: list[RecordItem] = []
    if query.section == "medical_history":
        for group, (key, value) in enumerate(case.medical_history.items()):
            if not _specified(value):
                continue
            title = HISTORY_LABELS.get(key, key.replace("_", " ").capitalize())
            items.extend(RecordItem(title, s, group) for s in _sentences(value))
        return items
    entries = section_payload(case, query.section)
    for group, entry in enumerate(entries):
        if query.section == "physical_examination":
            for key, title in (
                ("vital_signs", "Vital signs"),
                ("relevant_findings", "Examination"),
                ("relevant_foundings", "Examination"),
                ("changes_over_time", "Changes over time"),
            ):
                value = entry.get(key, "")
                if _specified(value):
                    items.extend(RecordItem(title, s, group) for s in _sentences(value))
            continue
        name = entry.get("procedure_name") or entry.get("name") or "Test"
        details = [entry.get("findings", "")]
        changes = entry.get("changes_over_time", "")
        if _specified(changes):
            details.append(f"Changes over time: {changes}")
        date = entry.get("date", "")
        if _specified(date):
            details.append(f"Date: {date}")
        text = " ".join(d for d in details if _specified(d)) or "No findings reported."
        items.append(RecordItem(name, text, group))
    return items


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE.split(text.strip()) if p.strip()]
    return parts or [text.strip()]


def rank_items(question: str, items: Sequence[RecordItem]) -> list[tuple[float, RecordItem]]:
    """Items scored against the question (IDF-weighted overlap; title words count double)."""
    asked = {t for t in tokens(question) if t not in STOPWORDS}
    if not asked or not items:
        return []
    item_title = [set(tokens(f"{i.title} {TITLE_HINTS.get(i.title, '')}")) for i in items]
    item_text = [set(tokens(i.text)) for i in items]
    count = len(items)
    frequency: dict[str, int] = {}
    for title, text in zip(item_title, item_text, strict=True):
        for token in title | text:
            frequency[token] = frequency.get(token, 0) + 1
    scored: list[tuple[float, RecordItem]] = []
    for item, title, text in zip(items, item_title, item_text, strict=True):
        score = 0.0
        for token in asked:
            weight = 2.0 if token in title else 1.0 if token in text else 0.0
            if weight:
                score += weight * math.log(1.0 + count / frequency[token])
        if score > 0:
            scored.append((score, item))
    scored.sort(key=lambda pair: -pair[0])
    return scored


def retrieval_answer(case: ClinDiagCase, tool: str, question: str) -> str:
    """The deterministic provider: the best-matching items of the tool's section."""
    query = SECTION_QUERIES[tool]
    items = section_items(case, query)
    asked = {t for t in tokens(question) if t not in STOPWORDS}
    # A question that names a history field or "vital signs" gets that field whole.
    whole = [
        title
        for title in dict.fromkeys(i.title for i in items)
        if (words := {t for t in tokens(title) if t not in STOPWORDS}) and words <= asked
    ]
    if whole and query.per_sentence:
        lines = [
            f"{title}: {' '.join(i.text for i in items if i.title == title)}" for title in whole
        ]
        return clip_lines(lines, max_lines=4, max_chars=1500, what="lines")
    ranked = rank_items(question, items)
    if not ranked:
        return query.not_found
    best = ranked[0][0]
    # Near-ties only: a second item must be almost as relevant as the best one.
    chosen = [item for score, item in ranked if score >= 0.7 * best][: query.max_items]
    if query.per_sentence:
        # Keep the record's order, grouped by field, so the answer reads naturally.
        order = {id(item): n for n, item in enumerate(items)}
        chosen.sort(key=lambda item: order[id(item)])
        lines = []
        for title in dict.fromkeys(i.title for i in chosen):
            lines.append(f"{title}: {' '.join(i.text for i in chosen if i.title == title)}")
    else:
        lines = [f"{item.title}: {item.text}" for item in chosen]
    return clip_lines(lines, max_lines=4, max_chars=1500, what="lines")
