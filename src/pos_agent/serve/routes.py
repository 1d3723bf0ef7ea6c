"""The proxy's routes: Chat Completions through the monitor, the sessions it keeps, and
everything else passed through to the upstream unchanged.

    POST /v1/chat/completions   the history becomes monitor steps; the verdict goes in the
                                response headers; per policy a note is added to the request
                                (nudge) or a forbidden repeated call is answered with a refusal
                                (block); streaming is passed through chunk by chunk
    GET  /pos/sessions          the sessions the proxy keeps, with their verdicts
    anything else               passed through to the upstream unchanged
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from pos_agent.monitor import TrapMonitor
from pos_agent.serve.policy import Verdict, refuse_answer, with_notes
from pos_agent.serve.proxy import HOP_HEADERS, Proxy
from pos_agent.serve.sessions import Session
from pos_agent.serve.streaming import StreamGuard, relay

__all__ = ["Routes"]

log = logging.getLogger("pos_agent.serve")


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}}, status_code=status
    )


def _relayed(upstream: httpx.Response, *, decoded: bool) -> dict[str, str]:
    drop = HOP_HEADERS | ({"content-encoding"} if decoded else set())
    return {k: v for k, v in upstream.headers.items() if k.lower() not in drop}


class Routes:
    """The request handlers of one proxy."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.config = proxy.config

    async def send(
        self, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> httpx.Response | JSONResponse:
        """The upstream's answer (its body still to read), or the error the client gets."""
        client = self.proxy.client
        assert client is not None
        request = client.build_request(method, url, headers=headers, content=body)
        try:
            return await client.send(request, stream=True)
        except httpx.TimeoutException as error:
            return _error(504, "upstream_timeout", f"PoS proxy: the upstream timed out ({error})")
        except httpx.HTTPError as error:
            reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            return _error(
                502,
                "upstream_unreachable",
                f"PoS proxy: the upstream at {self.config.upstream} is unreachable ({reason})",
            )

    async def passthrough(self, request: Request) -> Response:
        proxy = self.proxy
        body = await request.body()
        url = proxy.upstream_url(request.url.path, request.url.query)
        answer = await self.send(request.method, url, proxy.forward_headers(request.headers), body)
        if isinstance(answer, JSONResponse):
            return answer
        return StreamingResponse(
            relay(answer, None, raw=True),
            status_code=answer.status_code,
            headers=_relayed(answer, decoded=False),
        )

    async def chat(self, request: Request) -> Response:
        proxy = self.proxy
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
            return await self.passthrough(request)
        verdict = await proxy.verdict(request.headers, payload["messages"], payload.get("model"))
        session = proxy.store.peek(verdict.session)
        rewritten = self._with_policy(payload, verdict)
        if rewritten is not None:
            payload = rewritten
            body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        url = proxy.upstream_url(request.url.path, request.url.query)
        before = time.perf_counter() - started
        cpu_before = time.thread_time() - cpu_started
        answer = await self.send("POST", url, proxy.forward_headers(request.headers), body)
        pos_headers = verdict.headers()
        if isinstance(answer, JSONResponse):
            answer.headers.update(pos_headers)
            return answer
        timing = (before, cpu_before)
        if payload.get("stream"):
            return self._streamed(answer, verdict, session, pos_headers, timing)
        return await self._answered(answer, verdict, session, pos_headers, timing)

    def _with_policy(self, payload: dict[str, Any], verdict: Verdict) -> dict[str, Any] | None:
        """The request with the session's notes in its history (nudge, block) or this request's
        belief note (show_belief), or None to forward it as it came."""
        config, messages = self.config, payload["messages"]
        if config.policy != "observe" and not verdict.failed:
            forwarded = with_notes(messages, verdict, config.note_role)
            return None if forwarded is messages else {**payload, "messages": forwarded}
        if config.show_belief and verdict.extra_note:
            belief_only = replace(verdict, notes=())
            return {**payload, "messages": with_notes(messages, belief_only, config.note_role)}
        return None

    def _streamed(
        self,
        answer: httpx.Response,
        verdict: Verdict,
        session: Session | None,
        pos_headers: dict[str, str],
        timing: tuple[float, float],
    ) -> StreamingResponse:
        """A streamed answer, relayed as it comes (through a guard while a block stands);
        `timing` is the proxy's time and CPU time before forwarding the request."""
        guard = StreamGuard(verdict, _monitor(session)) if verdict.forbidden else None
        before, cpu_before = timing
        headers = {**_relayed(answer, decoded=True), **pos_headers}
        headers["server-timing"] = (
            f"pos;dur={before * 1000:.3f};desc=before-upstream, pos-cpu;dur={cpu_before * 1000:.3f}"
        )
        return StreamingResponse(
            relay(answer, guard, raw=False), status_code=answer.status_code, headers=headers
        )

    async def _answered(
        self,
        answer: httpx.Response,
        verdict: Verdict,
        session: Session | None,
        pos_headers: dict[str, str],
        timing: tuple[float, float],
    ) -> Response:
        """A whole answer, read, with a forbidden call in it refused (block)."""
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
                fmt = session.format if session is not None else None
                if isinstance(parsed, dict) and refuse_answer(
                    parsed, verdict, self.config.parsers, fmt, _monitor(session)
                ):
                    content = json.dumps(parsed, ensure_ascii=False).encode("utf-8")
                    blocked = True
            except Exception:
                log.exception(
                    "the block policy failed on session %s; answer relayed", verdict.session
                )
        headers = {**_relayed(answer, decoded=True), **pos_headers}
        headers["x-pos-blocked"] = "true" if blocked else "false"
        before, cpu_before = timing
        spent = before + time.perf_counter() - after_start
        cpu = cpu_before + time.thread_time() - cpu_after_start
        headers["server-timing"] = f"pos;dur={spent * 1000:.3f}, pos-cpu;dur={cpu * 1000:.3f}"
        return Response(content, status_code=answer.status_code, headers=headers)

    async def sessions(self, request: Request) -> Response:
        proxy, config = self.proxy, self.config
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


def _monitor(session: Session | None) -> TrapMonitor | None:
    return session.monitor if session is not None else None
