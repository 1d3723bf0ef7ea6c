"""The Ray executor: the cases of `pos bench` played by Ray actors on any node of a cluster.

    pos bench SUITE --executor ray [--ray-address auto|HOST:PORT] [--max-concurrency N]

The driver (`pos bench`) keeps everything a run folder needs: the lock, config.json, every
result and summary.json. An actor plays a case in a scratch folder on its own node and returns
the case's records (result.json, events.jsonl and the other files at the top of the case
folder) with the result; the driver writes them into the run folder atomically as each one
arrives, under the case folder's lock. So no node needs the run folder, and resume, retries and
the progress display are those of the local executor.

One actor per concurrent case (`--max-concurrency`, default one per CPU of the cluster), spread
over the nodes and reused from case to case, so each keeps its imports and loaded models; a
case's environment set-up and its processes are its own, closed when the case ends.

- A lost actor or node (the node died, the actor was killed or ran out of memory) costs only
  its case: it is retried at once on a fresh actor, then recorded `infra_error`, never scored.
  The driver asks the cluster which nodes live every few seconds (ray_health.py), so a case
  on a node that died without its calls failing (a node marked dead after its dashboard agent
  was killed) is lost within that bound instead of waited for; a cluster with no live node,
  or one that stops answering, ends the run with a message, the unfinished cases left for
  `--resume`.
- Ctrl-C, SIGTERM, SIGHUP: the run's stop board (a tiny actor) is set; every case runner asks
  it before and while it waits for each model request, so no request is sent after the stop,
  and the case ends as under Ctrl-C: recorded `interrupted` with the steps it played and its
  trace, shipped to the driver like any result. A case that does not ship within the grace
  gets a stand-in `interrupted` result; then every actor is killed. A kill of the driver ends its Ray job, and Ray kills its actors.
  Environment processes are grandchildren of a Ray worker, which Ray does not kill by itself;
  the raylet cleans them up when it runs with `RAY_kill_child_processes_on_worker_exit_with_
  raylet_subreaper=true` (and `RAY_process_group_cleanup_enabled=true`): a Ray started for the
  run gets both, a cluster started with `ray start` must set them (docs/benchmarks/scaling.md), and the driver
  warns about a node whose raylet runs without them.
- `--model-concurrency` and `--model-rpm` are enforced by one actor for the whole cluster
  (llm/_ratelimit.py), which also pauses every request to a model after its 429's Retry-After.

Connecting to the cluster, or starting a Ray for the run, is ray_cluster.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_agent.bench import signals, workers
from pos_agent.bench.case import CaseSpec, RecordError
from pos_agent.bench.config import BenchConfig
from pos_agent.bench.executors.base import (
    POLL_S,
    STOP_GRACE_S,
    CaseQueue,
    Deliver,
    case_dir,
    stand_in,
    write_stand_in,
)
from pos_agent.bench.executors.ray_actors import (
    BoardCheck,
    ClusterLimiter,
    LimiterActor,
    StopBoard,
)
from pos_agent.bench.executors.ray_cluster import (
    CLEANUP_VARIABLES,
    RayUnavailableError,
    connected,
    raylet_cleans_up,
)
from pos_agent.bench.executors.ray_health import NodeWatch
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.recorder import DISK_FULL
from pos_agent.llm import install_limiter, install_stop_check, requests_stopped
from pos_agent.trace import CaseResult, Status

logger = logging.getLogger(__name__)

SKIPPED_FILES = {".lock"}
START_TIMEOUT_S = 600.0  # how long the run waits for a first case runner to start
WAIT_S = 0.1  # the longest the driver waits on Ray before it looks at a stop signal again


@dataclass(frozen=True)
class Shipped:
    """What an actor returns for one case: the worker's reply and the case's records."""

    reply: workers.Reply
    files: dict[str, bytes]
    played_s: float
    node: str


@dataclass
class _Running:
    actor: Any
    spec: CaseSpec
    node: str = ""


class _CaseRunner:
    """One Ray actor: plays one case at a time in a scratch folder on its node."""

    def __init__(
        self, model_options: dict[str, Any], limiter: Any = None, board: Any = None
    ) -> None:
        workers.prepare_models(model_options)
        if limiter is not None:
            install_limiter(ClusterLimiter(limiter))
        if board is not None:
            # No signal reaches this process on Ctrl-C: its model requests ask the board.
            install_stop_check(BoardCheck(board))

    def where(self) -> dict[str, Any]:
        import ray

        return {
            "node": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "cleanup": raylet_cleans_up(),
        }

    def play(self, spec: CaseSpec, run_name: str, time_limit_s: float | None) -> Shipped:
        import ray

        started = time.monotonic()
        if requests_stopped():  # the run was stopped before this case started
            return Shipped(workers.Reply("skipped"), {}, 0.0, "")
        scratch = Path(tempfile.mkdtemp(prefix="pos-ray-cases-"))  # on this node, this case's
        run_dir = scratch / run_name
        try:
            reply = workers.play(workers.Job(spec, str(run_dir), run_name, time_limit_s))
            files = collect_records(run_dir / spec.folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        node = ray.get_runtime_context().get_node_id()
        return Shipped(reply, files, time.monotonic() - started, node)


def collect_records(folder: Path) -> dict[str, bytes]:
    """The files at the top of a case folder (its records), without the lock file; the
    environment's own working folders stay on the node."""
    if not folder.is_dir():
        return {}
    return {
        path.name: path.read_bytes()
        for path in sorted(folder.iterdir())
        if path.is_file() and path.name not in SKIPPED_FILES and not path.name.startswith(".")
    }


