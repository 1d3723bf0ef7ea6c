"""Any OpenAI-compatible chat server: OpenAI, vLLM, Ollama, llama.cpp server, DashScope.

The chat-completions call is made here over httpx rather than through the `openai` client, so
that every part of it is ours to bound and to judge: a deadline on the whole exchange, a cap on
the reply size, the structured-output mode the server accepts (`_server_modes`), and a 200
reply that is not a chat completion (an HTML page, other JSON, no choices) recognised as a
broken set-up instead of being taken for an empty answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pos_agent.llm._backend import BackendError, GenerationRequest, RawReply
from pos_agent.llm._http import HttpReply
from pos_agent.llm._native_tools import decision_text, tool_functions
from pos_agent.llm._openai_http import (
    DEFAULT_MAX_REPLY_BYTES,
    DETAIL_CHARS,
    OPENAI_DEFAULT_BASE_URL,
    api_endpoint,
    error_text,
    post_or_raise,
    raw_text,
    request_headers,
    retry_after_s,
)
from pos_agent.llm._ratelimit import request_slot
from pos_agent.llm._secrets import public_url, redact, url_secrets, warn_if_key_goes_in_clear
from pos_agent.llm._server_modes import (
    ServerProfile,
    refuses_format,
    rejects_request,
    response_format,
    says_context_overflow,
    server_profile,
    wants_max_completion_tokens,
)
from pos_agent.llm._types import Message, StructuredMode, Usage, request_breakpoints
from pos_agent.llm._usage import checked_usage
from pos_agent.tokens import estimate_tokens

_BASE_URL_HINT = (
    "check --base-url: it should be the server's API root that serves /chat/completions, "
    "usually ending in /v1"
)
OVERFLOW_HINT = (
    "the conversation is longer than the model's context window; resending it cannot help "
    "(--context-window TOKENS makes every history-based method cut its history to fit)"
)


class OpenAICompatibleBackend:
    """Chat completions over HTTP, one request per `generate`, no retries of its own.

    `key_env` names the environment variable a user should set when the key is rejected.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout_s: float,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        provider: str = "openai",
        key_env: str = "OPENAI_API_KEY",
        cache_breakpoints: bool = False,
    ) -> None:
        import httpx

        full_url = base_url or OPENAI_DEFAULT_BASE_URL
        self.name = provider
        self.model_id = model
        self.base_url = public_url(full_url)
        self.timeout_s = timeout_s
        self.max_reply_bytes = max_reply_bytes
        self.key_env = key_env
        self.cache_breakpoints = cache_breakpoints
        self.secrets: tuple[str, ...] = tuple(s for s in (api_key, *url_secrets(full_url)) if s)
        self.profile: ServerProfile = server_profile(self.base_url or "", model)
        self._endpoint = api_endpoint(full_url, "chat/completions", self.secrets)
        warn_if_key_goes_in_clear(full_url, has_key=api_key is not None)
        self._headers = request_headers(api_key, full_url)
        # User info in the URL (a proxy's basic auth) goes in a header (request_headers).
        self._client = httpx.Client(follow_redirects=False)

    def __repr__(self) -> str:
        return (
            f"OpenAICompatibleBackend(provider={self.name!r}, model={self.model_id!r}, "
            f"base_url={self.base_url!r})"
        )

    def generate(self, request: GenerationRequest) -> RawReply:
        while True:
            mode: StructuredMode | None = self.profile.mode if request.schema else None
            native = tool_functions(request.schema) if self.profile.native_tools else None
            if native is not None:
                mode = "tools"
            reply = self._post(self._arguments(request, mode))
            if reply.oversize:
                return RawReply(
                    "",
                    Usage(sum(estimate_tokens(m.content) for m in request.messages), 0),
                    structured_mode=mode,
                    defect=(
                        f"the reply was larger than the {self.max_reply_bytes:,}-byte limit "
                        "(max_reply_bytes) and was not read further"
                    ),
                )
            if reply.status >= 300:
                detail = self._clean(error_text(reply))
                if says_context_overflow(reply.status, self._clean(raw_text(reply))):
                    raise self._overflow(f"{self.base_url} (HTTP {reply.status})", detail)
                if self._adapt_to(reply.status, detail, mode):
                    continue
                raise self._status_error(reply, detail)
            return self._reply_of(reply, request, mode, several=bool(native and native[1]))

    def _post(self, arguments: dict[str, Any]) -> HttpReply:
        # A cluster-wide limit (llm/_ratelimit.py), when one is installed, governs the send.
        with request_slot(self.base_url or "", self.model_id) as slot:
            reply = post_or_raise(
                self._client,
                self._endpoint,
                arguments,
                self._headers,
                timeout_s=self.timeout_s,
                max_bytes=self.max_reply_bytes,
                where=self.base_url or "",
                secrets=self.secrets,
            )
            slot.done(reply.status, retry_after_s(reply.headers))
        return reply

    def _arguments(self, request: GenerationRequest, mode: StructuredMode | None) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model_id,
            "messages": chat_messages(request.messages, breakpoints=self.cache_breakpoints),
            "temperature": request.temperature,
            "seed": request.seed,
            self.profile.token_parameter: request.max_tokens,
        }
        native = tool_functions(request.schema) if mode == "tools" else None
        if native is not None:
            # LOCA's runner: the tools as function definitions, the model chooses (auto).
            arguments["tools"] = native[0]
            arguments["tool_choice"] = "auto"
        elif request.schema is not None and mode is not None and mode != "tools":
            chosen = response_format(mode, request.schema, request.schema_name or "answer")
            if chosen:
                arguments["response_format"] = chosen
        return arguments

    def _adapt_to(self, status: int, detail: str, mode: StructuredMode | None) -> bool:
        """Change what is sent after a refusal that names it; True when worth resending."""
        where = f"{self.base_url} (model {self.model_id})"
        if mode == "tools" and refuses_tools(status, detail):
            return self.profile.stop_native_tools(detail, where)
        if mode is not None and mode != "tools" and refuses_format(status, detail):
            return self.profile.step_down_from(mode, detail, where)
        if wants_max_completion_tokens(status, detail):
            return self.profile.use_max_completion_tokens()
        return False

    def _overflow(self, where: str, detail: str) -> BackendError:
        return BackendError(
            "context_overflow",
            f"{where} refused the prompt as too long for model {self.model_id!r}: "
            f"{detail[:DETAIL_CHARS]}; {OVERFLOW_HINT}",
            retryable=False,
            outage=False,
        )

    def _status_error(self, reply: HttpReply, detail: str) -> BackendError:
        status = reply.status
        where = f"{self.base_url} (HTTP {status})"
        detail = detail[:DETAIL_CHARS]
        if status in (401, 403):
            has_key = "authorization" in self._headers
            what = "rejected the API key" if has_key else "wants an API key"
            return BackendError(
                "config",
                f"{where} {what}: {detail}; set {self.key_env} to a key this server accepts",
                retryable=False,
            )
        if status == 404:
            return BackendError(
                "config",
                f"{where}: model {self.model_id!r} or endpoint not found: {detail}; check the "
                f"model name, and {_BASE_URL_HINT}",
                retryable=False,
            )
        if 300 <= status < 400:
            target = public_url(reply.headers.get("location")) or "another address"
            return BackendError(
                "config",
                f"{where} redirects to {target}; use the final address as --base-url",
                retryable=False,
            )
        if status == 408:
            return BackendError("timeout", f"{where}: {detail}", retryable=True)
        if status in (409, 429):
            # Busy, not down: retried after the server's Retry-After, and no outage.
            return BackendError(
                "transport",
                f"{where}: {detail}",
                retryable=True,
                retry_after_s=retry_after_s(reply.headers),
                outage=False,
            )
        if rejects_request(status, detail):
            # Invalid as sent: resending the same request cannot help.
            return BackendError(
                "config",
                f"{where} rejected the request as invalid: {detail}; the server does not "
                "support something this request needs (see docs/models.md)",
                retryable=False,
            )
        if status >= 500:
            return BackendError(
                "transport",
                f"{where}: {detail}",
                retryable=True,
                retry_after_s=retry_after_s(reply.headers),
            )
        return BackendError("transport", f"{where}: {detail}", retryable=False)

    def _reply_of(
        self,
        reply: HttpReply,
        request: GenerationRequest,
        mode: StructuredMode | None,
        *,
        several: bool = False,
    ) -> RawReply:
        try:
            message, choice, body = self._chat_message(reply)
        except RecursionError:
            # A body nested past the parser's stack: a malformed reply, repaired like any other.
            return RawReply(
                "",
                Usage(sum(estimate_tokens(m.content) for m in request.messages), 0),
                structured_mode=mode,
                defect="the reply nests JSON too deep to be read",
            )
        native = decision_text(message, several) if mode == "tools" else None
        # Native tools: the calls as the decision's JSON; a reply without one keeps its text,
        # which the schema check reads (a model may still write the decision as JSON).
        text = native if native is not None else self._content_text(reply, message)
        prompt = sum(estimate_tokens(m.content) for m in request.messages)
        spent, note = checked_usage(
            body.get("usage"),
            estimate=Usage(prompt, estimate_tokens(text)),
            prompt_bytes=sum(_utf8_size(m.content) for m in request.messages),
            max_tokens=request.max_tokens,
            reply_bytes=_utf8_size(text),
            timings=body.get("timings"),
        )
        return RawReply(
            text,
            spent,
            truncated=choice.get("finish_reason") == "length",
            structured_mode=mode,
            usage_note=note,
        )

    def _content_text(self, reply: HttpReply, message: dict[str, Any]) -> str:
        """The text of a chat message; a config error when the server answered with something
        that is not text (a number, an object, tool calls only): such a server is broken or
        set up for another protocol, and every step it answered would be scored as a failure."""
        where = f"{self.base_url} answered HTTP {reply.status}"
        content = message.get("content")
        if content in (None, "") and message.get("tool_calls"):
            raise BackendError(
                "config",
                f"{where} with tool_calls only and no text, though no tool was offered (text "
                f"was asked for); check that the model {self.model_id!r} and the server's chat "
                "template answer plain chat requests (vLLM: no forced tool choice)",
                retryable=False,
            )
        if isinstance(content, str):
            return content
        if isinstance(content, list) and all(
            isinstance(part, dict) and isinstance(part.get("text", ""), str) for part in content
        ):
            # Some servers send content as parts: [{"type": "text", "text": "..."}].
            return "".join(part.get("text", "") for part in content)
        if content is None:
            return ""
        raise BackendError(
            "config",
            f"{where} with a malformed chat message: its content is "
            f"{_kind_of(content)}, not text; {_BASE_URL_HINT}, and that it serves a chat model",
            retryable=False,
        )

    def _chat_message(
        self, reply: HttpReply
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """The first choice's message, its choice and the body; a config error when the reply
        is not a chat completion at all (the URL points at something else)."""
        where = f"{self.base_url} answered HTTP {reply.status}"
        kind = reply.headers.get("content-type", "no content type").split(";")[0].strip()
        try:
            body = json.loads(reply.body.decode("utf-8", errors="replace"))
        except ValueError:
            snippet = self._clean(reply.body[:120].decode("utf-8", errors="replace"))
            raise BackendError(
                "config",
                f"{where} with {kind}, not a chat completion ({snippet!r}); {_BASE_URL_HINT}",
                retryable=False,
            ) from None
        if isinstance(body, dict) and isinstance(body.get("error"), dict | str):
            detail = self._clean(error_text(reply))[:DETAIL_CHARS]
            if says_context_overflow(400, self._clean(raw_text(reply))):
                raise self._overflow(where, detail)
            raise BackendError("config", f"{where} with an error: {detail}", retryable=False)
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list):
            if isinstance(body, dict) and "choices" in body:
                what = f"its choices are {_kind_of(choices)}, not a list"
            elif isinstance(body, dict):
                what = f"no choices; it has: {', '.join(sorted(map(str, body))[:8]) or 'nothing'}"
            else:
                what = f"it is {_kind_of(body)}, not an object"
            raise BackendError(
                "config",
                f"{where} with JSON that is not a chat completion ({self._clean(what)}); "
                f"{_BASE_URL_HINT}",
                retryable=False,
            )
        if not choices:
            raise BackendError(
                "config",
                f"{where} with a chat completion holding no choices; check that the model "
                f"{self.model_id!r} is served there and can answer chat requests",
                retryable=False,
            )
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message")
        if not isinstance(message, dict):
            raise BackendError(
                "config",
                f"{where} with a choice that has no message (is this the chat endpoint?); "
                f"{_BASE_URL_HINT}",
                retryable=False,
            )
        return message, choice, body

    def _clean(self, text: str) -> str:
        return redact(text, self.secrets)


