"""Progress meters in a text (`45%`, `101,344/375,350`), read before the volatile rules hide
them: a meter of the same call that moved forward is progress."""

from __future__ import annotations

import re

_METER = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s?%|(?<![\w.,/])(\d[\d,]*)\s?/\s?(\d[\d,]*)(?![\w.,/])"
)


def meter_readings(text: str) -> tuple[float, ...]:
    """The progress meters of a text, in order: each percentage (`45%`) and each count of a
    total (`101,344/375,350`, `3/10`) as a fraction of its whole.

    The volatile rules hide these values from the keys; read before them, a meter that moved
    forward between two outputs of the same call is progress (`TrapMonitor` uses it when the
    caller gives no progress label)."""
    values: list[float] = []
    for match in _METER.finditer(text):
        percent, done, total = match.groups()
        if percent is not None:
            values.append(float(percent) / 100.0)
            continue
        whole = float(total.replace(",", ""))
        if whole > 0:
            values.append(float(done.replace(",", "")) / whole)
    return tuple(values)


def meter_advanced(before: tuple[float, ...], after: tuple[float, ...]) -> bool:
    """The same meters, none gone back and at least one gone forward."""
    if not before or len(before) != len(after):
        return False
    return all(b <= a for b, a in zip(before, after, strict=True)) and before != after
