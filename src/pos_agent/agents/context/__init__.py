"""The paper's four context-management baselines, as harness-independent parts.

- ACON (`AconMemory`): cumulative history compression past a token threshold.
- PACE (`PaceMemory`): each past step at the granularity its relevance earns, with `glimpse`.
- HiAgent (`SubgoalMemory`): working memory folded by subgoal, with `retrieve`.
- LongHorizon-Harness (`LongHorizonHarness`): Manager / Executor / Auditor rounds.

Each method calls the backbone for its own work through a `ModelCaller`, which keeps every call
(`InternalCall`: ledger role, purpose, answer or failure) for the harness to account and trace.
Parameters and their per-benchmark defaults are in `settings`.
"""

from pos_agent.agents.context.acon import AconContext, AconMemory, Compression
from pos_agent.agents.context.calls import InternalCall, ModelCaller
from pos_agent.agents.context.embeddings import load_embedder, make_scorer
from pos_agent.agents.context.hiagent import HiAgentContext, Retrieval, Subgoal, SubgoalMemory
from pos_agent.agents.context.lookups import (
    Lookup,
    decide_with_lookups,
    hiagent_resolver,
    pace_resolver,
)
from pos_agent.agents.context.pace import Chunk, ChunkView, Glimpse, PaceContext, PaceMemory
from pos_agent.agents.context.relevance import (
    Embedder,
    Embeddings,
    EmbeddingScorer,
    LexicalScorer,
    RelevanceScorer,
)
from pos_agent.agents.context.settings import (
    AconSettings,
    BaselineSettings,
    HiAgentSettings,
    LongHorizonSettings,
    PaceSettings,
    baseline_settings,
    benchmark_family,
)
from pos_agent.llm import INTERNAL_ROLES

__all__ = [
    "INTERNAL_ROLES",
    "AconContext",
    "AconMemory",
    "AconSettings",
    "BaselineSettings",
    "Chunk",
    "ChunkView",
    "Compression",
    "Embedder",
    "EmbeddingScorer",
    "Embeddings",
    "Glimpse",
    "HiAgentContext",
    "HiAgentSettings",
    "InternalCall",
    "LexicalScorer",
    "LongHorizonSettings",
    "Lookup",
    "ModelCaller",
    "PaceContext",
    "PaceMemory",
    "PaceSettings",
    "RelevanceScorer",
    "Retrieval",
    "Subgoal",
    "SubgoalMemory",
    "baseline_settings",
    "benchmark_family",
    "decide_with_lookups",
    "hiagent_resolver",
    "load_embedder",
    "make_scorer",
    "pace_resolver",
]
