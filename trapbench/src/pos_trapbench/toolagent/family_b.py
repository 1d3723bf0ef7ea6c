"""The held-out tool-agent family `tools-b`: another workspace, other tools, other noise.

Written to check that what the monitor learned on the `tools` family (whose corpus was used
while designing it) carries over to traffic it was not designed on. Nothing is shared with
the `tools` generator but the record format (`ToolTrajectory`, `family="tools-b"`) and the
segment labelling: other tasks, other tool names and argument shapes, other output formats,
other noise, and seeds from another range (`SEED_OFFSET`).

Three tasks per trajectory (family_b_tasks.py), in an order drawn from its seed:

- **gotests**: a Go module with 2-3 failing tests. `shell {"cmd": "go test ./..."}` prints
  `go test`'s report; `cat {"path", "lines"}` shows a file with line numbers and its blob hash;
  `apply_patch {"path", "hunk"}` edits. Some bugs take two patches (the failure message
  changes after the first).
- **rollout**: a Kubernetes deployment in CrashLoopBackOff because its `REDIS_URL` has the
  wrong port. `kubectl {"args": ...}`: `get pods`, `logs`, `describe`, `set env`,
  `rollout restart`, `rollout status` (after the fix, one more replica is ready per poll).
- **incident**: find the failing route in the logs: `grep {"pattern", "path", "page"}` paged,
  then `cat` every log file the matches name.

Every output ends with a footer `[exit N · 1.23s · 14:02:11]`; pods get random name suffixes
and ages, logs carry timestamps with milliseconds and trace ids, `go test` prints package
durations and sometimes `(cached)`, files their blob hash. Traps (repeat, alternation, cycle,
semantic, polling) are injected at safe points and never make progress; productive
repetition (retest, paging, iterate, poll_done) is labelled where the flow does it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from pos_trapbench.toolagent.family_b_tasks import Clock, GoTests, Incident, Rollout
from pos_trapbench.toolagent.generate import CLEAN_EVERY, TRAPS_PER_RUN, _segments
from pos_trapbench.toolagent.records import TOOL_TRAP_KINDS, ToolStep, ToolTrajectory
from pos_trapbench.toolagent.workspace import Call, SafePoint

FAMILY = "tools-b"
SEED_OFFSET = 1_000_003
"""Trajectory seeds of this family are drawn from `seed + SEED_OFFSET`: another range than
the `tools` family's for the same `--seed`."""

_Task = GoTests | Rollout | Incident
_TASKS: dict[str, type[_Task]] = {"gotests": GoTests, "rollout": Rollout, "incident": Incident}


@dataclass
class _Workspace:
    clock: Clock
    tasks: list[GoTests | Rollout | Incident] = field(default_factory=list)

    def remaining(self) -> int:
        return sum(t.remaining() for t in self.tasks)

    def facts(self) -> set[str]:
        return set().union(*(t.facts() for t in self.tasks))


def make_corpus_b(count: int, seed: int) -> list[ToolTrajectory]:
    """`count` trajectories of `tools-b`; every 4th is clean, the others share the trap kinds."""
    rotation = [TOOL_TRAP_KINDS[i % len(TOOL_TRAP_KINDS)] for i in range(count * TRAPS_PER_RUN)]
    out, taken = [], 0
    for index in range(count):
        traps: list[str] = []
        if index % CLEAN_EVERY:
            traps = rotation[taken : taken + TRAPS_PER_RUN]
            taken += TRAPS_PER_RUN
        out.append(make_trajectory_b(seed, index, traps))
    return out


def make_trajectory_b(seed: int, index: int, traps: list[str]) -> ToolTrajectory:
    rng = random.Random(f"tools-b:{seed + SEED_OFFSET}:{index}")
    clock = Clock(rng)
    names = list(_TASKS)
    rng.shuffle(names)
    workspace = _Workspace(clock)
    workspace.tasks = [_TASKS[n](clock, rng) for n in names]
    # Not after the last task: with every goal met, no gap is left for a trap to block.
    points = [(i, p) for i in range(3) for p in ("S1", "S2")][:-1]
    plan: dict[tuple[int, str], str] = {}
    for kind in traps:
        fits = [pt for pt in points if pt not in plan and _fits(kind, names[pt[0]], pt[1])]
        if fits:
            plan[rng.choice(fits)] = kind
    steps: list[ToolStep] = []
    previous = workspace.facts()
    initial = sorted(previous)

    def play(task: _Task, call: Call, label: Any) -> None:
        nonlocal previous
        clock.tick()
        before = workspace.remaining()
        text, code = task.run(call)
        after = workspace.remaining()
        progress = int(after < before)
        if label in TOOL_TRAP_KINDS and progress:
            raise RuntimeError(f"tools-b: a {label} step made progress: {call}")
        facts = workspace.facts()
        steps.append(
            ToolStep(
                t=len(steps) + 1,
                task=task.name,
                tool=call.tool,
                arguments=call.arguments(rng.random() < 0.1),
                observation=text,
                label=label,
                error=code == 127,
                progress=progress,
                remaining=after,
                added=sorted(facts - previous),
                removed=sorted(previous - facts),
                questions=sorted(task.questions()),
                about=sorted(task.entities()),
            )
        )
        previous = facts

    for number, task in enumerate(workspace.tasks):
        for item in task.flow():
            if isinstance(item, SafePoint):
                planned = plan.get((number, item.name))
                if planned is not None:
                    for call in task.trap(planned, item.name):
                        play(task, call, planned)
                continue
            play(
                task,
                item,
                "none" if item.label == "retest" and not task.remaining() else item.label,
            )
    kept, segments = _segments(steps)
    goals = set().union(*(t.goals() for t in workspace.tasks))
    goal = "; ".join(t.goal_text for t in workspace.tasks)
    return ToolTrajectory(
        family=FAMILY,
        id=f"tools-b-{index:04d}",
        seed=seed,
        tasks=names,
        kind="injected" if traps else "clean",
        goal=goal[0].upper() + goal[1:] + ".",
        goals=sorted(goals),
        done=workspace.remaining() == 0,
        initial_observation="Shell in /srv/shop. Tools: shell, cat, apply_patch, kubectl, grep.",
        initial=initial,
        steps=kept,
        segments=segments,
    )


def _fits(kind: str, task: str, point: str) -> bool:
    if kind == "semantic":
        return task in ("gotests", "rollout") and point == "S1"
    if kind == "polling":
        return task == "rollout" and point == "S1"
    if task == "incident" and kind in ("alternation", "cycle"):
        return point == "S2"
    return True
