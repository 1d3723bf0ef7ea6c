"""Repeats and progress evidence over the episode: the floor and the semantic loop.

The health window (`pos_agent.health.improved`) reads the shape of the last steps. Two simpler
questions are asked here, over the whole episode, of every step's output by its skeleton
(`volatile.skeleton`: digit-bearing tokens of any format masked):

- **What did the step tell that was not known?** An output's *units* are its lines, and the
  sentences of a line; a unit never seen before in the episode is information. A read-only
  probe (`inventory`, `look`, `git status`, re-reading a file) that restates what is known
  tells nothing, however its text differs from the step before.
- **The floor.** A call made with the same skeleton of output `FLOOR_REPEATS` times within the
  last `FLOOR_WINDOW` steps is an exact repeat, the rule of a hashed-call proxy made stricter
  (the output must repeat too). It alarms unless some step since the first of those repeats
  gave evidence of progress: information not seen before, a progress meter that moved, a
  progress label, or a change of the goal-relevant state (with a belief or facts).
- **Semantic loops.** Varied attempts that end in the same failure class: the last
  `SEMANTIC_REPEATS` attempts that reported a failure (`failures.failure_signature`, masked the
  same way; one call failing alike on consecutive steps is one attempt) report the same one,
  within `SEMANTIC_WINDOW` steps, and nothing between them
  was progress: no meter, label or goal-state change, and no call of a kind that failed there
  going through (`go north` after `go east` failed; a different command of `bash`). Steps
  that only look (`cat`, `grep`, `inventory`) do not break the run: they are not attempts.
  A different failure (a new failure each round, a shrinking list of failures) does.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from pos_agent.kinds import TrapPattern

__all__ = ["Evidence", "StepEvidence", "call_verb", "output_units"]

FLOOR_REPEATS = 3
FLOOR_WINDOW = 10
SEMANTIC_REPEATS = 3
SEMANTIC_WINDOW = 10
SHORT_LINES = 1
"""An output of at most this many lines is a reply, not a document (a log, a listing)."""
_MAX_UNITS = 200_000
_MAX_CACHED = 50_000
_UNITS: dict[str, frozenset[str]] = {}
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+")
_SPACES = re.compile(r"\s+")
_PUNCTUATION = re.compile(r"[.,;:!?()\[\]{}<>\"'`]+")
_PLURAL = re.compile(r"\b(\w{2,}[^\Ws])s\b")
_MASKED = re.compile(r"(?<!\S)#(?!\S)")
_REPEATED = re.compile(r"\b(\w+)(?:[ \t]+\1\b)+")
_ALNUM = re.compile(r"[^\W_]")
_VERB = re.compile(r"[a-z_][\w.-]*")


def output_units(skeleton: str) -> frozenset[str]:
    """The lines of an output skeleton and the sentences within them, each as its words in
    order, with punctuation and masked tokens left out, a plural as its singular and a word
    said again at once said once: a line that only says a word more often, in the plural, or
    differs in a masked number, tells nothing new. (Regular expressions over the whole text:
    this runs on every new output.)"""
    cached = _UNITS.get(skeleton)
    if cached is not None:
        return cached
    text = _SENTENCE_END.sub("\n", skeleton)
    text = _PUNCTUATION.sub(" ", text)
    text = _PLURAL.sub(r"\1", text)
    text = _MASKED.sub(" ", text)
    text = _REPEATED.sub(r"\1", text)
    found = frozenset({" ".join(line.split()) for line in text.split("\n") if _ALNUM.search(line)})
    if len(_UNITS) < _MAX_CACHED:
        _UNITS[skeleton] = found
    return found


def call_verb(tools: tuple[str, ...], key: str) -> str:
    """What kind of call a call is: a text command's first word (`go`, `examine`); a tool's
    name, with the first word of its first text argument when it has one (`bash python`,
    `bash cat`: one tool that runs many commands)."""
    if not tools:
        match = _VERB.search(key)
        return match.group(0) if match else ""
    name = tools[0]
    start = key.find('":"')
    if start < 0:
        return name
    match = _VERB.search(key, start + 3)
    return f"{name} {match.group(0)}" if match else name


@dataclass(frozen=True, slots=True)
class StepEvidence:
    """What one step gave the floor and the semantic rule."""

    informative: int
    """Units of the output never seen before in the episode."""

    floor: TrapPattern | None
    """The floor's alarm: `static` (the repeats in a row) or `cycle`, else None."""

    semantic: TrapPattern | None
    """The semantic rule's alarm (`drift`; `static` when one call made every attempt)."""


