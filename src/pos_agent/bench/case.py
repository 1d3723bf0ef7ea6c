"""Run one case (one environment task, one method, one set of models) with its run records.

Whatever happens inside — malformed model output, a dead model server, a crashed Java backend,
a bug, Ctrl-C — the case ends with a whole `result.json` and a readable `events.jsonl`. Ctrl-C
is recorded as `interrupted` and then re-raised so the caller can stop.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

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
from pos_agent.agents.settings import (
    TEMPERATURE,
    AgentLimits,
    ProfileName,
    paper_generation_tokens,
)
from pos_agent.bench.env_models import build_env_models, env_model_labels, resolve_env_models
from pos_agent.envs import EnvError, Environment, InfrastructureError, Observation, make_env
from pos_agent.events import ActionEvent, DegradedEvent, EpisodeEndEvent, EpisodeStartEvent
from pos_agent.health.recovery import RecoveryMode
from pos_agent.llm import Model, ModelFailure, ModelOptions, TokenLedger, load_model
from pos_agent.trace import CaseResult, RoleTokens, Status, TraceWriter, write_result

# The paper's method order: Raw, the four baselines, PoS, its ablations; then the expert.
AGENTS: tuple[str, ...] = ("raw", *BASELINES, *VARIANTS, "expert")
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
    generation_tokens: int | None = None  # every agent-side call; None: the paper's (App. D.1)
    profile: ProfileName | None = None  # None: each role's model picks (compact for `local`)
    bounds: dict[str, int | None] = field(default_factory=dict)  # schema bounds overridden
    context_window: int | None = None  # raw history cut; None: n_ctx of local models, else never
    max_steps: int | None = None
    split: str | None = None
    seed: int | None = None
    env_options: dict[str, Any] = field(default_factory=dict)
    # Model spec per environment role (ClinDiag provider/judge; "*" for every role); roles
    # left out use the environment's offline option. The same for every method (the paper's
    # fixed LLM).
    env_models: dict[str, str] = field(default_factory=dict)
    # Baselines: the suite's parameters for this method (agents/context/settings.py), and the
    # PACE relevance scorer (tfidf offline, or an embeddings endpoint spec).
    method_options: dict[str, Any] = field(default_factory=dict)
    embed_model: str = "tfidf"

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
        # Raw and the baselines have one backbone (every baseline call uses it, App. D.1).
        roles = ("policy",) if self.agent == "raw" or self.agent in BASELINES else MODEL_ROLES
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
    max_steps = 0
    trace = TraceWriter(case_dir)
    env_labels: dict[str, str] = {}
    settings: dict[str, Any] = {}
    started = False
    try:
        try:
            chosen = resolve_env_models(spec.env, spec.env_models)
        except ValueError as exc:
            raise EnvError(str(exc)) from None
        env_labels = env_model_labels(spec.env, chosen)
        role_options, env_models = build_env_models(chosen, spec.env, load, ledger, trace)
        env = make_env(
            spec.env,
            spec.task,
            max_steps=spec.max_steps,
            split=spec.split,
            seed=spec.seed,
            **spec.env_options,
            **role_options,
        )
        try:
            for model in env_models:
                model.step_source = _step_source(env)
            max_steps = env.max_steps
            try:
                agent, settings = _build_agent(spec, env, load, ledger, trace, on_step, pos_config)
            finally:
                started = _start(trace, spec, run_name, settings)
            category = _category(env)
            episode = agent.run(env)
            status = "success" if episode.success else "failure"
        finally:
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
            DegradedEvent(
                step=episode.steps,
                role="harness",
                reason=error,
                traceback=traceback.format_exc(limit=8),
            )
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
            context_cuts=episode.context_cuts,
            settings=settings,
            final_belief=episode.final_belief,
            error=error,
            started_at=started,
            duration_s=round(time.time() - started, 3),
            extra={
                **episode.extra,
                "health_checked": spec.agent in VARIANTS and spec.agent != "no_trapping",
                **({"recovery": spec.recovery} if spec.agent in VARIANTS else {}),
                **({"env_models": env_labels} if env_labels else {}),
            },
        )
        if not started:  # the environment could not be made: still say what was to run
            _start(trace, spec, run_name, settings)
        trace.emit(
            EpisodeEndEvent(step=episode.steps, status=status, success=result.success, error=error)
        )
        trace.close()
        write_result(case_dir, result)
    return result


def _build_agent(
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
        return _TracedExpert(trace, on_step), {}
    role_specs = spec.models()
    models = {role: load(name, role) for role, name in role_specs.items()}
    generation_tokens = spec.generation_tokens or paper_generation_tokens(env.kind)
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
        window = spec.context_window or context_window_of(role_specs["policy"], models["policy"])
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
        baseline = resolve_settings(
            spec.env, spec.agent, spec.method_options, generation_tokens=generation_tokens
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
    if spec.global_audit_every is not None:
        config = replace(config, global_audit_every=spec.global_audit_every)
    settings.update(
        limits.to_dict(),
        global_audit_every=config.global_audit_every,
        recovery=config.recovery,
        clips=asdict(config.clips),
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


def _start(trace: TraceWriter, spec: CaseSpec, run: str, settings: dict[str, Any]) -> bool:
    trace.emit(
        EpisodeStartEvent(
            step=0, run=run, spec=asdict(spec), models=spec.models(), settings=settings
        )
    )
    return True


def context_window_of(spec: str, model: Model) -> int | None:
    """The context window a prompt must fit: a local GGUF model's n_ctx; none for a server
    (unless the case sets `context_window`)."""
    if spec != "local" and not spec.startswith("gguf:"):
        return None
    options = getattr(model, "options", None)
    return options.n_ctx if isinstance(options, ModelOptions) else ModelOptions().n_ctx


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
        self.trace.emit(observation_event(0, observation))

    def _each(self, action: str, observation: Observation) -> None:
        self.trace.emit(ActionEvent(step=self.steps, action=action))
        self.steps += 1
        self.last = observation
        self.trace.emit(observation_event(self.steps, observation))
        if self.on_step is not None:
            self.on_step(StepInfo(self.steps, action, observation.success))


def _step_source(env: Environment) -> Callable[[], int | None]:
    """The step an environment is playing (what its model calls are accounted to)."""

    def step() -> int | None:
        used = getattr(env, "steps_used", None)
        return used if isinstance(used, int) else None

    return step


def _category(env: Any) -> str | None:
    value = getattr(env, "category", None)
    return str(value) if value else None