def chat_messages(
    messages: Sequence[Message], *, breakpoints: bool = False
) -> list[dict[str, Any]]:
    """The request's `messages`. With `breakpoints`, a message with cache breakpoints has its
    content as text parts cut at them, each part that ends at one carrying
    `"cache_control": {"type": "ephemeral"}` (at most four in the request, the latest kept);
    the texts of the parts joined are the content, unchanged. Without, every content is the
    plain string.

    The form is the one both documented OpenAI-compatible uses take: OpenRouter forwards a
    content part's `cache_control` to Anthropic models as an explicit breakpoint
    (https://openrouter.ai/docs/client-sdks/typescript/models/anthropiccachecontroldirective:
    "When set on an individual content block, it marks an explicit cache breakpoint"), and
    Alibaba Cloud Model Studio's explicit cache, on its OpenAI Chat Completions API, is asked
    for with the same marker on a content part, from 1,024 tokens, valid 5 minutes
    (https://www.alibabacloud.com/help/model-studio/context-cache)."""
    if not breakpoints:
        return [{"role": m.role, "content": m.content} for m in messages]
    sent: list[dict[str, Any]] = []
    for message, marks in zip(messages, request_breakpoints(messages), strict=True):
        if not marks:
            sent.append({"role": message.role, "content": message.content})
            continue
        parts: list[dict[str, Any]] = []
        start = 0
        for mark in marks:
            parts.append(
                {
                    "type": "text",
                    "text": message.content[start:mark],
                    "cache_control": {"type": "ephemeral"},
                }
            )
            start = mark
        if start < len(message.content):
            parts.append({"type": "text", "text": message.content[start:]})
        sent.append({"role": message.role, "content": parts})
    return sent


def refuses_tools(status: int, detail: str) -> bool:
    """A refusal of the `tools` parameter (or of function calling) rather than of the call."""
    return status in (400, 422, 500, 501) and bool(_TOOL_WORDS.search(detail))


_TOOL_WORDS = re.compile(r"\btools?\b|tool_choice|function[_ ]call", re.I)


def _kind_of(value: Any) -> str:
    """What a JSON value is, for messages: `a number (42)`, `an object`, `a string`."""
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "null" if value is None else type(value).__name__


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))
