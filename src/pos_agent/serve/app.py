"""The proxy: an ASGI app (starlette) in front of any OpenAI-compatible server (httpx).

    POST /v1/chat/completions   the history becomes monitor steps; the verdict goes in the
                                response headers; per policy a note is added to the request
                                (nudge) or a forbidden repeated call is answered with a refusal
                                (block); streaming is passed through chunk by chunk
    GET  /pos/sessions          the sessions the proxy keeps, with their verdicts
    anything else               passed through to the upstream unchanged

The verdict is computed from the request's history before it is forwarded, so it is known
before a streamed answer starts. Fail open: when the monitor (or the belief model) raises, the
error is logged, the request goes on as it came, and `X-PoS-Error` says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pos_agent.events import DegradedEvent, Event
from pos_agent.health.window import Diagnosis
from pos_agent.monitor import Advice, MonitorReport, ToolCall, TrapMonitor, canonical_action
from pos_agent.serve.parsers import (
    DEFAULT_PARSERS,
    Step,
    StepParser,
    message_text,
    parse_answer,
    parse_history,
)
from pos_agent.serve.sessions import SESSION_HEADER, Note, Session, SessionStore, session_id
from pos_agent.serve.traces import SessionTrace, step_events

__all__ = ["NOTE_PREFIX", "Policy", "ServeConfig", "create_app", "default_trace_dir"]

log = logging.getLogger("pos_agent.serve")

Policy = Literal["observe", "nudge", "block"]
POLICIES: tuple[Policy, ...] = ("observe", "nudge", "block")
NOTE_PREFIX = "[PoS monitor]"
"""How every note and refusal the proxy writes starts, so the agent (and a test) can tell it."""
GOAL_CHARS = 500
"""The first user message, clipped, is the session's goal (the monitor's and the belief's)."""

