"""Run one case (one environment task, one method, one set of models) with its run records.

Whatever happens inside — malformed model output, a dead model server, a crashed Java backend,
a bug, Ctrl-C — the case ends with a whole `result.json` and a readable `events.jsonl`. Ctrl-C
is recorded as `interrupted` and then re-raised so the caller can stop.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pos_agent.agents.base import (
    Agent,
    Episode,
    StepCallback,
    StepInfo,
    finish,
    observation_info,
)
from pos_agent.agents.expert import run_expert
from pos_agent.agents.pos import VARIANTS, PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.envs import EnvError, Environment, InfrastructureError, Observation, make_env
from pos_agent.envs._registry import accepts_option
from pos_agent.health.recovery import RecoveryMode
from pos_agent.llm import Model, ModelFailure, ModelOptions, TokenLedger, load_model
from pos_agent.trace import CaseResult, RoleTokens, Status, TraceWriter, write_result

AGENTS: tuple[str, ...] = (*VARIANTS, "raw", "expert")
MODEL_ROLES = ("policy", "belief", "sentinel")


@dataclass
class CaseSpec:
    """What to run: environment, task, method and models."""

    env: str
    task: str
    agent: str = "pos"
    model: str = "local"
    role_models: dict[str, str] = field(default_factory=dict)  # overrides per role
    recovery: RecoveryMode = "soft"
    global_audit_every: int | None = None  # PoS variants: None keeps PosConfig's (8)
    max_steps: int | None = None
    split: str | None = None
    seed: int | None = None
    env_options: dict[str, Any] = field(default_factory=dict)

    @property
    def case_id(self) -> str:
        seed = "" if self.seed is None else f"__s{self.seed}"
        return f"{self.env}__{self.task}{seed}".replace("/", "_")

    @property
    def folder(self) -> str:
        """The case's folder name inside a run: method and case id."""
        return f"{self.agent}__{self.case_id}"

    def models(self) -> dict[str, str]:
        if self.agent == "expert":
            return {}
        roles = ("policy",) if self.agent == "raw" else MODEL_ROLES
        return {role: self.role_models.get(role, self.model) for role in roles}


ModelLoader = Callable[[str, str], Model]  # (spec, role) -> model


def default_loader(options: ModelOptions | None = None) -> ModelLoader:
    """Loads each spec once per process. A local GGUF model gets one llama.cpp context per
    role (weights shared), so every role keeps its own prompt prefix cached between calls."""
    base = options or ModelOptions()
    loaded: dict[tuple[str, str], Model] = {}

    def load(spec: str, role: str) -> Model:
        local = spec == "local" or spec.startswith("gguf:")
        key = (spec, role if local else "")
        if key not in loaded:
            opts = base.model_copy(update={"context_slot": role}) if local else base
            loaded[key] = load_model(spec, opts)
        return loaded[key]

    return load


