"""Loop detectors of widely used agents, written from their current documented rules.

Nothing here is copied from those projects; each class implements the rules as their
documentation describes them (as of late 2026; docs/trapbench.md names the sources). Rules that need
signals a replayed trajectory does not have (context condensations, an LLM judge, streamed
model text between tool calls) are left out and named in each docstring.

A call is compared as its tool name plus its arguments with JSON key order and whitespace
ignored (`RuleStep.key`); a text command (TextWorld) by its lower-cased text. A repeated call
is reported as the "static" pattern and a repeated sequence of several calls as "cycle", so
their pattern accuracy can be scored like the belief-level diagnosis.

The anchors escalate, and `Alarm.level` says how far: `observe` (noted, no action: the alarm
is off), `nudge` (a note is injected and the run goes on), `block` (the call is refused) and
`stop` (the run is ended). A replayed trajectory goes on after a stop; the rules then start
again as a new run would.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass
from typing import Literal

from pos_agent.kinds import TrapPattern

Level = Literal["observe", "nudge", "block", "stop"]


@dataclass(frozen=True, slots=True)
class RuleStep:
    """What an exact-repeat rule sees of one step."""

    action: str
    observation: str
    error: bool = False
    """The environment rejected the action (a failed tool call, an unparsable command)."""
    key: str | None = None
    """The call's canonical form (tool name and sorted JSON arguments); None: the action's
    normalised text."""
    tool: str | None = None
    """The tool name of a tool call; None for a text command."""

    @property
    def call(self) -> str:
        return self.key if self.key is not None else _normalized(self.action)

    @property
    def tool_name(self) -> str:
        """The tool, or for a text command its first word (`go`, `examine`)."""
        if self.tool is not None:
            return self.tool
        words = self.call.split()
        return words[0] if words else ""


@dataclass(frozen=True, slots=True)
class Alarm:
    """A detector's verdict after one step."""

    on: bool
    pattern: TrapPattern | None = None
    level: Level | None = None


NO_ALARM = Alarm(False)


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


class _Rules:
    """A rule set: what it keeps of the run starts empty (`reset`), and `step` judges each step."""

    name: str

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        raise NotImplementedError

    def step(self, step: RuleStep) -> Alarm:
        raise NotImplementedError


