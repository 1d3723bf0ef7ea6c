"""Scripted backbones for the context-method tests: answers chosen by `request.role` and
`request.purpose`, every call recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pos_agent.llm import ScriptedModel
from pos_agent.llm.backend import GenerationRequest

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
