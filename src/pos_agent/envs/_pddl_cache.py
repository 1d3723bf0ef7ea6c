"""ALFWorld's set-up, reused across the cases one process plays: its PDDL-to-SAS translations.

Most of an ALFWorld (and alfworld-mini) episode's set-up is fast_downward translating the game's
PDDL domain and problem into a SAS planning task: four translations per episode (two when the
game loads, two when it resets, each pair with and without `optimize`), all of the same text,
about 0.15-0.35 s each. The translation is a function of its inputs, so this process keeps the
results of the last games it translated and hands out a deep copy (about 15 ms) of the stored
result instead of translating again: a worker or Ray case runner that plays several methods of
one task translates each game once, and every episode skips its repeated translations.

`install()` wraps `fast_downward.pddl2sas` once per process; every caller gets its own copy, so
no game state is shared between episodes.
"""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

CAPACITY = 64  # games kept per process (each entry holds two translations of one game)

_LOCK = threading.Lock()
_STORE: OrderedDict[tuple[str, bool], Any] = OrderedDict()
_STATS = {"hits": 0, "misses": 0}


def install() -> bool:
    """Make fast_downward's translation reuse its results (idempotent); False without it."""
    try:
        import fast_downward
    except ImportError:
        return False
    with _LOCK:
        current = fast_downward.pddl2sas
        if getattr(current, "_pos_cached", False):
            return True
        fast_downward.pddl2sas = cached(current)
    return True


def cached(translate: Callable[..., Any]) -> Callable[..., Any]:
    """`translate(domain, problem, verbose=False, optimize=False)`, answered from the store."""

    def pddl2sas(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        key = (hashlib.sha256(f"{domain}\0{problem}".encode()).hexdigest(), bool(optimize))
        with _LOCK:
            found = _STORE.get(key)
            if found is not None:
                _STORE.move_to_end(key)
                _STATS["hits"] += 1
        if found is None:
            found = translate(domain, problem, verbose=verbose, optimize=optimize)
            with _LOCK:
                _STATS["misses"] += 1
                _STORE[key] = found
                while len(_STORE) > CAPACITY * 2:
                    _STORE.popitem(last=False)
        return copy.deepcopy(found)

    pddl2sas._pos_cached = True  # type: ignore[attr-defined]
    return pddl2sas


def stats() -> dict[str, int]:
    with _LOCK:
        return dict(_STATS)


def clear() -> None:
    with _LOCK:
        _STORE.clear()
        _STATS.update(hits=0, misses=0)
