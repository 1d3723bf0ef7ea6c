"""Episodes per minute against concurrent cases, for the local executor (worker processes) and
the Ray executor side by side, against a fixed-latency model server, or with the embedded local
model (whose llama.cpp threads `pos bench` splits between the workers).

    python -m benchmarks.workers [--latency 0.3] [--cases 8] [--steps 5] [--agent raw]
    python -m benchmarks.workers --executor local,ray   # 1, 2, 4, 8, 16 at once, 16 cases
    python -m benchmarks.workers --model local --cases 4 --steps 3 --workers 1,2

Each row also says where an episode's time goes: environment set-up, steps, model wait and
scheduling (the driver's round trip minus the case's own wall time), and how long the run took
to start its first case. Ray is started once, before the rows.

By default it starts an OpenAI-compatible server on 127.0.0.1 (loopback only) that answers every
request after a fixed delay with the smallest object valid for the requested JSON schema; model
time is simulated, environments are real. With `--model local` every call runs the embedded
model on this machine's cores. Either way the same alfworld-mini cases run with `pos bench`
machinery at each worker count, side by side in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pos_agent.bench.config import Timeline
from pos_agent.bench.executors.local import available_cores
from pos_agent.bench.runner import BenchConfig, run_bench
from pos_agent.bench.suite import Suite, load_suite
from pos_agent.events import EpisodeStartEvent, ModelCallEvent
from pos_agent.llm.backend import minimal_instance
from pos_agent.trace import CaseResult, is_scored, read_events


def serve(latency_s: float) -> tuple[ThreadingHTTPServer, str]:
    """A loopback chat-completions server that waits `latency_s` per request."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            time.sleep(latency_s)
            fmt = body.get("response_format") or {}
            schema = (fmt.get("json_schema") or {}).get("schema")
            content = json.dumps(minimal_instance(schema)) if schema else "{}"
            reply = {
                "id": "perf",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fixed"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def breakdown(run_dir: Path, results: list[CaseResult], timeline: Timeline) -> dict[str, float]:
    """Mean seconds per episode: environment set-up (until `episode_start`), model wait (the
    model calls' latencies), steps (the rest of the case's wall time: environment steps and
    the agent's own work) and scheduling (driver round trip minus the case's wall time)."""
    setup, wait, wall, overhead = [], [], [], []
    for result in results:
        folder = run_dir / f"{result.agent}__{result.case}"
        start, latency = 0.0, 0.0
        for event in read_events(folder):
            if isinstance(event, EpisodeStartEvent):
                start = event.t
            elif isinstance(event, ModelCallEvent):
                latency += event.latency_s
        setup.append(start)
        wait.append(latency)
        wall.append(result.duration_s)
        spent = timeline.overhead_s(folder.name)
        if spent is not None:
            overhead.append(spent)
    mean = statistics.fmean
    return {
        "setup": mean(setup),
        "model": mean(wait),
        "steps": mean(wall) - mean(setup) - mean(wait),
        "wall": mean(wall),
        "sched": mean(overhead) if overhead else float("nan"),
        "sched_median": statistics.median(overhead) if overhead else float("nan"),
    }


Row = tuple[str, int, int, float, float, int, float, dict[str, float]]
"""executor, concurrent cases, episodes, seconds, episodes per minute, errors, seconds to the
first case, per-episode breakdown."""


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    executors = [e.strip() for e in args.executor.split(",") if e.strip()]
    with_ray = "ray" in executors
    counts = args.workers or ("1,2,4,8,16" if with_ray else "1,2,4")
    cases = args.cases or (16 if with_ray else 8)
    server, base_url = serve(args.latency)
    fixed = args.model == "fixed"
    model = "openai:fixed" if fixed else args.model
    options: dict[str, object] = (
        {"base_url": base_url, "api_key": "perf-local", "max_retries": 0} if fixed else {}
    )
    if args.threads:
        options["n_threads"] = args.threads
    suite = load_suite("alfworld-mini")
    try:
        rows, ray_start_s = _measure(
            suite, args, executors, [int(w) for w in counts.split(",")], cases, model, options
        )
    finally:
        server.shutdown()
    where = f"model latency {args.latency:.2f}s (loopback server)" if fixed else f"model {model}"
    print(
        f"Episodes per minute: {cases} alfworld-mini episodes x {args.steps} steps, "
        f"agent {args.agent}, {where}, {available_cores()} cores, "
        f"llama.cpp threads per worker: {args.threads or 'cores / workers'}"
    )
    if ray_start_s is not None:
        print(f"Ray started for the benchmark in {ray_start_s:.1f}s (once, not in the rows)")
    _print_rows(rows)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency", type=float, default=0.3, help="seconds per model request")
    parser.add_argument(
        "--cases", type=int, default=None, help="episodes per run (default: 8, or 16 with ray)"
    )
    parser.add_argument("--steps", type=int, default=5, help="steps per episode")
    parser.add_argument("--agent", default="raw", help="method to run (raw: one call per step)")
    parser.add_argument(
        "--workers", default=None, help="concurrent cases to compare (default 1,2,4; ray 1,...,16)"
    )
    parser.add_argument(
        "--executor", default="local", help="executors to compare side by side: local, ray or both"
    )
    parser.add_argument(
        "--model", default="fixed", help="fixed (loopback server, --latency) or a model spec"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="llama.cpp threads per worker (default: the cores split between the workers)",
    )
    return parser


def _measure(
    suite: Suite,
    args: argparse.Namespace,
    executors: list[str],
    counts: list[int],
    cases: int,
    model: str,
    options: dict[str, object],
) -> tuple[list[Row], float | None]:
    """One row per executor and concurrency, and how long Ray took to start (None: no Ray)."""
    tasks = suite.task_ids()
    rows: list[Row] = []
    ray_start_s = None
    with (
        tempfile.TemporaryDirectory(prefix="pos-perf-workers-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        if "ray" in executors:
            from pos_agent.bench.executors.ray import connected

            began = time.monotonic()
            stack.enter_context(connected(None))  # one Ray for every row
            ray_start_s = time.monotonic() - began
        for executor in executors:
            for workers in counts:
                specs = []
                for i in range(cases):
                    spec = suite.cases([args.agent], model)[i % len(tasks)]
                    spec.max_steps = args.steps
                    spec.seed = i  # distinct case folders; alfworld-mini ignores the seed
                    specs.append(spec)
                timeline = Timeline()
                run_dir = Path(tmp) / f"{executor}{workers}"
                config = BenchConfig(
                    run_dir=run_dir,
                    workers=1 if executor == "ray" else workers,
                    max_concurrency=workers if executor == "ray" else None,
                    executor=executor,
                    model_options=options,
                    preflight=False,  # measured: episodes, not the one-off set-up check
                    timeline=timeline,
                )
                started = time.monotonic()
                results = run_bench(specs, config)
                elapsed = time.monotonic() - started
                first = min(timeline.sent.values()) - started if timeline.sent else 0.0
                errors = sum(not is_scored(r.status) for r in results)
                rows.append(
                    (executor, workers, len(results), elapsed, 60.0 * len(results) / elapsed,
                     errors, first, breakdown(run_dir, results, timeline))
                )  # fmt: skip
    return rows, ray_start_s


def _print_rows(rows: list[Row]) -> None:
    print(
        f"{'executor':>8} {'conc':>5} {'episodes':>9} {'seconds':>8} {'ep/min':>7} "
        f"{'speed-up':>9} {'errors':>7} {'start':>6} | per episode (s): {'setup':>6} "
        f"{'steps':>6} {'model':>6} {'wall':>6} {'sched':>7} {'sched~':>7}"
    )
    base: dict[str, float] = {}
    for executor, workers, n, elapsed, rate, errors, first, parts in rows:
        base.setdefault(executor, rate)
        print(
            f"{executor:>8} {workers:>5} {n:>9} {elapsed:>8.1f} {rate:>7.1f} "
            f"{rate / base[executor]:>8.2f}x {errors:>7} {first:>6.2f} | {'':>16}"
            f"{parts['setup']:>6.2f} {parts['steps']:>6.2f} {parts['model']:>6.2f} "
            f"{parts['wall']:>6.2f} {parts['sched'] * 1000:>5.0f}ms "
            f"{parts['sched_median'] * 1000:>5.0f}ms"
        )
    print(
        "start: seconds from the run's start to its first case (worker processes or Ray case "
        "runners starting); sched: driver round trip minus the case's wall time, mean and "
        "median (~); steps: wall minus set-up minus model wait"
    )


if __name__ == "__main__":
    main()
