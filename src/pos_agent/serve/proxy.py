"""The proxy's state: the upstream client, the sessions with their monitors, and the belief
model. `Proxy.verdict` gives a request's new steps to its session's monitor; it never raises
(fail open: the error is logged and traced, and the request goes on as it came)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import httpx

from pos_agent.events import DegradedEvent, Event
from pos_agent.monitor import Advice, canonical_action
from pos_agent.serve.config import GOAL_CHARS, NOTE_PREFIX, ServeConfig
from pos_agent.serve.limits import forward_path
from pos_agent.serve.parsers import Step, StepParser, message_text, parse_history
from pos_agent.serve.policy import Refusal, Verdict
from pos_agent.serve.sessions import SESSION_HEADER, Note, Session, SessionStore, session_id
from pos_agent.serve.traces import SessionTrace, step_events, withheld

__all__ = ["HOP_HEADERS", "Proxy"]

log = logging.getLogger("pos_agent.serve")

# Headers that belong to one hop (RFC 9110 7.6.1) or that httpx sets itself; never forwarded.
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


POOLS = 8
MAX_CONNECTIONS = 256
KEEPALIVE_CONNECTIONS = 128
KEEPALIVE_S = 4.0


class Proxy:
    """The proxy's state: the upstream client, the sessions, the belief model."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.store = SessionStore(
            max_sessions=config.max_sessions, ttl_s=config.ttl_s, on_evict=self._closed
        )
        self.pools: list[httpx.AsyncHTTPTransport] = []
        self._turn = itertools.count()
        self._timeout: dict[str, float | None] = {}
        self.belief_model: Any = None
        self._belief_pool: ThreadPoolExecutor | None = None
        self.started = time.monotonic()

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        self._timeout = httpx.Timeout(self.config.timeout_s, connect=10.0).as_dict()
        # Several small connection pools rather than one large one: httpcore looks at every
        # connection of a pool on each request (a poll() each), so one pool of 64 busy
        # connections costs about 1 ms of CPU a request; eight pools of 8, an eighth of it.
        limits = httpx.Limits(
            max_connections=MAX_CONNECTIONS // POOLS,
            max_keepalive_connections=KEEPALIVE_CONNECTIONS // POOLS,
            # Below the 5 s after which uvicorn (vLLM's server among others) closes an idle
            # connection: the proxy drops it first.
            keepalive_expiry=KEEPALIVE_S,
        )
        self.pools = [
            httpx.AsyncHTTPTransport(limits=limits, trust_env=False) for _ in range(POOLS)
        ]
        if self.config.belief_model is not None:
            factory = self.config.belief_model_factory
            if factory is None:
                from pos_agent.llm import load_model

                spec = self.config.belief_model
                self.belief_model = load_model(spec)
            else:
                self.belief_model = factory()
            # One worker: the belief model (the embedded one above all) takes one call at a time.
            self._belief_pool = ThreadPoolExecutor(1, thread_name_prefix="pos-belief")

    async def stop(self) -> None:
        self.store.close()
        for pool in self.pools:
            await pool.aclose()
        if self._belief_pool is not None:
            self._belief_pool.shutdown(wait=False, cancel_futures=True)

    def _closed(self, session: Session, reason: str) -> None:
        if session.trace is not None:
            try:
                session.trace.end(reason)
            except OSError:
                log.exception("could not close the trace of session %s", session.id)

    # -- sessions and the monitor ------------------------------------------------------------------

    def _new_session(self, goal: str, model: str | None) -> Callable[[str], Session]:
        def new(key: str) -> Session:
            session = Session(key, self.config.new_monitor(goal))
            session.notes = deque(maxlen=self.config.max_notes)
            if self.config.trace_dir is not None:
                session.trace = SessionTrace(self.config.trace_dir / key)
                session.trace.start(key, self.config.upstream, self._settings(), model)
            if self.belief_model is not None:
                from pos_agent.serve.belief import BeliefTracker, belief_limits

                spec = self.config.belief_model or ""
                session.belief = BeliefTracker(self.belief_model, goal, belief_limits(spec))
            return session

        return new

    def _settings(self) -> dict[str, Any]:
        return {
            "policy": self.config.policy,
            "health": self.config.health,
            "belief_model": self.config.belief_model,
            "polling_tools": dict(self.config.polling_tools),
            "exempt_tools": list(self.config.exempt_tools),
            "trace_outputs": self.config.trace_outputs,
            **self.config.settings,
        }

    async def verdict(
        self, headers: Mapping[str, str], messages: list[Any], model: object = None
    ) -> Verdict:
        """Give the history's new steps to the session's monitor; never raises. `model` is the
        model the request names (recorded in a new session's trace)."""
        key = session_id(headers.get(SESSION_HEADER), messages)
        try:
            goal = _goal(messages)
            named = model if isinstance(model, str) else None
            session = self.store.get(key, self._new_session(goal, named))
        except Exception:
            log.exception("session %s could not be opened; request forwarded unchanged", key)
            return Verdict(None, key, failed=True)
        async with session.lock:
            session.requests += 1
            try:
                return await self._observe(session, messages)
            except Exception:
                session.errors += 1
                log.exception("the monitor failed on session %s; request forwarded unchanged", key)
                if session.trace is not None:
                    with contextlib.suppress(Exception):
                        session.trace.emit(
                            [
                                DegradedEvent(
                                    step=session.steps,
                                    role="monitor",
                                    reason="the monitor raised",
                                    fallback="fail open",
                                )
                            ]
                        )
                return Verdict(session.report, key, failed=True)

    def _new_steps(self, session: Session, messages: list[Any]) -> list[Step]:
        """The steps of the history the session has not seen. When the message that ended the
        last seen step is still where it was, only what follows it is parsed (by the parser
        that read the session so far); else the whole history is, and a history that no longer
        holds the last seen step starts the session again."""
        end = session.last_end
        if (
            end is not None
            and end < len(messages)
            and messages[end] == session.last_end_message
            and (parser := self._parser(session.format)) is not None
        ):
            tail = parser.steps(messages[end + 1 :])
            return [replace(step, end=step.end + end + 1) for step in tail]
        steps, format_name = parse_history(messages, self.config.parsers)
        if format_name is not None:
            session.format = format_name
        if session.steps and (
            len(steps) < session.steps
            or _step_key(steps[session.steps - 1]) != session.last_step_key
        ):
            self._restart(session)
        return steps[session.steps :]

    def _parser(self, name: str | None) -> StepParser | None:
        return next((p for p in self.config.parsers if p.name == name), None)

    async def _observe(self, session: Session, messages: list[Any]) -> Verdict:
        new = self._new_steps(session, messages)
        events: list[Event] = []
        degraded = False
        monitor = session.monitor
        for step in new:
            action = canonical_action(step.action, monitor.normalise).text
            belief = None
            if session.belief is not None:
                belief, belief_events = await self._believe(session, monitor.step + 1, action, step)
                events += belief_events
                degraded = degraded or belief is None
            observed = monitor.observe(step.action, step.observation, belief)
            session.report = observed
            session.steps += 1
            session.last_step_key = _step_key(step)
            session.last_end, session.last_end_message = step.end, messages[step.end]
            shown = step.observation if self.config.trace_outputs else withheld(step.observation)
            events += step_events(action, shown, observed)
            text = observed.advice.text
            if self.config.policy != "observe" and text:
                label = "Stop now." if observed.advice.kind == "stop" else "Note:"
                session.notes.append(Note(step.end, f"{NOTE_PREFIX} {label} {text}"))
        if session.trace is not None and events:
            session.trace.emit(events)
        report = session.report
        forbidden: frozenset[str] = frozenset()
        # Nudge first: the block policy refuses only from the alarm's block level on, and
        # every call at its stop level (the monitor's `AlarmPolicy` sets both).
        blocking = report is not None and report.escalation in ("block", "stop")
        if self.config.policy == "block" and report is not None and blocking:
            forbidden = frozenset(
                canonical_action(a, monitor.normalise).key for a in report.forbidden_actions
            )
        extra = None
        if self.config.show_belief and session.belief is not None:
            shown = session.belief.render()
            extra = f"{NOTE_PREFIX} Your belief so far:\n{shown}" if shown else None
        if not new and report is not None:
            # No new step in this request: the standing verdict, with nothing new to do.
            report = replace(report, advice=Advice("none", level=report.escalation))
        return Verdict(
            report,
            session.id,
            tuple(session.notes),
            forbidden,
            stop=self.config.policy == "block"
            and report is not None
            and report.escalation == "stop",
            degraded=degraded,
            extra_note=extra,
        )

    async def refused(self, session: Session | None, refusals: Sequence[Refusal]) -> None:
        """Count each refusal as a monitor step (the refused calls, the refusal as their
        output), as the adapters do: a run that keeps making a refused call climbs the alarm's
        levels to the stop. Never raises."""
        if session is None or not refusals:
            return
        async with session.lock:
            try:
                monitor = session.monitor
                for refusal in refusals:
                    action = refusal.calls[0] if len(refusal.calls) == 1 else refusal.calls
                    report = monitor.observe(action, refusal.text, progress=0)
                    session.report = report
                    if session.trace is not None:
                        text = canonical_action(action, monitor.normalise).text
                        session.trace.emit(step_events(text, refusal.text, report))
            except Exception:
                session.errors += 1
                log.exception("the monitor failed on a refusal in session %s", session.id)

    async def _believe(
        self, session: Session, step: int, action: str, observed: Step
    ) -> tuple[Any, list[Event]]:
        loop = asyncio.get_running_loop()
        tracker = session.belief
        return await loop.run_in_executor(
            self._belief_pool, tracker.observe, step, action, observed.observation
        )

    def _restart(self, session: Session) -> None:
        """The history no longer holds what the monitor saw: start the session's episode again."""
        session.monitor.reset()
        session.steps = 0
        session.last_step_key = None
        session.last_end = session.last_end_message = None
        session.report = None
        session.notes.clear()
        if session.belief is not None:
            session.belief.belief = None
        if session.trace is not None:
            session.trace.emit(
                [DegradedEvent(role="monitor", reason="history rewritten", fallback="restarted")]
            )

    # -- forwarding --------------------------------------------------------------------------------

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> httpx.Response:
        """Send a request upstream; the answer's body is still to read (or close). Straight to
        a connection pool (the pools take turns), not through an `httpx.AsyncClient`: a
        client's cookie jar would carry one agent's cookies to every other, and its auth,
        redirect and cookie steps cost CPU a proxy has no use for."""
        if not self.pools:
            raise RuntimeError("the proxy has not started (use it inside the app's lifespan)")
        request = httpx.Request(
            method, url, headers=headers, content=body, extensions={"timeout": self._timeout}
        )
        pool = self.pools[next(self._turn) % len(self.pools)]
        return await pool.handle_async_request(request)

    def upstream_url(self, raw_path: bytes, query: bytes | str) -> str | None:
        """The upstream URL of a request's path (as the client encoded it) and query: `/v1/X`
        goes to `<upstream>/X`, any other path to `<upstream><path>`. None for a path that could
        leave the upstream's base (`forward_path`)."""
        path = forward_path(raw_path.partition(b"?")[0])
        if path is None:
            return None
        rest = path[3:] if path == "/v1" or path.startswith("/v1/") else path
        url = f"{self.config.upstream}{rest}"
        query = query.decode("latin-1") if isinstance(query, bytes) else query
        return f"{url}?{query}" if query else url

    @staticmethod
    def forward_headers(headers: Mapping[str, str]) -> dict[str, str]:
        # accept-encoding is dropped so that the answer comes as plain text we can read.
        return {
            k: v
            for k, v in headers.items()
            if k.lower() not in HOP_HEADERS
            and k.lower() != "accept-encoding"
            and not k.lower().startswith("x-pos-")
        }


def _goal(messages: Sequence[Any]) -> str:
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") == "user":
            return message_text(message)[:GOAL_CHARS]
    return ""


def _step_key(step: Step) -> int:
    return hash((repr(step.action), step.observation))
