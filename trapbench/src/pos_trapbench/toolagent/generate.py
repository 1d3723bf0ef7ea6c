"""Trajectories of a scripted tool-using agent in a simulated workspace, with injected traps.

Each trajectory draws three of the four tasks (`tasks.py`) from its own seed, always with the
service or the pipeline (the tasks that wait), and plays the competent agent's calls for each.
An injected trajectory gets up to three traps, each at a safe point of some task's flow, built
from that task's current state so that no trap call can bring the work closer to done (the
generator refuses a trap step with progress). Productive repetition is labelled where the flow
does it; a productive stretch that starts within the scoring grace after a trap, or is shorter
than 3 steps, is left unlabelled.
"""

from __future__ import annotations

import random

from pos_trapbench.toolagent.noise import Noise
from pos_trapbench.toolagent.records import (
    EXPECTED_PATTERN,
    TOOL_PRODUCTIVE_KINDS,
    TOOL_TRAP_KINDS,
    ToolSegment,
    ToolStep,
    ToolTrajectory,
)
from pos_trapbench.toolagent.tasks import TASKS
from pos_trapbench.toolagent.workspace import Call, SafePoint, Task, Workspace

GRACE_STEPS = 2
"""Steps after a trap that the scorer does not count as non-trap (see `metrics.py`)."""
MIN_PRODUCTIVE = 3
TRAPS_PER_RUN = 3
CLEAN_EVERY = 4
"""Every 4th trajectory is clean (no trap)."""
SHUFFLED_ARGUMENTS = 0.15
"""Share of multi-argument calls whose JSON keys come in another order, as models do."""

_NEEDS_S1 = {
    "semantic": ("tests", "service", "pipeline"),
    "polling": ("service", "pipeline"),
}


class TrapRefused(RuntimeError):
    """A trap step made progress: the trap builder is wrong for that state."""


def make_corpus(count: int, seed: int) -> list[ToolTrajectory]:
    """`count` trajectories; every 4th is clean, the others share the trap kinds evenly."""
    rotation = [TOOL_TRAP_KINDS[i % len(TOOL_TRAP_KINDS)] for i in range(count * TRAPS_PER_RUN)]
    trajectories = []
    taken = 0
    for index in range(count):
        if index % CLEAN_EVERY == 0:
            traps: list[str] = []
        else:
            traps = rotation[taken : taken + TRAPS_PER_RUN]
            taken += TRAPS_PER_RUN
        trajectories.append(make_trajectory(seed, index, traps))
    return trajectories


def make_trajectory(seed: int, index: int, traps: list[str]) -> ToolTrajectory:
    rng = random.Random(f"tools:{seed}:{index}")
    noise = Noise.start(rng)
    workspace = Workspace(noise, f"/home/agent/work/shop-{noise.hex(4)}")
    names = rng.sample(sorted(TASKS), 3)
    while not {"service", "pipeline"} & set(names):
        names = rng.sample(sorted(TASKS), 3)
    tasks: list[Task] = [TASKS[name](workspace) for name in names]  # type: ignore[call-arg]
    workspace.tasks = tasks
    plan = _place_traps(names, traps, rng)
    recorder = _Recorder(workspace, rng)
    for number, task in enumerate(tasks):
        for item in task.flow():
            if not isinstance(item, SafePoint):
                recorder.play(item, item.label, task)
                continue
            kind = plan.get((number, item.name))
            if kind is None:
                continue
            if kind == "polling":
                task.arm_polling(item.name, rng.randint(8, 14))
                continue
            for call in task.trap(kind, item.name) or []:
                recorder.play(call, kind, task)
    goal = "; ".join(t.goal_text for t in tasks)
    steps, segments = _segments(recorder.steps)
    return ToolTrajectory(
        id=f"tools-{index:04d}",
        seed=seed,
        tasks=names,
        kind="injected" if traps else "clean",
        goal=goal[0].upper() + goal[1:] + ".",
        goals=sorted(workspace.goals()),
        done=workspace.remaining() == 0,
        initial_observation=recorder.initial_observation,
        initial=sorted(recorder.initial),
        steps=steps,
        segments=segments,
    )


