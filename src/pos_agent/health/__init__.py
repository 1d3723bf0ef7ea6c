"""Belief health: the pure trapping math of the paper (Eq. 4-6) over plain sets."""

from pos_agent.health.assess import assess_window
from pos_agent.health.distance import WorldKeys, jaccard_distance, world_distance
from pos_agent.health.progress import diagnostic_progress
from pos_agent.health.window import (
    GapKind,
    HealthConfig,
    HealthReport,
    TaskKind,
    TrapPattern,
    WindowStep,
)

__all__ = [
    "GapKind",
    "HealthConfig",
    "HealthReport",
    "TaskKind",
    "TrapPattern",
    "WindowStep",
    "WorldKeys",
    "assess_window",
    "diagnostic_progress",
    "jaccard_distance",
    "world_distance",
]
