"""Studies: suites x methods x backbones as one resumable run (`pos paper`), planned and priced
before anything is sent.

    Study / paper_study / load_study   the grid (spec.py)
    study_cases(study) -> [CaseSpec]   every case, tagged by backbone, in a balanced order
    estimate_cells(specs, suite_of)    calls, tokens per component and money per cell (estimate.py)
    SpendGuard                         `--max-cost`: stop before the spend passes it (spend.py)
    plan_text(...)                     the dry run's plan, as printed (plan.py)

The cases run through the bench runner (`run_bench`): the same workers, Ray executor, shards,
resume and run-folder rules as `pos bench`.
"""

from pos_agent.bench.study.estimate import (
    COMPONENTS,
    CellEstimate,
    CellKey,
    Usage,
    component_of,
    estimate_cells,
    measured,
    totals,
)
from pos_agent.bench.study.spec import (
    PAPER_SUITES,
    Backbone,
    Study,
    StudySuite,
    load_study,
    paper_study,
    study_cases,
    study_suites,
)

__all__ = [
    "COMPONENTS",
    "PAPER_SUITES",
    "Backbone",
    "CellEstimate",
    "CellKey",
    "Study",
    "StudySuite",
    "Usage",
    "component_of",
    "estimate_cells",
    "load_study",
    "measured",
    "paper_study",
    "study_cases",
    "study_suites",
    "totals",
]
