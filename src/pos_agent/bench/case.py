"""Run one case (one environment task, one method, one set of models) with its run records.

Whatever happens inside — malformed model output, a dead or misconfigured model server, a
crashed Java backend, a bug, a time limit, Ctrl-C — the case ends with a whole `result.json`
and a readable `events.jsonl`, and its status says whether it measured the method:

    success, failure      scored (a prompt that does not fit the model's context window is a
                          failure with `failure_reason: context_overflow`, for every method)
    config_error          the set-up: model spec, key, endpoint, non-chat server, task, data
    infra_error           a backend or model server failed, a judge gave no usable verdict,
                          or the case's time limit was hit
    harness_error         an exception in PoS's own code
    interrupted           Ctrl-C, SIGTERM or SIGHUP (recorded, then re-raised as
                          CaseInterrupted)

Only one process writes a case folder at a time (a lock file in the folder). The records go
through one `CaseRecorder` (bench/recorder.py); the play itself (`_play`) returns the outcome
of an episode that ran to its end, and every other ending is an exception that `_outcome_of`
turns into the recorded outcome.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pos_agent.agents.base import StepCallback
from pos_agent.agents.methods import METHOD_NAMES
from pos_agent.agents.pos import PosConfig
from pos_agent.bench import signals
from pos_agent.bench.agent_factory import SpecError, build_agent
from pos_agent.bench.env_models import build_env_models, env_model_labels, resolve_env_models
from pos_agent.bench.locks import FileLock, LockHeld
from pos_agent.bench.recorder import DISK_FULL, CaseRecorder, Outcome, RecordError
from pos_agent.bench.spec import CaseSpec, ModelLoader
from pos_agent.bench.time_limit import CaseTimeout, wall_clock_limit, where_it_stopped
from pos_agent.envs import EnvError, Environment, InfrastructureError, accepts_option, make_env
from pos_agent.events import DegradedEvent, Event
from pos_agent.llm import (
    Model,
    ModelFailure,
    ModelOptions,
    load_model,
    owned_by_policy,
    wants_context_per_role,
)
from pos_agent.trace import CaseResult, Status

__all__ = [
    "AGENTS",
    "CaseBusyError",
    "CaseInterrupted",
    "CaseSpec",
    "ModelLoader",
    "Outcome",
    "RecordError",
    "default_loader",
    "run_case",
]

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
    """Ctrl-C (or SIGTERM/SIGHUP) during a case, raised after its `interrupted` result was
    written."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.error or "interrupted by the user (Ctrl-C)")
        self.result = result


class CaseBusyError(RuntimeError):
    """Another process is writing this case folder; nothing was touched."""


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
    on_event: Callable[[Event], None] | None = None,
) -> CaseResult:
    """Play one case and write its records; returns the result that was written.

    `options` are the model options (recorded in the result; `load` defaults to a loader with
    them). `time_limit_s` bounds the case's wall time (unscored `infra_error` when reached).
    `on_event` sees each trace event as it is written. `owner_alive` is asked before the result
    is written: a worker whose `pos bench` is gone must not write into a folder a later run may
    own. Ctrl-C raises CaseInterrupted after the `interrupted` result is written; CaseBusyError
    means another process holds the case folder.
    """
    if spec.agent not in AGENTS:
        raise ValueError(f"unknown agent {spec.agent!r}; choose one of {', '.join(AGENTS)}")
    policy = spec.models().get("policy", spec.model)
    options = owned_by_policy(options or ModelOptions(), [policy])
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
        record = CaseRecorder(spec, case_dir, run_name, options, on_step, on_event)
        pending: BaseException | None = None
        try:
            outcome = _play(record, load, pos_config, time_limit_s)
            if (signum := signals.requested()) is not None:
                # A stop signal whose exception something swallowed: never read as a score.
                outcome = Outcome("interrupted", signals.describe(signum))
        except BaseException as exc:  # Ctrl-C and time limits included: recorded, never lost
            outcome = _outcome_of(exc, record)
            if not isinstance(exc, Exception | KeyboardInterrupt | CaseTimeout):
                pending = exc  # SystemExit and the like: recorded, then passed on
        result = record.finish(outcome)
        if owner_alive is None or owner_alive():
            record.write(result)
    finally:
        lock.release()
    if record.disk_full is not None:
        raise RecordError(
            record.disk_full.errno,
            f"the disk refused a write while playing {spec.folder}: {record.disk_full}",
        )
    if pending is not None:
        raise pending
    if result.status == "interrupted":
        raise CaseInterrupted(result)
    return result


