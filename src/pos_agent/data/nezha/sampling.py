"""Seeded sampling, so that a conversion is the same on every machine.

Each case seeds one generator with the CRC-32 of its case id; caps then draw from it in a fixed
order. NumPy's `Generator.choice` (PCG64) does the drawing: its stream has been stable across
NumPy releases, and the data this converter was checked against was drawn the same way.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any, TypeVar

from pos_agent.data.errors import DataError

T = TypeVar("T")


def case_rng(case_id: str) -> Any:
    """The case's generator (numpy.random.Generator)."""
    try:
        import numpy as np
    except ImportError as exc:  # pragma: no cover - numpy comes with the bench extra
        raise DataError(
            'Converting Nezha needs numpy and pyarrow: pip install "pos-agent[harness]" '
            "(in a clone: make install)."
        ) from exc
    return np.random.default_rng(zlib.crc32(case_id.encode("utf-8")))


def draw(rng: Any, items: Sequence[T], count: int) -> list[T]:
    """`count` of `items` without replacement, in the generator's order."""
    if count >= len(items):
        return list(items)
    if count <= 0:
        return []
    return [items[int(i)] for i in rng.choice(len(items), size=count, replace=False)]
