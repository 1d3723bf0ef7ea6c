"""The proxy's routes: the judged APIs through the monitor, the sessions it keeps, and
everything else passed through to the upstream unchanged.

    POST /v1/chat/completions   the history becomes monitor steps; the verdict goes in the
    POST /v1/responses          response headers; per policy a note is added to the request
    POST /v1/messages           (nudge) or a forbidden repeated call is answered with a refusal
                                (block), each in the API's own shape (apis.py); streaming is
                                passed through chunk by chunk
    GET  /pos/sessions          the sessions the proxy keeps, with their verdicts (needs the
                                proxy's token: `Authorization: Bearer TOKEN`)
    anything else               passed through to the upstream unchanged

Before any of it: a body past `max_body_bytes` is answered 413 without being read whole, and a
path that could leave the upstream's base path (`..`, raw or encoded) 400 (limits.py).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from pos_agent.monitor import TrapMonitor
from pos_agent.redaction import redact_text
from pos_agent.serve.apis import Api, ChatApi, History
from pos_agent.serve.limits import BodyTooLarge, error_response, has_token, read_body
from pos_agent.serve.messages_api import MessagesApi
from pos_agent.serve.policy import Judge, Verdict
from pos_agent.serve.proxy import HOP_HEADERS, Proxy
from pos_agent.serve.responses_api import ResponsesApi
from pos_agent.serve.sessions import Session
from pos_agent.serve.streaming import StreamEnding, relay

__all__ = ["Routes"]

log = logging.getLogger("pos_agent.serve")


_error = error_response
STALE_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
"""Errors of a request that got no answer at all on a connection that was kept alive."""


def _relayed(upstream: httpx.Response, *, decoded: bool) -> dict[str, str]:
    drop = HOP_HEADERS | ({"content-encoding"} if decoded else set())
    return {k: v for k, v in upstream.headers.items() if k.lower() not in drop}


class Routes:
    """The request handlers of one proxy."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.config = proxy.config
        self.apis: dict[str, Api] = {
            "chat": ChatApi(self.config.parsers),
            "responses": ResponsesApi(),
            "messages": MessagesApi(),
        }

    async def send(
        self, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> httpx.Response | JSONResponse:
        """The upstream's answer (its body still to read), or the error the client gets."""
        proxy = self.proxy
        try:
            try:
                return await proxy.send(method, url, headers, body)
            except STALE_CONNECTION:
                # A kept-alive connection the upstream closed as the request went out (its
                # keep-alive timeout): no answer came, so the request goes once more, on a new
                # connection.
                log.info("the upstream closed a kept-alive connection; request sent again")
                return await proxy.send(method, url, headers, body)
        except httpx.TimeoutException as error:
            return _error(504, "upstream_timeout", f"PoS proxy: the upstream timed out ({error})")
        except httpx.HTTPError as error:
            reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            return _error(
                502,
                "upstream_unreachable",
                f"PoS proxy: the upstream at {redact_text(self.config.upstream)} is unreachable "
                f"({redact_text(reason)})",
            )

    async def body(self, request: Request) -> bytes | JSONResponse:
        """The request's body, or the 413 to answer when it is past the limit (the connection
        is closed then: the rest of the body is never read)."""
        try:
            return await read_body(request, self.config.max_body_bytes)
        except BodyTooLarge as error:
            log.warning("refused a request body past %d bytes", error.limit)
            return _error(413, "request_too_large", str(error), {"connection": "close"})

    def url(self, request: Request) -> str | JSONResponse:
        """The upstream URL of the request, or the 400 to answer when its path could leave the
        upstream's base path."""
        raw = request.scope.get("raw_path") or request.scope["path"].encode("utf-8")
        url = self.proxy.upstream_url(raw, request.scope.get("query_string", b""))
        if url is None:
            return _error(
                400,
                "invalid_path",
                "PoS proxy: the path holds a dot segment or an encoded slash; it is not forwarded",
            )
        return url

    async def passthrough(self, request: Request, body: bytes | None = None) -> Response:
        proxy = self.proxy
        url = self.url(request)
        if isinstance(url, JSONResponse):
            return url
        if body is None:
            read = await self.body(request)
            if isinstance(read, JSONResponse):
                return read
            body = read
        answer = await self.send(request.method, url, proxy.forward_headers(request.headers), body)
        if isinstance(answer, JSONResponse):
            return answer
        # An event stream that breaks ends with an error event; any other body is cut.
        events = answer.headers.get("content-type", "").startswith("text/event-stream")
        return StreamingResponse(
            relay(answer.aiter_raw(), answer, None, StreamEnding(None), events=events),
            status_code=answer.status_code,
            headers=_relayed(answer, decoded=False),
        )

    async def chat(self, request: Request) -> Response:
        return await self.judged(request, self.apis["chat"])

    async def responses(self, request: Request) -> Response:
        return await self.judged(request, self.apis["responses"])

    async def messages(self, request: Request) -> Response:
        return await self.judged(request, self.apis["messages"])

    async def judged(self, request: Request, api: Api) -> Response:
        """A request of one of the judged APIs: its history through the monitor, the policy
        applied in the API's own shape, the verdict in the headers."""
        proxy = self.proxy
        url = self.url(request)
        if isinstance(url, JSONResponse):
            return url
        read = await self.body(request)
        if isinstance(read, JSONResponse):
            return read
        body = read
        # The proxy's own time: from the whole request in hand to forwarding it, and from the
        # upstream's whole answer to sending it back (no await in between: no other request's
        # work is counted). It goes back in `Server-Timing`.
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        history = api.history(payload) if isinstance(payload, dict) else None
        if history is None or not isinstance(payload, dict):
            return await self.passthrough(request, body)
        verdict = await proxy.verdict(request.headers, history.messages, payload.get("model"))
        session = proxy.store.peek(verdict.session)
        rewritten = self._with_policy(api, payload, history, verdict)
        if rewritten is not None:
            payload = rewritten
            body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        before = time.perf_counter() - started
        cpu_before = time.thread_time() - cpu_started
        answer = await self.send("POST", url, proxy.forward_headers(request.headers), body)
        pos_headers = verdict.headers()
        if isinstance(answer, JSONResponse):
            answer.headers.update(pos_headers)
            return answer
        judge = Judge(verdict, _monitor(session), session.format if session else None)
        timing = (before, cpu_before)
        if payload.get("stream"):
            return await self._streamed(api, answer, judge, session, pos_headers, timing)
        return await self._answered(api, answer, judge, session, pos_headers, timing)

    def _with_policy(
        self, api: Api, payload: dict[str, Any], history: History, verdict: Verdict
    ) -> dict[str, Any] | None:
        """The request with the session's notes in its history (nudge, block) or this request's
        belief note (show_belief), or None to forward it as it came."""
        config = self.config
        if config.policy != "observe" and not verdict.failed:
            return api.with_notes(payload, history, verdict, config.note_role)
        if config.show_belief and verdict.extra_note:
            belief_only = replace(verdict, notes=())
            return api.with_notes(payload, history, belief_only, config.note_role)
        return None

    async def _streamed(
        self,
        api: Api,
        answer: httpx.Response,
        judge: Judge,
        session: Session | None,
        pos_headers: dict[str, str],
        timing: tuple[float, float],
    ) -> Response:
        """A streamed answer, relayed as it comes (through a guard while the policy may refuse
        a call); `timing` is the proxy's time and CPU time before forwarding the request. An
        upstream that fails before its first byte gives an error status; one that fails after
        it, an error event at the end of the stream."""
        chunks = answer.aiter_bytes()
        first = await _first_chunk(chunks, answer, redact_text(self.config.upstream))
        if isinstance(first, JSONResponse):
            first.headers.update(pos_headers)
            return first
        guard = api.guard(judge) if judge.active else None
        before, cpu_before = timing
        headers = {**_relayed(answer, decoded=True), **pos_headers}
        headers["server-timing"] = (
            f"pos;dur={before * 1000:.3f};desc=before-upstream, pos-cpu;dur={cpu_before * 1000:.3f}"
        )
        ending = StreamEnding(api.ending if answer.status_code == 200 else None)

        async def refused() -> None:
            await self.proxy.refused(session, judge.refused)

        return StreamingResponse(
            relay(_chain(first, chunks), answer, guard, ending, on_end=refused),
            status_code=answer.status_code,
            headers=headers,
        )

    async def _answered(
        self,
        api: Api,
        answer: httpx.Response,
        judge: Judge,
        session: Session | None,
        pos_headers: dict[str, str],
        timing: tuple[float, float],
    ) -> Response:
        """A whole answer, read, with the calls the policy refuses replaced (block)."""
        try:
            content = await answer.aread()
        except httpx.HTTPError as error:
            await answer.aclose()
            timeout = isinstance(error, httpx.TimeoutException)
            return _error(
                504 if timeout else 502,
                "upstream_timeout" if timeout else "upstream_broken",
                f"PoS proxy: the upstream answer broke ({type(error).__name__})",
                pos_headers,
            )
        await answer.aclose()
        after_start, cpu_after_start = time.perf_counter(), time.thread_time()
        blocked = False
        if judge.active and answer.status_code == 200:
            try:
                parsed = json.loads(content)
                if isinstance(parsed, dict) and api.refuse(parsed, judge, judge.fmt):
                    content = json.dumps(parsed, ensure_ascii=False).encode("utf-8")
                    blocked = True
            except Exception:
                log.exception(
                    "the block policy failed on session %s; answer relayed", judge.verdict.session
                )
        headers = {**_relayed(answer, decoded=True), **pos_headers}
        headers["x-pos-blocked"] = "true" if blocked else "false"
        before, cpu_before = timing
        spent = before + time.perf_counter() - after_start
        cpu = cpu_before + time.thread_time() - cpu_after_start
        headers["server-timing"] = f"pos;dur={spent * 1000:.3f}, pos-cpu;dur={cpu * 1000:.3f}"
        if blocked:
            await self.proxy.refused(session, judge.refused)
        return Response(content, status_code=answer.status_code, headers=headers)

    async def sessions(self, request: Request) -> Response:
        proxy, config = self.proxy, self.config
        if not has_token(request, config.pos_token):
            return _error(
                401,
                "unauthorized",
                "PoS proxy: /pos endpoints need the token `pos serve` printed at start "
                "(send `Authorization: Bearer TOKEN` or `X-PoS-Token: TOKEN`)",
                {"www-authenticate": "Bearer"},
            )
        now = time.monotonic()
        proxy.store.expire(now)
        return JSONResponse(
            {
                "upstream": redact_text(config.upstream),
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


def _monitor(session: Session | None) -> TrapMonitor | None:
    return session.monitor if session is not None else None


async def _first_chunk(
    chunks: AsyncIterator[bytes], answer: httpx.Response, upstream: str
) -> bytes | JSONResponse:
    """The stream's first bytes, or the error status to answer with when the upstream fails
    (or ends) before sending any."""
    try:
        return await anext(chunks)
    except StopAsyncIteration:
        if answer.status_code != 200:
            return b""
        await answer.aclose()
        return _error(502, "upstream_empty", "PoS proxy: the upstream sent an empty stream")
    except httpx.HTTPError as error:
        await answer.aclose()
        if isinstance(error, httpx.TimeoutException):
            return _error(504, "upstream_timeout", "PoS proxy: the upstream stream stalled")
        return _error(
            502,
            "upstream_broken",
            f"PoS proxy: the upstream at {upstream} broke the stream ({type(error).__name__})",
        )


async def _chain(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if first:
        yield first
    async for chunk in rest:
        yield chunk
