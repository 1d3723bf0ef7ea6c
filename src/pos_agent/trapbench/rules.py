"""Exact-repeat stuck detectors of widely used agents, written from their documented rules.

Nothing here is copied from those projects; each class implements the rules as their
documentation describes them (see `../shared/TRAPS.md`). Rules that need signals a text game
does not produce (context condensations, agent chat messages without an action, an LLM judge)
are left out and named in each docstring. A repeated action is reported as the "static"
pattern and an A/B alternation as "cycle", so their pattern accuracy can be scored like the
belief-level diagnosis.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from pos_agent.health import TrapPattern


@dataclass(frozen=True, slots=True)
class RuleStep:
    """What an exact-repeat rule sees of one step."""

    action: str
    observation: str
    error: bool = False
    """The environment rejected the action (an unparsable or impossible command)."""


@dataclass(frozen=True, slots=True)
class Alarm:
    """A detector's verdict after one step."""

    on: bool
    pattern: TrapPattern | None = None


NO_ALARM = Alarm(False)


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


class OpenHandsRules:
    """OpenHands' `StuckDetector` rules that apply to a text-game loop.

    Stuck when, over the recent history: the same action with the same observation 4 times in
    a row; the same action ending in an error 3 times in a row; an empty action 3 times in a
    row; or an A/B alternation of action-observation pairs over 6 steps. Not applicable here:
    repeated agent messages without an observation and 10 context condensations in a row.
    """

    name = "OpenHands rules"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._history: deque[tuple[str, str, bool]] = deque(maxlen=6)

    def step(self, step: RuleStep) -> Alarm:
        pair = (_normalized(step.action), _normalized(step.observation), step.error)
        self._history.append(pair)
        history = list(self._history)
        if len(history) >= 4 and len({h[:2] for h in history[-4:]}) == 1:
            return Alarm(True, "static")
        last3 = history[-3:]
        if len(last3) == 3 and all(h[2] for h in last3) and len({h[0] for h in last3}) == 1:
            return Alarm(True, "static")
        if len(history) >= 3 and all(not h[0] for h in history[-3:]):
            return Alarm(True, "static")
        if len(history) == 6:
            evens, odds = {h[:2] for h in history[0::2]}, {h[:2] for h in history[1::2]}
            if len(evens) == 1 and len(odds) == 1 and evens != odds:
                return Alarm(True, "cycle")
        return NO_ALARM


class GeminiCliRules:
    """Gemini CLI's deterministic loop checks.

    Looping when the same tool call (here: the same command) is made 5 times in a row, or when
    one 50-character chunk of the agent's streamed output (here: its commands, one per line)
    occurs 10 times. Not implemented: the LLM check "is this conversation looping?" that runs
    after 30 turns, which is not deterministic.
    """

    name = "Gemini CLI rules"
    _SAME_CALLS = 5
    _CHUNK = 50
    _CHUNK_REPEATS = 10

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._last: str | None = None
        self._repeats = 0
        self._stream = ""
        self._chunks: dict[str, int] = {}

    def step(self, step: RuleStep) -> Alarm:
        action = _normalized(step.action)
        self._repeats = self._repeats + 1 if action == self._last else 1
        self._last = action
        looping = self._repeats >= self._SAME_CALLS
        start = len(self._stream)
        self._stream += action + "\n"
        # Count every 50-character chunk that ends inside the new output.
        for end in range(max(start + 1, self._CHUNK), len(self._stream) + 1):
            chunk = self._stream[end - self._CHUNK : end]
            self._chunks[chunk] = self._chunks.get(chunk, 0) + 1
            looping |= self._chunks[chunk] >= self._CHUNK_REPEATS
        return Alarm(True, "static") if looping else NO_ALARM


class AgentBoardRules:
    """AgentBoard's rules: the same action 3 times in a row, or 3 unparsable actions in a row."""

    name = "AgentBoard rules"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._recent: deque[tuple[str, bool]] = deque(maxlen=3)

    def step(self, step: RuleStep) -> Alarm:
        self._recent.append((_normalized(step.action), step.error))
        if len(self._recent) < 3:
            return NO_ALARM
        if len({action for action, _ in self._recent}) == 1 or all(e for _, e in self._recent):
            return Alarm(True, "static")
        return NO_ALARM
