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
from pathlib import Path
from typing import Any

from pos_agent.agents.base import Episode, StepCallback, StepInfo
from pos_agent.agents.methods import METHOD_NAMES, METHODS
from pos_agent.agents.pos import PosConfig
from pos_agent.bench.agent_factory import SpecError, build_agent
from pos_agent.bench.env_models import build_env_models, env_model_labels, resolve_env_models
from pos_agent.bench.identity import (
    git_commit,
    pos_version,
    result_options,
    settings_hash,
    spec_settings,
)
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.spec import CaseSpec, ModelLoader
from pos_agent.bench.time_limit import CaseTimeout, wall_clock_limit, where_it_stopped
from pos_agent.envs import EnvError, Environment, InfrastructureError, make_env
from pos_agent.envs._registry import accepts_option
from pos_agent.events import (
    DegradedEvent,
    EpisodeEndEvent,
    EpisodeStartEvent,
    Event,
)
from pos_agent.llm import (
    Model,
    ModelFailure,
    ModelOptions,
    TokenLedger,
    load_model,
    wants_context_per_role,
)
from pos_agent.trace import (
    CaseResult,
    RoleTokens,
    Status,
    TraceWriter,
    is_scored,
    write_result,
)

# The paper's method order: Raw, the four baselines, PoS, its ablations; then the expert.
AGENTS: tuple[str, ...] = METHOD_NAMES


def default_loader(options: ModelOptions | None = None) -> ModelLoader:
    """Loads each spec once per process. A local GGUF model gets one llama.cpp context per
    role (weights shared), so every role keeps its own prompt prefix cached between calls."""
    base = options or ModelOptions()
    loaded: dict[tuple[str, str], Model] = {}

    def load(spec: str, role: str) -> Model:
        per_role = wants_context_per_role(spec)
        key = (spec, role if per_role else "")
        if key not in loaded:
            opts = base.model_copy(update={"context_slot": role}) if per_role else base
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
    env_extra: dict[str, Any] = {}
    env_labels: dict[str, str] = {}
    settings: dict[str, Any] = {}
    announced = False
    max_steps = 0
    interrupted = False
    disk_full: OSError | None = None
    try:
        with wall_clock_limit(time_limit_s):
            try:
                chosen = resolve_env_models(spec.env, spec.env_models)
            except ValueError as exc:
                raise EnvError(str(exc)) from None
            env_labels = env_model_labels(spec.env, chosen)
            role_options, env_models = build_env_models(chosen, spec.env, load, ledger, trace)
            env_options = dict(spec.env_options)
            if accepts_option(spec.env, "workdir"):
                # Environments that generate data (LOCA) do it inside the case's own folder.
                env_options.setdefault("workdir", str(case_dir.resolve() / "env"))
            env = make_env(
                spec.env,
                spec.task,
                max_steps=spec.max_steps,
                split=spec.split,
                seed=spec.seed,
                **env_options,
                **role_options,
            )
            try:
                for model in env_models:
                    model.step_source = _step_source(env)
                max_steps = env.max_steps
                try:
                    agent, settings = build_agent(spec, env, load, ledger, trace, tally, pos_config)
                finally:
                    announced = _start(trace, spec, run_name, settings)
                category = _category(env)
                episode = agent.run(env)
                status = "success" if episode.success else "failure"
            finally:
                env_extra = _env_extra(env)
                env.close()
    except KeyboardInterrupt:
        status, error, interrupted = "interrupted", "interrupted by the user (Ctrl-C)", True
    except CaseTimeout as exc:
        spent = sum(t["latency_s"] for t in ledger.by_role().values())
        status = "infra_error"
        error = f"{exc} {where_it_stopped(exc.__traceback__)} (model calls took {spent:.0f}s)"
    except InfrastructureError as exc:
        status, error = "infra_error", f"environment backend failed: {exc}"
    except (EnvError, SpecError) as exc:
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
                DegradedEvent(
                    step=tally.steps,
                    role="harness",
                    reason=error,
                    traceback=traceback.format_exc(limit=8),
                ),
            )
    finally:
        played = episode if episode is not None else tally.episode()
        success = played.success and status == "success"
        try:
            if not announced:  # the environment could not be made: still say what was to run
                _start(trace, spec, run_name, settings)
            trace.emit(
                EpisodeEndEvent(step=played.steps, status=status, success=success, error=error)
            )
            trace.close()
        except OSError as exc:
            disk_full = disk_full or exc
            with contextlib.suppress(OSError):
                trace.close()
            if is_scored(status):  # a score whose trace is cut short cannot be checked
                status, error, success = "infra_error", f"the disk refused a write: {exc}", False
        method = METHODS.get(spec.agent)
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
            context_cuts=played.context_cuts,
            settings=settings,
            final_belief=played.final_belief,
            error=error,
            started_at=started,
            duration_s=round(time.time() - started, 3),
            extra={
                **env_extra,
                **played.extra,
                "health_checked": bool(method and method.health_checked),
                **({"recovery": spec.recovery} if method and method.is_pos else {}),
                **({"health": spec.health} if method and method.is_pos else {}),
                **({"env_models": env_labels} if env_labels else {}),
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
    if failure.unavailable:
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


def _emit_quietly(trace: TraceWriter, event: Event) -> None:
    """Trace an event at the end of a case; a disk that is full already lost the trace."""
    with contextlib.suppress(OSError):
        trace.emit(event)


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


def _start(trace: TraceWriter, spec: CaseSpec, run: str, settings: dict[str, Any]) -> bool:
    trace.emit(
        EpisodeStartEvent(
            step=0, run=run, spec=spec.model_dump(), models=spec.models(), settings=settings
        )
    )
    return True


def _step_source(env: Environment) -> Callable[[], int | None]:
    """The step an environment is playing (what its model calls are accounted to)."""

    def step() -> int | None:
        used = getattr(env, "steps_used", None)
        return used if isinstance(used, int) else None

    return step


def _env_extra(env: Any) -> dict[str, Any]:
    """What the environment records about its case (LOCA: length, seed, context_length)."""
    value = getattr(env, "case_extra", None)
    return dict(value) if isinstance(value, dict) else {}


def _category(env: Any) -> str | None:
    value = getattr(env, "category", None)
    return str(value) if value else None
