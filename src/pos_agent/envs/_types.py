"""The environment interface every benchmark adapter implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from pos_agent.errors import InfrastructureError as InfrastructureError  # re-exported
from pos_agent.kinds import TaskKind


class EnvError(Exception):
    """A usage or set-up problem: unknown environment or task, missing data, bad option.

    The message always says what to do about it.
    """


def choose_split(split: str | None, splits: tuple[str, ...], default: str, benchmark: str) -> str:
    """`split`, or the default when None; EnvError naming the valid ones when unknown."""
    chosen = split or default
    if chosen not in splits:
        raise EnvError(f"Unknown {benchmark} split {chosen!r}; use one of {', '.join(splits)}.")
    return chosen


@dataclass
class Observation:
    """What the agent sees after `reset()` or `step()`.

    `score` is the environment's own progress score (ScienceWorld 0-100, the others 0-1; the
    scale is in `info["max_score"]`). `info` carries, when known: `task_category`,
    `expert_action` (the environment's expert/gold next action), `invalid_action`, `error`,
    `steps_used`, `budget`, `budget_exhausted`.
    """

    text: str
    admissible_actions: list[str] | None = None
    tools: list[dict[str, Any]] | None = None
    max_calls: int = 1
    """Tool environments: how many tool calls one action may carry (a JSON list of calls)."""
    fallback_action: str | None = None
    """A valid, harmless action the environment offers for a step where the agent produced
    none (tool environments: a read-only tool call). None: the harness picks one from the
    admissible actions."""
    done: bool = False
    success: bool = False
    score: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """One task instance: reset, then step until `done`; close when finished.

    Usable as a context manager (closing on exit); `close()` is idempotent.
    """

    name: str
    task_id: str
    goal: str
    kind: TaskKind
    max_steps: int

    def reset(self) -> Observation: ...

    def step(self, action: str) -> Observation: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


@dataclass(frozen=True)
class TaskSpec:
    """One task an environment offers (what `list_tasks` returns)."""

    env: str
    task_id: str
    category: str
    split: str
    description: str
