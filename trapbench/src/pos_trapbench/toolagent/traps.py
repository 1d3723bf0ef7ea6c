"""Shapes of trap segments built from a task's calls."""

from __future__ import annotations

import random

from pos_trapbench.toolagent.workspace import Call


def alternate(a: Call, b: Call, length: int) -> list[Call]:
    return [a if i % 2 == 0 else b for i in range(length)]


def cycle(pool: list[Call], rng: random.Random) -> list[Call]:
    """A cycle of 3-5 distinct calls, played two or three times round (6-15 steps)."""
    period = rng.randint(3, min(5, len(pool)))
    calls = rng.sample(pool, period)
    rounds = rng.choice([2, 3]) if period > 3 else 3
    return [calls[i % period] for i in range(period * rounds)]


def paired_or_cycled(
    kind: str, rng: random.Random, pair: tuple[Call, Call], pool: list[Call]
) -> list[Call] | None:
    """The alternation (`pair` taking turns for 6-12 steps) or cycle (from `pool`) trap segment
    of a task; None for any other kind."""
    if kind == "alternation":
        return alternate(*pair, rng.randint(6, 12))
    if kind == "cycle":
        return cycle(pool, rng)
    return None
