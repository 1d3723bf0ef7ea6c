"""Scripted backbones for the context-method tests: answers chosen by `request.role` and
`request.purpose`, every call recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.agents.base import Episode
from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.envs import Environment
from pos_agent.events import Event
from pos_agent.llm import ScriptedModel, TokenLedger
from pos_agent.llm.backend import GenerationRequest
from pos_agent.roles.limits import role_limits
from pos_agent.trace import TraceWriter, read_events

Reply = str | BaseException | None
Answer = Callable[[GenerationRequest], Reply]


@dataclass
class RoleScript:
    """Replies per (role, purpose) or per role; `calls` keeps every first attempt."""

    replies: dict[str, Answer] = field(default_factory=dict)
    calls: list[GenerationRequest] = field(default_factory=list)

    def __call__(self, request: GenerationRequest) -> str:
        if request.attempt == 0:
            self.calls.append(request)
        answer = self.replies.get(f"{request.role}/{request.purpose}") or self.replies.get(
            request.role
        )
        if answer is None:
            raise AssertionError(
                f"unexpected call: role={request.role!r} purpose={request.purpose!r}"
            )
        reply = answer(request)
        if isinstance(reply, BaseException):
            raise reply
        return reply or ""

    def of(self, role: str, purpose: str | None = None) -> list[GenerationRequest]:
        return [
            c for c in self.calls if c.role == role and (purpose is None or c.purpose == purpose)
        ]

    def model(self) -> ScriptedModel:
        return ScriptedModel(self)


def user_text(request: GenerationRequest) -> str:
    """The first user turn of a request."""
    return next(m.content for m in request.messages if m.role == "user")


def numbered(prefix: str) -> Answer:
    """Replies `prefix 1`, `prefix 2`, ... in call order."""
    count = 0

    def answer(request: GenerationRequest) -> str:
        nonlocal count
        count += 1
        return f"{prefix} {count}"

    return answer


def run_baseline(
    method: str,
    script: RoleScript,
    env: Environment,
    case_dir: Path,
    options: dict[str, Any] | None = None,
    *,
    family_env: str = "alfworld-mini",
) -> tuple[Episode, TokenLedger, list[Event]]:
    """One episode of a baseline with a scripted backbone (a real model's profile: unbounded
    schemas, 512 tokens), traced into `case_dir`; the episode, its ledger and its events."""
    settings = resolve_settings(family_env, method, options or {}, generation_tokens=512)
    ledger = TokenLedger()
    with TraceWriter(case_dir) as trace:
        agent, _ = build_baseline(
            method,
            script.model(),
            settings,
            limits=role_limits("policy", model="openai:x", generation_tokens=512),
            ledger=ledger,
            trace=trace,
            on_step=None,
            temperature=0.0,
        )
        episode = agent.run(env)
    return episode, ledger, list(read_events(case_dir))