def land(files: dict[str, bytes], folder: Path) -> None:
    """Write a case's records into its run-folder case folder, each file atomically and
    result.json last (a reader sees the old case or the whole new one). LockHeld when another
    process writes the folder; OSError when the disk refuses."""
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(folder / ".lock"):
        for stale in ("result.json", "events.jsonl"):
            (folder / stale).unlink(missing_ok=True)
        for name in sorted(files, key=lambda n: n == "result.json"):
            _write_bytes_atomic(folder / name, files[name])


def _write_bytes_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- the driver -------------------------------------------------------------------------------


def execute_on_ray(queue: CaseQueue, config: BenchConfig, deliver: Deliver) -> None:
    """Play the queue's cases on Ray actors (see the module's docstring)."""
    with connected(config.ray_address) as ray:
        pool = ActorPool(ray, config)
        try:
            drive_cases(pool, queue, config, deliver)
        except KeyboardInterrupt:
            _stop(pool, config, deliver)
            raise
        finally:
            pool.close()


class ActorPool:
    """Up to `max_concurrency` case runners spread over the nodes. A runner takes cases once
    it has started (its `where` call answered); a lost one is replaced while the cluster has
    room for it, and the run goes on with the runners that are left."""

    def __init__(self, ray: Any, config: BenchConfig) -> None:
        self.ray = ray
        self.config = config
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        self.size = config.max_concurrency or max(1, int(cpus))
        # Fractional CPUs: more concurrent cases than cores is the point when they wait on a
        # model, and Ray then still spreads them by each node's size.
        self.cpus = min(1.0, cpus / self.size)
        self.runner = ray.remote(_CaseRunner).options(
            num_cpus=self.cpus, max_restarts=0, max_task_retries=0, scheduling_strategy="SPREAD"
        )
        self.limiter = None
        if config.rate_limits is not None and config.rate_limits.active:
            self.limiter = (
                ray.remote(LimiterActor)
                .options(num_cpus=0, max_concurrency=1000)
                .remote(config.rate_limits)
            )
        self.board = ray.remote(StopBoard).options(num_cpus=0).remote()
        self.node_of: dict[Any, str] = {}  # runner -> the node it runs on
        self.actors: list[Any] = []  # every runner not known to be lost
        self.starting: dict[Any, Any] = {}  # where() call -> runner not yet started
        self.idle: list[Any] = []
        self.running: dict[Any, _Running] = {}
        self.warned: set[str] = set()
        self.waiting_since = time.monotonic()
        self.grow()

    def grow(self) -> None:
        """Start runners up to the pool's size, as long as the cluster has CPUs for them."""
        while len(self.actors) < self.size:
            if self.actors and self._room() < self.cpus:
                return
            actor = self.runner.remote(worker_options_of(self.config), self.limiter, self.board)
            self.actors.append(actor)
            self.starting[actor.where.remote()] = actor

    def _room(self) -> float:
        return float(self.ray.available_resources().get("CPU", 0.0)) + 1e-9

    def started(self, refs: list[Any]) -> None:
        """Runners whose where() answered take cases; one whose start failed is dropped."""
        for ref in refs:
            actor = self.starting.pop(ref)
            try:
                where = self.ray.get(ref)
            except self.ray.exceptions.RayError as exc:
                logger.warning("a Ray case runner could not start: %s", _first_line(str(exc)))
                self.lose(actor)
                continue
            self.idle.append(actor)
            self.node_of[actor] = str(where["node"])
            _warn_about_cleanup(self, where)

    def submit(self, spec: CaseSpec) -> None:
        actor = self.idle.pop()
        config = self.config
        ref = actor.play.remote(spec, config.run_dir.name, config.case_timeout_s)
        self.running[ref] = _Running(actor, spec, self.node_of.get(actor, ""))
        if config.timeline is not None:
            config.timeline.send(spec.folder)

    def lose(self, actor: Any) -> None:
        with contextlib.suppress(Exception):
            self.ray.kill(actor, no_restart=True)
        if actor in self.actors:
            self.actors.remove(actor)
        if actor in self.idle:
            self.idle.remove(actor)
        self.node_of.pop(actor, None)

    def close(self) -> None:
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)
        for helper in (self.limiter, self.board):
            if helper is not None:
                with contextlib.suppress(Exception):
                    self.ray.kill(helper, no_restart=True)
        self.actors, self.idle, self.running, self.starting = [], [], {}, {}


