"""What every model-driven agent shares: role calls that never raise, action validation, the
per-episode record, and the step callback the terminal display listens to."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from pos_agent.agents.schemas import action_text
from pos_agent.envs import Environment, InfrastructureError, Observation
from pos_agent.llm import Message, Model, ModelFailure, TokenLedger
from pos_agent.trace import TraceWriter

SchemaT = TypeVar("SchemaT", bound=BaseModel)
UNAVAILABLE = ("transport", "timeout")  # failure kinds that end the case as infra_error


@dataclass
class StepInfo:
    """What the live display shows after each step."""

    step: int
    action: str
    success: bool
    health: float | None = None
    trapped: bool = False
    pattern: str | None = None
    recovery: bool = False
    degraded: bool = False
    tokens: int = 0


StepCallback = Callable[[StepInfo], None]


@dataclass
class Episode:
    """The outcome of one episode, as the runner turns it into `result.json`."""

    success: bool = False
    score: float = 0.0
    steps: int = 0
    done: bool = False
    trapped_steps: int = 0
    patterns: Counter[str] = field(default_factory=Counter)
    recoveries: int = 0
    degraded_steps: int = 0
    final_belief: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Agent(Protocol):
    """Anything that can play one episode of an environment."""

    name: str

    def run(self, env: Environment) -> Episode: ...


class RoleCaller:
    """Calls one role's model, accounts tokens, traces the call, and turns failures into None.

    Two kinds of failure end the case instead: an unreachable server (InfrastructureError) and
    a broken set-up (the ModelFailure of kind "config" is re-raised).
    """

    def __init__(self, ledger: TokenLedger, trace: TraceWriter | None) -> None:
        self.ledger = ledger
        self.trace = trace

    def __call__(
        self,
        role: str,
        model: Model,
        messages: Sequence[Message],
        schema: type[SchemaT],
        *,
        step: int,
        max_tokens: int,
        temperature: float = 0.0,
        purpose: str = "",
    ) -> SchemaT | None:
        try:
            answer = model.complete(
                messages,
                schema=schema,
                max_tokens=max_tokens,
                temperature=temperature,
                role=role,
                purpose=purpose,
            )
        except ModelFailure as failure:
            self.ledger.record(role, failure, step)
            if failure.kind in UNAVAILABLE:
                # A server that stays unreachable after the retries is an infrastructure
                # failure: the case is reported (and retried by `pos bench`), not scored.
                self.emit(
                    "model_failure",
                    step,
                    role=role,
                    purpose=purpose,
                    kind=failure.kind,
                    message=failure.message,
                )
                raise InfrastructureError(f"the {role} model is unavailable: {failure}") from None
            if failure.kind == "config":
                # A rejected key, an unknown model or a server that does not speak chat: no
                # step of this case can be measured, so the case ends unscored (config_error).
                self.emit(
                    "model_failure",
                    step,
                    role=role,
                    purpose=purpose,
                    kind=failure.kind,
                    message=failure.message,
                )
                raise failure
            self.emit(
                "model_failure",
                step,
                role=role,
                purpose=purpose,
                kind=failure.kind,
                message=failure.message,
                last_text=(failure.last_text or "")[:2000],
                prompt_tokens=failure.usage.prompt_tokens,
                completion_tokens=failure.usage.completion_tokens,
            )
            return None
        self.ledger.record(role, answer, step)
        self.emit(
            "model_call",
            step,
            role=role,
            purpose=purpose,
            model=answer.model,
            prompt_tokens=answer.usage.prompt_tokens,
            completion_tokens=answer.usage.completion_tokens,
            latency_s=round(answer.latency_s, 4),
            cached=answer.cached,
            repairs=answer.repairs,
            output=answer.parsed.model_dump(mode="json") if answer.parsed is not None else None,
        )
        parsed = answer.parsed
        return parsed if isinstance(parsed, schema) else None

    def settle_action(
        self,
        answer: BaseModel | None,
        admissible: Sequence[str] | None,
        recent: Sequence[str],
        step: int,
    ) -> tuple[str, bool]:
        """The action to send for a policy answer, traced, and whether the step degraded.

        A valid answer goes as it is; an inadmissible one is repaired to the nearest admissible
        action; no usable answer falls back to `fallback_action` (avoiding the `recent` ones).
        """
        action, repair = validate_action(action_text(answer), admissible)
        if action is None:
            action = fallback_action(admissible, recent)
            self.emit(
                "degraded", step, role="policy", fallback=action, reason=repair or "no answer"
            )
        elif repair:
            self.emit("degraded", step, role="policy", repaired_to=action, reason=repair)
        self.emit("action", step, action=action, thought=getattr(answer, "thought", ""))
        return action, answer is None or repair is not None

    def emit(self, event: str, step: int | None = None, **payload: Any) -> None:
        if self.trace is not None:
            self.trace.emit(event, step, **payload)

    def tokens(self) -> int:
        total = self.ledger.total()
        return int(total.get("prompt_tokens", 0)) + int(total.get("completion_tokens", 0))


def validate_action(
    proposed: str | None, admissible: Sequence[str] | None
) -> tuple[str | None, str | None]:
    """The action to send and, when it had to be changed, why.

    Without an admissible list any non-empty text goes to the environment (which answers an
    invalid action with an error observation). With a list, the proposed text must be one of
    them; otherwise the nearest admissible action is used and the repair is reported.
    """
    text = " ".join((proposed or "").split())
    if not text:
        return None, "no action was proposed"
    if not admissible:
        return text, None
    if text in admissible:
        return text, None
    lowered = {a.lower(): a for a in admissible}
    if text.lower() in lowered:
        return lowered[text.lower()], None
    close = difflib.get_close_matches(text.lower(), list(lowered), n=1, cutoff=0.0)
    if text and close:
        return lowered[close[0]], f"{text!r} is not admissible; nearest is {lowered[close[0]]!r}"
    return None, f"{text!r} is not admissible"


def fallback_action(admissible: Sequence[str] | None, avoid: Sequence[str]) -> str:
    """A valid action when the policy gave none: the first admissible one not just tried."""
    if not admissible:
        return "look"
    for action in admissible:
        if action not in avoid:
            return action
    return admissible[0]


def finish(episode: Episode, observation: Observation) -> None:
    """Copy the final observation's outcome (and diagnosis metrics, if any) into the episode."""
    episode.success = observation.success
    episode.score = observation.score
    episode.done = observation.done
    for key in ("metrics", "judge", "subset"):
        if key in observation.info:
            episode.extra[key] = observation.info[key]


def observation_info(observation: Observation) -> dict[str, Any]:
    """The part of an observation worth tracing."""
    return {
        "text": observation.text,
        "done": observation.done,
        "success": observation.success,
        "score": observation.score,
        "admissible": len(observation.admissible_actions or []),
        "invalid_action": bool(observation.info.get("invalid_action")),
    }
