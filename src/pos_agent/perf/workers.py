"""Episodes per minute with 1, 2 and 4 workers against a fixed-latency model server, or with
the embedded local model (whose llama.cpp threads `pos bench` splits between the workers).

    python -m pos_agent.perf.workers [--latency 0.3] [--cases 8] [--steps 5] [--agent raw]
    python -m pos_agent.perf.workers --model local --cases 4 --steps 3 --workers 1,2

By default it starts an OpenAI-compatible server on 127.0.0.1 (loopback only) that answers every
request after a fixed delay with the smallest object valid for the requested JSON schema; model
time is simulated, environments are real. With `--model local` every call runs the embedded
model on this machine's cores. Either way the same alfworld-mini cases run with `pos bench`
machinery at each worker count, side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pos_agent.bench.runner import BenchConfig, available_cores, run_bench
from pos_agent.bench.suite import load_suite
from pos_agent.llm._structured import minimal_instance
from pos_agent.trace import is_scored


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency", type=float, default=0.3, help="seconds per model request")
    parser.add_argument("--cases", type=int, default=8, help="episodes per worker count")
    parser.add_argument("--steps", type=int, default=5, help="steps per episode")
    parser.add_argument("--agent", default="raw", help="method to run (raw: one call per step)")
    parser.add_argument("--workers", default="1,2,4", help="worker counts to compare")
    parser.add_argument(
        "--model", default="fixed", help="fixed (loopback server, --latency) or a model spec"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="llama.cpp threads per worker (default: the cores split between the workers)",
    )
    args = parser.parse_args(argv)
    server, base_url = serve(args.latency)
    fixed = args.model == "fixed"
    model = "openai:fixed" if fixed else args.model
    options: dict[str, object] = (
        {"base_url": base_url, "api_key": "perf-local", "max_retries": 0} if fixed else {}
    )
    if args.threads:
        options["n_threads"] = args.threads
    suite = load_suite("alfworld-mini")
    tasks = suite.task_ids()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="pos-perf-workers-") as tmp:
            for workers in [int(w) for w in args.workers.split(",")]:
                specs = []
                for i in range(args.cases):
                    spec = suite.cases([args.agent], model)[i % len(tasks)]
                    spec.max_steps = args.steps
                    spec.seed = i  # distinct case folders; alfworld-mini ignores the seed
                    specs.append(spec)
                config = BenchConfig(
                    run_dir=Path(tmp) / f"w{workers}",
                    workers=workers,
                    model_options=options,
                    preflight=False,  # measured: episodes, not the one-off set-up check
                )
                started = time.monotonic()
                results = run_bench(specs, config)
                elapsed = time.monotonic() - started
                errors = sum(not is_scored(r.status) for r in results)
                rows.append((workers, len(results), elapsed, 60.0 * len(results) / elapsed, errors))
    finally:
        server.shutdown()
    where = f"model latency {args.latency:.2f}s (loopback server)" if fixed else f"model {model}"
    print(
        f"Episodes per minute: {args.cases} alfworld-mini episodes x {args.steps} steps, "
        f"agent {args.agent}, {where}, {available_cores()} cores, "
        f"llama.cpp threads per worker: {args.threads or 'cores / workers'}"
    )
    print(
        f"{'workers':>8} {'episodes':>9} {'seconds':>8} {'ep/min':>8} {'speed-up':>9} {'errors':>7}"
    )
    base = rows[0][3]
    for workers, n, elapsed, rate, errors in rows:
        print(f"{workers:>8} {n:>9} {elapsed:>8.1f} {rate:>8.1f} {rate / base:>8.2f}x {errors:>7}")


if __name__ == "__main__":
    main()
