"""Evaluation runs: cases, suites, the resumable runner, and the paper's reports.

```python
from pos_agent.bench import BenchConfig, load_suite, run_bench, write_report

specs = load_suite("alfworld-mini").cases(["pos", "raw"], "local")
results = run_bench(specs, BenchConfig(run_dir=Path("runs/mini"), workers=2))
write_report([Path("runs/mini")], Path("runs/mini/report"))
```

- `CaseSpec` / `run_case`: one case (environment task, method, models) and its records.
- `Suite` / `load_suite`: a YAML list of cases with budgets and method settings.
- `run_bench` / `BenchConfig`: many cases in worker processes; one experiment per run folder
  (a lock, a recorded identity), resumable, with set-up checks before the first case.
- `write_report` and the `report` package: tables and figures from run folders.
- Statuses: `pos_agent.trace.STATUSES`, of which only `SCORED_STATUSES` count as measurements.

The trace viewer is `pos_agent.bench.view`; the report's parts are in `pos_agent.bench.report`.
"""

from pos_agent.bench.case import (
    AGENTS,
    CaseBusyError,
    CaseInterrupted,
    CaseSpec,
    RecordError,
    default_loader,
    run_case,
)
from pos_agent.bench.preflight import SetupError, check_models, preflight, validate_cases
from pos_agent.bench.report import write_report
from pos_agent.bench.run_folder import RunFolder, RunFolderError, RunPlan, check_run_name
from pos_agent.bench.runner import BenchConfig, Progress, run_bench
from pos_agent.bench.suite import Suite, builtin_suites, load_suite
from pos_agent.bench.time_limit import CaseTimeout
from pos_agent.trace import SCORED_STATUSES, STATUSES, CaseResult, is_scored

__all__ = [
    "AGENTS",
    "SCORED_STATUSES",
    "STATUSES",
    "BenchConfig",
    "CaseBusyError",
    "CaseInterrupted",
    "CaseResult",
    "CaseSpec",
    "CaseTimeout",
    "Progress",
    "RecordError",
    "RunFolder",
    "RunFolderError",
    "RunPlan",
    "SetupError",
    "Suite",
    "builtin_suites",
    "check_models",
    "check_run_name",
    "default_loader",
    "is_scored",
    "load_suite",
    "preflight",
    "run_bench",
    "run_case",
    "validate_cases",
    "write_report",
]