def worker_options_of(config: BenchConfig) -> dict[str, Any]:
    return dict(config.model_options)


def drive_cases(pool: ActorPool, queue: CaseQueue, config: BenchConfig, deliver: Deliver) -> None:
    ray = pool.ray
    watch = NodeWatch(ray, config.run_dir.name)
    while queue or pool.running:
        signals.check()
        if not pool.actors:
            raise RayUnavailableError(
                "every Ray node that could play a case was lost; "
                f"continue with --run {config.run_dir.name} --resume once the cluster is back"
            )
        while pool.idle:
            spec = queue.next_due()
            if spec is None:
                break
            pool.submit(spec)
        if pool.running or pool.idle:
            pool.waiting_since = time.monotonic()
        elif time.monotonic() - pool.waiting_since > START_TIMEOUT_S:
            raise RayUnavailableError(
                f"no Ray case runner started within {START_TIMEOUT_S:g}s: the cluster has no "
                f"CPU free for one (each asks for {pool.cpus:g}); "
                f"continue with --run {config.run_dir.name} --resume"
            )
        waiting = [*pool.running, *pool.starting]
        if not waiting:
            _pause(queue.wait_s())
            continue
        # Short waits: a stop signal is handled only when the wait returns, and every moment
        # before the stop board is set is a moment the case runners may send requests.
        ready, _ = ray.wait(waiting, num_returns=1, timeout=min(WAIT_S, queue.wait_s() or WAIT_S))
        pool.started([ref for ref in ready if ref in pool.starting])
        for ref in ready:
            if ref not in pool.running:
                continue
            running = pool.running.pop(ref)
            result, lost = _collect(pool, ref, running, config)
            if lost:
                pool.lose(running.actor)
                pool.grow()
            else:
                pool.idle.append(running.actor)
            if result is not None:
                queue.settle(result, running.spec, deliver, wait=not lost)
        _leave_dead_nodes(pool, watch, queue, config, deliver)


def _leave_dead_nodes(
    pool: ActorPool, watch: NodeWatch, queue: CaseQueue, config: BenchConfig, deliver: Deliver
) -> None:
    """Now and then, ask the cluster which nodes live: a case on a dead node (whose call may
    never answer) is lost at once, retried on another node, else recorded `infra_error`; a
    cluster with no live node, or one that stops answering, ends the run with a message
    (RayUnavailableError), the unfinished cases left for --resume."""
    alive = watch.alive_nodes()
    if alive is None:
        return
    for ref, running in list(pool.running.items()):
        if running.node and running.node not in alive:
            del pool.running[ref]
            pool.lose(running.actor)
            error = f"the Ray node {running.node[:12]} playing this case died"
            result = _record_stand_in(running.spec, config, "infra_error", error)
            queue.settle(result, running.spec, deliver, wait=False)
    for actor in list(pool.idle):
        if pool.node_of.get(actor, "") not in alive:
            pool.lose(actor)
    watch.require_a_node(alive)
    pool.grow()


