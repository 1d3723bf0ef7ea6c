"""ScienceWorld (`scienceworld` package, a Scala simulator run through py4j).

Task names are the package's (`boil`, `use-thermometer`, ...) or its ids (`1-1`). The `seed`
picks the *variation*: it must be one of the package's variations for the requested split
(train/dev/test); without a seed the split's first variation is used. Score is the
simulator's 0-100 score (a failed task, which the simulator scores -100, reports 0 and keeps
the raw value in `info["raw_score"]`); success means the task completed with score 100. The gold path the
simulator generates is the expert: `info["expert_action"]` is its next action for as long as
the agent has followed it exactly.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pos_agent.envs._episode import BackendResult
from pos_agent.envs._jvm import JvmEnvironment, require_java, seed_in_split
from pos_agent.envs._types import EnvError, TaskSpec, choose_split

ENV_NAME = "scienceworld"
SPLITS = ("train", "dev", "test")
DEFAULT_SPLIT = "test"
DEFAULT_MAX_STEPS = 100

_AMBIGUOUS_PREFIX = "Ambiguous request"
_NO_MATCH = "No known action matches that input."
# Resetting the task from inside the episode would erase the budget accounting.
_DISABLED_ACTIONS = {"reset task"}


def _import_scienceworld() -> Any:
    try:
        import scienceworld
    except ImportError as exc:
        raise EnvError(
            "ScienceWorld needs the `scienceworld` package: install the `envs` extra "
            "(`uv sync --extra envs`)."
        ) from exc
    return scienceworld


def _task_table() -> list[dict[str, str]]:
    _import_scienceworld()
    from scienceworld.constants import TASKS

    return [dict(task) for task in TASKS]


def resolve_task(name: str) -> str:
    """Canonical ScienceWorld task name for a name, a paper name or an id like `1-1`."""
    _import_scienceworld()
    from scienceworld.utils import infer_task

    known = [task["task_name"] for task in _task_table()]
    canonical = infer_task(name.strip())
    if canonical not in known:
        raise EnvError(f"Unknown ScienceWorld task {name!r}. Known tasks: {', '.join(known)}.")
    return str(canonical)


def list_scienceworld_tasks(split: str | None) -> list[TaskSpec]:
    """The 30 ScienceWorld tasks (variations are chosen with `seed`)."""
    chosen = choose_split(split, SPLITS, DEFAULT_SPLIT, "ScienceWorld")
    return [
        TaskSpec(
            env=ENV_NAME,
            task_id=task["task_name"],
            category=task["topic"],
            split=chosen,
            description=f"{task['task_id']} {task['task']}",
        )
        for task in _task_table()
    ]


def _describe_variations(variations: list[int]) -> str:
    if variations and variations == list(range(variations[0], variations[-1] + 1)):
        return f"{variations[0]}-{variations[-1]}"
    return ", ".join(str(v) for v in variations)


class ScienceWorldEnvironment(JvmEnvironment):
    """One ScienceWorld task variation behind the common interface."""

    name: str = ENV_NAME
    max_score: ClassVar[float] = 100.0

    def __init__(
        self,
        task: str,
        *,
        split: str | None = None,
        seed: int | None = None,
        max_steps: int | None = None,
        simplifications: str = "",
    ) -> None:
        canonical = resolve_task(task)
        topics = {row["task_name"]: row["topic"] for row in _task_table()}
        super().__init__(
            task_id=canonical,
            max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps,
            category=topics[canonical],
            split=choose_split(split, SPLITS, DEFAULT_SPLIT, "ScienceWorld"),
        )
        require_java(ENV_NAME)
        self.simplifications = simplifications
        with self._starting():
            self.variation = self._choose_variation(seed)
            self._load()

    def _start_backend(self) -> Any:
        module = _import_scienceworld()
        # The simulator's own step limit is disabled: the budget is enforced here.
        return module.ScienceWorldEnv("", envStepLimit=10**9)

    def _choose_variation(self, seed: int | None) -> int:
        try:
            self._backend.load(self.task_id, 0, self.simplifications)
        except ValueError as exc:
            raise EnvError(f"Cannot load ScienceWorld task {self.task_id!r}: {exc}") from exc
        getter = {
            "train": self._backend.get_variations_train,
            "dev": self._backend.get_variations_dev,
            "test": self._backend.get_variations_test,
        }[self.split]
        return seed_in_split(
            seed,
            getter(),
            lambda variations: (
                f"Variation {seed} is not in the {self.split} split of ScienceWorld task "
                f"{self.task_id!r}; choose one of {_describe_variations(variations)}."
            ),
        )

    def _load(self) -> None:
        self._backend.load(
            self.task_id, self.variation, self.simplifications, generateGoldPath=True
        )
        self._gold = [str(action) for action in self._backend.get_gold_action_sequence()]

    def _extra(self) -> dict[str, Any]:
        return {"variation": self.variation, "expert_on_gold_path": self._on_gold_path}

    def _backend_reset(self) -> BackendResult:
        observation, info = self._backend.reset()
        self._gold_position = 0
        self._on_gold_path = True
        description = str(info["taskDesc"]).strip()
        self.goal = description.removeprefix("Task Description:").strip()
        return BackendResult(
            text=f"{self.goal}\n\n{observation}",
            admissible_actions=[str(a) for a in info["valid"]],
            score=float(info["score"]),
            expert_action=self._expert_action(),
            extra=self._extra(),
        )

    def _backend_step(self, action: str) -> BackendResult:
        if action.lower() in _DISABLED_ACTIONS:
            return self.invalid_result(
                f"Invalid action {action!r}: it is disabled in this harness. Choose another action."
            )
        observation, _, completed, info = self._backend.step(action)
        note = ""
        if str(observation).startswith(_AMBIGUOUS_PREFIX):
            # The simulator waits for a numbered choice; take its first reading and say so.
            reading = _first_reading(str(observation))
            observation, _, completed, info = self._backend.step("0")
            note = f"\n(Your action was ambiguous; it was read as {reading!r}.)"
        text = str(observation)
        if text.strip() == _NO_MATCH:
            return self.invalid_result(
                f"{_NO_MATCH} Invalid action {action!r}: use one of the valid actions "
                "(e.g. 'look around')."
            )
        if self._on_gold_path and action == self._expert_action():
            self._gold_position += 1
        else:
            self._on_gold_path = False
        raw_score = float(info["score"])
        done = bool(completed)
        return BackendResult(
            text=text + note,
            admissible_actions=[str(a) for a in info["valid"]],
            done=done,
            success=done and raw_score >= self.max_score,
            # A failed task (e.g. focusing on the wrong object) scores -100 in the simulator;
            # the reported score stays on the 0-100 scale, the raw value goes to info.
            score=max(raw_score, 0.0),
            expert_action=self._expert_action(),
            extra={**self._extra(), "raw_score": raw_score},
        )


def _first_reading(prompt: str) -> str:
    for line in prompt.splitlines():
        head, _, rest = line.partition(":")
        if head.strip() == "0" and rest.strip():
            return rest.strip()
    return "the first option"
