"""The PoS agent (belief state, sentinel validation, trapping recovery) and its ablations: the
loop (`agent.py`: `PosAgent.step`, one `EpisodeState` per episode), its settings (`config.py`),
its prompts and its answer schemas."""

from pos_agent.agents.pos.agent import EpisodeState, PosAgent, StepStart
from pos_agent.agents.pos.config import VARIANTS, PosConfig, RoleModels, Variant

__all__ = [
    "VARIANTS",
    "EpisodeState",
    "PosAgent",
    "PosConfig",
    "RoleModels",
    "StepStart",
    "Variant",
]
