"""The demo's model calls on an idle and on a loaded machine: `python -m benchmarks.demo`.

    python -m benchmarks.demo [--calls 2] [--burners 1] [--tokens 48]

`make demo` plays one PoS episode with the embedded model, whose calls are most of its time.
This times calls shaped like the demo's (a structured answer to a belief-sized prompt) in three
settings:

- idle:            nothing else started here, llama.cpp on every core (`--threads` = cores);
- loaded, all:     `--burners` CPU-bound processes running, llama.cpp still on every core
                   (what `pos run` did before it looked at the load);
- loaded, default: the same burners, with the threads `pos run` now chooses by default
                   (`threads_each`: the cores the other work leaves free, at least one).

The machine may be shared: the load average before each setting is printed with it, and an
"idle" machine with other users' jobs is not idle. The last line is
`median s per call: idle=<a> loaded_all=<b> loaded_default=<c>`.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from pydantic import BaseModel, Field

from pos_agent.bench.executors.local import available_cores, busy_cores, threads_each
from pos_agent.llm import Message, ModelFailure, ModelOptions, load_model


class DemoAction(BaseModel):
    """A policy-sized answer, like the demo's policy calls."""

    thought: str = Field(max_length=80)
    action: Literal["go to microwave 1", "take mug 1 from countertop 1", "heat mug 1", "look"]


BELIEF = "\n".join(
    [
        "Goal: heat the mug and put it on the countertop.",
        "Belief:",
        "- e1 mug 1: location=countertop 1 (0.9, observed @0); temperature=cold (0.6, inferred)",
        "- e2 microwave 1: door=closed (0.8, observed @0)",
        "- e3 countertop 1: holds=e1 (0.9, observed @0)",
        "Open gaps: g1 [active] where is mug 1 to be heated; g2 is the microwave free.",
        "Admissible actions: go to microwave 1; take mug 1 from countertop 1; heat mug 1; look.",
    ]
)


def _burn(stop: float) -> None:
    """A CPU-bound job: spin until the monotonic clock passes `stop`."""
    x = 0
    while time.monotonic() < stop:
        x = (x * 31 + 7) % 1_000_003


@contextmanager
def burners(count: int, seconds: float) -> Iterator[None]:
    """`count` CPU-bound processes for at most `seconds` (stopped when the block ends)."""
    stop = time.monotonic() + seconds
    processes = [multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(count)]
    for process in processes:
        process.start()
    try:
        time.sleep(0.5)  # let them reach full speed
        yield
    finally:
        for process in processes:
            process.terminate()
            process.join(5)


def time_calls(threads: int, calls: int, tokens: int) -> list[float]:
    """Seconds per call of `calls` demo-shaped structured calls with `threads` threads (after
    one untimed warm-up call that loads the weights)."""
    model = load_model("local", ModelOptions(n_threads=threads, cache_mode="off"))
    system = Message("system", "You are a household agent. Choose the next action.")

    def ask(i: int) -> float:
        started = time.perf_counter()
        with contextlib.suppress(ModelFailure):  # a cut-off answer took its time all the same
            model.complete(
                [system, Message("user", f"{BELIEF}\nStep {i}. What next?")],
                schema=DemoAction,
                max_tokens=tokens,
            )
        return time.perf_counter() - started

    ask(-1)
    return [ask(i) for i in range(calls)]


Setting = Literal["idle", "loaded_all", "loaded_default"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2, help="timed calls per setting")
    parser.add_argument("--burners", type=int, default=1, help="CPU-bound jobs when loaded")
    parser.add_argument("--tokens", type=int, default=48, help="generation tokens per call")
    args = parser.parse_args(argv)
    cores = available_cores()
    print(f"cores available: {cores}; burners when loaded: {args.burners}; calls: {args.calls}")
    medians: dict[Setting, float] = {}
    plan: list[tuple[Setting, int, int]] = [
        ("idle", cores, 0),
        ("loaded_all", cores, args.burners),
        ("loaded_default", threads_each(1, busy=args.burners), args.burners),
    ]
    for setting, threads, jobs in plan:
        load = busy_cores()
        with burners(jobs, seconds=900):
            seconds = time_calls(threads, args.calls, args.tokens)
        medians[setting] = statistics.median(seconds)
        shown = ", ".join(f"{s:.1f}" for s in seconds)
        print(
            f"{setting:<15} threads={threads} burners={jobs} load-before={load:.1f}  "
            f"s per call: {shown}  (median {medians[setting]:.1f})"
        )
    print(
        "median s per call: "
        + " ".join(f"{setting}={value:.1f}" for setting, value in medians.items())
    )


if __name__ == "__main__":
    main()