def _play(
    record: CaseRecorder,
    load: ModelLoader,
    pos_config: PosConfig | None,
    time_limit_s: float | None,
) -> Outcome:
    """Make the environment and the agent, play the episode: its outcome (success or failure);
    anything else leaves as an exception that `_outcome_of` classifies."""
    spec = record.spec
    with wall_clock_limit(time_limit_s):
        try:
            chosen = resolve_env_models(spec.env, spec.env_models)
        except ValueError as exc:
            raise EnvError(str(exc)) from None
        record.env_labels = env_model_labels(spec.env, chosen)
        role_options, env_models = build_env_models(
            chosen, spec.env, load, record.ledger, record.trace
        )
        env_options = dict(spec.env_options)
        if accepts_option(spec.env, "workdir"):
            # Environments that generate data (LOCA) do it inside the case's own folder.
            env_options.setdefault("workdir", str(record.case_dir.resolve() / "env"))
        if accepts_option(spec.env, "openai_schemas"):
            # LOCA fixes tool schemas for OpenAI models only ("openai" in the model name).
            policy = spec.models().get("policy", spec.model)
            env_options.setdefault("openai_schemas", "openai" in policy.lower())
        env = make_env(
            spec.env,
            spec.task,
            max_steps=spec.max_steps,
            split=spec.split,
            seed=spec.seed,
            **env_options,
            **role_options,
        )
        record.category = _category(env)  # also on an unscored case: its cell's denominator
        try:
            for model in env_models:
                model.step_source = _step_source(env)
            record.max_steps = env.max_steps
            settings: dict[str, Any] = {}
            try:
                agent, settings = build_agent(
                    spec, env, load, record.ledger, record.trace, record.tally, pos_config
                )
            finally:
                record.announce(settings)
            record.episode = agent.run(env)
        finally:
            record.env_extra = _env_extra(env)
            env.close()
    unjudged = record.episode.extra.get("judge_failed")
    if unjudged:
        # The submission was never graded: no score, so not a failure either (--resume and
        # the bench's infra retries play the case again).
        return Outcome("infra_error", f"the judge gave no usable verdict, not scored: {unjudged}")
    return Outcome("success" if record.episode.success else "failure")


def _outcome_of(exc: BaseException, record: CaseRecorder) -> Outcome:
    """The recorded outcome of a case that ended by `exc`."""
    if isinstance(exc, KeyboardInterrupt):
        return Outcome("interrupted", str(exc) or "interrupted by the user (Ctrl-C)")
    if isinstance(exc, CaseTimeout):
        spent = sum(t["latency_s"] for t in record.ledger.by_role().values())
        where = where_it_stopped(exc.__traceback__)
        return Outcome("infra_error", f"{exc} {where} (model calls took {spent:.0f}s)")
    if isinstance(exc, InfrastructureError):
        # A model server that stayed unreachable is raised while its ModelFailure is handled
        # (the message names the role); only the environment's own backend gets the prefix.
        side = "" if isinstance(exc.__context__, ModelFailure) else "environment backend failed: "
        return Outcome("infra_error", f"{side}{exc}")
    if isinstance(exc, EnvError | SpecError):
        return Outcome("config_error", str(exc))
    if isinstance(exc, ModelFailure):  # a model that cannot be loaded, or a rejected set-up
        if exc.kind == "context_overflow":
            return Outcome("failure", overflow_message(exc), failure_reason="context_overflow")
        return Outcome(_model_status(exc), f"model: {exc}")
    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
        record.disk_full = exc
        return Outcome("infra_error", f"the disk refused a write: {exc}")
    error = f"{type(exc).__name__}: {exc}"
    record.emit_quietly(
        DegradedEvent(
            step=record.tally.steps,
            role="harness",
            reason=error,
            traceback=traceback.format_exc(limit=8),
        )
    )
    return Outcome("harness_error", error)


def overflow_message(failure: ModelFailure) -> str:
    """The error of a case whose prompt did not fit: a scored failure (the paper's policy)."""
    text = (
        f"context overflow, scored as a failure: {failure}. Every method is held to the same rule"
    )
    if "--context-window" in text:  # the server's message already says what to do
        return text
    return (
        f"{text}; --context-window N makes every history-based method cut its oldest history "
        "to fit N tokens"
    )


def _model_status(failure: ModelFailure) -> Status:
    if failure.kind == "config":
        return "config_error"
    if failure.unavailable:
        return "infra_error"
    return "harness_error"


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
