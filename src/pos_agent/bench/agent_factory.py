"""Build the agent a case runs: its models, limits and method settings.

`build_agent` turns a `CaseSpec` into the agent (Raw, a baseline, a PoS variant or the expert)
and the settings recorded in the trace and the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, get_args

from pos_agent.agents.base import (
    Agent,
    Episode,
    StepCallback,
    StepInfo,
    finish,
    observation_event,
)
from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.expert import run_expert
from pos_agent.agents.methods import METHODS, MethodKind
from pos_agent.agents.pos import VARIANTS, PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.bench.spec import CaseSpec, ModelLoader
from pos_agent.envs import Environment, Observation
from pos_agent.events import ActionEvent
from pos_agent.health.window import Diagnosis
from pos_agent.llm import Model, TokenLedger
from pos_agent.roles.limits import TEMPERATURE, AgentLimits, paper_generation_tokens
from pos_agent.trace import TraceWriter

HEALTH_MODES: tuple[Diagnosis, ...] = get_args(Diagnosis)


class SpecError(ValueError):
    """The case spec names a setting that does not exist (ends the case as config_error)."""


@dataclass(frozen=True)
class AgentRequest:
    """What every builder gets: the case, its loaded models, the limits and the records."""

    spec: CaseSpec
    models: dict[str, Model]
    """The loaded model of each role the method calls (`CaseSpec.models()` names them)."""
    limits: AgentLimits
    """Budgets and schema bounds per role, for these models and this environment."""
    ledger: TokenLedger
    trace: TraceWriter
    """The case's trace, which the agent's role calls write to."""
    on_step: StepCallback | None = None
    pos_config: PosConfig | None = None
    """PoS variants: the loop's settings the case starts from (None: the defaults)."""
    generation_tokens: int | None = None
    """The case's generation length (the suite's, else the paper's): every agent-side call's
    cap, retries included."""


Built = tuple[Agent, dict[str, Any]]  # the agent and the settings recorded in trace and result


def build_agent(
    spec: CaseSpec,
    env: Environment,
    load: ModelLoader,
    ledger: TokenLedger,
    trace: TraceWriter,
    on_step: StepCallback | None,
    pos_config: PosConfig | None,
) -> tuple[Agent, dict[str, Any]]:
    """The agent for `spec` and the settings it runs with (recorded in trace and result)."""
    method = METHODS[spec.agent]
    if method.kind == "expert":
        return TracedExpert(trace, on_step), {}
    role_specs = spec.models()
    models = {role: load(name, role) for role, name in role_specs.items()}
    generation_tokens = spec.generation_tokens or paper_generation_tokens(env.kind, env.name)
    limits = AgentLimits.for_models(
        role_specs,
        generation_tokens=generation_tokens,
        profile=spec.profile,
        bounds=spec.bounds,
    )
    settings: dict[str, Any] = {
        "generation_tokens": generation_tokens,
        "temperature": TEMPERATURE,
        "profile_asked": spec.profile,
    }
    request = AgentRequest(
        spec, models, limits, ledger, trace, on_step, pos_config, generation_tokens
    )
    agent, recorded = BUILDERS[method.kind](request)
    settings.update(recorded)
    return agent, settings


def _build_raw(r: AgentRequest) -> Built:
    # No cut unless asked (the paper's policy, the same for every method and model): a prompt
    # that does not fit ends the case as a scored failure (context_overflow). Asked, the cut is
    # the one every history-based method shares (`agents/fit.py`).
    window = r.spec.context_window
    agent = RawAgent(
        r.models["policy"],
        ledger=r.ledger,
        trace=r.trace,
        on_step=r.on_step,
        limits=r.limits.policy,
        context_window=window,
        temperature=TEMPERATURE,
    )
    return agent, {"policy": asdict(r.limits.policy), "context_window": window}


def _build_baseline(r: AgentRequest) -> Built:
    # LongHorizon's manager, executor and auditor write with the policy's budget: the paper's
    # generation length for a real model, the compact profile's for the embedded one.
    spec = r.spec
    baseline = resolve_settings(
        spec.env, spec.agent, spec.method_options, generation_tokens=r.limits.policy.max_tokens
    )
    return build_baseline(
        spec.agent,
        r.models["policy"],
        baseline,
        limits=r.limits.policy,
        ledger=r.ledger,
        trace=r.trace,
        on_step=r.on_step,
        temperature=TEMPERATURE,
        embed_model=spec.embed_model,
        context_window=spec.context_window,
        generation_cap=r.generation_tokens,
    )


def _build_pos(r: AgentRequest) -> Built:
    spec, limits = r.spec, r.limits
    variant = next(v for v in VARIANTS if v == spec.agent)
    config = replace(
        r.pos_config or PosConfig(),
        variant=variant,
        recovery=spec.recovery,
        limits=limits,
        temperature=TEMPERATURE,
    )
    diagnosis = next((d for d in HEALTH_MODES if d == spec.health), None)
    if diagnosis is None:
        raise SpecError(f"unknown health {spec.health!r}; choose one of {', '.join(HEALTH_MODES)}")
    config = replace(config, health=replace(config.health, diagnosis=diagnosis))
    if spec.global_audit_every is not None:
        config = replace(config, global_audit_every=spec.global_audit_every)
    settings = {
        **limits.to_dict(),
        "global_audit_every": config.global_audit_every,
        "recovery": config.recovery,
        "health": config.health.diagnosis,
        "clips": asdict(config.clips or limits.sentinel.clips),
        "policy_observation_chars": config.policy_observation_chars,
    }
    models = r.models
    agent = PosAgent(
        RoleModels(models["policy"], models["belief"], models["sentinel"]),
        config,
        ledger=r.ledger,
        trace=r.trace,
        on_step=r.on_step,
    )
    return agent, settings


# One builder per kind of method (`agents.methods.METHODS[name].kind`); the expert needs no model.
BUILDERS: dict[MethodKind, Callable[[AgentRequest], Built]] = {
    "raw": _build_raw,
    "baseline": _build_baseline,
    "pos": _build_pos,
}


class TracedExpert:
    """The expert agent in the harness: same trace events and step callback as the others."""

    name = "expert"

    def __init__(self, trace: TraceWriter, on_step: StepCallback | None) -> None:
        self.trace = trace
        self.on_step = on_step

    def run(self, env: Environment) -> Episode:
        self.steps = 0
        self.last: Observation | None = None
        outcome = run_expert(env, on_reset=self._first, on_step=self._each)
        episode = Episode(steps=outcome.steps)
        if self.last is not None:
            finish(episode, self.last)
        if outcome.error:
            episode.extra["expert_error"] = outcome.error
        return episode

    def _first(self, observation: Observation) -> None:
        self.trace.emit(observation_event(0, observation))

    def _each(self, action: str, observation: Observation) -> None:
        self.trace.emit(ActionEvent(step=self.steps, action=action))
        self.steps += 1
        self.last = observation
        self.trace.emit(observation_event(self.steps, observation))
        if self.on_step is not None:
            self.on_step(StepInfo(self.steps, action, observation.success))
