"""One small, real structured call per model before anything depends on it.

`pos doctor` shows the whole outcome; `pos bench` asks `preflight` and refuses to start on a
broken set-up (a rejected key, an unknown model, a server that is down or is not a chat server),
so a misconfiguration is never scored as a row of failed cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from pos_agent.llm._load import load_model
from pos_agent.llm._options import ModelOptions
from pos_agent.llm._types import (
    UNAVAILABLE_KINDS,
    Completion,
    FailureKind,
    Message,
    ModelFailure,
)

PROBE_MESSAGES = (
    Message("system", "You are a calculator that answers in JSON."),
    Message("user", 'What is 2 + 3? Reply with status "ok" and the answer.'),
)
# Room for models that think before answering; a plain model stops after about 12 tokens.
PROBE_MAX_TOKENS = 256
# The probe should answer in seconds, not wait out an outage or a long retry budget.
PROBE_TIMEOUT_S = 60.0
PROBE_RETRIES = 1

# Failures that mean the set-up is broken, not that the model answered badly; a context too
# small for the few-token probe is one too.
SETUP_FAILURES: tuple[FailureKind, ...] = ("config", "context_overflow", *UNAVAILABLE_KINDS)


class DoctorProbe(BaseModel):
    """The small object every checked model must produce."""

    status: Literal["ok"]
    answer: int


@dataclass(frozen=True)
class ProbeOutcome:
    """What one probe call gave: an answer or a failure, and advice when it failed."""

    spec: str
    answer: Completion | None
    failure: ModelFailure | None

    @property
    def setup_broken(self) -> bool:
        return self.failure is not None and self.failure.kind in SETUP_FAILURES

    @property
    def advice(self) -> str:
        return advice_for(self.failure, self.spec) if self.failure is not None else ""


def probe_options(options: ModelOptions | None) -> ModelOptions:
    """The options of a probe: the caller's server and key, few short retries, no cache."""
    base = options or ModelOptions()
    return base.model_copy(
        update={
            "max_retries": min(base.max_retries, PROBE_RETRIES),
            "backoff_base_s": min(base.backoff_base_s, 0.2),
            "backoff_cap_s": min(base.backoff_cap_s, 1.0),
            "timeout_s": min(base.timeout_s, PROBE_TIMEOUT_S),
            "cache_mode": "off",
        }
    )


def probe(spec: str, options: ModelOptions | None = None) -> ProbeOutcome:
    """One real structured call; never raises."""
    try:
        model = load_model(spec, probe_options(options))
        answer = model.complete(
            list(PROBE_MESSAGES),
            schema=DoctorProbe,
            max_tokens=PROBE_MAX_TOKENS,
            role="preflight",
            purpose="probe",
        )
    except ModelFailure as failure:
        return ProbeOutcome(spec, None, failure)
    return ProbeOutcome(spec, answer, None)


def preflight(spec: str, options: ModelOptions | None = None) -> str | None:
    """None when `spec` answers with these options, else what is wrong and what to do.

    Only a broken set-up counts (config, transport, timeout failures). A model that answers but
    misses the schema is working: how well it answers is what a benchmark measures.
    """
    outcome = probe(spec, options)
    if not outcome.setup_broken or outcome.failure is None:
        return None
    return f"{outcome.failure}; {outcome.advice}"


def advice_for(failure: ModelFailure, spec: str) -> str:
    """What to do about a failed model call, for people reading a doctor or bench report."""
    if failure.kind == "config":
        return "see the message; docs/models.md lists the model specs and their settings"
    if failure.kind == "context_overflow":
        return "the server's context window cannot hold even this short probe; raise it"
    if failure.unavailable:
        return (
            "check that the server is running and reachable (--base-url, usually ending in /v1) "
            "and that the key variable is set"
        )
    return (
        f"{spec} answered but not in the required shape; use a stronger model or a server "
        "with JSON-schema output"
    )
