"""Trapping recovery (Eq. 7 of the paper): the constraint the policy gets while the belief is
trapped, composed from the health report, the recent no-progress transitions and the belief.

    from pos_agent.recovery import compose_recovery, should_release
"""

from pos_agent.recovery.constraint import (
    RecoveryConstraint,
    RecoveryMode,
    allowed_actions,
    compose_recovery,
    generic_recovery,
    should_release,
)

__all__ = [
    "RecoveryConstraint",
    "RecoveryMode",
    "allowed_actions",
    "compose_recovery",
    "generic_recovery",
    "should_release",
]
