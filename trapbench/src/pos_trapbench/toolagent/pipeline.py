"""The job queue: a load job fails because its input partition is missing.

`submit_job`, `job_status`, `cancel_job`. The extract job is run first, then the load, each
polled until it finishes; with a polling trap armed the extract job never moves until it is
cancelled and resubmitted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pos_trapbench.toolagent.traps import paired_or_cycled
from pos_trapbench.toolagent.workspace import (
    Call,
    PollingTask,
    Result,
    SafePoint,
    Workspace,
    fact,
)


@dataclass
class Job:
    id: str
    pipeline: str
    params: dict[str, Any]
    ticks: list[int]
    """Percent reached after each tick."""
    state: str = "QUEUED"
    percent: int = 0
    elapsed: int = 0
    hung: bool = False
    fails: bool = False
    rows: int = 0
    error: str = ""
    seen_state: str = ""

    def ticks_left(self) -> int:
        return len(self.ticks)


class Pipeline(PollingTask):
    name = "pipeline"
    SUMMARY = "reports/orders_summary.json"

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        rng = ws.rng
        day = ws.noise.now.date()
        self.date = day.isoformat()
        self.partitions = [(day.toordinal() - back) for back in range(4, 0, -1)]
        self.extracted = False
        self.loaded = False
        self.jobs: dict[str, Job] = {}
        self.ids = [ws.noise.hex(8) for _ in range(24)]
        self.failure_seen = self.missing_known = self.summary_read = False
        self.extract_ticks = rng.randint(4, 7)
        self.load_ticks = rng.randint(4, 7)
        self.rows = rng.randint(40_000, 400_000)
        ws.write(
            "etl/pipelines.yaml",
            [
                "extract_orders:",
                "  source: postgres://shop/orders",
                "  sink: s3://raw/orders/dt={date}/",
                "load_orders:",
                "  source: s3://raw/orders/dt={date}/",
                "  sink: warehouse.orders",
                "  batch_size: 5000",
            ],
        )
        ws.write(
            "docs/pipelines/load_orders.md",
            [
                "# load_orders",
                "",
                "Loads one day of raw orders into warehouse.orders.",
                "Run extract_orders first.",
            ],
        )
        self.first: Job | None = None
        self.goal_text = f"load the orders of {self.date} into warehouse.orders"

    def _schedule(self, ticks: int) -> list[int]:
        rng = self.ws.rng
        cuts = sorted(rng.sample(range(3, 98), ticks - 1))
        return [*cuts, 100]

    def _current(self, pipeline: str) -> Job | None:
        jobs = [j for j in self.jobs.values() if j.pipeline == pipeline and j.state != "CANCELLED"]
        return jobs[-1] if jobs else None

    def _part(self, pipeline: str, ticks: int, done: bool) -> int:
        job = self._current(pipeline)
        if done:
            return 0 if job is not None and job.seen_state == "SUCCEEDED" else 1
        if job is None or job.state in ("FAILED",):
            return 1 + ticks + 1
        if job.hung:
            return 2 + ticks + 1
        return job.ticks_left() + 1

    def facts(self) -> set[str]:
        facts = set()
        for job in self.jobs.values():
            facts.add(fact("job", job.id, job.pipeline, job.state.lower()))
            if job.state == "RUNNING":
                facts.add(fact("progress", job.id, job.percent))
        if self.extracted:
            facts.add(fact("partition", "raw/orders", self.date))
        else:
            facts.add(fact("missing", "raw/orders", self.date))
        if self.loaded:
            facts.add(fact("loaded", "warehouse.orders", self.date))
            facts.add(fact("exists", self.SUMMARY))
        return facts

    def goals(self) -> set[str]:
        return {fact("loaded", "warehouse.orders", self.date)}

    def questions(self) -> set[str]:
        first = self.first
        if first is not None and first.seen_state == "FAILED" and not self.missing_known:
            return {fact("cause", first.id)}
        return set()

    def remaining(self) -> int:
        steps = (not self.failure_seen) + (not self.missing_known) + (not self.summary_read)
        steps += self._part("extract_orders", self.extract_ticks, self.extracted)
        steps += (
            self._part("load_orders", self.load_ticks, self.loaded)
            if self.extracted
            else 1 + self.load_ticks + 1
        )
        return steps

    def entities(self) -> set[str]:
        return {"warehouse.orders", "raw/orders", *self.jobs}

    def tick(self) -> None:
        for job in self.jobs.values():
            if job.state in ("SUCCEEDED", "FAILED", "CANCELLED") or job.hung:
                job.elapsed += self.ws.rng.randint(3, 40) if job.hung else 0
                continue
            job.elapsed += self.ws.rng.randint(5, 45)
            if job.fails:
                job.state, job.error = "FAILED", self._missing_error()
                continue
            job.state = "RUNNING"
            job.percent = job.ticks.pop(0)
            job.rows = self.rows * job.percent // 100
            if not job.ticks:
                job.state = "SUCCEEDED"
                if job.pipeline == "extract_orders":
                    self.extracted = True
                else:
                    self.loaded = True

    def _missing_error(self) -> str:
        return f"FileNotFoundError: no objects under s3://raw/orders/dt={self.date}/"

    def listing(self, prefix: str) -> dict[str, int]:
        if prefix != "raw/orders/":
            return {}
        self.missing_known = self.missing_known or (
            self.first is not None and self.first.seen_state == "FAILED"
        )
        from datetime import date

        days = [date.fromordinal(o).isoformat() for o in self.partitions]
        if self.extracted:
            days.append(self.date)
        return {f"dt={d}/": 1_000 * (i + 7) for i, d in enumerate(days)}

    def read(self, path: str, start: int | None, end: int | None) -> Result | None:
        noise = self.ws.noise
        if path == self.SUMMARY:
            if not self.loaded:
                return Result(f"error: {path}: No such file or directory", error=True)
            self.summary_read = True
            return Result(
                json.dumps(
                    {
                        "date": self.date,
                        "rows": self.rows,
                        "rejected": 0,
                        "generated_at": noise.iso(-noise.millis(1000, 90_000)),
                        "run_id": noise.uuid(),
                    },
                    indent=2,
                )
            )
        if path.startswith("logs/jobs/") and path.endswith(".log"):
            job = self.jobs.get(path[len("logs/jobs/") : -len(".log")])
            if job is None:
                return Result(f"error: {path}: No such file or directory", error=True)
            lines = [
                f"{noise.iso(-30_000)} INFO  job {job.id} ({job.pipeline}) accepted by etl-w{noise.millis(1, 5)}"
            ]
            if job.state == "FAILED":
                lines += [
                    f"{noise.iso(-20_000)} INFO  reading s3://raw/orders/dt={self.date}/ (request {noise.hex(16)})",
                    f"{noise.iso(-19_000)} ERROR {job.error}",
                    "Traceback (most recent call last):",
                    f'  File "/opt/etl/readers.py", line {noise.millis(80, 300)}, in open_partition',
                ]
            else:
                lines.append(f"{noise.iso()} INFO  {job.percent}% done, {job.rows:,} rows")
            return Result("\n".join(lines))
        return None

    def handle(self, call: Call) -> Result | None:
        if call.tool == "submit_job":
            return self._submit(call.args)
        if call.tool == "job_status":
            return self._status(call.args)
        if call.tool == "cancel_job":
            job = self.jobs.get(str(call.args["job_id"]))
            if job is None:
                return Result(f"error: no job {call.args['job_id']}", error=True)
            was = f"{job.state} {job.percent}%"
            job.state, job.hung = "CANCELLED", False
            return Result(f"job {job.id} cancelled (was {was}) at {self.ws.noise.iso()}")
        return None

    def _submit(self, args: dict[str, Any]) -> Result:
        noise = self.ws.noise
        pipeline = str(args["pipeline"])
        if pipeline not in ("extract_orders", "load_orders"):
            return Result(f"error: unknown pipeline {pipeline!r}", error=True)
        ticks = self.extract_ticks if pipeline == "extract_orders" else self.load_ticks
        job = Job(self.ids.pop(0), pipeline, dict(args.get("params", {})), self._schedule(ticks))
        job.fails = pipeline == "load_orders" and not self.extracted
        if pipeline == "extract_orders" and self.hang_armed:
            job.hung, self.hang_armed = True, False
            if self.ws.rng.random() < 0.5:
                job.state, job.percent = "RUNNING", self.ws.rng.randrange(5, 95)
        self.jobs[job.id] = job
        if self.first is None:
            self.first = job
        self.ws.see(job.id)
        position = noise.millis(1, 6)
        return Result(
            f"Submitted job {job.id} ({pipeline}) to queue etl-default at {noise.iso()}; position {position}"
        )

    def _status(self, args: dict[str, Any]) -> Result:
        noise = self.ws.noise
        job = self.jobs.get(str(args["job_id"]))
        if job is None:
            return Result(f"error: no job {args['job_id']}", error=True)
        job.seen_state = job.state
        if job is self.first and job.state == "FAILED":
            self.failure_seen = True
        elapsed = f"{job.elapsed // 3600}:{job.elapsed // 60 % 60:02d}:{job.elapsed % 60:02d}"
        head = f"job {job.id} · {job.pipeline} · {job.state}"
        if job.state == "QUEUED":
            body = f"position 1 · waiting for a free worker (0/{noise.millis(2, 6)} idle) · queued {elapsed}"
        elif job.state == "RUNNING":
            eta = noise.millis(20, 400) if not job.hung else noise.millis(20, 90)
            body = (
                f"progress {noise.bar(job.percent)} {job.percent}%  rows {job.rows:,}/{self.rows:,}\n"
                f"started {noise.iso(-job.elapsed * 1000)} · elapsed {elapsed} · eta 0:0{eta // 60}:{eta % 60:02d}\n"
                f"worker etl-w{noise.millis(1, 5)} (pid {noise.pid()}) · last heartbeat {noise.millis(1, 30) / 10}s ago"
            )
        elif job.state == "FAILED":
            body = f"failed after {elapsed} · {job.error} (request id {noise.uuid()})"
        elif job.state == "SUCCEEDED":
            sink = (
                "warehouse.orders"
                if job.pipeline == "load_orders"
                else f"s3://raw/orders/dt={self.date}/"
            )
            body = f"{self.rows:,} rows written to {sink} in {elapsed}"
            self.ws.see("warehouse.orders" if job.pipeline == "load_orders" else "raw/orders")
        else:
            body = f"cancelled after {elapsed}"
        return Result(f"{head}\n{body}\nchecked at {noise.iso()}")

    def flow(self) -> Iterator[Call | SafePoint]:
        load = {"pipeline": "load_orders", "params": {"date": self.date}}
        first = self.ids[0]
        yield Call("submit_job", load)
        yield Call("job_status", {"job_id": first})
        yield SafePoint("S1")
        yield Call("list_dir", {"path": "raw/orders"})
        hung = self.hang_armed
        job = self.ids[0]
        yield Call("submit_job", {"pipeline": "extract_orders", "params": {"date": self.date}})
        if hung:
            for _ in range(self.hang_length):
                yield Call("job_status", {"job_id": job}, "polling")
            yield Call("cancel_job", {"job_id": job})
            job = self.ids[0]
            yield Call(
                "submit_job",
                {
                    "pipeline": "extract_orders",
                    "params": {"date": self.date},
                    "queue": "etl-highmem",
                },
            )
        while not self.extracted or self.jobs[job].seen_state != "SUCCEEDED":
            yield Call("job_status", {"job_id": job}, "poll_done")
        job = self.ids[0]
        yield Call("submit_job", load)
        while not self.loaded or self.jobs[job].seen_state != "SUCCEEDED":
            yield Call("job_status", {"job_id": job}, "poll_done")
        yield Call("read_file", {"path": self.SUMMARY})
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call] | None:
        rng = self.ws.rng
        target = self.first.id if point == "S1" and self.first else self._last_load()
        status = Call("job_status", {"job_id": target})
        log = Call("read_file", {"path": f"logs/jobs/{target}.log"})
        if point == "S2":
            log = Call("read_file", {"path": self.SUMMARY})
        if kind == "repeat":
            draw = rng.random()
            if draw < 0.3:  # a job id mistyped once and asked for again and again
                status = Call(
                    "job_status", {"job_id": target[:-1] + ("0" if target[-1] != "0" else "1")}
                )
            elif draw < 0.55:  # the same status call with a retry counter the agent counts up
                count = rng.randint(6, 12)
                return [
                    Call("job_status", {"job_id": target, "attempt": i + 2}) for i in range(count)
                ]
            return [status] * rng.randint(6, 12)
        if kind == "semantic" and point == "S1":
            variants = [
                {"date": self.date, "batch_size": 1000},
                {"date": self.date, "batch_size": 500, "retries": 3},
                {"date": self.date, "workers": 2},
                {"date": self.date, "skip_validation": True},
                {"date": self.date, "source": f"s3://raw/orders/dt={self.date}"},
            ]
            rng.shuffle(variants)
            calls = []
            for attempt in range(rng.randint(3, 4)):
                job = self.ids[attempt]
                calls.append(
                    Call("submit_job", {"pipeline": "load_orders", "params": variants[attempt]})
                )
                calls.append(Call("job_status", {"job_id": job}))
                if attempt % 2 == 1:
                    calls.append(Call("read_file", {"path": f"logs/jobs/{job}.log"}))
            return calls
        pool = [
            status,
            log,
            Call("read_file", {"path": "docs/pipelines/load_orders.md"}),
            Call("read_file", {"path": "etl/pipelines.yaml"}),
            Call("search", {"query": "load_orders"}),
        ]
        return paired_or_cycled(kind, rng, (status, log), pool)

    def _last_load(self) -> str:
        loads = [j.id for j in self.jobs.values() if j.pipeline == "load_orders"]
        return loads[-1]
