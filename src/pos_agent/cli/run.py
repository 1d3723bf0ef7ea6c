"""`pos run`: one episode with live progress, a trace and a result file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from pos_agent.agents.base import StepInfo
from pos_agent.bench.case import (
    AGENTS,
    CaseBusyError,
    CaseSpec,
    RecordError,
    run_case,
)
from pos_agent.bench.env_models import env_model_labels, parse_env_models, resolve_env_models
from pos_agent.bench.run_folder import RunFolderError, check_run_name, prepare_out
from pos_agent.cli._common import (
    AGENT_HELP,
    BOUND_HELP,
    CASE_TIMEOUT_HELP,
    CONTEXT_HELP,
    EMBED_HELP,
    ENV_MODEL_HELP,
    GENERATION_HELP,
    HEALTH_HELP,
    LOCA_ROOT_HELP,
    PROFILE_HELP,
    RETRIES_HELP,
    TIMEOUT_HELP,
    checked_bounds,
    checked_embed_model,
    checked_profile,
    console,
    model_options,
    shown,
)
from pos_agent.cli.app import app
from pos_agent.envs import EnvError
from pos_agent.health.window import Diagnosis
from pos_agent.llm import CacheMode, ModelFailure, ModelOptions, parse_spec
from pos_agent.recovery.constraint import RecoveryMode
from pos_agent.trace import is_scored


@app.command()
def run(
    env: Annotated[str, typer.Argument(help="Environment, e.g. alfworld-mini (see `pos envs`).")],
    task: Annotated[str, typer.Argument(help="Task id within the environment, e.g. heat-mug.")],
    agent: Annotated[str, typer.Option(help=AGENT_HELP)] = "pos",
    model: Annotated[
        str,
        typer.Option(help="Model for every role: local, gguf:PATH, openai:MODEL, dashscope:MODEL."),
    ] = "local",
    policy_model: Annotated[
        str | None, typer.Option(help="Override the policy role's model.")
    ] = None,
    belief_model: Annotated[
        str | None, typer.Option(help="Override the belief role's model.")
    ] = None,
    sentinel_model: Annotated[
        str | None, typer.Option(help="Override the sentinel role's model.")
    ] = None,
    recovery: Annotated[
        RecoveryMode,
        typer.Option(
            help="soft: constraint in the prompt (paper); hard: forbidden actions removed; both."
        ),
    ] = "soft",
    health: Annotated[Diagnosis, typer.Option(help=HEALTH_HELP)] = "paper",
    max_steps: Annotated[
        int | None, typer.Option(help="Step budget (default: the environment's).", min=1)
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder that holds runs.")] = Path("runs"),
    run_name: Annotated[
        str | None,
        typer.Option("--run", help="Run name, a folder inside --out (default: the time)."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp).")
    ] = None,
    cache: Annotated[CacheMode, typer.Option(help="Response cache.")] = "off",
    timeout: Annotated[float | None, typer.Option(help=TIMEOUT_HELP, min=0.001)] = None,
    max_retries: Annotated[int | None, typer.Option(help=RETRIES_HELP, min=0)] = None,
    case_timeout: Annotated[float | None, typer.Option(help=CASE_TIMEOUT_HELP, min=0.001)] = None,
    seed: Annotated[int | None, typer.Option(help="Environment seed, where it has one.")] = None,
    split: Annotated[
        str | None,
        typer.Option(help="Split the task is checked against (default: the environment's)."),
    ] = None,
    env_model: Annotated[list[str] | None, typer.Option(help=ENV_MODEL_HELP)] = None,
    generation_tokens: Annotated[int | None, typer.Option(help=GENERATION_HELP, min=16)] = None,
    profile: Annotated[str | None, typer.Option(help=PROFILE_HELP)] = None,
    bound: Annotated[list[str] | None, typer.Option(help=BOUND_HELP)] = None,
    context_window: Annotated[int | None, typer.Option(help=CONTEXT_HELP, min=512)] = None,
    embed_model: Annotated[str, typer.Option(help=EMBED_HELP)] = "tfidf",
    loca_root: Annotated[Path | None, typer.Option(help=LOCA_ROOT_HELP)] = None,
) -> None:
    """Run one episode and write runs/<run>/<case>/events.jsonl and result.json.

    Exit code: 0 when the case was scored (success or failure); 1 when it was not
    (a set-up, harness or infrastructure error, named in the output); 130 after Ctrl-C.

    Example: pos run alfworld-mini heat-mug --agent pos --model local --max-steps 12

    The baselines run with their benchmark's default parameters (agents/context/settings.py,
    the same as the built-in suites'); `pos bench` with a suite YAML sets others.

    Budgets and schema bounds follow the model: the embedded `local` model runs on the compact
    profile, any other model on the paper's settings (--profile, --generation-tokens, --bound).
    """
    if agent not in AGENTS:
        raise typer.BadParameter(f"choose one of {', '.join(AGENTS)}", param_hint="--agent")
    bounds = checked_bounds(bound)
    profile = checked_profile(profile)
    embed = checked_embed_model(embed_model, used=agent == "pace")
    overrides = {
        role: spec
        for role, spec in (
            ("policy", policy_model),
            ("belief", belief_model),
            ("sentinel", sentinel_model),
        )
        if spec
    }
    try:
        env_models = resolve_env_models(env, parse_env_models(env_model))
    except (ValueError, EnvError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--env-model") from None
    spec = CaseSpec(
        env=env,
        task=task,
        agent=agent,
        model=model,
        role_models=overrides,
        recovery=recovery,
        health=health,
        max_steps=max_steps,
        seed=seed,
        split=split,
        env_models=env_models,
        generation_tokens=generation_tokens,
        profile=profile,
        bounds=bounds,
        context_window=context_window,
        embed_model=embed,
        env_options={"loca_root": str(loca_root.expanduser().resolve())} if loca_root else {},
    )
    for name in sorted(set(spec.models().values())):
        try:
            parse_spec(name)
        except ModelFailure as failure:
            raise typer.BadParameter(failure.message, param_hint="--model") from None
    try:
        name = check_run_name(run_name or time.strftime("%Y%m%d-%H%M%S"))
        prepare_out(out)
    except RunFolderError as exc:
        _fail(str(exc), 2)
    case_dir = out / name / spec.folder
    options = ModelOptions(
        **model_options(base_url=base_url, cache=cache, timeout_s=timeout, max_retries=max_retries)
    )
    models = ", ".join(f"{r}={m}" for r, m in spec.models().items()) or "none"
    console.print(
        f"[bold]pos run[/] {shown(env)} {shown(task)}  agent={shown(agent)}  models: {shown(models)}"
    )
    if env_models:
        labels = env_model_labels(env, env_models)
        console.print(
            "environment models: " + shown(", ".join(f"{r}={m}" for r, m in labels.items()))
        )
    console.print(f"trace: {shown(case_dir / 'events.jsonl')}")
    started = time.monotonic()
    try:
        result = run_case(
            spec,
            case_dir,
            run_name=name,
            options=options,
            on_step=_show,
            time_limit_s=case_timeout,
        )
    except KeyboardInterrupt:
        console.print(
            f"\n[yellow]Interrupted.[/] The partial trace and result are in {shown(case_dir)}"
        )
        raise typer.Exit(130) from None
    except CaseBusyError as exc:
        _fail(f"{exc}; wait for the other pos command to finish, or choose another --run", 1)
    except RecordError as exc:
        _fail(f"{exc.strerror or exc}; free space or choose another --out", 1)
    elapsed = time.monotonic() - started
    colour = "green" if result.success else "red"
    tokens = sum(t.prompt_tokens + t.completion_tokens for t in result.tokens.values())
    console.print(
        f"[{colour}]{shown(result.status)}[/]  steps {result.steps}/{result.max_steps}  "
        f"score {result.score:g}  tokens {tokens}  trapped steps {result.trapped_steps}  "
        f"recoveries {result.recoveries}  {elapsed:.1f}s"
    )
    if result.error:
        console.print(f"[red]error:[/] {shown(result.error)}")
    if result.context_cuts:
        console.print(
            f"[yellow]note:[/] the history was cut to fit the context window at "
            f"{result.context_cuts} step(s)"
        )
    console.print(f"result: {shown(case_dir / 'result.json')}")
    console.print(
        f"events: {shown(case_dir / 'events.jsonl')}  "
        "(one JSON object per line; field `event` names its kind)"
    )
    if not is_scored(result.status):
        raise typer.Exit(1)


def _show(info: StepInfo) -> None:
    marks = []
    if info.health is not None:
        marks.append(f"H={info.health:.2f}")
    if info.trapped:
        marks.append(f"[red]TRAPPED {shown(info.pattern or 'no pattern')}[/]")
    if info.recovery:
        marks.append("[yellow]recovery[/]")
    if info.degraded:
        marks.append("[magenta]degraded[/]")
    if info.success:
        marks.append("[green]success[/]")
    line = f"step {info.step:>3}  {shown(f'{info.action[:48]:<48}')}  {' '.join(marks)}"
    if info.tokens:
        line += f"  [dim]{info.tokens} tok[/]"
    console.print(line)


def _fail(message: str, code: int) -> NoReturn:
    console.print(f"[red]error:[/] {shown(message)}")
    raise typer.Exit(code)