# Headers that belong to one hop (RFC 9110 7.6.1) or that httpx sets itself; never forwarded.
_HOP = frozenset(
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


def default_trace_dir() -> Path:
    """`runs/serve-<UTC time>`: one folder per proxy start, one sub-folder per session."""
    return Path("runs") / f"serve-{datetime.now(UTC):%Y%m%d-%H%M%S}"


@dataclass
class ServeConfig:
    """How `pos serve` runs. The defaults are what `pos serve --upstream URL` uses."""

    upstream: str
    """The OpenAI-compatible base URL, e.g. `http://127.0.0.1:8080/v1`."""
    policy: Policy = "observe"
    """`observe` changes nothing; `nudge` adds the monitor's note to the request; `block` also
    answers a forbidden repeated call with a refusal."""
    health: Diagnosis = "improved"
    """The monitor's diagnosis: `improved` or `paper` (Eq. 5-6)."""
    belief_model: str | None = None
    """A `--model` spec: keep a PoS belief per session and give it to the monitor."""
    show_belief: bool = False
    """In belief mode, also show the agent its current belief (a note at the end)."""
    trace_dir: Path | None = None
    """Where each session writes `<session>/events.jsonl`; None: no traces."""
    max_sessions: int = 1024
    ttl_s: float = 3600.0
    timeout_s: float = 600.0
    """Upstream timeout per request (a local model can take minutes)."""
    note_role: Literal["user", "system"] = "user"
    """The role of the note message the proxy adds (some chat templates refuse a late system)."""
    parsers: Sequence[StepParser] = DEFAULT_PARSERS
    monitor_factory: Callable[[str], TrapMonitor] | None = None
    """Builds a session's monitor from its goal (default: `TrapMonitor(goal, health=...)`)."""
    belief_model_factory: Callable[[], Any] | None = None
    """Builds the belief model (default: `load_model(belief_model)`)."""
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        self.upstream = self.upstream.rstrip("/")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the monitor says of one request's history."""

    report: MonitorReport | None
    session: str
    notes: tuple[Note, ...] = ()
    forbidden: frozenset[str] = frozenset()
    """Canonical keys of the calls to refuse in the answer (policy `block`)."""
    failed: bool = False
    """The monitor failed: the request goes on unchanged (fail open)."""
    degraded: bool = False
    """The belief model failed on a step, which was read model-free."""
    extra_note: str | None = None
    """A note for this request only (the belief, with `show_belief`)."""

    def headers(self) -> dict[str, str]:
        report = self.report
        trapped = bool(report and report.trapped)
        headers = {
            "x-pos-session": self.session,
            "x-pos-trapped": "true" if trapped else "false",
            "x-pos-pattern": (report.pattern or "none") if report and trapped else "none",
            "x-pos-health": f"{report.health.health:.3f}" if report else "1.000",
            "x-pos-step": str(report.step) if report else "0",
            "x-pos-advice": report.advice.kind if report else "none",
            "x-pos-escalation": report.escalation if report else "none",
        }
        if self.failed:
            headers["x-pos-error"] = "monitor failed; request forwarded unchanged"
        elif self.degraded:
            headers["x-pos-error"] = "belief model failed; step read model-free"
        return headers


class Proxy:
    """The proxy's state: the upstream client, the sessions, the belief model."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.store = SessionStore(
            max_sessions=config.max_sessions, ttl_s=config.ttl_s, on_evict=self._closed
        )
        self.client: httpx.AsyncClient | None = None
        self.belief_model: Any = None
        self._belief_pool: ThreadPoolExecutor | None = None
        self.started = time.monotonic()

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        timeout = httpx.Timeout(self.config.timeout_s, connect=10.0)
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
        self.client = httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False)
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
        if self.client is not None:
            await self.client.aclose()
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
            factory = self.config.monitor_factory
            monitor = (
                factory(goal) if factory else TrapMonitor(goal or None, health=self.config.health)
            )
            session = Session(key, monitor)
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
            events += step_events(action, step.observation, observed)
            text = observed.advice.text
            if self.config.policy != "observe" and text:
                label = "Stop now." if observed.advice.kind == "stop" else "Note:"
                session.notes.append(Note(step.end, f"{NOTE_PREFIX} {label} {text}"))
        if session.trace is not None and events:
            session.trace.emit(events)
        report = session.report
        forbidden: frozenset[str] = frozenset()
        if self.config.policy == "block" and report is not None and report.trapped:
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
            report, session.id, tuple(session.notes), forbidden, degraded=degraded, extra_note=extra
        )

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

    def upstream_url(self, path: str, query: str) -> str:
        rest = path[3:] if path == "/v1" or path.startswith("/v1/") else path
        url = f"{self.config.upstream}{rest}"
        return f"{url}?{query}" if query else url

    @staticmethod
    def forward_headers(headers: Mapping[str, str]) -> dict[str, str]:
        # accept-encoding is dropped so that the answer comes as plain text we can read.
        return {
            k: v
            for k, v in headers.items()
            if k.lower() not in _HOP
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


def _with_notes(messages: list[Any], verdict: Verdict, role: str) -> list[Any]:
    """The history with the session's notes back where they were given, and this request's
    extra note at the end."""
    if not verdict.notes and not verdict.extra_note:
        return messages
    by_index: dict[int, list[str]] = {}
    for note in verdict.notes:
        by_index.setdefault(min(note.after, len(messages) - 1), []).append(note.text)
    out: list[Any] = []
    for index, message in enumerate(messages):
        out.append(message)
        for text in by_index.get(index, ()):
            out.append({"role": role, "content": text})
    if verdict.extra_note:
        out.append({"role": role, "content": verdict.extra_note})
    return out


def _refusal(calls: Sequence[ToolCall], report: MonitorReport | None) -> str:
    names = "; ".join(canonical_action(c, str).text for c in calls)
    since = f" since step {report.trapped_since}" if report and report.trapped_since else ""
    pattern = report.pattern if report and report.pattern else "repeated"
    lines = [
        f"{NOTE_PREFIX} Blocked: {names}. This call repeats calls that have not helped "
        f"(a {pattern} loop{since}), so it was not run. Choose a different action."
    ]
    if report and report.recovery:
        lines.append(report.recovery)
    return "\n".join(lines)


def _blocked_calls(
    calls: Sequence[ToolCall], forbidden: frozenset[str], monitor: TrapMonitor | None
) -> list[ToolCall]:
    normalise = monitor.normalise if monitor is not None else str.lower
    return [c for c in calls if canonical_action(c, normalise).key in forbidden]


def _refuse_answer(
    body: dict[str, Any],
    verdict: Verdict,
    parsers: Sequence[StepParser],
    fmt: str | None,
    monitor: TrapMonitor | None,
) -> bool:
    """Rewrite a Chat Completions answer in place when it makes a forbidden call; True if so."""
    changed = False
    for choice in body.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        calls, parser = parse_answer(message, parsers, fmt)
        blocked = _blocked_calls(calls, verdict.forbidden, monitor)
        if not blocked:
            continue
        refusal = _refusal(blocked, verdict.report)
        if parser == "tool_calls":
            kept = [
                raw
                for raw in message.get("tool_calls") or []
                if not _blocked_calls(
                    [c for c in [_raw_call(raw)] if c is not None], verdict.forbidden, monitor
                )
            ]
            message["tool_calls"] = kept or None
            if not kept:
                choice["finish_reason"] = "stop"
        message["content"] = refusal
        changed = True
    return changed


def _raw_call(raw: object) -> ToolCall | None:
    calls, _ = parse_answer({"tool_calls": [raw]}, DEFAULT_PARSERS[:1])
    return calls[0] if calls else None


class _StreamGuard:
    """Passes a streamed answer through event by event, holding only tool-call deltas while a
    block stands: at the end of the answer the held call is either sent on or replaced by a
    refusal the agent reads as the assistant's text."""

    def __init__(self, verdict: Verdict, monitor: TrapMonitor | None) -> None:
        self.verdict = verdict
        self.monitor = monitor
        self._buffer = b""
        self._held: list[bytes] = []
        self._calls: dict[int, dict[str, str]] = {}
        self._template: dict[str, Any] | None = None
        self.failed = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """What to send on after `chunk`. Fails open: after an error (logged) the guard sends
        on what it held and, from then on, every chunk as it comes."""
        if self.failed:
            return [chunk]
        self._buffer += chunk
        out: list[bytes] = []
        while True:
            cut = _event_end(self._buffer)
            if cut is None:
                return out
            event, self._buffer = self._buffer[:cut], self._buffer[cut:]
            try:
                out += self._event(event)
            except Exception:
                return out + self._fail(event)

    def close(self) -> list[bytes]:
        if self.failed:
            return []
        event, self._buffer = self._buffer, b""
        try:
            out = self._event(event) if event else []
        except Exception:
            return self._fail(event)
        return out + self._release()

    def _fail(self, event: bytes) -> list[bytes]:
        log.exception("the block policy failed on a stream; the rest is relayed as it comes")
        self.failed = True
        rest, self._buffer = self._buffer, b""
        return [*self._release(), event, *([rest] if rest else [])]

    def _event(self, event: bytes) -> list[bytes]:
        data = _sse_data(event)
        if data is None or data == "[DONE]":
            return [*self._settle(None), event]
        try:
            chunk = json.loads(data)
        except ValueError:
            return [*self._release(), event]
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and delta.get("tool_calls"):
            self._template = chunk
            for raw in delta["tool_calls"]:
                if not isinstance(raw, dict):
                    continue
                slot = self._calls.setdefault(int(raw.get("index", 0)), {"name": "", "args": ""})
                function = raw.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["args"] += function.get("arguments") or ""
            self._held.append(event)
            if isinstance(choice, dict) and choice.get("finish_reason"):
                return self._settle(None)
            return []
        if isinstance(choice, dict) and choice.get("finish_reason") and self._held:
            return self._settle((chunk, event))
        return [*self._release(), event] if not self._held else [event]

    def _settle(self, finish: tuple[dict[str, Any], bytes] | None) -> list[bytes]:
        if not self._held:
            return [finish[1]] if finish else []
        calls = [ToolCall(c["name"], c["args"]) for _, c in sorted(self._calls.items())]
        blocked = _blocked_calls(calls, self.verdict.forbidden, self.monitor)
        if not blocked:
            return [*self._release(), *([finish[1]] if finish else [])]
        template = dict(self._template or {})
        refusal = _refusal(blocked, self.verdict.report)
        template["choices"] = [
            {"index": 0, "delta": {"role": "assistant", "content": refusal}, "finish_reason": None}
        ]
        out = [_sse(template)]
        if finish is not None:
            chunk = finish[0]
            for choice in chunk.get("choices") or []:
                if isinstance(choice, dict):
                    choice["finish_reason"] = "stop"
            out.append(_sse(chunk))
        else:
            template = dict(template)
            template["choices"] = [{"index": 0, "delta": {}, "finish_reason": "stop"}]
            out.append(_sse(template))
        self._held.clear()
        self._calls.clear()
        return out

    def _release(self) -> list[bytes]:
        held, self._held = self._held, []
        self._calls.clear()
        return held


def _event_end(buffer: bytes) -> int | None:
    for separator in (b"\n\n", b"\r\n\r\n"):
        at = buffer.find(separator)
        if at >= 0:
            return at + len(separator)
    return None


def _sse_data(event: bytes) -> str | None:
    lines = [
        line[5:].strip()
        for line in event.decode("utf-8", "replace").splitlines()
        if line.startswith("data:")
    ]
    return "\n".join(lines) if lines else None


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode("utf-8") + b"\n\n"


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}}, status_code=status
    )


