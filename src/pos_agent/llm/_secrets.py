"""Keeping API keys out of everything we write: cache rows, messages, logs and reprs."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[redacted]"
# Shorter strings are too likely to occur by chance to be worth scrubbing (and are not keys).
_MIN_SECRET_LENGTH = 6


def public_url(url: str | None) -> str | None:
    """The URL without user info, query string or fragment, where credentials can hide."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every occurrence of each secret replaced."""
    for secret in secrets:
        if secret and len(secret) >= _MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    return text
