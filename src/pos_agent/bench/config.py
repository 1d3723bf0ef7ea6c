"""How `pos bench` plays a list of cases (`BenchConfig`), and the timing record a run can keep
(`Timeline`). The runner (bench/runner.py) and the executors (bench/executors/) both read it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_agent.llm import RateLimits


@dataclass
class Timeline:
    """Per case folder: driver-side send and receive times, and the worker-side play time.

    It is what the benchmark `benchmarks/workers.py` reads: when each case left the driver and
    when its reply came back, and how long the case itself took where it ran."""

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


@dataclass
class BenchConfig:
    """How to run a list of cases."""

    run_dir: Path
    workers: int = 1
    resume: bool = False
    infra_retries: int = 2
    model_options: dict[str, Any] = field(default_factory=dict)
    case_timeout_s: float | None = None
    """Wall-clock limit per case; reaching it ends the case as unscored infra_error."""
    preflight: bool = True
    """One small call per distinct model before the first case; a broken model is refused."""
    describe: dict[str, Any] = field(default_factory=dict)
    """Recorded in config.json for humans (suite, methods, workers); not part of the identity."""
    executor: str = "local"
    """Where the cases are played: local (worker processes here) or ray (bench/executors/)."""
    ray_address: str | None = None
    """The Ray cluster to use (auto, HOST:PORT); None: a Ray started for this run."""
    max_concurrency: int | None = None
    """Ray: cases played at once (None: one per CPU of the cluster)."""
    rate_limits: RateLimits | None = None
    """Ray: one limit per model for the whole cluster (concurrency, pace, 429 Retry-After)."""
    timeline: Timeline | None = None
    """When set, each case's send, receive and play times are noted (benchmarks/workers.py)."""
