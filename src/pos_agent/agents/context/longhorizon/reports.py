"""Reading what the LongHorizon-Harness roles write: the auditor's control header and the
manager's plan. Pure functions over text; nothing here calls a model.

The auditor's report must open with three control lines, one verdict each, in this order:

    Status: complete | incomplete | blocked
    Integrity: clean | suspect | violation
    Contract audit: aligned | unknown | needs_revision | invalid

Only the header is acted on; the body is evidence for the manager. A report whose integrity is a
violation, whose contract audit is not aligned, or that lists blocking acceptance constraints
cannot be complete: it is downgraded to incomplete (as upstream's completion guards do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["complete", "incomplete", "blocked"]
Integrity = Literal["clean", "suspect", "violation"]
ContractAudit = Literal["aligned", "unknown", "needs_revision", "invalid"]
Route = Literal["work", "done", "blocked", "invalid"]

# Models that write CJK punctuation end a label with a full-width colon.
_FULLWIDTH_COLON = "\uff1a"
_DECORATION = re.compile(r"^[\s>#*_`-]*|[\s*_`]*$")
_HEADER_LINES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("status", ("complete", "incomplete", "blocked")),
    ("integrity", ("clean", "suspect", "violation")),
    ("contract audit", ("aligned", "unknown", "needs_revision", "invalid")),
)
_NONE = re.compile(
    r"^(?:none|nothing|n/?a|not applicable|no blocking(?: acceptance)? constraints?)"
    r"(?:\s*[.,;:].*)?$",
    re.IGNORECASE,
)
_BLOCKING = re.compile(
    r"^blocking(?:\s+acceptance)?\s+constraints?\s*[:\uff1a]\s*(.*)$", re.IGNORECASE
)
_HEADING = re.compile(r"^[A-Za-z][A-Za-z /_-]{1,40}[:\uff1a]")
_ROUND = re.compile(r"\bround_(\d+)\b", re.IGNORECASE)


def _clean(line: str) -> str:
    return _DECORATION.sub("", line.strip())


def _nonempty_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@dataclass(frozen=True)
class AuditHeader:
    status: Status
    integrity: Integrity
    contract: ContractAudit


def parse_header(text: str) -> AuditHeader | None:
    """The three control lines, or None when any is missing, out of order or not a verdict."""
    lines = _nonempty_lines(text)[:3]
    if len(lines) < 3:
        return None
    values: list[str] = []
    for line, (name, allowed) in zip(lines, _HEADER_LINES, strict=True):
        key, sep, value = _clean(line).replace(_FULLWIDTH_COLON, ":").partition(":")
        verdict = _clean(value).lower().replace(" ", "_").replace("-", "_")
        if not sep or " ".join(key.lower().split()) != name or verdict not in allowed:
            return None
        values.append(verdict)
    status, integrity, contract = values
    return AuditHeader(status, integrity, contract)  # type: ignore[arg-type]


def blocking_constraints(text: str) -> list[str]:
    """The items of a `Blocking constraints:` section ("none" and the like are no items)."""
    lines = text.splitlines()
    items: list[str] = []
    for index, line in enumerate(lines):
        match = _BLOCKING.match(_clean(line))
        if not match:
            continue
        rest = match.group(1).strip()
        found = [rest] if rest else []
        for follow in lines[index + 1 :]:
            stripped = follow.strip()
            if not stripped or (
                _HEADING.match(_clean(stripped)) and not stripped.startswith(("-", "*"))
            ):
                break
            found.append(_clean(stripped))
        items.extend(item for item in found if item and not _NONE.match(item))
    return items


@dataclass(frozen=True)
class AuditReport:
    """One audit as the harness acts on it."""

    round: int
    status: Status
    integrity: Integrity
    contract: ContractAudit
    text: str
    header_valid: bool
    blocking: tuple[str, ...] = ()
    downgraded: str | None = None
    """Why a claimed `complete` became `incomplete`, if it did."""

    @property
    def accepts_completion(self) -> bool:
        """True only for a complete, clean, aligned audit: the one that lets `done` through."""
        return (
            self.status == "complete" and self.integrity == "clean" and self.contract == "aligned"
        )

    @property
    def round_id(self) -> str:
        return round_id(self.round)


def round_id(number: int) -> str:
    return f"round_{number:03d}"


def parse_audit_report(text: str, round_number: int) -> AuditReport:
    """The report as the harness acts on it. An invalid header is read as blocked / suspect /
    unknown: the harness never guesses a verdict from the body."""
    header = parse_header(text)
    if header is None:
        note = (
            "The audit report did not open with the three control lines (Status, Integrity, "
            "Contract audit); the harness reads it as blocked and does not guess from the body."
        )
        return AuditReport(
            round_number, "blocked", "suspect", "unknown", f"{note}\n\n{text.strip()}", False
        )
    status = header.status
    blocking = tuple(blocking_constraints(text))
    downgraded = None
    if status == "complete":
        if header.integrity == "violation":
            downgraded = "integrity violation"
        elif header.contract != "aligned":
            downgraded = f"contract audit {header.contract}"
        elif blocking:
            downgraded = "blocking acceptance constraints listed"
        if downgraded:
            status = "incomplete"
    return AuditReport(
        round_number,
        status,
        header.integrity,
        header.contract,
        text.strip(),
        True,
        blocking,
        downgraded,
    )


# -- the manager's plan -------------------------------------------------------------------------

_SECTIONS = {
    "task state": "state",
    "current task state": "state",
    "task contract": "contract",
    "dependencies": "dependencies",
    "dependency assessment": "dependencies",
    "next": "route",
    "subtask": "subtask",
    "acceptance criteria": "criteria",
    "related audit rounds": "related",
    "related audit reports": "related",
    "boundaries": "boundaries",
}
_ROUTES: dict[str, Route] = {
    "work": "work",
    "done": "done",
    "complete": "done",
    "blocked": "blocked",
}


@dataclass(frozen=True)
class ManagerPlan:
    """What one manager answer says; empty strings for sections it left out."""

    route: Route
    state: str = ""
    contract: str = ""
    dependencies: str = ""
    subtask: str = ""
    criteria: str = ""
    boundaries: str = ""
    related: tuple[int, ...] = field(default_factory=tuple)

    def subtask_contract(self) -> str:
        """The bounded subtask as the executor and auditor get it."""
        parts = [("Subtask", self.subtask), ("Acceptance criteria", self.criteria)]
        parts.append(("Related audit rounds", ", ".join(round_id(n) for n in self.related)))
        parts.append(("Boundaries", self.boundaries))
        return "\n".join(f"{name}: {value}" for name, value in parts if value)


def parse_manager_output(text: str) -> ManagerPlan:
    """Split a manager answer into its sections; the route is `invalid` when no `Next:` line
    names work, done or blocked, or when work comes without a subtask."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        key, sep, rest = _clean(line).replace(_FULLWIDTH_COLON, ":").partition(":")
        name = _SECTIONS.get(" ".join(key.lower().split())) if sep else None
        if name is not None:
            current = name
            sections.setdefault(name, [])
            if rest.strip():
                sections[name].append(rest.strip())
        elif current is not None:
            sections[current].append(line.rstrip())

    def section(name: str) -> str:
        return "\n".join(sections.get(name, [])).strip()

    route_words = section("route").split()
    route: Route = (
        _ROUTES.get(route_words[0].strip(".*`").lower(), "invalid") if route_words else "invalid"
    )
    related = tuple(sorted({int(n) for n in _ROUND.findall(section("related")) if int(n) > 0}))
    plan = ManagerPlan(
        route=route,
        state=section("state"),
        contract=section("contract"),
        dependencies=section("dependencies"),
        subtask=section("subtask"),
        criteria=section("criteria"),
        boundaries=section("boundaries"),
        related=related,
    )
    if plan.route == "work" and not plan.subtask:
        return ManagerPlan("invalid", plan.state, plan.contract, plan.dependencies)
    return plan