def run_case(
    spec: CaseSpec,
    case_dir: Path,
    *,
    run_name: str,
    load: ModelLoader | None = None,
    on_step: StepCallback | None = None,
    pos_config: PosConfig | None = None,
) -> CaseResult:
    """Play one case and write its records; returns the result that was written."""
    if spec.agent not in AGENTS:
        raise ValueError(f"unknown agent {spec.agent!r}; choose one of {', '.join(AGENTS)}")
    load = load or default_loader()
    case_dir.mkdir(parents=True, exist_ok=True)
    # A rerun of a half-finished case starts its trace afresh.
    (case_dir / "events.jsonl").unlink(missing_ok=True)
    (case_dir / "result.json").unlink(missing_ok=True)
    ledger = TokenLedger()
    started = time.time()
    status: Status = "error"
    error: str | None = None
    episode = Episode()
    category: str | None = None
    env_extra: dict[str, Any] = {}
    max_steps = 0
    trace = TraceWriter(case_dir)
    trace.emit("episode_start", 0, spec=spec.__dict__, models=spec.models(), run=run_name)
    try:
        options = dict(spec.env_options)
        if accepts_option(spec.env, "workdir"):
            # Environments that generate data (LOCA) do it inside the case's own folder.
            options.setdefault("workdir", str(case_dir.resolve() / "env"))
        env = make_env(
            spec.env,
            spec.task,
            max_steps=spec.max_steps,
            split=spec.split,
            seed=spec.seed,
            **options,
        )
        try:
            max_steps = env.max_steps
            agent = _build_agent(spec, load, ledger, trace, on_step, pos_config)
            category = _category(env)
            episode = agent.run(env)
            status = "success" if episode.success else "failure"
        finally:
            env_ledger = getattr(env, "ledger", None)  # provider/judge calls of diagnosis envs
            if isinstance(env_ledger, TokenLedger):
                ledger.merge(env_ledger)
            env_extra = _env_extra(env)
            env.close()
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted by the user (Ctrl-C)"
        raise
    except InfrastructureError as exc:
        status, error = "infra_error", f"environment backend failed: {exc}"
    except EnvError as exc:
        status, error = "error", str(exc)
    except ModelFailure as exc:  # only a model that cannot be loaded gets here
        status, error = "error", f"model: {exc}"
    except Exception as exc:
        status, error = "error", f"{type(exc).__name__}: {exc}"
        trace.emit(
            "degraded", episode.steps, role="harness", traceback=traceback.format_exc(limit=8)
        )
    finally:
        result = CaseResult(
            run=run_name,
            case=spec.case_id,
            env=spec.env,
            task=spec.task,
            category=category,
            agent=spec.agent,
            models=spec.models(),
            status=status,
            success=episode.success and status == "success",
            score=episode.score,
            steps=episode.steps,
            max_steps=max_steps,
            tokens={
                role: RoleTokens.model_validate(t)
                for role, t in ledger.by_role().items()
                if t["calls"]
            },
            trapped_steps=episode.trapped_steps,
            patterns=dict(episode.patterns),
            recoveries=episode.recoveries,
            degraded_steps=episode.degraded_steps,
            final_belief=episode.final_belief,
            error=error,
            started_at=started,
            duration_s=round(time.time() - started, 3),
            extra={
                **env_extra,
                **episode.extra,
                "health_checked": spec.agent in VARIANTS and spec.agent != "no_trapping",
                **({"recovery": spec.recovery} if spec.agent in VARIANTS else {}),
            },
        )
        trace.emit("episode_end", episode.steps, status=status, success=result.success, error=error)
        trace.close()
        write_result(case_dir, result)
    return result


def _build_agent(
    spec: CaseSpec,
    load: ModelLoader,
    ledger: TokenLedger,
    trace: TraceWriter,
    on_step: StepCallback | None,
    pos_config: PosConfig | None,
) -> Agent:
    if spec.agent == "expert":
        return _TracedExpert(trace, on_step)
    models = {role: load(name, role) for role, name in spec.models().items()}
    if spec.agent == "raw":
        return RawAgent(models["policy"], ledger=ledger, trace=trace, on_step=on_step)
    variant = next(v for v in VARIANTS if v == spec.agent)
    config = replace(pos_config or PosConfig(), variant=variant, recovery=spec.recovery)
    if spec.global_audit_every is not None:
        config = replace(config, global_audit_every=spec.global_audit_every)
    return PosAgent(
        RoleModels(models["policy"], models["belief"], models["sentinel"]),
        config,
        ledger=ledger,
        trace=trace,
        on_step=on_step,
    )


class _TracedExpert:
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
        self.trace.emit("observation", 0, **observation_info(observation))

    def _each(self, action: str, observation: Observation) -> None:
        self.trace.emit("action", self.steps, action=action)
        self.steps += 1
        self.last = observation
        self.trace.emit("observation", self.steps, **observation_info(observation))
        if self.on_step is not None:
            self.on_step(StepInfo(self.steps, action, observation.success))


def _env_extra(env: Any) -> dict[str, Any]:
    """What the environment records about its case (LOCA: length, seed, context_length)."""
    value = getattr(env, "case_extra", None)
    return dict(value) if isinstance(value, dict) else {}


def _category(env: Any) -> str | None:
    value = getattr(env, "category", None)
    return str(value) if value else None
