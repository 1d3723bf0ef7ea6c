"""The four tasks of a workspace (one module each), each with its state, its tools and the
agent's plan for it.

- `FailingTests`: bugs behind failing tests; `run_tests` prints pytest's report. Fixed by reading
  the failing line and editing it, some bugs in two edits (the error changes after the first).
- `Service`: an API behind nginx answers 502 because its database URL has the wrong port;
  `http_request` and `restart_service`; after the fix the API boots for a few steps (503).
- `Pipeline`: a load job fails because its input partition is missing; `submit_job`,
  `job_status`, `cancel_job`. The extract job is run first, then the load, each polled.
- `Migration`: `legacy_client.fetch(` is replaced by `http_client.get(` in every file; found
  with the paged `search` tool, then edited file by file.

Each flow yields the calls of a competent agent, labelled where a stretch is productive
repetition (a hard negative: `retest`, `paging`, `iterate`, `poll_done`), and `SafePoint`s
where `trap()` may insert a trap segment. A trap is built only from calls that cannot bring
the task closer to done from the state at that point.
"""

from __future__ import annotations

from pos_trapbench.toolagent.failing_tests import FailingTests
from pos_trapbench.toolagent.migration import Migration
from pos_trapbench.toolagent.pipeline import Pipeline
from pos_trapbench.toolagent.service import Service
from pos_trapbench.toolagent.workspace import Task

__all__ = ["TASKS", "FailingTests", "Migration", "Pipeline", "Service"]

TASKS: dict[str, type[Task]] = {
    "tests": FailingTests,
    "service": Service,
    "pipeline": Pipeline,
    "migration": Migration,
}