def create_app(config: ServeConfig) -> Starlette:
    """The proxy as an ASGI app (serve it with uvicorn; `pos serve` does)."""
    proxy = Proxy(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await proxy.start()
        try:
            yield
        finally:
            await proxy.stop()

    async def send(
        method: str, url: str, headers: dict[str, str], body: bytes
    ) -> httpx.Response | JSONResponse:
        assert proxy.client is not None
        request = proxy.client.build_request(method, url, headers=headers, content=body)
        try:
            return await proxy.client.send(request, stream=True)
        except httpx.TimeoutException as error:
            return _error(504, "upstream_timeout", f"PoS proxy: the upstream timed out ({error})")
        except httpx.HTTPError as error:
            reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            return _error(
                502,
                "upstream_unreachable",
                f"PoS proxy: the upstream at {config.upstream} is unreachable ({reason})",
            )

    def relayed(upstream: httpx.Response, *, decoded: bool) -> dict[str, str]:
        drop = _HOP | ({"content-encoding"} if decoded else set())
        return {k: v for k, v in upstream.headers.items() if k.lower() not in drop}

    async def passthrough(request: Request) -> Response:
        body = await request.body()
        url = proxy.upstream_url(request.url.path, request.url.query)
        answer = await send(request.method, url, proxy.forward_headers(request.headers), body)
        if isinstance(answer, JSONResponse):
            return answer
        return StreamingResponse(
            _relay(answer, None, raw=True),
            status_code=answer.status_code,
            headers=relayed(answer, decoded=False),
        )

    async def chat(request: Request) -> Response:
        body = await request.body()
        # The proxy's own time: from the whole request in hand to forwarding it, and from the
        # upstream's whole answer to sending it back (no await in between: no other request's
        # work is counted). It goes back in `Server-Timing`.
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
            return await passthrough(request)
        messages = payload["messages"]
        verdict = await proxy.verdict(request.headers, messages, payload.get("model"))
        session = proxy.store.peek(verdict.session)
        monitor = session.monitor if session is not None else None
        if config.policy != "observe" and not verdict.failed:
            forwarded = _with_notes(messages, verdict, config.note_role)
            if forwarded is not messages:
                payload = {**payload, "messages": forwarded}
                body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        elif config.show_belief and verdict.extra_note:
            payload = {
                **payload,
                "messages": _with_notes(messages, replace(verdict, notes=()), config.note_role),
            }
            body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        url = proxy.upstream_url(request.url.path, request.url.query)
        before = time.perf_counter() - started
        cpu_before = time.thread_time() - cpu_started
        answer = await send("POST", url, proxy.forward_headers(request.headers), body)
        pos_headers = verdict.headers()
        if isinstance(answer, JSONResponse):
            answer.headers.update(pos_headers)
            return answer
        fmt = session.format if session is not None else None
        if payload.get("stream"):
            guard = _StreamGuard(verdict, monitor) if verdict.forbidden else None
            headers = {**relayed(answer, decoded=True), **pos_headers}
            headers["server-timing"] = (
                f"pos;dur={before * 1000:.3f};desc=before-upstream, pos-cpu;dur={cpu_before * 1000:.3f}"
            )
            return StreamingResponse(
                _relay(answer, guard, raw=False), status_code=answer.status_code, headers=headers
            )
        try:
            content = await answer.aread()
        except httpx.HTTPError as error:
            await answer.aclose()
            return _error(502, "upstream_broken", f"PoS proxy: the upstream answer broke ({error})")
        await answer.aclose()
        after_start, cpu_after_start = time.perf_counter(), time.thread_time()
        blocked = False
        if verdict.forbidden and answer.status_code == 200:
            try:
                parsed = json.loads(content)
                if isinstance(parsed, dict) and _refuse_answer(
                    parsed, verdict, config.parsers, fmt, monitor
                ):
                    content = json.dumps(parsed, ensure_ascii=False).encode("utf-8")
                    blocked = True
            except Exception:
                log.exception(
                    "the block policy failed on session %s; answer relayed", verdict.session
                )
        headers = {**relayed(answer, decoded=True), **pos_headers}
        headers["x-pos-blocked"] = "true" if blocked else "false"
        spent = before + time.perf_counter() - after_start
        cpu = cpu_before + time.thread_time() - cpu_after_start
        headers["server-timing"] = f"pos;dur={spent * 1000:.3f}, pos-cpu;dur={cpu * 1000:.3f}"
        return Response(content, status_code=answer.status_code, headers=headers)

    async def sessions(request: Request) -> Response:
        now = time.monotonic()
        proxy.store.expire(now)
        return JSONResponse(
            {
                "upstream": config.upstream,
                "policy": config.policy,
                "health": config.health,
                "belief_model": config.belief_model,
                "max_sessions": config.max_sessions,
                "ttl_s": config.ttl_s,
                "evicted": proxy.store.evicted,
                "uptime_s": round(now - proxy.started, 3),
                "sessions": [s.status(now) for s in proxy.store],
            }
        )

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    routes = [
        Route("/pos/sessions", sessions, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/chat/completions", chat, methods=["POST"]),
        Route("/{path:path}", passthrough, methods=methods),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.proxy = proxy
    return app


async def _relay(
    upstream: httpx.Response, guard: _StreamGuard | None, *, raw: bool
) -> AsyncIterator[bytes]:
    """The upstream's body, chunk by chunk as it comes (through the guard when a block stands);
    `raw` keeps any content encoding as the upstream sent it."""
    try:
        chunks = upstream.aiter_raw() if raw and guard is None else upstream.aiter_bytes()
        async for chunk in chunks:
            for piece in guard.feed(chunk) if guard is not None else (chunk,):
                yield piece
        if guard is not None:
            for piece in guard.close():
                yield piece
    except httpx.HTTPError as error:
        log.warning("the upstream stream broke: %s", type(error).__name__)
    finally:
        await upstream.aclose()
