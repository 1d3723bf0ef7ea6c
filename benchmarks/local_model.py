"""Throughput of the embedded local model: `python -m benchmarks.local_model`.

Prints prompt-evaluation and generation tokens per second (median of a few runs, from
llama.cpp's own counters), what prompt-prefix reuse saves, and the latency of a response-cache
hit against an uncached call.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from pos_agent.llm import (
    Message,
    ModelFailure,
    ModelOptions,
    ReliableModel,
    ResponseCache,
    load_model,
)
from pos_agent.llm.backend import LlamaCppBackend


class BenchAction(BaseModel):
    """A policy-sized structured answer."""

    thought: str = Field(max_length=60)
    action: Literal["go to fridge", "open fridge", "take apple", "look"]


@dataclass(frozen=True)
class Counters:
    """llama.cpp's timings for one call: prompt tokens evaluated and tokens generated."""

    prompt_tokens: int
    prompt_ms: float
    generated_tokens: int
    generation_ms: float
    wall_s: float


@dataclass(frozen=True)
class Row:
    measure: str
    value: str
    note: str


def synthetic_belief(lines: int, tag: str) -> str:
    """A prompt shaped like a rendered belief state, made unique by `tag`."""
    rooms = ("kitchen", "hallway", "bedroom", "bathroom", "garage")
    objects = ("apple", "mug", "knife", "towel", "lamp", "book", "plate", "key")
    body = [f"Episode {tag}. Belief state:"]
    for i in range(lines):
        obj, room = objects[i % len(objects)], rooms[i % len(rooms)]
        body.append(
            f"- E{i} {obj}{i}: location={room} (0.9, observed @{i}); state=closed (0.6, inferred)"
        )
    body.append("Open gaps: G1 [active] find the apple; G2 put it in the fridge.")
    return "\n".join(body)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rate(tokens: list[int], milliseconds: list[float]) -> float:
    """Median tokens per second over runs (runs with no tokens or no time are skipped)."""
    per_run = [1000.0 * n / ms for n, ms in zip(tokens, milliseconds, strict=True) if n and ms > 0]
    return median(per_run)


def _perf_reader(llama: Any) -> Callable[[], tuple[int, float, int, float]]:
    import llama_cpp

    context = llama._ctx.ctx

    def read() -> tuple[int, float, int, float]:
        data = llama_cpp.llama_perf_context(context)
        return int(data.n_p_eval), float(data.t_p_eval_ms), int(data.n_eval), float(data.t_eval_ms)

    return read


def timed_call(
    model: ReliableModel, llama: Any, messages: list[Message], **kwargs: Any
) -> Counters:
    import llama_cpp

    read = _perf_reader(llama)
    llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
    started = time.perf_counter()
    # A cut-off answer still measures the speed of the tokens it produced.
    with contextlib.suppress(ModelFailure):
        model.complete(messages, **kwargs)
    wall = time.perf_counter() - started
    n_prompt, prompt_ms, n_generated, generation_ms = read()
    return Counters(n_prompt, prompt_ms, n_generated, generation_ms, wall)


def measure(runs: int, n_ctx: int, belief_lines: int) -> list[Row]:
    options = ModelOptions(n_ctx=n_ctx)
    cpu_started = time.process_time()
    started = time.perf_counter()
    model = load_model("local", options)
    backend = model.backend
    assert isinstance(backend, LlamaCppBackend)
    llama = backend.llama
    load_s = time.perf_counter() - started
    system = Message("system", "You are a household agent. Choose the next action.")

    # Warm-up: first-touch of the weights and compute buffers.
    model.complete([system, Message("user", "Say ready.")], max_tokens=4)

    def timed_runs(user: Callable[[int], str], **kwargs: Any) -> list[Counters]:
        """One timed call a run, run i asking `user(i)` after the system message."""
        return [
            timed_call(model, llama, [system, Message("user", user(i))], **kwargs)
            for i in range(runs)
        ]

    fresh = timed_runs(
        lambda i: synthetic_belief(belief_lines, f"run-{i}-{time.time_ns()}"), max_tokens=1
    )
    free_text = timed_runs(
        lambda i: f"Story {i}: write a long story about a robot cook.", max_tokens=96
    )
    structured = timed_runs(
        lambda i: f"{synthetic_belief(8, str(i))}\nWhat next?", schema=BenchAction, max_tokens=128
    )
    shared_prefix = synthetic_belief(belief_lines, "shared")
    timed_call(model, llama, [system, Message("user", shared_prefix + "\nStep 0.")], max_tokens=1)
    reused = timed_runs(lambda i: f"{shared_prefix}\nStep {i + 1}.", max_tokens=1)
    uncached_s, hit_s, repairs = _cache_latencies(options, system, runs)
    cpu_per_wall = (time.process_time() - cpu_started) / (time.perf_counter() - started)
    timings = Timings(
        backend.path.name, n_ctx, options.threads(), runs, load_s, cpu_per_wall,
        fresh, free_text, structured, reused, uncached_s, hit_s, repairs,
    )  # fmt: skip
    return timings.rows()


