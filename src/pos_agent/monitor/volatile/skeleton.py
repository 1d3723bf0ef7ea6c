"""Format-free masking: the skeleton of an output, whatever format its volatile tokens have.

The rules of `rules.py` name the volatile tokens they know (`<time>`, `<uuid>`, ...). A tool
the rules have never seen prints a clock as `07:57:24Z`, an id as `job/7f3k2`, a counter as
`tick=48213`: each repeat of its output then differs from the last, and a loop reads as new
text. `skeleton` masks every token that bears a digit and is not a small plain number, in
whatever format it comes:

- a **token** is a run of word characters holding a digit, joined by `.`, `:`, `/`, `,`, `+`
  or `-` to the word-character runs around it (`07:57:24z`, `10.0.0.1:8080`, `v1.2.3`,
  `0.53s`, `abc123`, a uuid, `3/10`, `101,344`);
- every such token becomes `#`, except a plain number of one to three digits, with at most
  three decimals (`drawer 2`, `line 33`, `HTTP 500`, `3 failed`, `assert 1.5 == 4.0`): those
  name things, count them or are the values a check compares, and two outputs that differ in
  one are different outputs. Longer plain numbers (ports, pids, epoch times, counters past
  999), numbers with more parts (`3.11.7`, `101,344`) and numbers joined to letters or
  separators (`0.53s`, `07:57:24z`) are masked.

Two outputs with the same skeleton differ at most in such tokens; the monitor compares
outputs by their skeletons (`TrapMonitor`: exact repeats of a call and its output, what a step
told that was not known, the class of a failure).
"""

from __future__ import annotations

import re

__all__ = ["bare", "numbers_shrank", "skeleton"]

_TOKEN = re.compile(r"(?<!\w)\w*\d\w*(?:[.:/,+\-]\w+)*")
_DIGIT = re.compile(r"\d")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_CACHE: dict[str, str] = {}
_BARE: dict[str, str] = {}
_CACHE_LIMIT = 50_000
KEEP_DIGITS = 3
"""Plain numbers of at most this many digits are kept (they name or count things)."""


_KEPT = re.compile(rf"\d{{1,{KEEP_DIGITS}}}(?:\.\d{{1,{KEEP_DIGITS}}})?")


def _mask(match: re.Match[str]) -> str:
    token = match.group(0)
    if len(token) <= 2 * KEEP_DIGITS + 1 and _KEPT.fullmatch(token) is not None:
        return token
    return "#"


def skeleton(text: str) -> str:
    """`text` (already through the volatile rules) with every digit-bearing token that is not a
    small plain number masked as `#`, and runs of spaces within a line made one space."""
    cached = _CACHE.get(text)
    if cached is not None:
        return cached
    result = _TOKEN.sub(_mask, text) if _DIGIT.search(text) is not None else text
    result = _SPACES.sub(" ", result)
    if len(_CACHE) < _CACHE_LIMIT:
        _CACHE[text] = result
    return result


def bare(shape: str) -> str:
    """A skeleton with its small plain numbers masked too: every digit-bearing token is `#`,
    and a test runner's progress string (`..F.s..`: dots and the outcome letters f, e, s, x) has its
    marks sorted, since in which order the tests ran is no news. What a step told that was
    not known is read on this form (a clock of any format, a counter of any size, the order
    of a shuffled test run)."""
    cached = _BARE.get(shape)
    if cached is not None:
        return cached
    result = _TOKEN.sub("#", shape) if _DIGIT.search(shape) is not None else shape
    if ".." in result:
        result = _PROGRESS.sub(lambda m: "".join(sorted(m.group(0))), result)
    if len(_BARE) < _CACHE_LIMIT:
        _BARE[shape] = result
    return result


_PROGRESS = re.compile(r"(?<!\S)(?=[.efsx]*\.[.efsx]*\.)[.efsx]{3,}(?!\S)")


def numbers_shrank(before: str, after: str) -> bool:
    """Two skeletons of the same call's output that differ only in small plain numbers that
    count something named beside them (`a wall 4 steps forward`, `3 items left`), none of
    which grew and some of which shrank: a distance that closes, work that is left. Read as
    progress (a growing number is as often a clock; a number among numbers, a column of a
    table, says nothing of what it counts)."""
    if before == after:
        return False
    old, new = before.split(), after.split()
    if len(old) != len(new):
        return False
    shrank = False
    for k, (a, b) in enumerate(zip(old, new, strict=True)):
        if a == b or a == b + "s" or b == a + "s":
            continue  # the same word, once in the plural (`2 steps`, `1 step`)
        if _KEPT.fullmatch(a) is None or _KEPT.fullmatch(b) is None:
            return False
        named = any(_LETTER.search(t) for t in old[max(0, k - 1) : k] + old[k + 1 : k + 2])
        if float(b) > float(a) or not named:
            return False
        shrank = True
    return shrank


_LETTER = re.compile(r"[a-z]")
