"""What every role call shares, below any agent: the model-call wrapper (`RoleCaller`: calls that
never raise, action validation and fallback), role limits and profiles (`limits.py`), the
policy's answer schemas and the schema helpers (`schemas.py`), shared prompt parts
(`prompts.py`). The transition record the prompts render is the core's
(`pos_agent.transition.Transition`)."""

from pos_agent.roles.caller import (
    ActionSource,
    Decision,
    RoleCaller,
    fallback_action,
    validate_action,
)
from pos_agent.roles.limits import (
    COMPACT,
    PROFILE_NAMES,
    STANDARD,
    TEMPERATURE,
    AgentLimits,
    AuditClips,
    Profile,
    ProfileName,
    RoleLimits,
    SchemaBounds,
    paper_generation_tokens,
    role_limits,
)

__all__ = [
    "COMPACT",
    "PROFILE_NAMES",
    "STANDARD",
    "TEMPERATURE",
    "ActionSource",
    "AgentLimits",
    "AuditClips",
    "Decision",
    "Profile",
    "ProfileName",
    "RoleCaller",
    "RoleLimits",
    "SchemaBounds",
    "fallback_action",
    "paper_generation_tokens",
    "role_limits",
    "validate_action",
]
