"""The deterministic judge (`matcher`, offline): does a submitted diagnosis name the reference?"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pos_agent.envs.clindiag.text import DIAGNOSIS_FILLER, tokens

_QUALIFIER = re.compile(
    r",|;|:| - | with | due to | secondary to | caused by | associated with | complicated by "
    r"| in the setting of | presenting as | related to "
)
_PARENTHESES = re.compile(r"\(([^()]*)\)")
_EXAMPLE_MARKERS = ("e.g", "eg ", "i.e", "ie ", "possibly", "probably", "likely", "see ")


@dataclass(frozen=True)
class MatchVerdict:
    """The matcher's decision and the reference variant it matched (if any)."""

    correct: bool
    reason: str
    matched: str | None = None


def _content(text: str) -> frozenset[str]:
    return frozenset(t for t in tokens(text) if t not in DIAGNOSIS_FILLER)


def reference_variants(reference: str) -> list[str]:
    """Wordings of the reference the matcher accepts as the same diagnosis.

    The full text; the text without parentheses; a short parenthetical (an abbreviation or
    synonym, e.g. "(X-LAG)"); each alternative of "A or B"; and the main diagnosis before a
    qualifier ("A with B", "A, not otherwise specified", "A due to B") when it has at least two
    words, so that a bare organ or class ("vasculitis") is not enough.
    """
    variants: list[str] = [reference]
    bare = _PARENTHESES.sub(" ", reference)
    variants.append(bare)
    for inner in _PARENTHESES.findall(reference):
        lowered = inner.strip().lower()
        if inner.strip() and len(inner.split()) <= 4 and not lowered.startswith(_EXAMPLE_MARKERS):
            variants.append(inner)
    alternatives = [a for a in re.split(r"\s+(?:and/or|or)\s+", bare) if a.strip()]
    if len(alternatives) > 1:
        variants.extend(alternatives)
    for text in [bare, *alternatives]:
        head = _QUALIFIER.split(f" {text} ", maxsplit=1)[0]
        if len(_content(head)) >= 2:
            variants.append(head)
    return [v for v in dict.fromkeys(v.strip() for v in variants) if _content(v)]


def match_diagnosis(reference: str, submitted: str) -> MatchVerdict:
    """The deterministic judge: does the submitted final diagnosis name the reference?

    Both sides are normalized (case, accents, British spellings, hyphens, plurals, common
    clinical abbreviations expanded, filler words such as "disease"/"syndrome" ignored) and
    compared as word sets. The submission is correct when it contains every word of one accepted
    variant of the reference (`reference_variants`) and no word the reference does not have:
    a reworded or less detailed answer passes; a different disease or an over-specific,
    unsupported addition fails.
    """
    said = _content(submitted)
    if not said:
        return MatchVerdict(False, "the submission names no diagnosis")
    allowed = _content(reference)
    for inner in _PARENTHESES.findall(reference):
        allowed |= _content(inner)
    for variant in reference_variants(reference):
        needed = _content(variant)
        if needed <= said and said <= allowed | needed:
            return MatchVerdict(True, f"matches the reference wording {variant!r}", variant)
    extra = sorted(said - allowed)
    missing = sorted(_content(reference) - said)
    reason = "differs from the reference"
    if extra:
        reason += f"; words not in the reference: {', '.join(extra[:6])}"
    if missing:
        reason += f"; reference words missing: {', '.join(missing[:6])}"
    return MatchVerdict(False, reason)
