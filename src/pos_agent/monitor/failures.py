"""Failure signatures: what an output says went wrong, with the noise taken out.

A semantic loop is the same goal pursued with varied calls and arguments that fail the same
way: a setting tweaked and the tests re-run with other flags, still the same assertion; other
env settings and a restart, still 502. Neither the calls nor the raw outputs repeat, but what
the outputs report as wrong does. `failure_signature` reduces an output (already through the
volatile rules) to that report:

- the **failure lines**: lines holding a failure marker (`FAILURE_MARKERS`: an error or
  exception name such as `KeyError`, `failed`, `refused`, `not found`, `timed out`, an HTTP
  status of 400-599, a non-zero exit code, ...); other lines (progress dots, code, headers)
  are not part of it;
- in each, **counts** (`3 failed`, `1 warning`) are dropped: the failure lines themselves say
  which failures there are, and a count of warnings or of passing tests that moves does not
  make the failure another one. A status line (`HTTP/1.1 502 Bad Gateway`, `status: 503`) is
  kept whole, and so are the numbers that count nothing (`assert 9 == 10`);
- in an output with a failure line, the **diagnostic lines** (`path.ext:line: message`, the
  form of Go's test messages, compilers and linters) are part of it too, their line number
  masked: `--- FAIL: TestTaxRound` says which test fails, `tax_test.go:33: tax = 1.01, want
  1.00` says how, and a fix that changes how is not the same failure;
- spaces are collapsed, and the lines are sorted and de-duplicated (random test order).

Two outputs with the same signature report the same failure. An output without a failure line
has none (None). The health window (`health.improved`) reads a failure that comes back after a
call never made before, with no progress given in between, as a varied attempt that changed
nothing: drift.
"""

from __future__ import annotations

import re

__all__ = ["FAILURE_MARKERS", "failure_signature"]

FAILURE_MARKERS = (
    r"error",  # also inside a name: keyerror, operationalerror, error:
    r"exception",
    r"traceback",
    r"\bfail(?:s|ed|ure|ures|ing)?\b",
    r"\bfatal\b",
    r"\bpanic",
    r"\babort(?:ed)?\b",
    r"\brefused\b",
    r"\bdenied\b",
    r"\bforbidden\b",
    r"\bunauthori[sz]ed\b",
    r"\bnot found\b",
    r"\bno such\b",
    r"\btimed out\b",
    r"\bunable to\b",
    r"\bunavailable\b",
    r"\bbad (?:gateway|request)\b",
    r"\bhttp/\d(?:\.\d)? [45]\d\d\b",
    r"\b(?:status|code)[\s:=]+[45]\d\d\b",
    r"\bexit(?:ed)?(?: with)? (?:code|status)[\s:=]*[1-9]\d*\b",
)
"""What makes a line of an output a failure line (regular expressions on lower-cased text)."""

_MARKER = re.compile("|".join(FAILURE_MARKERS))
# Every marker holds one of these; a text holding none is told apart by plain substring tests,
# several times cheaper than the joined pattern (most outputs report no failure).
_LITERALS = (
    "error", "exception", "traceback", "fail", "fatal", "panic", "abort", "refused", "denied",
    "forbidden", "unauthori", "not found", "no such", "timed out", "unable to", "unavailable",
    "bad ", "http/", "status", "code",
)  # fmt: skip
_STATUS = re.compile(r"\bhttp/\d(?:\.\d)? \d{3}\b|\b(?:status|code)[\s:=]+\d{3}\b")
# A count: a number and the word it counts ("3 failed", "1 warning", "12 items").
_COUNT = re.compile(r"\b\d+(?:[.,]\d+)?\s+[a-z][a-z_-]*[,;]?")
_SPACES = re.compile(r"\s+")
# A diagnostic line, `path.ext:line: message` (Go's test messages, compilers, linters): in an
# output that reports a failure, it says what the failure is; its line number is masked.
_DIAGNOSTIC = re.compile(r"^\s*([\w./-]+\.[a-z]\w*):\d+:(?:\d+:)?\s*(\S.*)$")
_MAX_LINES = 64
"""Failure lines kept per output (a long log says no more than its first 64 failures)."""


def _holds_literal(text: str) -> bool:
    """Some marker's literal is in `text`."""
    for literal in _LITERALS:  # noqa: SIM110 - a loop costs less than `any` over a generator
        if literal in text:
            return True
    return False


def failure_signature(clean: str) -> str | None:
    """The failure an output reports (see the module doc), or None when it reports none.

    `clean` is the output after the volatile rules (lower case)."""
    if not _holds_literal(clean):
        return None
    lines = set()
    diagnostics = set()
    for line in clean.splitlines():
        # The marker pattern only on lines holding one of its literals (it costs far more).
        if not _holds_literal(line) or _MARKER.search(line) is None:
            if ":" in line and (diagnostic := _DIAGNOSTIC.match(line)) is not None:
                diagnostics.add(_SPACES.sub(" ", f"{diagnostic[1]}:#: {diagnostic[2]}").strip())
            continue
        if _STATUS.search(line) is None:
            line = _COUNT.sub("", line)
        line = _SPACES.sub(" ", line).strip()
        if line:
            lines.add(line)
            if len(lines) >= _MAX_LINES:
                break
    if not lines:
        return None
    if diagnostics and len(lines) + len(diagnostics) <= _MAX_LINES:
        lines |= diagnostics
    return "\n".join(sorted(lines))
