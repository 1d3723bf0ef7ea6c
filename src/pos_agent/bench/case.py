"""Run one case (one environment task, one method, one set of models) with its run records.

Whatever happens inside — malformed model output, a dead or misconfigured model server, a
crashed Java backend, a bug, a time limit, Ctrl-C — the case ends with a whole `result.json`
and a readable `events.jsonl`, and its status says whether it measured the method:

    success, failure      scored
    config_error          the set-up: model spec, key, endpoint, non-chat server, task, data
    infra_error           a backend or model server failed, or the case's time limit was hit
    harness_error         an exception in PoS's own code
    interrupted           Ctrl-C (recorded, then re-raised as CaseInterrupted)

Only one process writes a case folder at a time (a lock file in the folder).
"""

from __future__ import annotations

import contextlib
import errno
import time
import traceback
from collections import Counter
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
from pos_agent.bench.identity import (
    git_commit,
    pos_version,
    result_options,
    settings_hash,
    spec_settings,
)
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.time_limit import CaseTimeout, wall_clock_limit, where_it_stopped
from pos_agent.envs import EnvError, Environment, InfrastructureError, Observation, make_env
from pos_agent.health.recovery import RecoveryMode
from pos_agent.llm import Model, ModelFailure, ModelOptions, TokenLedger, load_model
from pos_agent.trace import (
    CaseResult,
    RoleTokens,
    Status,
    TraceWriter,
    is_scored,
    write_result,
)

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