class Evidence:
    """Tracks units seen, exact repeats and failure classes over one episode."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._units: set[str] = set()
        self._outputs: set[str] = set()
        self._step = 0
        # (step, call key, skeleton, progress since the previous step of the deque)
        self._pairs: deque[tuple[int, str, str]] = deque(maxlen=FLOOR_WINDOW)
        self._progress_steps: deque[int] = deque(maxlen=2 * FLOOR_WINDOW)
        self._informed_steps: deque[int] = deque(maxlen=2 * FLOOR_WINDOW)
        # (step, failure class, verb, call key)
        self._failures: deque[tuple[int, str, str, str]] = deque(maxlen=SEMANTIC_REPEATS)
        self._failed_at = -1
        self._varied = False
        """A call never made before came since the latest failure report (something was
        tried): the next failure is the outcome of a new attempt."""
        self._latched: tuple[TrapPattern | None, TrapPattern | None] = (None, None)
        self._passed: dict[str, int] = {}
        """Per verb: the latest step whose call of that verb reported no failure."""

    def inform(self, skeleton: str) -> int:
        """How many units of an output skeleton were never seen before in the episode (and
        remember them); call once per step, before `observe`."""
        if skeleton in self._outputs:
            return 0  # the whole output again: every unit of it is known
        if len(self._outputs) < _MAX_UNITS:
            self._outputs.add(skeleton)
        new = output_units(skeleton) - self._units
        if new and len(self._units) < _MAX_UNITS:
            self._units |= new
        return len(new)

    def observe(
        self,
        call: str,
        verb: str,
        skeleton: str,
        failure: str | None,
        *,
        informative: int,
        progress: bool,
        waiting: bool,
        new_call: bool = True,
    ) -> StepEvidence:
        """Record one step: its call key, kind of call, output skeleton, failure class, how
        many units it told first (`inform`), and whether it showed progress of its own (meter,
        label, goal state) or was a declared poll within its allowance."""
        self._step += 1
        step = self._step
        new = informative
        self._varied = self._varied or new_call
        if progress or waiting:
            self._progress_steps.append(step)
        if new:
            self._informed_steps.append(step)
        self._pairs.append((step, call, skeleton))
        floor = self._floor(step, call, skeleton)
        short = skeleton.strip().count("\n") < SHORT_LINES
        semantic = self._semantic(step, call, verb, failure, short)
        # A rule that fired stays on until a step tells something new or shows progress: an
        # agent going on with other known calls (a probe between repeats) is still stuck.
        latched_floor, latched_semantic = self._latched
        if new or progress or waiting:
            latched_floor = latched_semantic = None
        floor = floor or latched_floor
        semantic = semantic or latched_semantic
        self._latched = (floor, semantic)
        return StepEvidence(new, floor, semantic)

    def _since(self, steps: deque[int], first: int) -> bool:
        return any(s > first for s in steps)

    def _floor(self, step: int, call: str, skeleton: str) -> TrapPattern | None:
        repeats = [s for s, c, o in self._pairs if c == call and o == skeleton]
        if len(repeats) < FLOOR_REPEATS:
            return None
        first = repeats[-FLOOR_REPEATS]
        if self._since(self._progress_steps, first) or self._since(self._informed_steps, first):
            return None
        return "static" if repeats[-1] - first == FLOOR_REPEATS - 1 else "cycle"

    def _semantic(
        self, step: int, call: str, verb: str, failure: str | None, short: bool
    ) -> TrapPattern | None:
        if failure is None:
            self._passed[verb] = step
            return None
        attempts = self._failures
        latest = attempts[-1] if attempts else None
        after_failure = self._failed_at == step - 1
        self._failed_at = step
        same = latest is not None and latest[1:] == (failure, verb, call)
        if after_failure and not short and not same:
            # A long output failing right after another failure, with nothing gone through in
            # between, is read, not the outcome of an attempt (log after log, each holding
            # the same errors); a short reply that is the failure is an attempt's outcome.
            return None
        varied, self._varied = self._varied, False
        if same and (after_failure or not varied):
            # The same call failing the same way again, at once or after only known calls
            # (reads, a retry), is one attempt waited on or re-run, not another one.
            attempts[-1] = (step, failure, verb, call)
        else:
            attempts.append((step, failure, verb, call))
        if len(attempts) < SEMANTIC_REPEATS:
            return None
        first = attempts[0][0]
        if step - first >= SEMANTIC_WINDOW:
            return None
        if any(f != failure for _, f, _, _ in attempts):
            return None
        if self._since(self._progress_steps, first):
            return None
        verbs = {v for _, _, v, _ in attempts}
        if any(self._passed.get(v, 0) > first for v in verbs):
            return None
        calls = {c for _, _, _, c in attempts}
        return "static" if len(calls) == 1 else "drift"
