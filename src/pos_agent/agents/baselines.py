"""The paper's four context-management baselines as agents the harness can run.

    acon        ACON: cumulative history compression (ReAct harness)
    pace        PACE: per-step granularity by relevance, glimpse(i) (ReAct harness)
    hiagent     HiAgent: subgoal-folded working memory, retrieve(i) (ReAct harness)
    lh_harness  LongHorizon-Harness: Manager / Executor / Auditor rounds

Every call of a baseline uses the evaluated backbone at temperature 0 (paper App. D.1); the
policy-like decisions get the policy's budget and schema bounds, the methods' own calls their
parameters (`agents/context/settings.py`, overridden per suite).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

from pos_agent.agents.backbone import BackboneOptions
from pos_agent.agents.base import Agent, StepCallback
from pos_agent.agents.context.embeddings import LEXICAL_SPEC
from pos_agent.agents.context.settings import BaselineSettings, baseline_settings, with_options
from pos_agent.agents.context_agent import EMBEDDING_METHODS, REACT_METHODS, ContextAgent
from pos_agent.agents.long_horizon import LongHorizonAgent
from pos_agent.llm import Model, ModelOptions, TokenLedger
from pos_agent.roles.limits import RoleLimits
from pos_agent.trace import TraceWriter

LONG_HORIZON_METHODS: tuple[str, ...] = ("lh_harness",)
BASELINES: tuple[str, ...] = (*REACT_METHODS, *LONG_HORIZON_METHODS)


def resolve_settings(
    env_name: str, method: str, options: Mapping[str, Any], *, generation_tokens: int
) -> BaselineSettings:
    """The benchmark's defaults with the suite's parameters for `method` applied. The
    LongHorizon roles write with the case's generation budget unless the suite fixes theirs."""
    settings = baseline_settings(env_name)
    budget = {"generation_tokens": generation_tokens, "repair_tokens": generation_tokens}
    settings = replace(settings, long_horizon=replace(settings.long_horizon, **budget))
    return with_options(settings, method, options)


def build_baseline(
    method: str,
    model: Model,
    settings: BaselineSettings,
    *,
    limits: RoleLimits,
    ledger: TokenLedger,
    trace: TraceWriter | None,
    on_step: StepCallback | None,
    temperature: float,
    embed_model: str = LEXICAL_SPEC,
    embed_options: ModelOptions | None = None,
    context_window: int | None = None,
    generation_cap: int | None = None,
) -> tuple[Agent, dict[str, Any]]:
    """The agent for `method` and the settings it runs with (for the trace and the result).
    `context_window` cuts the ReAct methods' history to fit (`agents/fit.py`, as for Raw);
    LongHorizon's roles carry no transcript to cut. `generation_cap` (the case's generation
    length; None: the paper's for the environment) caps every call of the method, retries
    included."""
    recorded: dict[str, Any] = {"policy": asdict(limits)}
    options: BackboneOptions = {
        "ledger": ledger,
        "trace": trace,
        "on_step": on_step,
        "limits": limits,
        "temperature": temperature,
        "generation_cap": generation_cap,
    }
    if method in LONG_HORIZON_METHODS:
        recorded["baseline"] = asdict(settings.long_horizon)
        agent: Agent = LongHorizonAgent(model, settings.long_horizon, **options)
        return agent, recorded
    if method not in REACT_METHODS:
        raise ValueError(f"unknown baseline {method!r}; use {', '.join(BASELINES)}")
    recorded["baseline"] = asdict(getattr(settings, method))
    recorded["context_window"] = context_window
    options["context_window"] = context_window
    if method in EMBEDDING_METHODS:
        recorded["embed_model"] = embed_model
    agent = ContextAgent(
        method,
        model,
        settings,
        embed_model=embed_model,
        embed_options=embed_options,
        **options,
    )
    return agent, recorded
