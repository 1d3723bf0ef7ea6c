"""`pos bench --shard I/N`: one of N deterministic, disjoint ranges of a suite's cases.

The cases keep the suite expansion's order (tasks, then methods, as `Suite.cases` lists them),
and shard I (1-based, as SLURM array indices and CI matrices usually count) takes the I-th of N
contiguous ranges whose sizes differ by at most one. Every case is in exactly one shard, and the
same command line always gives the same range, so N jobs can run the shards on N machines
without talking to each other; `pos report runA runB ...` then reads their run folders as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ValueError(
                f"shard {self.index}/{self.count} does not exist: write I/N with 1 <= I <= N, "
                "e.g. --shard 1/4"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`I/N`, e.g. "2/8" (ValueError when malformed)."""
        index, slash, count = text.strip().partition("/")
        if not slash or not index.strip().isdigit() or not count.strip().isdigit():
            raise ValueError(f"write the shard as I/N with 1 <= I <= N, e.g. 1/4, not {text!r}")
        return cls(int(index), int(count))

    def bounds(self, total: int) -> tuple[int, int]:
        """The [start, end) range of this shard among `total` cases."""
        return (self.index - 1) * total // self.count, self.index * total // self.count

    def take(self, items: Sequence[T]) -> list[T]:
        """This shard's contiguous range of `items`, in their order."""
        start, end = self.bounds(len(items))
        return list(items[start:end])

    def describe(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"
