"""`pos run`: one episode with live progress, a trace and a result file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from pos_agent.agents.base import StepInfo
from pos_agent.agents.context.embeddings import check_embed_spec
from pos_agent.agents.settings import PROFILE_NAMES, parse_bounds
from pos_agent.bench.case import AGENTS, CaseSpec, default_loader, run_case
from pos_agent.bench.env_models import env_model_labels, parse_env_models, resolve_env_models
from pos_agent.cli.app import app
from pos_agent.envs import EnvError
from pos_agent.llm import ModelOptions

GENERATION_HELP = (
    "Generation tokens of every agent-side call (default: the paper's, App. D.1: 512 on "
    "execution tasks, 4096 on diagnosis tasks). Roles on the compact profile keep its budgets."
)
PROFILE_HELP = (
    f"Model profile for every role: {', '.join(PROFILE_NAMES)}. Default: compact (tight schema "
    "bounds and budgets) for the embedded `local` model, standard (unbounded, the paper's "
    "budgets) for every other model."
)
BOUND_HELP = (
    "Override one schema bound, KEY=VALUE (a positive integer or none); repeatable. Keys: "
    "thought_chars, action_chars, tool_arg_chars, name_chars, text_chars, patch_ops, init_ops, "
    "evidence_steps, gap_refs, issue_records, audit_issues, global_audit_issues."
)
EMBED_HELP = (
    "PACE's relevance scorer: tfidf (offline lexical TF-IDF cosine, no key; the default), or an "
    "OpenAI-compatible embeddings endpoint: openai:MODEL (OPENAI_API_KEY; OPENAI_BASE_URL for "
    "another server) or dashscope:text-embedding-v4 (DASHSCOPE_API_KEY; the paper's). Each "
    "result records which scorer ran."
)
AGENT_HELP = (
    "Method: raw (the whole trajectory), the paper's baselines acon (history compression), pace "
    "(per-step granularity, glimpse), hiagent (subgoal-folded memory, retrieve) and lh_harness "
    "(manager/executor/auditor rounds), pos and its ablations no_consistency, no_trapping, "
    "generic_recovery; or expert (the environment's planner)."
)
CONTEXT_HELP = (
    "Tokens the raw baseline's prompt and answer must fit; older history is cut (and counted) "
    "beyond it. Default: n_ctx for local models; never cut for a server."
)


def checked_profile(profile: str | None) -> str | None:
    if profile is not None and profile not in PROFILE_NAMES:
        raise typer.BadParameter(f"choose {' or '.join(PROFILE_NAMES)}", param_hint="--profile")
    return profile


def checked_embed_model(spec: str) -> str:
    try:
        return check_embed_spec(spec)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--embed-model") from None


def checked_bounds(bound: list[str] | None) -> dict[str, int | None]:
    try:
        return parse_bounds(bound)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--bound") from None


console = Console(highlight=False, soft_wrap=True)


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
        str,
        typer.Option(
            help="soft: constraint in the prompt (paper); hard: forbidden actions removed; both."
        ),
    ] = "soft",
    max_steps: Annotated[
        int | None, typer.Option(help="Step budget (default: the environment's).", min=1)
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder that holds runs.")] = Path("runs"),
    run_name: Annotated[
        str | None, typer.Option("--run", help="Run name (default: time, agent, env and task).")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp).")
    ] = None,
    cache: Annotated[
        str, typer.Option(help="Response cache: off, read, write or readwrite.")
    ] = "off",
    seed: Annotated[int | None, typer.Option(help="Environment seed, where it has one.")] = None,
    split: Annotated[
        str | None,
        typer.Option(help="Split the task is checked against (default: the environment's)."),
    ] = None,
    env_model: Annotated[
        list[str] | None,
        typer.Option(
            help="The environment's own model roles (clindiag: provider and judge): SPEC for "
            "every role or ROLE=SPEC, repeatable. Default: the offline options (retrieval, "
            "matcher). Example: --env-model openai:gpt-4o-mini."
        ),
    ] = None,
    generation_tokens: Annotated[int | None, typer.Option(help=GENERATION_HELP, min=16)] = None,
    profile: Annotated[str | None, typer.Option(help=PROFILE_HELP)] = None,
    bound: Annotated[list[str] | None, typer.Option(help=BOUND_HELP)] = None,
    context_window: Annotated[int | None, typer.Option(help=CONTEXT_HELP, min=512)] = None,
    embed_model: Annotated[str, typer.Option(help=EMBED_HELP)] = "tfidf",
) -> None:
    """Run one episode and write runs/<run>/<case>/events.jsonl and result.json.

    Example: pos run alfworld-mini heat-mug --agent pos --model local --max-steps 12

    The baselines run with their benchmark's default parameters (agents/context/settings.py,
    the same as the built-in suites'); `pos bench` with a suite YAML sets others.

    Budgets and schema bounds follow the model: the embedded `local` model runs on the compact
    profile, any other model on the paper's settings (--profile, --generation-tokens, --bound).
    """
    if agent not in AGENTS:
        raise typer.BadParameter(f"choose one of {', '.join(AGENTS)}", param_hint="--agent")
    if recovery not in ("soft", "hard", "both"):
        raise typer.BadParameter("choose soft, hard or both", param_hint="--recovery")
    if cache not in ("off", "read", "write", "readwrite"):
        raise typer.BadParameter("choose off, read, write or readwrite", param_hint="--cache")
    bounds = checked_bounds(bound)
    profile = checked_profile(profile)
    embed = checked_embed_model(embed_model)
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
        recovery=recovery,  # type: ignore[arg-type]
        max_steps=max_steps,
        seed=seed,
        split=split,
        env_models=env_models,
        generation_tokens=generation_tokens,
        profile=profile,  # type: ignore[arg-type]
        bounds=bounds,
        context_window=context_window,
        embed_model=embed,
    )
    name = run_name or time.strftime("%Y%m%d-%H%M%S")
    case_dir = out / name / spec.folder
    options = ModelOptions(base_url=base_url, cache_mode=cache)
    models = ", ".join(f"{r}={m}" for r, m in spec.models().items()) or "none"
    console.print(f"[bold]pos run[/] {env} {task}  agent={agent}  models: {models}")
    if env_models:
        labels = env_model_labels(env, env_models)
        console.print("environment models: " + ", ".join(f"{r}={m}" for r, m in labels.items()))
    console.print(f"trace: {case_dir / 'events.jsonl'}")
    started = time.monotonic()
    try:
        result = run_case(
            spec, case_dir, run_name=name, load=default_loader(options), on_step=_show
        )
    except KeyboardInterrupt:
        console.print(f"\n[yellow]Interrupted.[/] The partial trace and result are in {case_dir}")
        raise typer.Exit(130) from None
    elapsed = time.monotonic() - started
    colour = "green" if result.success else "red"
    tokens = sum(t.prompt_tokens + t.completion_tokens for t in result.tokens.values())
    console.print(
        f"[{colour}]{result.status}[/]  steps {result.steps}/{result.max_steps}  score {result.score:g}  "
        f"tokens {tokens}  trapped steps {result.trapped_steps}  recoveries {result.recoveries}  "
        f"{elapsed:.1f}s"
    )
    if result.error:
        console.print(f"[red]error:[/] {result.error}")
    if result.context_cuts:
        console.print(
            f"[yellow]note:[/] the history was cut to fit the context window at "
            f"{result.context_cuts} step(s)"
        )
    console.print(f"result: {case_dir / 'result.json'}")
    console.print(
        f"events: {case_dir / 'events.jsonl'}  (one JSON object per line; field `event` names its kind)"
    )
    if result.status in ("error", "infra_error"):
        raise typer.Exit(1)


def _show(info: StepInfo) -> None:
    marks = []
    if info.health is not None:
        marks.append(f"H={info.health:.2f}")
    if info.trapped:
        marks.append(f"[red]TRAPPED {info.pattern or 'no pattern'}[/]")
    if info.recovery:
        marks.append("[yellow]recovery[/]")
    if info.degraded:
        marks.append("[magenta]degraded[/]")
    if info.success:
        marks.append("[green]success[/]")
    line = f"step {info.step:>3}  {info.action[:48]:<48}  {' '.join(marks)}"
    if info.tokens:
        line += f"  [dim]{info.tokens} tok[/]"
    console.print(line)
