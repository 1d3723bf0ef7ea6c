"""A bounded memory of keys: what a monitor has seen of a run (entities, words, outputs, calls),
the oldest forgotten first, so that a run of any length holds a bounded amount of it."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["DEFAULT_MEMORY_KEYS", "KeyMemory"]

DEFAULT_MEMORY_KEYS = 20_000
"""Keys a memory holds at most: far more than an episode of hundreds of steps produces."""


class KeyMemory:
    """A set of at most `limit` keys. It keeps two generations of half that size: when the newer
    fills up, the older is dropped and the newer takes its place, so a key unseen for about
    `limit / 2` new keys is forgotten. Every operation is O(1) per key."""

    __slots__ = ("_half", "_newer", "_older")

    def __init__(self, limit: int = DEFAULT_MEMORY_KEYS) -> None:
        if limit < 2:
            raise ValueError(f"a key memory needs a limit >= 2, got {limit}")
        self._half = limit // 2
        self._newer: set[str] = set()
        self._older: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self._newer or key in self._older

    def __len__(self) -> int:
        return len(self._newer) + len(self._older)

    def add(self, key: str) -> None:
        """Remember `key` (again: a key seen once more is kept as new)."""
        if key in self._newer:
            return
        self._newer.add(key)
        if len(self._newer) >= self._half:
            self._older, self._newer = self._newer, set()

    def novel(self, keys: Iterable[str]) -> set[str]:
        """The keys not remembered, and remember them all."""
        keys = set(keys)
        new = keys - self._newer - self._older
        for key in keys:
            self.add(key)
        return new

    def clear(self) -> None:
        self._newer.clear()
        self._older.clear()
