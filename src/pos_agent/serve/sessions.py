"""Sessions: one monitor per conversation, found by a header or by the conversation's start.

A session is keyed by the `X-PoS-Session` header when the client sends one, else by a hash of
the conversation's start (its system prompt and first user turn), which stays the same while an
agent's history grows. Two runs of one task with the same prompts share a session then: the
second one's history no longer holds the first's steps, and the session starts again.

The store is bounded both ways: when there are `max_sessions`, the least recently used session
that is not handling a request goes, and a session idle for `ttl_s` seconds goes at the next
look-up. A session that goes closes its trace. What a session keeps is bounded too: its
monitor's memory (`ServeConfig.memory_keys`) and its latest notes (`ServeConfig.max_notes`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pos_agent.monitor import MonitorReport, TrapMonitor

__all__ = ["Note", "Session", "SessionStore", "session_id"]

SESSION_HEADER = "x-pos-session"
FIRST_MESSAGES = 2
"""Leading messages (system prompt, first user turn) that name a session without a header."""
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def session_id(header: str | None, messages: Sequence[Mapping[str, Any]]) -> str:
    """The session of one request: the header (made safe as a folder name), else `h-` and a hash
    of the conversation's start: the messages up to and including the first user message (at
    most `FIRST_MESSAGES` + 2), which the first request already holds and later ones keep."""
    if header:
        safe = _SAFE.sub("_", header.strip())[:64].strip("._")
        if safe:
            return safe
    head = []
    for message in messages[: FIRST_MESSAGES + 2]:
        if not isinstance(message, Mapping):
            head.append({"other": str(message)})
            continue
        head.append({"role": message.get("role"), "content": message.get("content")})
        if message.get("role") == "user":
            break
    blob = json.dumps(head, sort_keys=True, default=str, ensure_ascii=False)
    return "h-" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@dataclass(slots=True)
class Note:
    """A note the proxy showed the model, kept where it was given: the agent never stores it in
    its own history, so every later request gets it back at the same place."""

    after: int
    """Index of the history message the note follows."""
    text: str


@dataclass
class Session:
    """What the proxy keeps of one conversation."""

    id: str
    monitor: TrapMonitor
    created: float = 0.0
    last_seen: float = 0.0
    format: str | None = None
    """The history format the parsers found (`tool_calls`, `smolagents`, `react`)."""
    steps: int = 0
    """Steps of the history already given to the monitor."""
    last_step_key: int | None = None
    """A hash of the last step given to the monitor: a history that no longer holds it was
    rewritten (trimmed, or a new run under the same key), and the session starts again."""
    last_end: int | None = None
    """Index of the message that ended the last step given to the monitor."""
    last_end_message: Any = None
    """That message as it was: while the next history holds it at the same index, only what
    follows it is parsed."""
    report: MonitorReport | None = None
    notes: deque[Note] = field(default_factory=deque)
    """The notes to show again, the latest `ServeConfig.max_notes` of them."""
    requests: int = 0
    errors: int = 0
    """Requests where the monitor (or the belief model) failed and the proxy failed open."""
    trace: Any = None
    """The session's `SessionTrace`, when traces are on."""
    belief: Any = None
    """The session's `BeliefTracker`, in belief mode."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def status(self, now: float) -> dict[str, Any]:
        """The session as `/pos/sessions` lists it."""
        report = self.report
        return {
            "id": self.id,
            "steps": self.steps,
            "requests": self.requests,
            "errors": self.errors,
            "trapped": bool(report and report.trapped),
            "pattern": report.pattern if report and report.trapped else None,
            "escalation": report.escalation if report else "none",
            "health": round(report.health.health, 4) if report else None,
            "idle_s": round(now - self.last_seen, 3),
            "age_s": round(now - self.created, 3),
            "format": self.format,
            "belief": self.belief is not None,
            "trace": str(self.trace.path) if self.trace is not None else None,
        }


class SessionStore:
    """Sessions by id, least recently used first; bounded by count and idle time."""

    def __init__(
        self,
        *,
        max_sessions: int = 1024,
        ttl_s: float = 3600.0,
        on_evict: Callable[[Session, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be >= 1")
        if ttl_s <= 0:
            raise ValueError("ttl_s must be > 0")
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.on_evict = on_evict
        self.clock = clock
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._sessions.values()))

    def get(self, key: str, new: Callable[[str], Session]) -> Session:
        """The session `key`, made by `new(key)` when there is none; marks it used."""
        now = self.clock()
        self.expire(now)
        session = self._sessions.get(key)
        if session is None:
            while len(self._sessions) >= self.max_sessions:
                self._evict(self._sessions.pop(self._idlest()), "lru")
            session = new(key)
            session.created = session.last_seen = now
            self._sessions[key] = session
        else:
            self._sessions.move_to_end(key)
        session.last_seen = now
        return session

    def _idlest(self) -> str:
        """The least recently used session not handling a request (else the least used)."""
        for key, session in self._sessions.items():
            if not session.lock.locked():
                return key
        return next(iter(self._sessions))

    def peek(self, key: str) -> Session | None:
        """The session `key` if the store holds it (not marked used)."""
        return self._sessions.get(key)

    def expire(self, now: float | None = None) -> None:
        """Drop the sessions idle for longer than the TTL (the oldest are first)."""
        now = self.clock() if now is None else now
        while self._sessions:
            key, oldest = next(iter(self._sessions.items()))
            if now - oldest.last_seen <= self.ttl_s:
                break
            del self._sessions[key]
            self._evict(oldest, "ttl")

    def close(self) -> None:
        """Drop every session (shutdown)."""
        while self._sessions:
            _, session = self._sessions.popitem(last=False)
            self._evict(session, "shutdown")

    def _evict(self, session: Session, reason: str) -> None:
        self.evicted += 1
        if self.on_evict is not None:
            self.on_evict(session, reason)
