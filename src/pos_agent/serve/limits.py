"""What the proxy refuses before doing any work: a request body past the limit (413, without
reading it whole), a path that would leave the upstream's base (400), and a `/pos/*` call
without the proxy's token (401)."""

from __future__ import annotations

import hmac
import re
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import JSONResponse

__all__ = [
    "DEFAULT_MAX_BODY",
    "BodyTooLarge",
    "error_response",
    "forward_path",
    "has_token",
    "read_body",
]

DEFAULT_MAX_BODY = 32 * 1024 * 1024
"""Bytes a request body may have (`ServeConfig.max_body_bytes`): a long agent history with
images is a few MB; nothing an agent sends comes near 32 MB."""
_DOT_SEGMENT = re.compile(r"(?:^|[/\\])\.{1,2}(?:$|[/\\])")
_DECODES = 4
"""Times a path is percent-decoded to look for dot segments (`%252e` is `%2e` is `.`)."""


class BodyTooLarge(Exception):
    """The request body is past the limit."""

    def __init__(self, limit: int, declared: int | None = None) -> None:
        self.limit = limit
        self.declared = declared
        size = f" ({declared} bytes declared)" if declared is not None else ""
        super().__init__(
            f"PoS proxy: the request body is larger than the limit of {limit} bytes{size}; "
            "send a shorter history, or start `pos serve` with a larger --max-body-mb"
        )


def error_response(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """An error in the OpenAI shape (`{"error": {"message", "type", "code"}}`)."""
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}},
        status_code=status,
        headers=headers,
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, read chunk by chunk; raises `BodyTooLarge` as soon as the declared
    length or the bytes received pass `limit` (the rest is never read)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            size = None
        if size is not None and size > limit:
            raise BodyTooLarge(limit, size)
    parts: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise BodyTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


def forward_path(raw_path: bytes) -> str | None:
    """The request's path as it goes upstream (still percent-encoded, as the client sent it), or
    None when it holds a dot segment (`..`, `.`), raw or encoded any number of times, or an
    encoded slash or backslash: such a path could leave the upstream's base path."""
    try:
        path = raw_path.decode("ascii")
    except UnicodeDecodeError:
        return None
    text = path
    for _ in range(_DECODES):
        if _DOT_SEGMENT.search(text):
            return None
        decoded = unquote(text)
        if decoded == text:
            break
        if decoded.count("/") != text.count("/"):
            return None  # an encoded slash: a segment that becomes two upstream
        text = decoded
    else:
        return None  # still encoded after four decodings: refused rather than guessed at
    if "\\" in text or _DOT_SEGMENT.search(text):
        return None
    return path


def has_token(request: Request, token: str | None) -> bool:
    """True when the request carries the proxy's `/pos` token (`Authorization: Bearer TOKEN`
    or `X-PoS-Token: TOKEN`); always False when the proxy has none."""
    if not token:
        return False
    given = request.headers.get("x-pos-token")
    if given is None:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        given = value.strip() if scheme.lower() == "bearer" else None
    return given is not None and hmac.compare_digest(given.encode(), token.encode())
