"""Where `pos bench` plays its cases: one small interface, two executors.

    local   worker processes on this machine (bench/runner.py); the default
    ray     Ray actors on a cluster, or on a Ray started for the run (executors/ray.py; the
            `ray` extra)

An executor is a function `(queue, config, deliver)`: it takes cases off the queue (`_Queue` in
bench/runner.py, which also spaces out infra retries), plays them, and hands every final result
to `deliver`, which counts it and rewrites summary.json. Whatever the executor, the driver
(the `pos bench` process) owns the run folder, its lock and config.json, and resume, retries and
the progress display work the same way.

`Timeline` is what the benchmark `perf.workers` reads: when each case left the driver and when
its reply came back, and how long the case itself took where it ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pos_agent.bench.runner import BenchConfig, Deliver, _Queue

EXECUTORS: tuple[str, ...] = ("local", "ray")

Executor = Callable[["_Queue", "BenchConfig", "Deliver"], None]


def executor_for(name: str) -> Executor:
    """The executor called `name` (ValueError for an unknown one)."""
    if name == "local":
        from pos_agent.bench.runner import execute_locally

        return execute_locally
    if name == "ray":
        from pos_agent.bench.executors.ray import execute_on_ray

        return execute_on_ray
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")


@dataclass
class Timeline:
    """Per case folder: driver-side send and receive times, and the worker-side play time."""

    sent: dict[str, float] = field(default_factory=dict)
    received: dict[str, float] = field(default_factory=dict)
    played: dict[str, float] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    def send(self, folder: str) -> None:
        self.sent[folder] = time.monotonic()

    def receive(self, folder: str, played_s: float | None = None) -> None:
        self.received[folder] = time.monotonic()
        if played_s is not None:
            self.played[folder] = played_s

    def overhead_s(self, folder: str) -> float | None:
        """Round trip minus the play time: what scheduling and shipping the case cost."""
        if folder not in self.sent or folder not in self.received or folder not in self.played:
            return None
        return self.received[folder] - self.sent[folder] - self.played[folder]
