"""What an OpenAI-compatible server accepts, found out by asking and remembered per process.

Servers differ in structured output. OpenAI, vLLM and recent Ollama take `response_format`
json_schema; llama-cpp-python's server takes only json_object, with the schema inside it; some
take plain json_object, some nothing. They also refuse differently: HTTP 400 or 422 with a
message, or (llama-cpp-python) HTTP 500 with a pydantic validation message about
`response_format`. The backend starts at the strongest mode and steps down on such a refusal;
the step is remembered for the server's base URL and model, so every later call (every role,
every case in the process) starts where the server is known to answer.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from pos_agent.llm._printable import printable
from pos_agent.llm._types import StructuredMode

logger = logging.getLogger(__name__)

# The modes a server is asked in, strongest first; "prompt" sends no response_format at all.
SERVER_MODES: tuple[StructuredMode, ...] = (
    "json_schema",
    "json_object_schema",
    "json_object",
    "prompt",
)
MODE_NAMES: dict[StructuredMode, str] = {
    "grammar": "grammar-constrained decoding",
    "json_schema": "response_format json_schema",
    "json_object_schema": "response_format json_object with a schema",
    "json_object": "response_format json_object",
    "prompt": "the schema in the prompt, validated after",
}

# A refusal that is about the response format names it (or its parts).
_FORMAT_WORDS = re.compile(r"response[_ ]format|json[_ ]schema|json[_ ]object|\bschema\b", re.I)
# Request-validation wording (pydantic/FastAPI, OpenAI, vLLM): the request is invalid, so
# sending it again cannot help, whatever the status code says.
_INVALID_REQUEST = re.compile(
    r"validation error|input should be|field required|extra inputs are not permitted|"
    r"unprocessable|invalid request|is not supported|unsupported|not allowed|"
    r"unrecognized request argument|unknown (?:parameter|field|argument)",
    re.I,
)
_TOKEN_PARAMETER = re.compile(r"max_completion_tokens", re.I)
# What servers say when the prompt (with the answer's budget) does not fit the model's context:
# OpenAI's error code; vLLM ("This model's maximum context length is N tokens. However, you
# requested M tokens", "is longer than the maximum model length"); llama.cpp's server
# (exceed_context_size_error, "exceeds the available context size") and llama-cpp-python's
# ("Requested tokens (N) exceed context window of M"); Ollama ("input length exceeds the
# context length", "prompt too long"); DashScope ("Range of input length should be [1, N]").
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|"
    r"exceeds? (?:the )?(?:available |maximum )?context (?:size|length|window)|"
    r"exceed context window|longer than the maximum model length|"
    r"input length exceeds|prompt (?:is )?too long|range of input length should be|"
    r"context (?:window|length) (?:is )?exceeded|too many tokens in the (?:prompt|input)",
    re.I,
)


@dataclass
class ServerProfile:
    """What one server (base URL and model) is known to accept. Shared; update under `lock`."""

    mode: StructuredMode = SERVER_MODES[0]
    token_parameter: str = "max_tokens"
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def step_down_from(self, tried: StructuredMode, reason: str, where: str) -> bool:
        """Move below `tried` after the server refused it; False when there is nothing below.

        Compare-and-set: when another call already stepped down past `tried`, nothing changes
        and the caller simply resends in the current mode.
        """
        with self.lock:
            if SERVER_MODES.index(self.mode) > SERVER_MODES.index(tried):
                return True
            if tried == SERVER_MODES[-1]:
                return False
            self.mode = SERVER_MODES[SERVER_MODES.index(tried) + 1]
            chosen = self.mode
        logger.warning(
            "%s refused %s (%s); using %s from now on",
            printable(where),
            MODE_NAMES[tried],
            printable(reason[:200]),
            MODE_NAMES[chosen],
        )
        return True

    def use_max_completion_tokens(self) -> bool:
        with self.lock:
            if self.token_parameter == "max_completion_tokens":
                return False
            self.token_parameter = "max_completion_tokens"
            return True


_PROFILES: dict[tuple[str, str], ServerProfile] = {}
_PROFILES_LOCK = threading.Lock()


def server_profile(base_url: str, model: str) -> ServerProfile:
    """The process-wide profile of a server (credential-free base URL) and model."""
    with _PROFILES_LOCK:
        profile = _PROFILES.get((base_url, model))
        if profile is None:
            profile = ServerProfile()
            _PROFILES[(base_url, model)] = profile
        return profile


def known_mode(base_url: str, model: str) -> StructuredMode | None:
    """The mode the process settled on for a server, or None when it was never asked."""
    with _PROFILES_LOCK:
        profile = _PROFILES.get((base_url, model))
    return profile.mode if profile is not None else None


def forget_servers() -> None:
    """Forget every server's profile (tests; a process that knows a server was upgraded)."""
    with _PROFILES_LOCK:
        _PROFILES.clear()


def refuses_format(status: int, text: str) -> bool:
    """Whether an error response refuses the response format (so a weaker mode may work)."""
    if status not in (400, 422, 500, 501):
        return False
    if not _FORMAT_WORDS.search(text):
        return False
    # A 500 is a crash unless it reads like request validation (llama-cpp-python's server).
    return status != 500 or _INVALID_REQUEST.search(text) is not None


def rejects_request(status: int, text: str) -> bool:
    """Whether an error response says the request itself is invalid (never worth resending)."""
    if status in (400, 404, 405, 413, 415, 422, 501):
        return True
    return status == 500 and _INVALID_REQUEST.search(text) is not None


def says_context_overflow(status: int, text: str) -> bool:
    """Whether an error response says the request does not fit the model's context window.

    Read from what the server says (the message, its error code or type), never from the
    status alone: servers answer an overflow with 400, 413, 422 or 500.
    """
    return status >= 400 and _CONTEXT_OVERFLOW.search(text) is not None


def wants_max_completion_tokens(status: int, text: str) -> bool:
    return status in (400, 422) and _TOKEN_PARAMETER.search(text) is not None


def response_format(mode: StructuredMode, schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The `response_format` argument of a mode (empty for "prompt")."""
    if mode == "json_schema":
        # Strict mode demands every field required and no extra properties; pydantic's
        # optional fields break that, and the reply is validated anyway.
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": False},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if mode == "json_object":
        return {"type": "json_object"}
    return {}
