"""Settings of the PoS loop and the model behind each role."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pos_agent.health import HealthConfig
from pos_agent.llm import Model
from pos_agent.recovery.constraint import RecoveryMode
from pos_agent.roles.limits import AgentLimits, AuditClips

Variant = Literal["pos", "no_consistency", "no_trapping", "generic_recovery"]
VARIANTS: tuple[Variant, ...] = ("pos", "no_consistency", "no_trapping", "generic_recovery")


@dataclass(frozen=True)
class VariantParts:
    """Which parts of the loop a variant uses (the method table, `agents.methods.METHODS`,
    lists them for each PoS method)."""

    uses_consistency: bool = False
    """The sentinel's LLM audit, the revision and the global audit (no_consistency: off)."""
    uses_trapping: bool = False
    """The health check and recovery (no_trapping: off)."""
    generic_recovery: bool = False
    """One generic "you seem stuck" line instead of the factorized constraint."""


VARIANT_PARTS: Mapping[Variant, VariantParts] = {
    "pos": VariantParts(uses_consistency=True, uses_trapping=True),
    "no_consistency": VariantParts(uses_trapping=True),
    "no_trapping": VariantParts(uses_consistency=True),
    "generic_recovery": VariantParts(
        uses_consistency=True, uses_trapping=True, generic_recovery=True
    ),
}


@dataclass
class PosConfig:
    """Settings of the PoS loop; defaults follow the paper's Table 8."""

    variant: Variant = "pos"
    """Which method: the full loop or one of the ablations."""
    recovery: RecoveryMode = "soft"
    """soft: constraint in the prompt (paper); hard: forbidden actions removed; both."""
    health: HealthConfig = field(default_factory=HealthConfig)
    """Window, lags and thresholds of the health check."""
    global_audit_every: int = 8
    """Steps between global audits (paper Table 8: 8; 32 on LOCA-Bench only); 0 disables them."""
    max_recent: int = 4
    """No-progress transitions shown with a recovery constraint (paper Table 8)."""
    limits: AgentLimits | None = None
    """Generation budget and schema bounds per role. None: each role's model gets its own
    profile (`settings.profile_for_model`) and the paper's budget for the task kind."""
    clips: AuditClips | None = None
    """How much of past observations the sentinel reads; None: the sentinel role's profile
    (whole for real models). The belief model and the policy see every new observation whole."""
    policy_observation_chars: int | None = None
    """Clip of the current observation in the policy prompt; None (the default) shows it whole."""
    temperature: float = 0.0
    """Sampling temperature of every role (paper App. D.1: 0)."""


@dataclass(frozen=True)
class RoleModels:
    """The model behind each role; one model may serve all three."""

    policy: Model
    belief: Model
    sentinel: Model

    @classmethod
    def single(cls, model: Model) -> RoleModels:
        return cls(model, model, model)

    def specs(self) -> dict[str, str]:
        return {
            "policy": self.policy.spec,
            "belief": self.belief.spec,
            "sentinel": self.sentinel.spec,
        }
