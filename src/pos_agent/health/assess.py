"""The health check's entry point: one table from `HealthConfig.diagnosis` to its reader.

The paper's reading (`window.assess_paper`) and the improved one (`improved.assess_improved`)
both build on `window`'s types; this module sits above both, so neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pos_agent.health.improved import assess_improved
from pos_agent.health.window import Diagnosis, HealthConfig, HealthReport, WindowStep, assess_paper

DIAGNOSES: Mapping[Diagnosis, Callable[[Sequence[WindowStep], HealthConfig], HealthReport]] = {
    "paper": assess_paper,
    "improved": assess_improved,
}

_DEFAULT_CONFIG = HealthConfig()


def assess_window(
    steps: Sequence[WindowStep], config: HealthConfig = _DEFAULT_CONFIG
) -> HealthReport:
    """Health (Eq. 5) of the last `config.window` steps and, when trapped, the diagnosis (Eq. 6),
    read by the diagnosis `config.diagnosis` names ("paper" as published, or "improved").

    Fewer steps than the window are assessed as they are but are never `ready` nor `trapped`.
    """
    return DIAGNOSES[config.diagnosis](steps, config)
