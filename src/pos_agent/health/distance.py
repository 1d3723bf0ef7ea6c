"""Record-key sets of a world and the Jaccard distances between them (Eq. 5b of the paper)."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from itertools import islice

# How many members of the smaller set are probed to guess the overlap before counting exactly,
# and the size below which building either result is too cheap to be worth a guess.
_OVERLAP_PROBE = 16
_PROBE_FROM_SIZE = 512


@dataclass(frozen=True, slots=True)
class WorldKeys:
    """The record keys of one (full or projected) world, one set per record kind.

    Keys are the strings `belief.keys` makes (one per record); any iterable of strings is accepted
    and stored as a frozenset.
    """

    entities: frozenset[str]
    """Entity keys (the entity ids)."""

    states: frozenset[str]
    """State keys: `entity|attribute|normalized value|confidence rounded to 0.05`."""

    relations: frozenset[str]
    """Relation keys: `src|type|dst|confidence rounded to 0.05`."""

    @property
    def empty(self) -> bool:
        """No record at all: a projection that found nothing of the gap in this world."""
        return not (self.entities or self.states or self.relations)

    def by_kind(self, other: WorldKeys) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
        """This world's and `other`'s key sets, paired per record kind (entity, state,
        relation)."""
        return (
            (self.entities, other.entities),
            (self.states, other.states),
            (self.relations, other.relations),
        )

    def __post_init__(self) -> None:
        # Frozensets are kept as given (identity is the cheapest "distance 0" there is), the
        # rest converted.
        if not isinstance(self.entities, frozenset):
            object.__setattr__(self, "entities", frozenset(self.entities))
        if not isinstance(self.states, frozenset):
            object.__setattr__(self, "states", frozenset(self.states))
        if not isinstance(self.relations, frozenset):
            object.__setattr__(self, "relations", frozenset(self.relations))


def _intersection_size(a: Set[str], b: Set[str]) -> int:
    """|a n b|, counted through whichever of `a & b` or `a - b` builds the smaller set.

    Counting costs one lookup per member either way; what dominates is inserting into the
    result, so mostly-equal sets are counted through their (small) difference.
    """
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if len(small) < _PROBE_FROM_SIZE:
        return len(small & large)
    probe = list(islice(small, _OVERLAP_PROBE))
    shared_in_probe = sum(1 for key in probe if key in large)
    if 2 * shared_in_probe > len(probe):
        return len(small) - len(small - large)
    return len(small & large)


def jaccard_distance(a: Set[str], b: Set[str]) -> float:
    """d_J(A, B) = 1 - |A n B| / |A u B|, with d_J(empty, empty) = 0 [5b]."""
    if a is b:
        return 0.0
    if not a and not b:
        return 0.0
    shared = _intersection_size(a, b)
    union = len(a) + len(b) - shared
    # (union - shared) / union is one correctly rounded division, unlike 1 - shared / union.
    return (union - shared) / union


def world_distance(a: WorldKeys, b: WorldKeys) -> float:
    """d_W(x, y): the mean of d_J over the entity, state and relation key sets [5b]."""
    if a is b:
        return 0.0
    return sum(jaccard_distance(mine, theirs) for mine, theirs in a.by_kind(b)) / 3.0
