"""Which nodes of a Ray cluster live, asked with a deadline: the driver of a Ray run never waits
forever on a call whose node is gone.

A node can be marked dead without the calls on it failing (its dashboard agent was killed:
the raylet stops, and the driver's wait for the calls there went on with no progress and no
message). So the driver asks the cluster, every `every_s` seconds, which nodes are alive. The
question runs on a daemon thread the driver waits on for at most `answer_s`, so even a cluster
whose control store hangs costs a bounded wait; after `unreachable_s` without an answer the
run ends with RayUnavailableError, its unfinished cases left for `--resume`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from pos_agent.bench.executors.ray_cluster import RayUnavailableError

EVERY_S = 5.0
ANSWER_S = 10.0
UNREACHABLE_S = 60.0


class NodeWatch:
    """Asks a Ray cluster for its live nodes now and then (`alive_nodes`)."""

    def __init__(
        self,
        ray: Any,
        run_name: str,
        *,
        every_s: float = EVERY_S,
        answer_s: float = ANSWER_S,
        unreachable_s: float = UNREACHABLE_S,
    ) -> None:
        self.ray = ray
        self.run_name = run_name
        self.every_s = every_s
        self.answer_s = answer_s
        self.unreachable_s = unreachable_s
        self.asked = time.monotonic()
        self.answered = time.monotonic()

    def alive_nodes(self) -> dict[str, float] | None:
        """{node id: its CPUs} of the live nodes, when it is time to ask and the cluster
        answered in time; None otherwise. RayUnavailableError once the cluster has not
        answered for `unreachable_s`."""
        now = time.monotonic()
        if now - self.asked < self.every_s:
            return None
        self.asked = now
        nodes = self._ask()
        if nodes is None:
            silent = time.monotonic() - self.answered
            if silent > self.unreachable_s:
                raise RayUnavailableError(
                    f"the Ray cluster has not said which nodes live for {silent:.0f}s; the "
                    "cases in progress have no result. Check the cluster (`ray status`), then "
                    f"continue with --run {self.run_name} --resume"
                )
            return None
        self.answered = time.monotonic()
        return {
            str(node.get("NodeID")): float((node.get("Resources") or {}).get("CPU", 0.0))
            for node in nodes
            if node.get("Alive")
        }

    def require_a_node(self, alive: dict[str, float]) -> None:
        """RayUnavailableError when no live node can play a case."""
        if not any(cpus > 0 for cpus in alive.values()):
            raise RayUnavailableError(
                "no Ray node that can play a case is alive (every node died or has no CPU); "
                f"the cases in progress have no result. Continue with --run {self.run_name} "
                "--resume once the cluster is back"
            )

    def _ask(self) -> list[dict[str, Any]] | None:
        answer: list[list[dict[str, Any]]] = []

        def ask() -> None:
            try:
                answer.append(list(self.ray.nodes()))
            except Exception:  # counted as no answer
                return

        thread = threading.Thread(target=ask, name="pos-ray-health", daemon=True)
        thread.start()
        thread.join(self.answer_s)
        return answer[0] if answer else None
