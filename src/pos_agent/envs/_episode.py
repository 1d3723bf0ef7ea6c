"""Budgets, termination and crash handling shared by every adapter (paper appendix C.4).

An adapter only says how to reset and step its backend; this base class turns that into the
common contract: every `step` consumes one unit of budget (invalid actions included), running
out of budget ends the episode as a failure, and a backend crash restarts the backend and
surfaces as `InfrastructureError` so the case is retried rather than scored.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, ClassVar, Self

from pos_agent.envs._types import EnvError, InfrastructureError, Observation, TaskKind


@dataclass
class BackendResult:
    """What an adapter reports for one reset or step, before budget bookkeeping."""

    text: str
    admissible_actions: list[str] | None
    done: bool = False
    success: bool = False
    score: float = 0.0
    invalid: bool = False
    error: str | None = None
    expert_action: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def normalize_action(action: object) -> str:
    """A text game's free-text command: whitespace stripped and collapsed; anything that is not
    text becomes the empty action."""
    if not isinstance(action, str):
        return ""
    return " ".join(action.split())


def is_empty_action(action: object) -> bool:
    """Nothing to send: not text, or only whitespace."""
    return not isinstance(action, str) or not action.strip()


class BudgetedEnvironment(ABC):
    """Base class of the adapters: budget, termination, context management, crash handling."""

    name: str
    kind: TaskKind = "execution"
    max_score: ClassVar[float] = 1.0
    free_text_actions: ClassVar[bool] = True
    """Actions are a text game's commands, whitespace-normalised before the backend sees them.
    Tool environments set False: an action is a tool call whose text reaches the backend
    exactly as the agent sent it (arguments are data)."""

    def __init__(self, *, task_id: str, max_steps: int, category: str, split: str) -> None:
        if max_steps < 1:
            raise EnvError(f"max_steps must be at least 1 (got {max_steps}).")
        self.task_id = task_id
        self.max_steps = max_steps
        self.category = category
        self.split = split
        self.goal = ""
        self._steps_used = 0
        self._started = False
        self._done = False
        self._closed = False
        self._last: BackendResult | None = None

    # -- what an adapter implements ------------------------------------------------------

    @abstractmethod
    def _backend_reset(self) -> BackendResult:
        """Start a fresh episode in the backend (and set `self.goal`)."""

    @abstractmethod
    def _backend_step(self, action: str) -> BackendResult:
        """Apply one non-empty action (whitespace-normalised when `free_text_actions`)."""

    @abstractmethod
    def _backend_restart(self) -> None:
        """Replace a crashed backend with a fresh one, ready for `_backend_reset`."""

    @abstractmethod
    def _backend_close(self) -> None:
        """Stop the backend and any process it started."""

    def _crash_errors(self) -> tuple[type[BaseException], ...]:
        """Exceptions from the backend that mean "the backend broke", not "bad action"."""
        return ()

    # -- the public contract -------------------------------------------------------------

    def reset(self) -> Observation:
        """Start (or restart) the episode and return the first observation."""
        self._check_open()
        result = self._call_backend(self._backend_reset)
        self._steps_used = 0
        self._started = True
        self._done = result.done
        self._last = result
        return self._observation(result, budget_exhausted=False)

    def step(self, action: str) -> Observation:
        """Apply one action; invalid actions return an error observation and still cost a step."""
        self._check_open()
        if not self._started:
            raise EnvError("Call reset() before step().")
        if self._done:
            raise EnvError("The episode is over; call reset() to start a new one.")
        self._steps_used += 1
        cleaned = normalize_action(action) if self.free_text_actions else action
        if is_empty_action(cleaned):
            result = self.invalid_result(
                "Empty action: send one of the admissible actions as plain text."
            )
        else:
            result = self._call_backend(lambda: self._backend_step(cleaned))
        exhausted = not result.done and self._steps_used >= self.max_steps
        if exhausted:
            result = replace(
                result,
                done=True,
                success=False,
                text=f"{result.text}\n\n[Step budget of {self.max_steps} exhausted: "
                "the episode ends as a failure.]",
            )
        self._done = result.done
        self._last = result
        return self._observation(result, budget_exhausted=exhausted)

    def close(self) -> None:
        """Stop the backend. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._backend_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def steps_used(self) -> int:
        """Steps consumed in the current episode (invalid actions included)."""
        return self._steps_used

    # -- helpers for adapters ------------------------------------------------------------

    def invalid_result(self, text: str) -> BackendResult:
        """An error observation that leaves the world as it was after the previous step."""
        last = self._last
        return BackendResult(
            text=text,
            admissible_actions=last.admissible_actions if last else None,
            done=False,
            success=False,
            score=last.score if last else 0.0,
            invalid=True,
            error=text,
            expert_action=last.expert_action if last else None,
        )

    def _check_open(self) -> None:
        if self._closed:
            raise EnvError(f"This {self.name} environment is closed; create a new one.")

    def _call_backend(self, call: Callable[[], BackendResult]) -> BackendResult:
        try:
            return call()
        except EnvError:
            raise
        except self._crash_errors() as exc:
            self._started = False
            detail = f"{type(exc).__name__}: {exc}".strip()
            try:
                self._backend_restart()
            except Exception as restart_exc:
                raise InfrastructureError(
                    f"The {self.name} backend failed ({detail}) and could not be restarted "
                    f"({type(restart_exc).__name__}: {restart_exc}). Close this environment "
                    "and create a new one; this case is not scored."
                ) from exc
            raise InfrastructureError(
                f"The {self.name} backend failed ({detail}); it has been restarted. "
                "Call reset() to rerun this case; it is not scored."
            ) from exc

    def _observation(self, result: BackendResult, *, budget_exhausted: bool) -> Observation:
        info: dict[str, Any] = {
            "task_category": self.category,
            "expert_action": None if result.done else result.expert_action,
            "invalid_action": result.invalid,
            "steps_used": self._steps_used,
            "budget": self.max_steps,
            "max_score": self.max_score,
        }
        if result.error:
            info["error"] = result.error
        if budget_exhausted:
            info["budget_exhausted"] = True
        info.update(result.extra)
        return Observation(
            text=result.text,
            admissible_actions=None
            if result.admissible_actions is None
            else list(result.admissible_actions),
            tools=None,
            done=result.done,
            success=result.success,
            score=result.score,
            info=info,
        )