def _pause(seconds: float) -> None:
    threading.Event().wait(min(seconds, POLL_S))


def _collect(
    pool: ActorPool, ref: Any, running: _Running, config: BenchConfig
) -> tuple[CaseResult | None, bool]:
    """The result of a finished actor call (written into the run folder), and whether its
    actor was lost."""
    ray = pool.ray
    spec = running.spec
    try:
        shipped: Shipped = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:  # our own code failed around the case
        return _record_stand_in(spec, config, "harness_error", f"{exc}"), False
    except ray.exceptions.TaskCancelledError:
        return _record_stand_in(spec, config, "interrupted", signals.describe(_signum())), False
    except ray.exceptions.RayError as exc:  # the actor, its worker or its node is gone
        message = f"the Ray worker playing this case was lost ({type(exc).__name__}): {exc}"
        return _record_stand_in(spec, config, "infra_error", _first_line(message)), True
    if config.timeline is not None:
        config.timeline.receive(spec.folder, shipped.played_s)
    return _land(shipped, spec, config), False


def _land(shipped: Shipped, spec: CaseSpec, config: BenchConfig) -> CaseResult | None:
    reply = shipped.reply
    name = config.run_dir.name
    if reply.kind == "skipped":
        return None
    if reply.kind == "record_error":  # the node's scratch disk, not the run folder
        return _record_stand_in(
            spec,
            config,
            "infra_error",
            f"node {shipped.node[:12]} could not write: {reply.message}",
        )
    if reply.kind != "result" or reply.result is None:
        status: Status = "infra_error" if reply.kind == "busy" else "harness_error"
        return _record_stand_in(spec, config, status, f"{reply.message} while playing this case")
    try:
        land(shipped.files, case_dir(config.run_dir, spec))
    except LockHeld:
        return stand_in(
            spec,
            name,
            "infra_error",
            f"case folder {spec.folder} is being written by another process",
        )
    except OSError as exc:
        raise RecordError(exc.errno, f"cannot write the records of {spec.folder}: {exc}") from None
    return reply.result


def _record_stand_in(spec: CaseSpec, config: BenchConfig, status: Status, error: str) -> CaseResult:
    """A result written by the driver for a case whose actor gave none."""
    result = stand_in(spec, config.run_dir.name, status, error)
    folder = case_dir(config.run_dir, spec)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in DISK_FULL:
            raise RecordError(
                exc.errno, f"cannot write the result of {spec.folder}: {exc}"
            ) from None
        return result
    write_stand_in(folder, spec, result)
    return result


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _signum() -> int:
    return signals.requested() or signal.SIGINT


def _warn_about_cleanup(pool: ActorPool, where: dict[str, Any]) -> None:
    """Once per node: say so when its raylet would leave a killed case's processes behind."""
    node = str(where["node"])
    if not where["cleanup"] and node not in pool.warned:
        pool.warned.add(node)
        logger.warning(
            "Ray node %s runs without %s: a case killed there may leave its environment's "
            "processes behind; start its raylet with %s",
            node[:12],
            " or ".join(CLEANUP_VARIABLES),
            " ".join(f"{k}={v}" for k, v in CLEANUP_VARIABLES.items()),
        )


def _stop(pool: ActorPool, config: BenchConfig, deliver: Deliver) -> None:
    """After a stop signal: start nothing new, stop every model request of the run (the
    running cases end `interrupted` and ship their records), then kill every actor."""
    ray = pool.ray
    # Every case runner's next model request, or the one it waits for, stops the case: it
    # records itself `interrupted` with its steps and trace and ships them (a cancelled Ray
    # call would ship nothing).
    with contextlib.suppress(Exception):
        pool.board.stop.remote()
    deadline = time.monotonic() + STOP_GRACE_S
    try:
        with signals.hurry():
            while pool.running and time.monotonic() < deadline:
                ready, _ = ray.wait(list(pool.running), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    running = pool.running.pop(ref)
                    result, _ = _collect(pool, ref, running, config)
                    if result is not None:
                        deliver(result)
    except KeyboardInterrupt:
        pass
    for running in pool.running.values():  # still running after the grace: stand-ins
        deliver(_record_stand_in(running.spec, config, "interrupted", signals.describe(_signum())))
    pool.running = {}