class OpenHandsRules(_Rules):
    """The OpenHands SDK's `StuckDetector`: the last 20 events (10 action-observation steps).

    Stuck when: the same action with the same observation 4 times in a row; the same action
    ending in an error 3 times in a row, which first gets one warning (`nudge`) and ends the
    run (`stop`) if the streak goes on; the same agent message 3 times with no observation in
    between (a step without a tool call and with an empty observation); an A/B alternation of
    action-observation pairs over 6 steps. Not applicable to a replay: 10 context condensations
    in a row. Observations are compared as text, so a changing timestamp makes them differ.
    """

    name = "OpenHands SDK rules"
    EVENTS = 20
    SAME_PAIR = 4
    SAME_ERROR = 3
    SAME_MESSAGE = 3
    ALTERNATION = 6

    def reset(self) -> None:
        self._history: deque[tuple[str, str, bool]] = deque(maxlen=self.EVENTS // 2)
        self._warned = False

    def step(self, step: RuleStep) -> Alarm:
        self._history.append((step.call, _normalized(step.observation), step.error))
        history = list(self._history)
        pairs = [h[:2] for h in history]
        if len(history) >= self.SAME_PAIR and len(set(pairs[-self.SAME_PAIR :])) == 1:
            return Alarm(True, "static", "stop")
        recent = history[-self.SAME_ERROR :]
        if (
            len(recent) == self.SAME_ERROR
            and all(h[2] for h in recent)
            and len({h[0] for h in recent}) == 1
        ):
            if not self._warned:
                self._warned = True
                return Alarm(True, "static", "nudge")
            return Alarm(True, "static", "stop")
        self._warned = False
        messages = history[-self.SAME_MESSAGE :]
        if (
            step.tool is None
            and len(messages) == self.SAME_MESSAGE
            and all(not h[1] for h in messages)
            and len({h[0] for h in messages}) == 1
        ):
            return Alarm(True, "static", "stop")
        if len(pairs) >= self.ALTERNATION:
            last = pairs[-self.ALTERNATION :]
            evens, odds = set(last[0::2]), set(last[1::2])
            if len(evens) == 1 and len(odds) == 1 and evens != odds:
                return Alarm(True, "cycle", "stop")
        return NO_ALARM


class GeminiCliRules(_Rules):
    """Gemini CLI's `loopDetectionService`, its deterministic checks.

    Looping when a sequence of 1-5 tool calls (name and arguments) has been repeated 5 times in
    a row. The first detection injects a "take a step back" note and the run goes on (`nudge`);
    counting starts again, and a second detection halts the run (`stop`). The alarm stays on
    while the calls go on following the detected sequence. For text commands (no tool calls),
    the content check: one 50-character chunk of the command stream seen 10 times. Not
    implemented: the LLM check after 30 turns, which is not deterministic.
    """

    name = "Gemini CLI rules"
    REPEATS = 5
    LONGEST = 5
    CHUNK = 50
    CHUNK_REPEATS = 10

    def reset(self) -> None:
        self._calls: list[str] = []
        self._detections = 0
        self._loop: list[str] | None = None
        self._phase = 0
        self._level: Level | None = None
        self._pattern: TrapPattern | None = None
        self._stream = ""
        self._chunks: dict[str, int] = {}

    def step(self, step: RuleStep) -> Alarm:
        call = step.call
        if self._loop is not None:
            if call == self._loop[self._phase % len(self._loop)]:
                self._phase += 1
            else:
                self._loop = None
        self._calls.append(call)
        found = self._sequence()
        if found is None and step.tool is None and self._chunk_repeats(call):
            found = ([call], "static")
        if found is not None:
            self._detections += 1
            self._level = "nudge" if self._detections == 1 else "stop"
            self._loop, self._pattern = found
            self._phase = 0
            self._calls = []
            self._stream, self._chunks = "", {}
            level = self._level
            if self._detections >= 2:
                self._detections = 0  # the run halts; a replay goes on as a new run
            return Alarm(True, self._pattern, level)
        if self._loop is not None:
            return Alarm(True, self._pattern, self._level)
        return NO_ALARM

    def _sequence(self) -> tuple[list[str], TrapPattern] | None:
        calls = self._calls
        for period in range(1, self.LONGEST + 1):
            span = period * self.REPEATS
            if len(calls) < span:
                break
            tail = calls[-span:]
            if tail == tail[:period] * self.REPEATS:
                return tail[:period], "static" if period == 1 else "cycle"
        return None

    def _chunk_repeats(self, call: str) -> bool:
        start = len(self._stream)
        self._stream += call + "\n"
        looping = False
        for end in range(max(start + 1, self.CHUNK), len(self._stream) + 1):
            chunk = self._stream[end - self.CHUNK : end]
            self._chunks[chunk] = self._chunks.get(chunk, 0) + 1
            looping |= self._chunks[chunk] >= self.CHUNK_REPEATS
        return looping


class OpenRouterRules(_Rules):
    """OpenRouter agent SDK's `doomLoop` ladder on identical tool calls.

    Each tool has a streak: calling it with the same inputs as its previous call adds one,
    other inputs start it again at 1; calls to other tools in between do not reset it. At 2 the
    repeat is observed (logged only, no alarm), at 3 the call is blocked, at 6 the run stops.
    A text command's tool is its first word (`go`, `examine`). Not implemented: the text
    detectors (a phrase repeated at the end of one response, identical assistant text).
    """

    name = "OpenRouter doomLoop"
    OBSERVE = 2
    BLOCK = 3
    STOP = 6

    def reset(self) -> None:
        self._last: dict[str, str] = {}
        self._streak: dict[str, int] = {}

    def step(self, step: RuleStep) -> Alarm:
        tool, call = step.tool_name, step.call
        streak = self._streak.get(tool, 0) + 1 if self._last.get(tool) == call else 1
        self._last[tool], self._streak[tool] = call, streak
        if streak >= self.STOP:
            return Alarm(True, "static", "stop")
        if streak >= self.BLOCK:
            return Alarm(True, "static", "block")
        if streak >= self.OBSERVE:
            return Alarm(False, None, "observe")
        return NO_ALARM


class HashedCallRules(_Rules):
    """A loop-stopping proxy (LoopShield and others): a hash of tool name plus arguments.

    The proxy keeps the hashes of the last 10 calls; when one hash is there 3 times, it answers
    with a synthetic message instead of the model's call (`block`). The pattern is "static" when
    those 3 calls are in a row and "cycle" when other calls come between them.
    """

    name = "hashed-call proxy"
    WINDOW = 10
    THRESHOLD = 3

    def reset(self) -> None:
        self._recent: deque[str] = deque(maxlen=self.WINDOW)

    def step(self, step: RuleStep) -> Alarm:
        digest = hashlib.sha256(step.call.encode()).hexdigest()[:16]
        self._recent.append(digest)
        positions = [i for i, d in enumerate(self._recent) if d == digest]
        if len(positions) < self.THRESHOLD:
            return NO_ALARM
        last = positions[-self.THRESHOLD :]
        in_a_row = last[-1] - last[0] == self.THRESHOLD - 1
        return Alarm(True, "static" if in_a_row else "cycle", "block")


class AgentBoardRules(_Rules):
    """AgentBoard's rules: the same action 3 times in a row, or 3 unparsable actions in a row."""

    name = "AgentBoard rules"

    def reset(self) -> None:
        self._recent: deque[tuple[str, bool]] = deque(maxlen=3)

    def step(self, step: RuleStep) -> Alarm:
        self._recent.append((step.call, step.error))
        if len(self._recent) < 3:
            return NO_ALARM
        if len({action for action, _ in self._recent}) == 1 or all(e for _, e in self._recent):
            return Alarm(True, "static", "stop")
        return NO_ALARM


RuleSet = OpenHandsRules | GeminiCliRules | OpenRouterRules | HashedCallRules | AgentBoardRules
