"""How ClinDiag calls the models it is given (provider, judge): fresh retries of a malformed
answer, and which failures are not the case's to score.

The environment never loads a model: the harness passes `Model` objects (traced and accounted
as the `provider` / `judge` roles). A malformed answer (schema, empty, truncated, or failing
the caller's own check) is asked again as a fresh call, up to `RETRIES` times. A model that is
unreachable is an infrastructure failure (the case is rerun, not scored); a model that cannot
be used at all (bad key, unknown model) is a set-up error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel

from pos_agent.envs._types import EnvError, InfrastructureError
from pos_agent.llm import Message, Model, ModelFailure

# Issue 10 / paper's fixed LLM: a malformed verdict is retried up to twice before it counts.
RETRIES = 2
AnswerT = TypeVar("AnswerT", bound=BaseModel)


@dataclass
class Asked(Generic[AnswerT]):
    """The parsed answer (None when every attempt was malformed) and why attempts failed."""

    answer: AnswerT | None
    failures: list[str] = field(default_factory=list)


def ask(
    model: Model,
    conversation: Callable[[int], Sequence[Message]],
    schema: type[AnswerT],
    *,
    role: str,
    purpose: str,
    max_tokens: int,
    check: Callable[[AnswerT], str | None] = lambda _answer: None,
) -> Asked[AnswerT]:
    """Ask `model` until it gives a usable answer, at most 1 + RETRIES times.

    `conversation(attempt)` builds the messages of each attempt (0 first); a retry is a fresh
    conversation, not a repair turn. `check` returns why a parsed answer is unusable, or None.
    """
    failures: list[str] = []
    for attempt in range(1 + RETRIES):
        try:
            completion = model.complete(
                conversation(attempt),
                schema=schema,
                max_tokens=max_tokens,
                temperature=0.0,
                role=role,
                purpose=purpose,
            )
        except ModelFailure as failure:
            if failure.unavailable:
                raise InfrastructureError(f"the {role} model is unavailable: {failure}") from None
            if failure.kind == "config":
                raise EnvError(
                    f"the {role} model cannot be used: {failure}. Check --env-model (or the "
                    "suite's env_model) with `pos doctor --model SPEC`."
                ) from None
            failures.append(str(failure))
            continue
        parsed = completion.parsed
        if not isinstance(parsed, schema):
            failures.append(f"no parsed {schema.__name__} in the reply")
            continue
        problem = check(parsed)
        if problem is None:
            return Asked(parsed, failures)
        failures.append(problem)
    return Asked(None, failures)


def retry_note(attempt: int) -> str:
    """What a fresh retry adds to its prompt (so that it is a new request, also for a cache)."""
    if attempt == 0:
        return ""
    return (
        f"\n\n(Attempt {attempt + 1}: the previous reply could not be used. Reply with the JSON "
        "object only.)"
    )
