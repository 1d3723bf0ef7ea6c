"""The PoS agent (belief state, sentinel validation, trapping recovery) and its ablations."""

from pos_agent.agents.pos.agent import VARIANTS, PosAgent, PosConfig, RoleModels, Turn, Variant

__all__ = ["VARIANTS", "PosAgent", "PosConfig", "RoleModels", "Turn", "Variant"]
