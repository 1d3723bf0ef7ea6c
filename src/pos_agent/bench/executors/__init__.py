"""Where `pos bench` plays its cases: one small interface, two executors.

    local   worker processes on this machine (executors/local.py); the default
    ray     Ray actors on a cluster, or on a Ray started for the run (executors/ray.py; the
            `ray` extra)

An executor is a function `(queue, config, deliver)`: it takes cases off the queue
(`CaseQueue` in executors/base.py, which also spaces out infra retries), plays them, and hands
every final result to `deliver`, which counts it and rewrites summary.json. Whatever the
executor, the driver (the `pos bench` process, bench/runner.py) owns the run folder, its lock
and config.json, and resume, retries and the progress display work the same way. The runner
uses the executors; they never import it.

`Timeline` (bench/config.py) is what the benchmark `benchmarks/workers.py` reads: when each
case left the driver and when its reply came back, and how long the case itself took where it
ran.
"""

from __future__ import annotations

from collections.abc import Callable

from pos_agent.bench.config import BenchConfig
from pos_agent.bench.executors.base import CaseQueue, Deliver

__all__ = ["EXECUTORS", "Executor", "executor_for"]

EXECUTORS: tuple[str, ...] = ("local", "ray")

Executor = Callable[[CaseQueue, BenchConfig, Deliver], None]


def executor_for(name: str) -> Executor:
    """The executor called `name` (ValueError for an unknown one)."""
    if name == "local":
        from pos_agent.bench.executors.local import execute_locally

        return execute_locally
    if name == "ray":
        from pos_agent.bench.executors.ray import execute_on_ray

        return execute_on_ray
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
