"""Whether a belief's text says anything: a very small model under constrained decoding can fill
every name and gap with strings such as "1.1.1.1.1.1" that pass the schema and say nothing.
Such text is never quoted back to the policy or shown as if it were a belief.

    unreadable(text)          True for text with no letter, or one short piece over and over
    unreadable_ids(belief)    the entities and gaps whose name or text is unreadable
    unusable(belief)          why the belief holds nothing usable, or None when it does
"""

from __future__ import annotations

from pos_agent.belief.model import Belief

# A piece this short repeated at least this many times is filler, not words ("1.1.1.1" is
# "1." four times; "abababab" is "ab" four times).
_MAX_PIECE = 4
_MIN_REPEATS = 4


def unreadable(text: str) -> bool:
    """Text that says nothing: empty, without a single letter, or one short piece repeated
    (whitespace aside), such as "1.1.1.1.1" or "- - - -"."""
    compact = "".join(text.split())
    if not any(char.isalpha() for char in compact):
        return True
    for size in range(1, _MAX_PIECE + 1):
        repeats = len(compact) // size
        if repeats < _MIN_REPEATS:
            break
        piece = compact[:size]
        if (piece * (repeats + 1)).startswith(compact):
            return True
    return False


def unreadable_ids(belief: Belief) -> list[str]:
    """Ids of the entities whose names and the gaps whose texts are unreadable."""
    ids = [e.id for e in belief.entities.values() if unreadable(e.name)]
    return ids + [g.id for g in belief.gaps.values() if unreadable(g.text)]


def unusable(belief: Belief) -> str | None:
    """Why the belief holds nothing usable (no entity or gap at all, or none in words), or
    None when at least one entity or gap says something."""
    names = [e.name for e in belief.entities.values()] + [g.text for g in belief.gaps.values()]
    if not names:
        return "it holds no entity and no gap"
    if all(unreadable(name) for name in names):
        return "none of its entities and gaps is named in words"
    return None