def _place_traps(
    names: list[str], traps: list[str], rng: random.Random
) -> dict[tuple[int, str], str]:
    """Trap kind per safe point (task index, point name); the last task's end is not used."""
    points = [(i, p) for i in range(len(names)) for p in ("S1", "S2")][:-1]
    plan: dict[tuple[int, str], str] = {}
    # The kinds that fit fewer points are placed first.
    for kind in sorted(traps, key=lambda k: k not in _NEEDS_S1):
        allowed = [
            (i, p)
            for i, p in points
            if (i, p) not in plan
            and (kind not in _NEEDS_S1 or (p == "S1" and names[i] in _NEEDS_S1[kind]))
        ]
        if kind in ("repeat", "alternation", "cycle") and names:
            allowed = [
                (i, p) for i, p in allowed if not (p == "S1" and names[i] == "service")
            ] or allowed
        if allowed:
            plan[rng.choice(allowed)] = kind
    return plan


class _Recorder:
    def __init__(self, workspace: Workspace, rng: random.Random) -> None:
        self.workspace = workspace
        self.rng = rng
        self.steps: list[ToolStep] = []
        self.initial = workspace.belief_facts()
        self.previous = set(self.initial)
        files = len(workspace.files)
        tasks = "\n".join(f"- {t.goal_text}" for t in workspace.tasks)
        self.initial_observation = (
            f"Workspace {workspace.root} ({files} files). Tools: read_file, edit_file, "
            f"list_dir, search, run_tests, http_request, restart_service, submit_job, "
            f"job_status, cancel_job.\nTasks:\n{tasks}"
        )

    def play(self, call: Call, label: str, task: Task) -> None:
        workspace = self.workspace
        before = workspace.remaining()
        result = workspace.execute(call)
        after = workspace.remaining()
        progress = int(after < before)
        if label in TOOL_TRAP_KINDS and progress:
            raise TrapRefused(f"{label} step {call.tool} {call.args} made progress")
        beliefs = workspace.belief_facts()
        shuffled = len(call.args) > 1 and self.rng.random() < SHUFFLED_ARGUMENTS
        self.steps.append(
            ToolStep(
                t=len(self.steps) + 1,
                task=task.name,
                tool=call.tool,
                arguments=call.arguments(shuffled),
                observation=result.text,
                label=label,
                error=result.error,
                progress=progress,
                remaining=after,
                added=sorted(beliefs - self.previous),
                removed=sorted(self.previous - beliefs),
                questions=sorted(workspace.questions()),
                about=sorted(task.entities()),
            )
        )
        self.previous = beliefs


def _segments(steps: list[ToolStep]) -> tuple[list[ToolStep], list[ToolSegment]]:
    """Contiguous runs of one label become segments; productive runs too close after a trap
    or too short are unlabelled."""
    runs: list[tuple[str, int, int]] = []
    for i, step in enumerate(steps):
        if step.label == "none":
            continue
        if runs and runs[-1][0] == step.label and runs[-1][2] == i - 1:
            runs[-1] = (step.label, runs[-1][1], i)
        else:
            runs.append((step.label, i, i))
    segments: list[ToolSegment] = []
    last_trap_end = -10
    for kind, first, last in runs:
        if kind in TOOL_PRODUCTIVE_KINDS and (
            first <= last_trap_end + GRACE_STEPS or last - first + 1 < MIN_PRODUCTIVE
        ):
            for i in range(first, last + 1):
                steps[i] = steps[i].model_copy(update={"label": "none"})
            continue
        if kind in TOOL_TRAP_KINDS:
            last_trap_end = last
        index = len(segments)
        for i in range(first, last + 1):
            steps[i] = steps[i].model_copy(update={"segment": index})
        segments.append(
            ToolSegment(
                kind=kind,
                start=first + 1,
                end=last + 1,
                detail=_detail(steps[first : last + 1]),
                pattern=EXPECTED_PATTERN.get(kind),
            )
        )
    return steps, segments


def _detail(steps: list[ToolStep]) -> str:
    tools = sorted({s.tool for s in steps})
    return f"{len(steps)} calls of {', '.join(tools)}"
