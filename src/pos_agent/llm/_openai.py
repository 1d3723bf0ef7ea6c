"""Any OpenAI-compatible chat server: OpenAI, vLLM, Ollama, llama.cpp server, DashScope."""

from __future__ import annotations

import importlib.util
from typing import Any

from pos_agent.llm._backend import BackendError, GenerationRequest, RawReply, estimate_tokens
from pos_agent.llm._secrets import public_url, redact
from pos_agent.llm._types import Usage

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Placeholder for servers that need no key (vLLM, Ollama, llama.cpp server): the client
# refuses to start without one.
_NO_KEY = "no-key-set"

# Structured-output modes, strongest first. A server that rejects one is asked with the next,
# and the instance remembers it for later calls.
_FORMATS = ("json_schema", "json_object", "none")


def openai_available() -> bool:
    return importlib.util.find_spec("openai") is not None


class OpenAICompatibleBackend:
    """Chat completions through the official `openai` client, with our retries instead of its own.

    `key_env` names the environment variable a user should set when the key is rejected.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout_s: float,
        provider: str = "openai",
        key_env: str = "OPENAI_API_KEY",
    ) -> None:
        import openai

        self.name = provider
        self.model_id = model
        self.base_url = public_url(base_url or OPENAI_DEFAULT_BASE_URL)
        self.timeout_s = timeout_s
        self.key_env = key_env
        self.format_mode = _FORMATS[0]
        self.token_parameter = "max_tokens"
        self._secrets = (api_key,)
        self._client = openai.OpenAI(
            base_url=base_url or OPENAI_DEFAULT_BASE_URL,
            api_key=api_key or _NO_KEY,
            max_retries=0,
            timeout=timeout_s,
        )

    def __repr__(self) -> str:
        return (
            f"OpenAICompatibleBackend(provider={self.name!r}, model={self.model_id!r}, "
            f"base_url={self.base_url!r})"
        )

    def generate(self, request: GenerationRequest) -> RawReply:
        import openai

        while True:
            arguments = self._arguments(request)
            try:
                response = self._client.chat.completions.create(**arguments)
            except openai.APIStatusError as exc:
                if self._adapt_to(exc, request):
                    continue
                raise self._status_error(exc) from None
            except openai.APITimeoutError:
                raise BackendError(
                    "timeout",
                    f"no answer from {self.base_url} within {self.timeout_s:g}s",
                    retryable=True,
                ) from None
            except openai.APIConnectionError as exc:
                raise BackendError(
                    "transport",
                    self._clean(f"cannot reach {self.base_url}: {exc}; is the server running?"),
                    retryable=True,
                ) from None
            except openai.OpenAIError as exc:
                raise BackendError(
                    "transport",
                    self._clean(f"{type(exc).__name__} from {self.base_url}: {exc}"),
                    retryable=False,
                ) from None
            return _reply_of(response, request)

    def _arguments(self, request: GenerationRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model_id,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "seed": request.seed,
            "timeout": self.timeout_s,
            self.token_parameter: request.max_tokens,
        }
        if request.schema is not None:
            if self.format_mode == "json_schema":
                arguments["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": request.schema_name or "answer",
                        "schema": request.schema,
                        # Strict mode demands every field required and no extra properties;
                        # pydantic's optional fields break that, and we validate anyway.
                        "strict": False,
                    },
                }
            elif self.format_mode == "json_object":
                arguments["response_format"] = {"type": "json_object"}
        return arguments

    def _adapt_to(self, exc: Any, request: GenerationRequest) -> bool:
        """Step down to a mode the server accepts; True when the request should be resent."""
        if exc.status_code not in (400, 422, 501):
            return False
        text = _error_text(exc).lower()
        if (
            request.schema is not None
            and self.format_mode != "none"
            and (
                "response_format" in text
                or "json_schema" in text
                or "json_object" in text
                or "response format" in text
            )
        ):
            self.format_mode = _FORMATS[_FORMATS.index(self.format_mode) + 1]
            return True
        if self.token_parameter == "max_tokens" and "max_completion_tokens" in text:
            self.token_parameter = "max_completion_tokens"
            return True
        return False

    def _status_error(self, exc: Any) -> BackendError:
        status = int(exc.status_code)
        detail = self._clean(_error_text(exc))[:500]
        where = f"{self.base_url} (HTTP {status})"
        if status in (401, 403):
            return BackendError(
                "config",
                f"{where} rejected the API key: {detail}; set {self.key_env} or pass --api-key",
                retryable=False,
            )
        if status == 404:
            return BackendError(
                "config",
                f"{where}: model {self.model_id!r} or endpoint not found: {detail}; check the "
                "model name and --base-url (it usually ends in /v1)",
                retryable=False,
            )
        retry_after = _retry_after_s(exc)
        if status == 408:
            return BackendError("timeout", f"{where}: {detail}", retryable=True)
        if status in (409, 429) or status >= 500:
            return BackendError(
                "transport", f"{where}: {detail}", retryable=True, retry_after_s=retry_after
            )
        return BackendError("transport", f"{where}: {detail}", retryable=False)

    def _clean(self, text: str) -> str:
        return redact(text, self._secrets)


def _reply_of(response: Any, request: GenerationRequest) -> RawReply:
    choices = getattr(response, "choices", None) or []
    if not choices:
        return RawReply("", Usage(0, 0))
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = (getattr(message, "content", None) or "") if message is not None else ""
    usage = getattr(response, "usage", None)
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        spent = Usage(int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
    else:
        # Some servers omit usage; an estimate keeps the accounting roughly right.
        prompt = sum(estimate_tokens(m.content) for m in request.messages)
        spent = Usage(prompt, estimate_tokens(text))
    return RawReply(text, spent, truncated=getattr(choice, "finish_reason", None) == "length")


def _error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", "") or exc)


def _retry_after_s(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None
