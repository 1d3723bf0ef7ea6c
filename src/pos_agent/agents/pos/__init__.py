"""The PoS agent (belief state, sentinel validation, trapping recovery) and its ablations: the
loop (`agent.py`: `PosAgent.step`), what one episode knows (`state.py`: `EpisodeState`), the
belief's update and validation (`belief_steps.py`), the active gap, health and recovery
(`trapping.py`), its settings (`config.py`), its prompts and its answer schemas."""

from pos_agent.agents.pos.agent import PosAgent
from pos_agent.agents.pos.config import VARIANTS, PosConfig, RoleModels, Variant
from pos_agent.agents.pos.state import EpisodeState, StepStart

__all__ = [
    "VARIANTS",
    "EpisodeState",
    "PosAgent",
    "PosConfig",
    "RoleModels",
    "StepStart",
    "Variant",
]
