"""`pos run`: one episode with live progress, a trace and a result file."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from pos_agent.agents.base import StepInfo
from pos_agent.agents.methods import uses_embeddings
from pos_agent.belief import Belief, unusable
from pos_agent.bench.case import AGENTS, CaseBusyError, CaseSpec, RecordError, run_case
from pos_agent.bench.env_models import env_model_labels, resolve_env_models
from pos_agent.bench.executors.local import available_cores, busy_cores, threads_each
from pos_agent.bench.preflight import SetupError, check_models, validate_cases
from pos_agent.bench.run_folder import (
    RunFolder,
    RunFolderError,
    RunPlan,
    check_run_name,
    prepare_out,
    read_config,
)
from pos_agent.bench.runner import finished
from pos_agent.cli._options import (
    ADVANCED,
    BUDGET,
    EPISODE,
    MODEL,
    OUTPUT,
    CaseOptions,
    case_options,
)
from pos_agent.cli.app import app
from pos_agent.cli.common import AGENT_HELP, console, shown
from pos_agent.cli.run_progress import RunProgress, step_line
from pos_agent.envs import EnvError, canonical_env
from pos_agent.llm import (
    ModelFailure,
    ModelOptions,
    effective_server,
    owned_by_policy,
    parse_spec,
    preflight,
    wants_context_per_role,
)
from pos_agent.recovery.constraint import RecoveryMode
from pos_agent.trace import CaseResult, is_scored, read_result

# The command's own options (the ones it shares with `pos bench` are CaseOptions).
EnvArgument = Annotated[
    str, typer.Argument(help="Environment, e.g. alfworld-mini (see `pos envs`).")
]
TaskArgument = Annotated[str, typer.Argument(help="Task id within the environment, e.g. heat-mug.")]
AgentOption = Annotated[
    str, typer.Option(help=AGENT_HELP, metavar="METHOD", rich_help_panel=EPISODE)
]
PolicyModelOption = Annotated[
    str | None, typer.Option(help="The policy role's model.", metavar="SPEC", rich_help_panel=MODEL)
]
BeliefModelOption = Annotated[
    str | None, typer.Option(help="The belief role's model.", metavar="SPEC", rich_help_panel=MODEL)
]
SentinelModelOption = Annotated[
    str | None,
    typer.Option(help="The sentinel role's model.", metavar="SPEC", rich_help_panel=MODEL),
]
RecoveryOption = Annotated[
    RecoveryMode,
    typer.Option(
        help="soft: constraint in the prompt (paper); hard: forbidden actions removed; both.",
        rich_help_panel=EPISODE,
    ),
]
MaxStepsOption = Annotated[
    int | None,
    typer.Option(
        help="Step budget (default: the environment's).", min=1, metavar="N", rich_help_panel=BUDGET
    ),
]
RunOption = Annotated[
    str | None,
    typer.Option(
        "--run",
        help="Run name, a folder in --out (default: the time).",
        metavar="NAME",
        rich_help_panel=OUTPUT,
    ),
]
SeedOption = Annotated[
    int | None,
    typer.Option(help="Environment seed, where it has one.", metavar="N", rich_help_panel=EPISODE),
]
SplitOption = Annotated[
    str | None,
    typer.Option(
        help="Split of the task (default: the environment's).",
        metavar="NAME",
        rich_help_panel=ADVANCED,
    ),
]
ThreadsOption = Annotated[
    int | None,
    typer.Option(
        help="llama.cpp threads of the embedded model (default: the cores other work leaves "
        "free, at least one).",
        min=1,
        metavar="N",
        rich_help_panel=MODEL,
    ),
]


@app.command()
@case_options
def run(
    env: EnvArgument,
    task: TaskArgument,
    agent: AgentOption = "pos",
    policy_model: PolicyModelOption = None,
    belief_model: BeliefModelOption = None,
    sentinel_model: SentinelModelOption = None,
    recovery: RecoveryOption = "soft",
    max_steps: MaxStepsOption = None,
    run_name: RunOption = None,
    seed: SeedOption = None,
    split: SplitOption = None,
    threads: ThreadsOption = None,
    *,
    options: CaseOptions,
) -> None:
    """Run one episode and write runs/<run>/<case>/events.jsonl and result.json.

    Example: pos run alfworld-mini heat-mug --agent pos --model local --max-steps 12

    Exit code: 0 when the case was scored (success or failure), 1 when it was not (a harness or infrastructure error, named in the output), 2 when the set-up is wrong (nothing is written then), 130 after Ctrl-C, SIGTERM or SIGHUP.

    The embedded `local` model runs on the compact profile, any other model on the paper's settings. `pos view` shows the trace as a page.
    """
    if agent not in AGENTS:
        raise typer.BadParameter(f"choose one of {', '.join(AGENTS)}", param_hint="--agent")
    overrides = {
        role: spec
        for role, spec in (
            ("policy", policy_model),
            ("belief", belief_model),
            ("sentinel", sentinel_model),
        )
        if spec
    }
    spec = _spec(env, task, agent, overrides, recovery, max_steps, seed, split, options)
    model_options = _model_options(spec, options, threads)
    try:
        name = check_run_name(run_name or time.strftime("%Y%m%d-%H%M%S"))
    except RunFolderError as exc:
        _fail(str(exc), 2)
    _check_setup(spec, model_options)
    try:
        prepare_out(options.out)
    except RunFolderError as exc:
        _fail(str(exc), 2)
    case_dir = options.out / name / spec.folder
    _announce(spec, case_dir, model_options)
    progress = RunProgress(console, spec.max_steps)
    result = _play(spec, options, model_options, name, case_dir, progress)
    _print_result(result, case_dir, time.monotonic() - progress.started)
    if not is_scored(result.status):
        raise typer.Exit(1)


def _model_options(spec: CaseSpec, options: CaseOptions, threads: int | None) -> ModelOptions:
    """The model options of the case: the command line's, and the embedded model's threads
    (--threads, else the cores other work leaves free, as `pos bench` splits them)."""
    fields = options.model_options()
    if threads is None and any(wants_context_per_role(m) for m in spec.models().values()):
        threads = threads_each(1, busy=busy_cores())
    if threads is not None:
        fields["n_threads"] = threads
    # --base-url and the key are the policy's (as run_case and pos bench resolve them), so the
    # case is checked against a bench run with the identity it will record.
    policy = spec.models().get("policy", spec.model)
    return owned_by_policy(ModelOptions(**fields), [policy])


def _check_setup(spec: CaseSpec, options: ModelOptions) -> None:
    """Refuse a broken set-up before anything is written (exit 2): an unknown task or method,
    a model spec that does not parse, and a server model without its key or server (one small
    call each; the embedded and scripted models need neither)."""

    def check_served(model: str, model_options: ModelOptions) -> str | None:
        if effective_server(model, model_options) is None:
            return None
        return preflight(model, model_options)

    try:
        validate_cases([spec])
        check_models([spec], options, check_served)
    except SetupError as exc:
        _fail("the set-up is wrong, nothing was run:\n  " + "\n  ".join(exc.problems), 2)


def _announce(spec: CaseSpec, case_dir: Path, options: ModelOptions) -> None:
    """What is about to be played, by which models, on how many cores, and where it goes."""
    models = ", ".join(f"{r}={m}" for r, m in spec.models().items()) or "none"
    budget = f"{spec.max_steps} steps" if spec.max_steps else "the environment's step budget"
    console.print(
        f"[bold]pos run[/] {shown(spec.env)} {shown(spec.task)}  agent={shown(spec.agent)}  "
        f"{budget}"
    )
    console.print(f"models: {shown(models)}")
    if spec.env_models:
        labels = env_model_labels(spec.env, spec.env_models)
        console.print(
            "environment models: " + shown(", ".join(f"{r}={m}" for r, m in labels.items()))
        )
    embedded = any(wants_context_per_role(m) for m in spec.models().values())
    if embedded and options.n_threads is not None:
        console.print(
            f"embedded model: {options.n_threads} llama.cpp thread(s) of {available_cores()} "
            f"core(s), load {busy_cores():.1f} (--threads to choose)"
        )
    console.print(f"run folder: {shown(case_dir)}")


def _play(
    spec: CaseSpec,
    options: CaseOptions,
    model_options: ModelOptions,
    name: str,
    case_dir: Path,
    progress: RunProgress,
) -> CaseResult:
    """Play the case with its progress lines; the exits of a refused, failed or stopped case."""
    try:
        with _claimed(options.out / name, spec, model_options):
            progress.setting_up()
            return run_case(
                spec,
                case_dir,
                run_name=name,
                options=model_options,
                on_step=progress.on_step,
                on_event=progress.on_event,
                time_limit_s=options.case_timeout,
            )
    except RunFolderError as exc:
        _fail(str(exc), 2)
    except KeyboardInterrupt:
        console.print(
            f"\n[yellow]Interrupted.[/] The partial trace and result are in {shown(case_dir)}"
        )
        raise typer.Exit(130) from None
    except CaseBusyError as exc:
        _fail(f"{exc}; wait for the other pos command to finish, or choose another --run", 1)
    except RecordError as exc:
        _fail(f"{exc.strerror or exc}; free space or choose another --out", 1)


@contextlib.contextmanager
def _claimed(run_dir: Path, spec: CaseSpec, options: ModelOptions) -> Iterator[None]:
    """Inside a `pos bench` run folder, the case is played under the run's lock, with the
    run's settings, and a finished case is never overwritten; elsewhere, a scored result that
    is replaced is said so."""
    if read_config(run_dir) is None:
        earlier = read_result(run_dir / spec.folder)
        if earlier is not None and is_scored(earlier.status):
            console.print(
                f"[yellow]note:[/] replacing the earlier {shown(earlier.status)} result in "
                f"{shown(run_dir / spec.folder)}"
            )
        yield
        return
    folder = RunFolder(run_dir)
    folder.claim_case(spec, options)
    with folder:
        hash_now = RunPlan.of([spec], options).hashes[spec.folder]
        earlier = read_result(run_dir / spec.folder)
        if earlier is not None and finished(earlier, run_dir / spec.folder, hash_now):
            raise RunFolderError(
                f"{spec.folder} is a finished case of the pos bench run {run_dir} "
                f"({earlier.status}); it is kept. Choose another --run to play it again."
            )
        yield


def _spec(
    env: str,
    task: str,
    agent: str,
    role_models: dict[str, str],
    recovery: RecoveryMode,
    max_steps: int | None,
    seed: int | None,
    split: str | None,
    options: CaseOptions,
) -> CaseSpec:
    """The case to play, from the command line; a bad option is refused (exit 2)."""
    bounds = options.checked_bounds()
    profile = options.checked_profile()
    embed = options.checked_embed_model(used=uses_embeddings(agent))
    try:
        canonical_env(env)
    except EnvError as exc:
        raise typer.BadParameter(str(exc), param_hint="'ENV'") from None
    try:
        env_models = resolve_env_models(env, options.requested_env_models())
    except (ValueError, EnvError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--env-model") from None
    loca_root = options.loca_root_option()
    spec = CaseSpec(
        env=env,
        task=task,
        agent=agent,
        role_models=role_models,
        recovery=recovery,
        max_steps=max_steps,
        seed=seed,
        split=split,
        env_models=env_models,
        profile=profile,
        bounds=bounds,
        embed_model=embed,
        env_options={"loca_root": loca_root} if loca_root else {},
        **options.spec_fields(),
    )
    for name in sorted(set(spec.models().values())):
        try:
            parse_spec(name)
        except ModelFailure as failure:
            raise typer.BadParameter(failure.message, param_hint="--model") from None
    return spec


def _print_result(result: CaseResult, case_dir: Path, elapsed: float) -> None:
    colour = "green" if result.success else "red"
    tokens = sum(t.prompt_tokens + t.completion_tokens for t in result.tokens.values())
    console.print(
        f"[{colour}]{shown(result.status)}[/]  steps {result.steps}/{result.max_steps}  "
        f"score {result.score:g}  tokens {tokens}  trapped steps {result.trapped_steps}  "
        f"recoveries {result.recoveries}  {elapsed:.1f}s"
    )
    if result.error:
        console.print(f"[red]error:[/] {shown(result.error)}")
    if (why := _unusable_belief(result)) is not None:
        console.print(
            f"[yellow]note:[/] the belief model produced no usable belief ({shown(why)}); the "
            "embedded 135M model often does, a larger model writes real ones (docs/models.md)"
        )
    if result.context_cuts:
        console.print(
            f"[yellow]note:[/] the history was cut to fit the context window at "
            f"{result.context_cuts} step(s)"
        )
    console.print(f"trace: {shown(case_dir / 'events.jsonl')}  result: result.json")
    console.print(f"See it step by step: [bold]pos view {shown(case_dir)}[/]")


def _unusable_belief(result: CaseResult) -> str | None:
    """Why the final belief holds nothing usable, or None (also when there is none to read)."""
    if not result.final_belief:
        return None
    try:
        return unusable(Belief.from_dict(result.final_belief))
    except (ValueError, KeyError, TypeError):
        return None


def show_step(info: StepInfo) -> None:
    """One line per step of `pos run`: the action and what the step showed."""
    console.print(step_line(info))


def _fail(message: str, code: int) -> NoReturn:
    console.print(f"[red]error:[/] {shown(message)}")
    raise typer.Exit(code)
