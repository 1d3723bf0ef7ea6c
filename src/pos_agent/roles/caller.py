"""The model-call wrapper every role goes through: calls that never raise (a failure is None,
traced and accounted), and the settling of a policy answer into an action that can be sent."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from pos_agent.errors import InfrastructureError
from pos_agent.events import ActionEvent, DegradedEvent, Event, ModelCallEvent, ModelFailureEvent
from pos_agent.llm import Message, Model, ModelFailure, TokenLedger
from pos_agent.roles.schemas import ToolDecision, action_text
from pos_agent.trace import TraceWriter

SchemaT = TypeVar("SchemaT", bound=BaseModel)


class ActionSource(Protocol):
    """What action settling reads of an observation (an environment's `Observation` is one)."""

    @property
    def tools(self) -> list[dict[str, Any]] | None: ...

    @property
    def fallback_action(self) -> str | None: ...


class RoleCaller:
    """Calls one role's model, accounts tokens, traces the call, and turns failures into None.

    Some failures end the case instead: an unreachable server (InfrastructureError), a broken
    set-up (the ModelFailure of kind "config" is re-raised) and a prompt that does not fit the
    model's window (kind "context_overflow", re-raised: a scored failure for every method).
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
        """The parsed answer, or None. A tool decision that is unusable after the model layer's
        repair turns is asked for once more, with a note saying why, before the caller falls
        back: as LOCA's runner, no tool call is spent on it. Every method's decisions go
        through here, so all are re-asked alike."""
        problem, answer = self._ask(
            role, model, messages, schema, step, max_tokens, temperature, purpose
        )
        if problem is None or not is_decision_schema(schema):
            return answer
        self.emit(
            DegradedEvent(step=step, role=role, reason=f"{problem}; asked again (no action spent)")
        )
        again = [*messages, Message("user", reask_note(problem))]
        _, answer = self._ask(role, model, again, schema, step, max_tokens, temperature, purpose)
        return answer

    def _ask(
        self,
        role: str,
        model: Model,
        messages: Sequence[Message],
        schema: type[SchemaT],
        step: int,
        max_tokens: int,
        temperature: float,
        purpose: str,
    ) -> tuple[str | None, SchemaT | None]:
        """(why the answer is unusable or None, the parsed answer or None)."""
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
            self.ledger.record(role, failure, step, prompt=messages)
            self.emit(ModelFailureEvent.of(failure, step=step, role=role, purpose=purpose))
            if failure.unavailable:
                # A server that stays unreachable after the retries is an infrastructure
                # failure: the case is reported (and retried by `pos bench`), not scored.
                raise InfrastructureError(f"the {role} model is unavailable: {failure}") from None
            if failure.kind in ("config", "context_overflow"):
                # A rejected key, an unknown model or a server that does not speak chat: no
                # step of this case can be measured, so the case ends unscored (config_error).
                # A prompt that does not fit the window ends it too, as a scored failure: the
                # one overflow policy of every method (bench/case.py).
                raise failure
            return f"the answer was unusable ({failure.kind}: {failure.message})", None
        cache = self.ledger.record(role, answer, step, prompt=messages)
        self.emit(ModelCallEvent.of(answer, step=step, role=role, purpose=purpose, cache=cache))
        parsed = answer.parsed
        if not isinstance(parsed, schema):
            return "the answer did not match the schema", None
        if is_decision_schema(schema) and not (action_text(parsed) or "").strip():
            return "the answer named no action", parsed
        return None, parsed

    def settle_action(
        self,
        answer: BaseModel | None,
        observation: ActionSource,
        admissible: Sequence[str] | None,
        recent: Sequence[str],
        step: int,
    ) -> Decision:
        """The action to send for a policy answer, traced, and whether the step degraded.

        A valid answer goes as it is; an inadmissible one is repaired to the nearest admissible
        action; no usable answer falls back to `fallback_action` (avoiding the `recent` ones).
        """
        action, repair = validate_action(action_text(answer), admissible)
        if action is None:
            action = fallback_action(observation, admissible, recent)
            self.emit(
                DegradedEvent(
                    step=step, role="policy", fallback=action, reason=repair or "no answer"
                )
            )
        elif repair:
            self.emit(DegradedEvent(step=step, role="policy", repaired_to=action, reason=repair))
        self.emit(
            ActionEvent(step=step, action=action, thought=str(getattr(answer, "thought", "")))
        )
        return Decision(action, degraded=answer is None or repair is not None)

    def emit(self, event: Event) -> None:
        if self.trace is not None:
            self.trace.emit(event)

    def tokens(self) -> int:
        total = self.ledger.total()
        return int(total.get("prompt_tokens", 0)) + int(total.get("completion_tokens", 0))


def is_decision_schema(schema: type[BaseModel]) -> bool:
    """A decision of tool calls (a ToolDecision), where a fallback would spend a tool call.
    A text game's unusable answer still falls back at once (the paper's harness)."""
    return issubclass(schema, ToolDecision)


def reask_note(problem: str) -> str:
    """The user turn that asks for a decision again."""
    return (
        f"Your last answer could not be used: {problem}. No action was taken. Answer again "
        "with one JSON object that matches the schema and names the action."
    )


@dataclass(frozen=True)
class Decision:
    """The policy's settled action for one step."""

    action: str
    degraded: bool
    """The answer was missing or had to be repaired."""


def validate_action(
    proposed: str | None, admissible: Sequence[str] | None
) -> tuple[str | None, str | None]:
    """The action to send and, when it had to be changed, why.

    Without an admissible list any non-empty text goes to the environment as it is (a tool
    call is data: the whitespace inside its string arguments, a Python program's indentation,
    is never touched; the environment answers an invalid action with an error observation).
    With a list, the proposed text, whitespace collapsed, must be one of them; otherwise the
    nearest admissible action is used and the repair is reported.
    """
    if not (proposed or "").strip():
        return None, "no action was proposed"
    if not admissible:
        return proposed, None
    text = " ".join((proposed or "").split())
    if text in admissible:
        return text, None
    lowered = {a.lower(): a for a in admissible}
    if text.lower() in lowered:
        return lowered[text.lower()], None
    close = difflib.get_close_matches(text.lower(), list(lowered), n=1, cutoff=0.0)
    if text and close:
        return lowered[close[0]], f"{text!r} is not admissible; nearest is {lowered[close[0]]!r}"
    return None, f"{text!r} is not admissible"


def fallback_action(
    observation: ActionSource, admissible: Sequence[str] | None, avoid: Sequence[str]
) -> str:
    """A valid action when the policy gave none.

    The environment's own offer first (tool environments: a read-only tool call); else the
    first admissible action not just tried; else, with tools, a call of the first tool that
    needs no arguments; else "look" for a text game.
    """
    if observation.fallback_action:
        return observation.fallback_action
    if admissible:
        return next((a for a in admissible if a not in avoid), admissible[0])
    for tool in observation.tools or []:
        if not (tool.get("parameters") or {}).get("required"):
            return json.dumps({"tool": tool.get("name"), "args": {}})
    if observation.tools:
        # No argument-free tool: an empty call makes the environment explain the format.
        return json.dumps({"tool": observation.tools[0].get("name"), "args": {}})
    return "look"
