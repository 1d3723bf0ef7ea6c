"""Credentials kept out of everything PoS writes: traces, logs, result files and error messages.

One place for it: `redact_text` masks every credential of a common shape in a string,
`redact_record` does the same through a JSON-like value (and masks the values of keys named like
a secret), and `RedactingFilter` does it to log records. The shapes:

- API keys: OpenAI and Anthropic `sk-...`, Stripe `sk_live_...`, Google `AIza...`, Hugging Face
  `hf_...`, Slack `xox?-...`;
- cloud keys: AWS access key ids (`AKIA...`, `ASIA...`) and secret keys written as
  `aws_secret_access_key = ...`, `AWS_SECRET_ACCESS_KEY=...` or `"SecretAccessKey": "..."`;
- GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`) and GitLab (`glpat-`) tokens;
- JWTs, `Bearer ...` tokens and the values of `Authorization:` (and `x-api-key:`) headers;
- passwords in URLs (`scheme://user:password@host`) and key-like query values (`?api_key=`);
- PEM private-key blocks, whole (or to the end of the text when cut).

A masked credential reads `[redacted]`; what names it (`Bearer`, `aws_secret_access_key=`, the
URL's user) is kept, so a reader still sees what was there.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "SECRET_KEYS", "RedactingFilter", "redact_record", "redact_text"]

REDACTED = "[redacted]"
SECRET_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "x-api-key",
        "authorization",
        "proxy-authorization",
        "password",
        "passwd",
        "secret",
        "token",
        "access_token",
        "refresh_token",
        "client_secret",
        "aws_secret_access_key",
        "secretaccesskey",
        "private_key",
    }
)
"""Mapping keys whose values `redact_record` masks whatever they hold (compared lower-cased)."""

# Whole credentials: the match is masked.
_TOKENS = (
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
    r"\bsk-[A-Za-z0-9_\-]{8,}",
    r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
    r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    r"\bAIza[0-9A-Za-z_\-]{35}",
    r"\bhf_[A-Za-z0-9]{30,}",
    r"\beyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}",
)
_TOKEN = re.compile("|".join(f"(?:{t})" for t in _TOKENS), re.DOTALL)
# A name, then the credential: the name is kept (group 1), the rest masked.
_NAMED = re.compile(
    r"""(?ix)
    (
        \bbearer\s+(?=[A-Za-z0-9._~+/=\-]{8,})
      | \b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest)\s+)?
      | \bx-api-key["']?\s*[:=]\s*["']?
      | \b(?:aws_)?secret_?access_?key["']?\s*[:=]\s*["']?
      | \b[\w-]*(?:password|passwd|client_secret|api_?key|secret_key|access_token|auth_token)
        ["']?\s*[:=]\s*["']?
      | [?&](?:api[_-]?key|key|token|access_token|sig|signature|password|secret)=
    )
    ([^\s"'&,;}]{4,})
    """
)
# A URL's password: `scheme://user:` kept, the password masked, `@host` kept.
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^/\s:@\"']+:)([^@\s/\"']+)(?=@)")


def redact_text(text: str) -> str:
    """`text` with every credential of a known shape masked (see the module's list)."""
    if not text:
        return text
    text = _TOKEN.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(_keep_name, text)
    return _NAMED.sub(_keep_name, text)


def _keep_name(match: re.Match[str]) -> str:
    if match.group(2).startswith(REDACTED):
        return match.group(0)
    return match.group(1) + REDACTED


def redact_record(value: Any) -> Any:
    """A JSON-safe copy of `value` with credentials masked in every string, the values of keys
    named like a secret (`SECRET_KEYS`) masked whole, and non-finite floats named."""
    if isinstance(value, str):
        return redact_text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {
            str(k): REDACTED if str(k).lower() in SECRET_KEYS else redact_record(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [redact_record(v) for v in value]
    for name in ("model_dump", "to_dict"):
        dump = getattr(value, name, None)
        if callable(dump):
            return redact_record(dump(mode="json") if name == "model_dump" else dump())
    return redact_text(repr(value))


class RedactingFilter(logging.Filter):
    """A logging filter (put it on a handler) that masks credentials in each record's message,
    its arguments, and its exception text. The arguments keep their shape (a tuple stays a
    tuple of as many items, numbers stay numbers): formatters such as uvicorn's access log
    unpack them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_text(record.msg)
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_redacted_arg(a) for a in args)
        elif isinstance(args, Mapping):
            record.args = {k: _redacted_arg(v) for k, v in args.items()}
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


def _redacted_arg(value: Any) -> Any:
    """A log argument with credentials masked: numbers and None as they are, anything else as
    its masked text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else str(value)
    masked = redact_text(text)
    return value if masked == text and not isinstance(value, str) else masked
