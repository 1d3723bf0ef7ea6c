"""Keeping API keys out of everything we write: cache rows, messages, logs and reprs."""

from __future__ import annotations

import base64
import ipaddress
import logging
import threading
from collections.abc import Iterable
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from pos_agent.redaction import REDACTED, redact_text

logger = logging.getLogger(__name__)

# Shorter strings are too likely to occur by chance to be worth scrubbing (and are not keys).
_MIN_SECRET_LENGTH = 6
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}

_warned_hosts: set[str] = set()
_warned_lock = threading.Lock()


def public_url(url: str | None) -> str | None:
    """The URL without user info, query string or fragment, where credentials can hide."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return REDACTED
    host = parts.hostname or ""
    if port is not None:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def url_secrets(url: str | None) -> tuple[str, ...]:
    """What in a URL may be a credential: the user:password part, the password alone (raw and
    percent-decoded) and the values of the query string (`?api-key=...`)."""
    if not url:
        return ()
    try:
        parts = urlsplit(url)
    except ValueError:
        return (url,)
    found: list[str] = []
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at and userinfo:
        found.append(userinfo)
        _, colon, password = userinfo.partition(":")
        if colon and password:
            found += [password, unquote(password)]
        # The header value they are sent as: a server that echoes its request headers must not
        # put them in a record in base64 either.
        found += [_base64(userinfo), _base64(_decoded_userinfo(userinfo))]
    found += [value for _, value in parse_qsl(parts.query, keep_blank_values=False)]
    return tuple(dict.fromkeys(s for s in found if s))


def _base64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", errors="replace")).decode("ascii")


def _decoded_userinfo(userinfo: str) -> str:
    user, _, password = userinfo.partition(":")
    return f"{unquote(user)}:{unquote(password)}"


def basic_credentials(url: str | None) -> str | None:
    """The `Basic ...` header value of a URL's user:password part, None without one."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    userinfo, at, _ = parts.netloc.rpartition("@")
    if not (at and userinfo):
        return None
    return "Basic " + _base64(_decoded_userinfo(userinfo))


def without_userinfo(url: str) -> str:
    """`url` without its user:password part (query and fragment kept)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    _, at, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=host)) if at else url


def mask_key_like(text: str) -> str:
    """`text` with every key-like string masked (`pos_agent.redaction`): for records written
    to files, where a key the process does not know must not land either."""
    return redact_text(text)


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every occurrence of each secret replaced, longest secrets first."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    return text


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def warn_if_key_goes_in_clear(url: str | None, *, has_key: bool) -> bool:
    """Log a warning, once per host and process, when a key would be sent over plain http to
    another machine, where anyone on the path can read it. True when it warned."""
    if not has_key or not url:
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    if parts.scheme.lower() != "http" or is_loopback_host(parts.hostname):
        return False
    host = parts.hostname or ""
    with _warned_lock:
        if host in _warned_hosts:
            return False
        _warned_hosts.add(host)
    logger.warning(
        "the API key will be sent unencrypted over plain http to %s, which is not this machine; "
        "use an https:// base URL, or a server that needs no key",
        host,
    )
    return True
