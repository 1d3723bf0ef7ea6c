"""LOCA-Bench case costs at several environment lengths: setup, tool calls, description size.

    python -m benchmarks.loca [--task WoocommerceStockAlert] [--lengths 8k,32k,128k]
                                  [--seed 42] [--calls 10]

For each length, one real case through the adapter (LOCA's data generator, its MCP servers in
LOCA's runtime, no network):

- setup: `reset()` wall time, split into LOCA's own generator (one pass of the task class's
  constructor, timed inside the bridge), server start-up and the description measurement;
- tool call: mean wall time of `--calls` read-only calls through `step()` (JSON round trip to
  the bridge, MCP call, answer);
- description: cl100k_base tokens of the environment's content (`extra["description_tokens"]`;
  `extra["context_length"]` is the nominal length, Figure 4's x axis).

The last line compares how setup and LOCA's generator grow from the shortest to the longest
length: setup must grow no faster than the generator it wraps. LOCA's own runner generates
twice per episode (constructor, then reset); the adapter generates once.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_agent.envs.loca.environment import LocaEnvironment

# Read-only calls that every stock-alert case offers; other tasks fall back to the filesystem.
_READS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("woocommerce_woo_products_list", {"perPage": 10}),
    ("filesystem_list_allowed_directories", {}),
)


@dataclass
class LengthFigures:
    length: str
    setup_s: float
    generate_s: float
    servers_s: float
    measure_s: float
    call_ms: float
    tokens: int | None
    tools: int


def measure(task: str, length: str, seed: int, calls: int) -> LengthFigures:
    with tempfile.TemporaryDirectory(prefix="pos-perf-loca-") as folder:
        env = LocaEnvironment(
            f"{task}-{length}", seed=seed, workdir=Path(folder), max_steps=calls + 1
        )
        with env:
            started = time.perf_counter()
            first = env.reset()
            setup = time.perf_counter() - started
            names = {t["name"] for t in first.tools or []}
            reads = [(n, a) for n, a in _READS if n in names]
            times = []
            for index in range(calls):
                name, args = reads[index % len(reads)]
                started = time.perf_counter()
                observation = env.step(json.dumps({"tool": name, "args": args}))
                times.append(time.perf_counter() - started)
                if observation.info.get("invalid_action"):
                    raise RuntimeError(f"{name} failed: {observation.text[:300]}")
            timings = env.setup_info.get("timings") or {}
            return LengthFigures(
                length=length,
                setup_s=setup,
                generate_s=float(timings.get("generate_s", 0.0)),
                servers_s=float(timings.get("servers_s", 0.0)),
                measure_s=float(timings.get("measure_s", 0.0)),
                call_ms=1000 * statistics.mean(times),
                tokens=env.setup_info.get("context_tokens"),
                tools=len(first.tools or []),
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loca", description=__doc__)
    parser.add_argument("--task", default="WoocommerceStockAlert")
    parser.add_argument("--lengths", default="8k,32k,128k")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args(argv)
    rows = [
        measure(args.task, length.strip(), args.seed, args.calls)
        for length in args.lengths.split(",")
        if length.strip()
    ]
    print(f"LOCA {args.task} seed {args.seed}: {args.calls} read-only tool calls per length")
    print(
        f"{'length':>7} {'setup s':>8} {'generator s':>12} {'servers s':>10} {'measure s':>10} "
        f"{'call ms':>8} {'desc tokens':>12} {'tools':>6}"
    )
    for row in rows:
        print(
            f"{row.length:>7} {row.setup_s:>8.1f} {row.generate_s:>12.1f} {row.servers_s:>10.1f} "
            f"{row.measure_s:>10.1f} {row.call_ms:>8.0f} {row.tokens or 0:>12} {row.tools:>6}"
        )
    if len(rows) > 1 and rows[0].generate_s > 0 and rows[0].setup_s > 0:
        setup_growth = rows[-1].setup_s / rows[0].setup_s
        generator_growth = rows[-1].generate_s / rows[0].generate_s
        print(
            f"growth {rows[0].length}->{rows[-1].length}: setup x{setup_growth:.2f}, "
            f"LOCA generator x{generator_growth:.2f}, added by the adapter "
            f"{rows[0].setup_s - rows[0].generate_s:.1f} s -> "
            f"{rows[-1].setup_s - rows[-1].generate_s:.1f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
