"""The HTTP parts of talking to an OpenAI-compatible server, shared by the chat backend
(`_openai.py`) and the embeddings of PACE (`pos_agent.agents.context.embeddings`): the API root
and its endpoints, the request headers, the bounded POST with its failures as BackendErrors,
the error text of a reply and its Retry-After."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from typing import Any

from pos_agent.llm._backend import BackendError
from pos_agent.llm._http import DeadlineExceeded, HttpReply, post_json
from pos_agent.llm._secrets import basic_credentials, public_url, redact, without_userinfo

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024
DETAIL_CHARS = 500
_CLASSIFY_BYTES = 8192


def openai_available() -> bool:
    """Whether the HTTP client this backend needs (the `openai` extra) is installed."""
    return importlib.util.find_spec("httpx") is not None


def api_endpoint(full_url: str, path: str, secrets: tuple[str, ...] = ()) -> Any:
    """`path` under the API root `full_url`, as an httpx URL; BackendError(config) when the
    root is not an http(s) URL. Shared by the chat backend and PACE's embeddings."""
    import httpx

    try:
        # User info never goes in the URL (httpx would send it as Basic auth in place of the
        # key); `request_headers` sends it.
        url = httpx.URL(without_userinfo(full_url))
        endpoint = url.copy_with(path=url.path.rstrip("/") + "/" + path)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise BackendError(
            "config",
            redact(f"--base-url {full_url!r} is not a valid URL ({exc})", secrets),
            retryable=False,
        ) from None
    if endpoint.scheme not in ("http", "https"):
        raise BackendError(
            "config",
            f"--base-url must start with http:// or https://, not {public_url(full_url)!r}",
            retryable=False,
        )
    return endpoint


def request_headers(api_key: str | None, base_url: str | None = None) -> dict[str, str]:
    """The headers of every request: JSON, our user agent, the key when there is one, and the
    base URL's user:password (a proxy's Basic auth) when it has one. With both, the key keeps
    `Authorization` (Bearer) and the password goes as `Proxy-Authorization` (Basic)."""
    headers = {"accept": "application/json", "user-agent": _user_agent()}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    basic = basic_credentials(base_url)
    if basic is not None:
        headers["proxy-authorization" if api_key else "authorization"] = basic
    return headers


def post_or_raise(
    client: Any,
    url: Any,
    payload: dict[str, Any],
    headers: dict[str, str],
    *,
    timeout_s: float,
    max_bytes: int,
    where: str,
    secrets: tuple[str, ...],
) -> HttpReply:
    """`post_json` with its failures as BackendErrors: a missed deadline is a retryable
    timeout, an unusable URL a config error, anything else on the wire a retryable transport
    error. Any HTTP status is returned, for the caller to judge."""
    import httpx

    try:
        return post_json(client, url, payload, headers, timeout_s=timeout_s, max_bytes=max_bytes)
    except (DeadlineExceeded, httpx.TimeoutException):
        raise BackendError(
            "timeout",
            f"no complete answer from {where} within {timeout_s:g}s "
            "(timeout_s is the limit of the whole request)",
            retryable=True,
        ) from None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise BackendError(
            "config", redact(f"cannot use {where}: {exc}", secrets), retryable=False
        ) from None
    except httpx.HTTPError as exc:
        raise BackendError(
            "transport",
            redact(f"cannot reach {where}: {exc}; is the server running?", secrets),
            retryable=True,
        ) from None


def raw_text(reply: HttpReply) -> str:
    """The whole error body as text (codes and types included), for classifying it."""
    return reply.body[:_CLASSIFY_BYTES].decode("utf-8", errors="replace")


def error_text(reply: HttpReply) -> str:
    raw = reply.body.decode("utf-8", errors="replace")
    try:
        body = json.loads(raw)
    except ValueError:
        return raw.strip()[:DETAIL_CHARS] or "(no message)"
    if isinstance(body, dict):
        inner = body.get("error", body.get("detail", body))
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
        if isinstance(inner, list):  # FastAPI's validation errors
            return json.dumps(inner, ensure_ascii=False)[:DETAIL_CHARS]
    return raw.strip()[:DETAIL_CHARS]


def retry_after_s(headers: dict[str, str]) -> float | None:
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


def _user_agent() -> str:
    try:
        return f"pos-agent/{importlib.metadata.version('pos-agent')}"
    except importlib.metadata.PackageNotFoundError:
        return "pos-agent"
