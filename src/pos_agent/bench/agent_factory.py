"""Build the agent a case runs: its models, limits and method settings.

`build_agent` turns a `CaseSpec` into the agent (Raw, a baseline, a PoS variant or the expert)
and the settings recorded in the trace and the result.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, get_args

from pos_agent.agents.base import (
    Agent,
    Episode,
    StepCallback,
    StepInfo,
    finish,
    observation_event,
)
from pos_agent.agents.baselines import BASELINES, build_baseline, resolve_settings
from pos_agent.agents.expert import run_expert
from pos_agent.agents.pos import VARIANTS, PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.agents.settings import TEMPERATURE, AgentLimits, paper_generation_tokens
from pos_agent.envs import Environment, Observation
from pos_agent.events import ActionEvent
from pos_agent.health.window import Diagnosis
from pos_agent.llm import TokenLedger
from pos_agent.trace import TraceWriter

if TYPE_CHECKING:
    from pos_agent.bench.case import CaseSpec, ModelLoader

HEALTH_MODES: tuple[Diagnosis, ...] = get_args(Diagnosis)


class SpecError(ValueError):
    """The case spec names a setting that does not exist (ends the case as config_error)."""


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
    if spec.agent == "expert":
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
    if spec.agent == "raw":
        # No cut unless asked (the paper's policy, the same for every method and model): a
        # prompt that does not fit ends the case as a scored failure (context_overflow).
        window = spec.context_window
        settings.update(policy=asdict(limits.policy), context_window=window)
        agent: Agent = RawAgent(
            models["policy"],
            ledger=ledger,
            trace=trace,
            on_step=on_step,
            limits=limits.policy,
            context_window=window,
            temperature=TEMPERATURE,
        )
        return agent, settings
    if spec.agent in BASELINES:
        # LongHorizon's manager, executor and auditor write with the policy's budget: the
        # paper's generation length for a real model, the compact profile's for the embedded one.
        baseline = resolve_settings(
            spec.env, spec.agent, spec.method_options, generation_tokens=limits.policy.max_tokens
        )
        agent, recorded = build_baseline(
            spec.agent,
            models["policy"],
            baseline,
            limits=limits.policy,
            ledger=ledger,
            trace=trace,
            on_step=on_step,
            temperature=TEMPERATURE,
            embed_model=spec.embed_model,
        )
        settings.update(recorded)
        return agent, settings
    variant = next(v for v in VARIANTS if v == spec.agent)
    config = replace(
        pos_config or PosConfig(),
        variant=variant,
        recovery=spec.recovery,
        limits=limits,
        temperature=TEMPERATURE,
    )
    diagnosis: Diagnosis = "improved" if spec.health == "improved" else "paper"
    if spec.health != diagnosis:
        raise SpecError(f"unknown health {spec.health!r}; choose one of {', '.join(HEALTH_MODES)}")
    config = replace(config, health=replace(config.health, diagnosis=diagnosis))
    if spec.global_audit_every is not None:
        config = replace(config, global_audit_every=spec.global_audit_every)
    settings.update(
        limits.to_dict(),
        global_audit_every=config.global_audit_every,
        recovery=config.recovery,
        health=config.health.diagnosis,
        clips=asdict(config.clips or limits.sentinel.clips),
        policy_observation_chars=config.policy_observation_chars,
    )
    agent = PosAgent(
        RoleModels(models["policy"], models["belief"], models["sentinel"]),
        config,
        ledger=ledger,
        trace=trace,
        on_step=on_step,
    )
    return agent, settings


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