class CaseInterrupted(KeyboardInterrupt):
    """Ctrl-C during a case, raised after the case's `interrupted` result was written."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__("interrupted by the user (Ctrl-C)")
        self.result = result


class CaseBusyError(RuntimeError):
    """Another process is writing this case folder; nothing was touched."""


class RecordError(OSError):
    """A run record could not be written (disk full, folder not writable); the runner stops."""


# errno values that mean "this disk will not take more", not "the code has a bug"
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def run_case(
    spec: CaseSpec,
    case_dir: Path,
    *,
    run_name: str,
    options: ModelOptions | None = None,
    load: ModelLoader | None = None,
    on_step: StepCallback | None = None,
    pos_config: PosConfig | None = None,
    time_limit_s: float | None = None,
    owner_alive: Callable[[], bool] | None = None,
) -> CaseResult:
    """Play one case and write its records; returns the result that was written.

    `options` are the model options (recorded in the result; `load` defaults to a loader with
    them). `time_limit_s` bounds the case's wall time (unscored `infra_error` when reached).
    `owner_alive` is asked before the result is written: a worker whose `pos bench` is gone
    must not write into a folder a later run may own. Ctrl-C raises CaseInterrupted after the
    `interrupted` result is written; CaseBusyError means another process holds the case folder.
    """
    if spec.agent not in AGENTS:
        raise ValueError(f"unknown agent {spec.agent!r}; choose one of {', '.join(AGENTS)}")
    options = options or ModelOptions()
    load = load or default_loader(options)
    try:
        case_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(case_dir / ".lock").acquire()
    except LockHeld as held:
        message = f"case folder {case_dir} is being written by another process"
        raise CaseBusyError(message) from held
    except OSError as exc:
        raise RecordError(exc.errno, f"cannot write the case folder {case_dir}: {exc}") from None
    try:
        return _play(
            spec,
            case_dir,
            run_name,
            options,
            load,
            on_step,
            pos_config,
            time_limit_s,
            owner_alive,
        )
    finally:
        lock.release()


def _play(
    spec: CaseSpec,
    case_dir: Path,
    run_name: str,
    options: ModelOptions,
    load: ModelLoader,
    on_step: StepCallback | None,
    pos_config: PosConfig | None,
    time_limit_s: float | None,
    owner_alive: Callable[[], bool] | None,
) -> CaseResult:
    # A rerun of a half-finished case starts its trace afresh.
    try:
        (case_dir / "events.jsonl").unlink(missing_ok=True)
        (case_dir / "result.json").unlink(missing_ok=True)
        trace = TraceWriter(case_dir)
    except OSError as exc:
        raise RecordError(exc.errno, f"cannot write the trace in {case_dir}: {exc}") from None
    ledger = TokenLedger()
    tally = _StepTally(on_step)
    started = time.time()
    status: Status = "harness_error"
    error: str | None = None
    episode: Episode | None = None
    category: str | None = None
    max_steps = 0
    interrupted = False
    disk_full: OSError | None = None
    try:
        trace.emit("episode_start", 0, spec=spec.__dict__, models=spec.models(), run=run_name)
        with wall_clock_limit(time_limit_s):
            env = make_env(
                spec.env,
                spec.task,
                max_steps=spec.max_steps,
                split=spec.split,
                seed=spec.seed,
                **spec.env_options,
            )
            try:
                max_steps = env.max_steps
                agent = _build_agent(spec, load, ledger, trace, tally, pos_config)
                category = _category(env)
                episode = agent.run(env)
                status = "success" if episode.success else "failure"
            finally:
                env_ledger = getattr(env, "ledger", None)  # provider/judge calls of diagnosis
                if isinstance(env_ledger, TokenLedger):
                    ledger.merge(env_ledger)
                env.close()
    except KeyboardInterrupt:
        status, error, interrupted = "interrupted", "interrupted by the user (Ctrl-C)", True
    except CaseTimeout as exc:
        spent = sum(t["latency_s"] for t in ledger.by_role().values())
        status = "infra_error"
        error = f"{exc} {where_it_stopped(exc.__traceback__)} (model calls took {spent:.0f}s)"
    except InfrastructureError as exc:
        status, error = "infra_error", f"environment backend failed: {exc}"
    except EnvError as exc:
        status, error = "config_error", str(exc)
    except ModelFailure as exc:  # a model that cannot be loaded, or a rejected set-up
        status, error = _model_status(exc), f"model: {exc}"
    except Exception as exc:
        if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
            status, error, disk_full = "infra_error", f"the disk refused a write: {exc}", exc
        else:
            status, error = "harness_error", f"{type(exc).__name__}: {exc}"
            _emit_quietly(
                trace,
                "degraded",
                tally.steps,
                role="harness",
                traceback=traceback.format_exc(limit=8),
            )
    finally:
        played = episode if episode is not None else tally.episode()
        success = played.success and status == "success"
        try:
            trace.emit("episode_end", played.steps, status=status, success=success, error=error)
            trace.close()
        except OSError as exc:
            disk_full = disk_full or exc
            with contextlib.suppress(OSError):
                trace.close()
            if is_scored(status):  # a score whose trace is cut short cannot be checked
                status, error, success = "infra_error", f"the disk refused a write: {exc}", False
        result = CaseResult(
            run=run_name,
            case=spec.case_id,
            env=spec.env,
            task=spec.task,
            category=category,
            agent=spec.agent,
            models=spec.models(),
            status=status,
            success=success,
            score=played.score,
            steps=played.steps,
            max_steps=max_steps,
            tokens={
                role: RoleTokens.model_validate(t)
                for role, t in ledger.by_role().items()
                if t["calls"]
            },
            trapped_steps=played.trapped_steps,
            patterns=dict(played.patterns),
            recoveries=played.recoveries,
            degraded_steps=played.degraded_steps,
            final_belief=played.final_belief,
            error=error,
            started_at=started,
            duration_s=round(time.time() - started, 3),
            extra={
                **played.extra,
                "health_checked": spec.agent in VARIANTS and spec.agent != "no_trapping",
                **({"recovery": spec.recovery} if spec.agent in VARIANTS else {}),
            },
            **_provenance(spec, options),
        )
        if owner_alive is None or owner_alive():
            try:
                write_result(case_dir, result)
            except OSError as exc:
                raise RecordError(
                    exc.errno, f"cannot write the result of {spec.folder} in {case_dir}: {exc}"
                ) from None
    if disk_full is not None:
        raise RecordError(
            disk_full.errno, f"the disk refused a write while playing {spec.folder}: {disk_full}"
        )
    if interrupted:
        raise CaseInterrupted(result)
    return result


def _model_status(failure: ModelFailure) -> Status:
    if failure.kind == "config":
        return "config_error"
    if failure.kind in ("transport", "timeout"):
        return "infra_error"
    return "harness_error"


def _provenance(spec: CaseSpec, options: ModelOptions) -> dict[str, Any]:
    settings = spec_settings(spec)
    model_options = result_options(options)
    return {
        "spec": settings,
        "model_options": model_options,
        "settings_hash": settings_hash(settings, model_options),
        "pos_version": pos_version(),
        "git_commit": git_commit(),
    }


def _emit_quietly(trace: TraceWriter, event: str, step: int | None, **payload: Any) -> None:
    """Trace an event at the end of a case; a disk that is full already lost the trace."""
    with contextlib.suppress(OSError):
        trace.emit(event, step, **payload)


class _StepTally:
    """Counts what each step reported, so an episode cut short (Ctrl-C, a time limit, an
    error) still records the steps it played; passes every step on to the caller's callback."""

    def __init__(self, forward: StepCallback | None) -> None:
        self.forward = forward
        self.steps = 0
        self.success = False
        self.trapped_steps = 0
        self.patterns: Counter[str] = Counter()
        self.recoveries = 0  # constraints begun (a constraint in force after a step without one)
        self.degraded_steps = 0
        self._in_recovery = False

    def __call__(self, info: StepInfo) -> None:
        self.steps = max(self.steps, info.step)
        self.success = info.success
        self.trapped_steps += info.trapped
        if info.trapped and info.pattern:
            self.patterns[info.pattern] += 1
        self.recoveries += info.recovery and not self._in_recovery
        self._in_recovery = info.recovery
        self.degraded_steps += info.degraded
        if self.forward is not None:
            self.forward(info)

    def episode(self) -> Episode:
        return Episode(
            success=self.success,
            steps=self.steps,
            trapped_steps=self.trapped_steps,
            patterns=Counter(self.patterns),
            recoveries=self.recoveries,
            degraded_steps=self.degraded_steps,
        )


def _build_agent(
    spec: CaseSpec,
    load: ModelLoader,
    ledger: TokenLedger,
    trace: TraceWriter,
    on_step: StepCallback,
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

    def __init__(self, trace: TraceWriter, on_step: StepCallback) -> None:
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
        self.on_step(StepInfo(self.steps, action, observation.success))


def _category(env: Any) -> str | None:
    value = getattr(env, "category", None)
    return str(value) if value else None
