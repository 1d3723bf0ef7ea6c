"""The agents: PoS (belief state, sentinel, trapping recovery), its ablations and the baselines,
all on one harness (role calls that never raise, action validation, budgets per model).

    from pos_agent.agents import PosAgent, PosConfig, RoleModels, RawAgent
    from pos_agent.llm import load_model

    model = load_model("local")
    episode = PosAgent(RoleModels.single(model), PosConfig(recovery="soft")).run(env)
    episode.success, episode.steps, episode.trapped_steps

`Episode` is what an agent returns; `Agent` is the protocol the harness runs (`name`, `run(env)`).
Budgets and answer-schema bounds come from `AgentLimits` (per role: a `Profile`, the generation
tokens and the `SchemaBounds`): the paper's budgets for real models, the `compact` profile for the
embedded 135M model.
"""

from pos_agent.agents.base import Agent, Episode, StepCallback, StepInfo
from pos_agent.agents.pos import PosAgent
from pos_agent.agents.pos.config import VARIANTS, PosConfig, RoleModels, Variant
from pos_agent.agents.raw import RawAgent
from pos_agent.roles.limits import (
    COMPACT,
    PROFILE_NAMES,
    STANDARD,
    AgentLimits,
    Profile,
    ProfileName,
    SchemaBounds,
    paper_generation_tokens,
)

__all__ = [
    "COMPACT",
    "PROFILE_NAMES",
    "STANDARD",
    "VARIANTS",
    "Agent",
    "AgentLimits",
    "Episode",
    "PosAgent",
    "PosConfig",
    "Profile",
    "ProfileName",
    "RawAgent",
    "RoleModels",
    "SchemaBounds",
    "StepCallback",
    "StepInfo",
    "Variant",
    "paper_generation_tokens",
]
