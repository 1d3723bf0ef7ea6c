"""How RCA tool outputs write numbers, times and long names: short, stable and readable."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

# Upper bound of one tool output (characters); long lists are cut with a note on narrowing.
MAX_OUTPUT_CHARS = 4000


def short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def clock(us: int | None) -> str:
    """HH:MM:SS (UTC) of a microsecond timestamp."""
    if us is None:
        return "-"
    return datetime.fromtimestamp(us / 1_000_000, tz=UTC).strftime("%H:%M:%S")


def number(value: float | None) -> str:
    """A value with as many digits as its size needs; `n/a` for none or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.01 or value == 0:
        return f"{value:.3f}".rstrip("0").rstrip(".") or "0"
    return f"{value:.2e}"


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank percentile (q in 0..1), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[position]


def ratio(after: float | None, before: float | None) -> str:
    """`x2.50`, `new` when the baseline was zero, `n/a` when a side is missing."""
    if after is None or before is None:
        return "n/a"
    if abs(before) < 1e-12:
        return "new" if abs(after) > 1e-12 else "x1.0"
    return f"x{after / before:.2f}"