def _cache_latencies(
    options: ModelOptions, system: Message, runs: int
) -> tuple[list[float], list[float], list[int]]:
    """Structured calls through the response cache: each one's latency uncached, then as a cache
    hit, and its repair turns."""
    with tempfile.TemporaryDirectory() as folder:
        cache = ResponseCache(Path(folder) / "bench.sqlite", "readwrite")
        cached_model = load_model("local", options, cache=cache)
        uncached_s, hit_s, repairs = [], [], []
        for i in range(runs):
            ask = [system, Message("user", f"Cache probe {i}: {synthetic_belief(6, str(i))}")]
            first = cached_model.complete(ask, schema=BenchAction, max_tokens=128)
            second = cached_model.complete(ask, schema=BenchAction, max_tokens=128)
            assert second.cached and second.text == first.text
            uncached_s.append(first.latency_s)
            hit_s.append(second.latency_s)
            repairs.append(first.repairs)
        cache.close()
    return uncached_s, hit_s, repairs


@dataclass
class Timings:
    """What `measure` timed, and the rows that report it."""

    model_name: str
    n_ctx: int
    threads: int
    runs: int
    load_s: float
    cpu_per_wall: float
    fresh: list[Counters]
    free_text: list[Counters]
    structured: list[Counters]
    reused: list[Counters]
    uncached_s: list[float]
    hit_s: list[float]
    repairs: list[int]

    def rows(self) -> list[Row]:
        prompt_size = int(median([c.prompt_tokens for c in self.fresh]))
        return [
            Row("model", self.model_name, f"n_ctx={self.n_ctx}, threads={self.threads}"),
            Row("load time", f"{self.load_s:.2f} s", "once per process"),
            Row(
                "prompt eval",
                f"{rate([c.prompt_tokens for c in self.fresh], [c.prompt_ms for c in self.fresh]):.0f} tok/s",
                f"fresh {prompt_size}-token prompts, median of {self.runs}",
            ),
            Row(
                "generation (free text)",
                f"{rate([c.generated_tokens for c in self.free_text], [c.generation_ms for c in self.free_text]):.0f} tok/s",
                f"up to 96 tokens, median of {self.runs}",
            ),
            Row(
                "generation (JSON schema grammar)",
                f"{rate([c.generated_tokens for c in self.structured], [c.generation_ms for c in self.structured]):.0f} tok/s",
                f"BenchAction, median of {self.runs}",
            ),
            Row(
                "structured call latency",
                f"{median([c.wall_s for c in self.structured]):.3f} s",
                f"median of {self.runs}, incl. repairs",
            ),
            Row(
                "prompt, fresh",
                f"{median([c.prompt_ms for c in self.fresh]):.0f} ms",
                f"{prompt_size} tokens evaluated",
            ),
            Row(
                "prompt, shared prefix reused",
                f"{median([c.prompt_ms for c in self.reused]):.0f} ms",
                f"{int(median([c.prompt_tokens for c in self.reused]))} tokens evaluated (KV prefix kept)",
            ),
            Row(
                "call latency, uncached",
                f"{median(self.uncached_s) * 1000:.1f} ms",
                f"structured, median of {self.runs}, {sum(self.repairs)} repair turns in all",
            ),
            Row("call latency, cache hit", f"{median(self.hit_s) * 1000:.2f} ms", "SQLite replay"),
            Row(
                "CPU time / wall time",
                f"{self.cpu_per_wall:.2f}",
                f"near {self.threads} when the cores were ours; lower means contention",
            ),
        ]


def render(rows: list[Row]) -> Table:
    table = Table(title="local model performance")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("note")
    for row in rows:
        table.add_row(row.measure, row.value, row.note)
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5, help="runs per measure (median reported)")
    parser.add_argument("--n-ctx", type=int, default=8192, help="context window in tokens")
    parser.add_argument(
        "--belief-lines", type=int, default=40, help="size of the synthetic prompt, in lines"
    )
    args = parser.parse_args(argv)
    Console(width=120).print(render(measure(args.runs, args.n_ctx, args.belief_lines)))


if __name__ == "__main__":
    main()
