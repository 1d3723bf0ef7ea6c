"""PoS inside LiteLLM: a guardrail that runs `pos serve`'s monitor in LiteLLM's own proxy (or
in `litellm.acompletion`), with no second hop (`pip install "pos-agent[litellm]"`).

Each chat request's history goes to its session's `TrapMonitor` the way `pos serve` reads it
(`pos_agent.serve.Proxy.verdict`: only the tool call/result pairs not seen before), and the
policy is applied as `pos serve` applies it:

- `observe`: nothing changes; the verdict is logged (logger `pos_agent.litellm`).
- `nudge`: the monitor's notes go into the request, each where it was first given.
- `block`: the notes, and from the alarm's block level (after the nudge-first turns) an answer
  that repeats a forbidden call is refused: the client gets an error (HTTP 400 through the
  proxy, `TrapBlocked` in the SDK) saying which call and why, and the refusal counts as a step.
  At the alarm's stop level every request of the session is refused before it goes upstream.

In LiteLLM's proxy `config.yaml`:

    guardrails:
      - guardrail_name: pos
        litellm_params:
          guardrail: my_guardrails.pos      # a module of yours: pos = PosGuardrail(policy="block")
          mode: [pre_call, post_call]
          default_on: true

A session is the `X-PoS-Session` header, else `metadata["pos_session"]` of the request, else
(as in `pos serve`) a hash of the conversation's start. LiteLLM's proxy (1.110.2) runs a
post-call guardrail on a streamed request by taking the whole answer from the upstream first, so
streamed requests are judged and refused like the others.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.guardrails import GuardrailEventHooks

from pos_agent.adapters.options import monitor_options
from pos_agent.serve import (
    SESSION_HEADER,
    Judge,
    Policy,
    Proxy,
    ServeConfig,
    Session,
    Verdict,
    parse_answer,
    session_id,
    stop_text,
    with_notes,
)

__all__ = ["SESSION_METADATA", "PosGuardrail", "TrapBlocked"]

log = logging.getLogger("pos_agent.litellm")

SESSION_METADATA = "pos_session"
"""The request metadata key that names a session (`metadata={"pos_session": "run-7"}`)."""
CHAT_CALLS = ("completion", "acompletion")


class TrapBlocked(Exception):
    """A request or answer the `block` policy refused; LiteLLM's proxy answers it with HTTP 400
    and this message."""

    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PosGuardrail(CustomGuardrail):
    """LiteLLM guardrail (pre-call and post-call) running the trap monitor per session.

    Takes `pos serve`'s options: `policy` (observe, nudge, block), `polling_tools`
    (`{name: N}` or `NAME[=N]` words), `exempt_tools`, or `config` (the file `pos serve
    --config` reads), and anything else of `ServeConfig` as keyword `serve={...}`."""

    def __init__(
        self,
        policy: Policy = "nudge",
        *,
        polling_tools: Mapping[str, int] | Collection[str] | None = None,
        exempt_tools: Collection[str] | None = None,
        config: str | Path | None = None,
        serve: Mapping[str, Any] | None = None,
        guardrail_name: str = "pos",
        default_on: bool = True,
        **kwargs: Any,
    ) -> None:
        options = monitor_options(config) if config is not None else {}
        given = monitor_options({"polling_tools": polling_tools, "exempt_tools": exempt_tools})
        options["polling_tools"] = {**options.get("polling_tools", {}), **given["polling_tools"]}
        options["exempt_tools"] = [*options.get("exempt_tools", []), *given["exempt_tools"]]
        settings = {"upstream": "litellm", "policy": policy, **options, **dict(serve or {})}
        self.proxy = Proxy(ServeConfig(**settings))
        self.config = self.proxy.config
        self._verdicts: OrderedDict[str, Verdict] = OrderedDict()
        kwargs.setdefault(
            "event_hook", [GuardrailEventHooks.pre_call, GuardrailEventHooks.post_call]
        )
        super().__init__(guardrail_name=guardrail_name, default_on=default_on, **kwargs)

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any
    ) -> dict | None:
        """Give the history's new steps to the monitor; add its notes (nudge, block); refuse
        the request at the stop level (block)."""
        messages = data.get("messages")
        if str(call_type) not in CHAT_CALLS or not isinstance(messages, list):
            return data
        if not self.should_run_guardrail(data=data, event_type=GuardrailEventHooks.pre_call):
            return data
        key = self.session_key(data)
        headers = {SESSION_HEADER: key} if key else {}
        verdict = await self.proxy.verdict(headers, messages, data.get("model"))
        self._keep(verdict)
        log.info("pos session %s: %s", verdict.session, verdict.headers())
        if self.config.policy == "observe":
            return data
        if verdict.stop:
            raise TrapBlocked(stop_text(verdict.report))
        data["messages"] = with_notes(messages, verdict, self.config.note_role)
        return data

    async def async_post_call_success_hook(
        self, data: dict, user_api_key_dict: Any, response: Any
    ) -> Any:
        """Under `block`, from the alarm's block level: refuse an answer that repeats a
        forbidden call (the refusal counts as the session's next step)."""
        try:
            judged = self._judge(data)
            messages = _answer_messages(response) if judged is not None else []
        except Exception:  # fail open, as pos serve does: the answer goes on unchanged
            log.exception("the pos guardrail could not judge an answer; passed on unchanged")
            return None
        if judged is not None:
            for message in messages:
                await self._refuse(judged, message)
        return None

    def _judge(self, data: Mapping[str, Any]) -> tuple[Judge, Session] | None:
        """The judge of this request's answer under `block`, when it can refuse a call."""
        if self.config.policy != "block":
            return None
        if not self.should_run_guardrail(data=data, event_type=GuardrailEventHooks.post_call):
            return None
        key = self.session_key(data, fallback=True)
        verdict = self._verdicts.get(key) if key else None
        session = self.proxy.store.peek(key) if key else None
        if verdict is None or session is None:
            return None
        judge = Judge(verdict, session.monitor, session.format)
        return (judge, session) if judge.active else None

    async def _refuse(self, judged: tuple[Judge, Session], message: Mapping[str, Any]) -> None:
        judge, session = judged
        try:
            calls, _ = parse_answer(dict(message), self.config.parsers, session.format)
            refusal = judge(calls)
        except Exception:  # fail open
            log.exception("the pos guardrail could not read an answer; passed on unchanged")
            return
        if refusal is not None:
            await self.proxy.refused(session, judge.refused)
            raise TrapBlocked(refusal.text)

    def session_key(self, data: Mapping[str, Any], *, fallback: bool = False) -> str | None:
        """The request's session: the `X-PoS-Session` header, else `metadata["pos_session"]`;
        with `fallback`, else the hash of the conversation's start `pos serve` uses."""
        request = data.get("proxy_server_request")
        headers = request.get("headers") if isinstance(request, Mapping) else None
        if isinstance(headers, Mapping):
            for name, value in headers.items():
                if str(name).lower() == SESSION_HEADER and value:
                    return session_id(str(value), [])
        for bucket in ("metadata", "litellm_metadata"):
            meta = data.get(bucket)
            if isinstance(meta, Mapping) and meta.get(SESSION_METADATA):
                return session_id(str(meta[SESSION_METADATA]), [])
        if not fallback:
            return None
        messages = data.get("messages")
        return session_id(None, messages if isinstance(messages, list) else [])

    def _keep(self, verdict: Verdict) -> None:
        self._verdicts[verdict.session] = verdict
        self._verdicts.move_to_end(verdict.session)
        while len(self._verdicts) > self.config.max_sessions:
            self._verdicts.popitem(last=False)


def _answer_messages(response: Any) -> list[dict[str, Any]]:
    """The messages of a chat answer (a LiteLLM `ModelResponse` or its dict)."""
    body = response.model_dump() if hasattr(response, "model_dump") else response
    if not isinstance(body, Mapping):
        return []
    out = []
    for choice in body.get("choices") or []:
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if isinstance(message, Mapping):
            out.append(dict(message))
    return out
