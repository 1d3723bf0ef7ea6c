"""How a context method calls the backbone for its own work, and the record of those calls.

Summaries, compressions, embeddings and the LongHorizon-Harness roles are LLM calls the policy
did not make. Each one is kept as an `InternalCall` (its role, why it was made, and the answer
or the failure) so that the harness can put it in the token ledger under its own role and in
the trace, and so that a result can say how many internal calls a method made next to its
environment actions. Memory operations never touch the environment: nothing here can spend an
action.

A text answer cut at its output cap (the backend's finish_reason "length", or, for a replayed
answer, as many completion tokens as the cap) is never accepted: a summary cut in the middle
would replace a whole one for good, and a manager plan could lose its `Next:` line. It is
recorded as a failed call (kind `truncated`, its tokens still counted) and asked once more with
`TRUNCATION_RETRY_FACTOR` times the budget; cut again, the call has failed, and the method takes
its usual fallback.

Every agent-side call, the retry included, stays within the case's generation length (`cap`:
the paper's 512 tokens on ALFWorld, 4,096 elsewhere, App. D.1), as every PoS call does: the
retry's budget is cut to the cap, and a call that already had the whole cap is not asked again
(at temperature 0 the same budget gives the same cut answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from pos_agent.envs import InfrastructureError
from pos_agent.llm import Completion, Message, Model, ModelFailure

TRUNCATION_RETRY_FACTOR = 2
"""A text answer cut at its cap is asked again once with this many times the budget."""


@dataclass(frozen=True)
class InternalCall:
    """One call a context method made: who asked (`role`), why (`purpose`), and what came back."""

    role: str
    purpose: str
    outcome: Completion | ModelFailure
    messages: tuple[Message, ...] = ()
    """The prompt it was sent (for the ledger's estimate of cached prompt tokens)."""

    @property
    def ok(self) -> bool:
        return isinstance(self.outcome, Completion)

    @property
    def prompt_tokens(self) -> int:
        return self.outcome.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.outcome.usage.completion_tokens


class ModelCaller:
    """Calls the backbone for one method's internal work and keeps every call in `calls`.

    Failures never raise, except that an unreachable backbone (transport, timeout) raises
    InfrastructureError and a broken set-up (kind "config") or a prompt that does not fit the
    window (kind "context_overflow") its ModelFailure, after the call is recorded: the case
    ends as when the policy's model fails so. Every call runs
    at `temperature` (0, as in the paper).
    """

    def __init__(self, model: Model, *, temperature: float = 0.0, cap: int | None = None) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, not {temperature}")
        if cap is not None and cap < 1:
            raise ValueError(f"the generation cap must be positive, not {cap}")
        self.model = model
        self.temperature = temperature
        self.cap = cap
        """The case's generation length: no call, retry included, asks for more (None: none)."""
        self.calls: list[InternalCall] = []

    def text(
        self, role: str, purpose: str, messages: Sequence[Message], *, max_tokens: int
    ) -> str | None:
        """The answer's text, stripped; None when the call failed, the answer was blank, or it
        was cut at its output cap (once at `max_tokens`, and once more at the larger retry
        budget when the generation cap leaves room for one)."""
        budget = self._capped(max_tokens)
        retry = self._capped(max_tokens * TRUNCATION_RETRY_FACTOR)
        while True:
            answer = self._complete(role, purpose, messages, None, budget, keep=False)
            if answer is None:
                return None
            if not cut_at_cap(answer, budget):
                self.record(role, purpose, answer, messages)
                text = answer.text.strip()
                return text or None
            last = retry <= budget
            self.record(role, purpose, _as_truncation(answer, budget, retried=last), messages)
            if last:
                return None
            budget = retry

    def _capped(self, tokens: int) -> int:
        return tokens if self.cap is None else min(tokens, self.cap)

    def record(
        self,
        role: str,
        purpose: str,
        outcome: Completion | ModelFailure,
        messages: Sequence[Message] = (),
    ) -> None:
        """Keep a call (one made by other means, as an embeddings request, has no messages)."""
        self.calls.append(InternalCall(role, purpose, outcome, tuple(messages)))

    def drain(self) -> list[InternalCall]:
        """The calls made since the last drain (the harness accounts them once per step)."""
        calls, self.calls = self.calls, []
        return calls

    def _complete(
        self,
        role: str,
        purpose: str,
        messages: Sequence[Message],
        schema: type[BaseModel] | None,
        max_tokens: int,
        *,
        keep: bool = True,
    ) -> Completion | None:
        """The completion, or None after a recorded failure; `keep=False` leaves recording a
        completion to the caller."""
        try:
            answer = self.model.complete(
                messages,
                schema=schema,
                max_tokens=max_tokens,
                temperature=self.temperature,
                role=role,
                purpose=purpose,
            )
        except ModelFailure as failure:
            self.record(role, purpose, failure, messages)
            if failure.unavailable:
                raise InfrastructureError(f"the {role} model is unavailable: {failure}") from None
            if failure.kind in ("config", "context_overflow"):
                # A rejected key, an unknown model: as for the policy (RoleCaller), the case
                # ends unscored instead of measuring a broken set-up. A prompt that does not
                # fit the window ends it as a scored failure, as for every method.
                raise
            return None
        if keep:
            self.record(role, purpose, answer, messages)
        return answer


def cut_at_cap(answer: Completion, max_tokens: int) -> bool:
    """Whether a free-text answer stopped at its output cap: the backend said so, or (a replayed
    answer, which does not carry the flag) it spent the whole cap in one reply."""
    if answer.truncated:
        return True
    return answer.cached and answer.repairs == 0 and answer.usage.completion_tokens >= max_tokens


def _as_truncation(answer: Completion, max_tokens: int, *, retried: bool) -> ModelFailure:
    """`retried`: no larger budget is left (the retry was made, or the cap allows none)."""
    then = "the call has failed" if retried else "asked again with a larger budget"
    return ModelFailure(
        "truncated",
        f"the answer was cut at its {max_tokens}-token output cap; {then}",
        attempts=1,
        last_text=answer.text[:2000],
        usage=answer.usage,
        latency_s=answer.latency_s,
        model=answer.model,
        cached=answer.cached,
        structured_mode=answer.structured_mode,
    )
