"""What `pos run` and `pos bench` share: the console, and the model options a user sets on the
command line. Options with a closed set of values are annotated with the library's Literal
types (`RecoveryMode`, `CacheMode`), so --help lists the values and bad ones are refused
without a second list here."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from pos_agent.llm import ModelFailure, printable
from pos_agent.roles.limits import PROFILE_NAMES, parse_bounds

# Text from models, servers, tools, environments and files is printed through `shown`, so that
# a reply such as "[/api/cart]" is data, never rich markup (which it would break or swallow),
# and terminal control bytes (ESC/CSI/OSC sequences, carriage returns, bidi overrides) arrive
# as visible escapes, never as commands to the terminal.
console = Console(highlight=False, soft_wrap=True, emoji=False)


def shown(value: object) -> str:
    """`value` as text that rich prints literally and the terminal cannot obey."""
    return escape(printable(value))


def progress_bar(on: Console) -> Progress:
    """The bar of a long command: done of total, time spent and left. Its description is
    printed literally (it may hold case names)."""
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=on,
    )


def model_options(
    *,
    base_url: str | None,
    cache: str,
    timeout_s: float | None,
    max_retries: int | None,
) -> dict[str, Any]:
    """ModelOptions fields from the command line; unset ones keep the library defaults."""
    options: dict[str, Any] = {"base_url": base_url, "cache_mode": cache}
    if timeout_s is not None:
        options["timeout_s"] = timeout_s
    if max_retries is not None:
        options["max_retries"] = max_retries
    return options


BREAKPOINTS_HELP = (
    "Send the prompts' explicit prompt-cache breakpoints (cache_control on the text part that "
    "ends at each, at most 4 per request) to an OpenAI-compatible server, for servers that "
    "cache only there: Anthropic models through a gateway such as OpenRouter, DashScope's "
    "explicit cache. OpenAI, vLLM and llama.cpp cache prefixes automatically and need none. "
    "Off (default): requests as always. Recorded in the run's settings."
)
CACHE_RULE_HELP = (
    "Provider rule of the cached-token estimate for calls whose server reports no cache "
    "counts: openai (default), anthropic, dashscope, dashscope-explicit, llamacpp, "
    "llamacpp-ram, none. Recorded in each result; pos report names it."
)
TIMEOUT_HELP = (
    "Deadline of one model request in seconds, the whole reply included (default 180); a server that does not answer in "
    "time is retried, then the case ends as an unscored infra_error."
)
RETRIES_HELP = "Retries of a model request after a timeout, HTTP 429/5xx or a dropped connection."
CASE_TIMEOUT_HELP = (
    "Wall-clock limit per case in seconds (default: none). A case that reaches it is not scored "
    "(infra_error): step budgets, not wall time, are the paper's budget."
)

GENERATION_HELP = (
    "Generation tokens of every agent-side call (default: the paper's, App. D.1: 512 on "
    "ALFWorld and other execution tasks, 4096 on LOCA-Bench, RCA and ClinDiag). Roles on the "
    "compact profile keep its budgets."
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
CONTEXT_HELP = (
    "Cut the oldest history of every history-based method (raw, acon, pace, hiagent) so that "
    "its prompt and answer fit this many tokens (PoS conditions on its belief, not a "
    "transcript; each cut traced and counted; recorded in the settings hash). Default: never cut, for "
    "every method and model (the paper's policy): a prompt that does not fit the model's "
    "window ends the case as a scored failure with reason context_overflow."
)
HEALTH_HELP = (
    "Trap diagnosis of the PoS variants: paper (Eq. 5-6, the default) or improved (stays right "
    "on large beliefs; see README 'Trap monitor')."
)
ENV_MODEL_HELP = (
    "The environment's own model roles (clindiag: provider and judge): SPEC for every role or "
    "ROLE=SPEC, repeatable. Default: the offline options (retrieval, matcher). Example: "
    "--env-model openai:gpt-4o-mini."
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
LOCA_ROOT_HELP = "LOCA-Bench checkout (default: $POS_LOCA_ROOT, else `pos data get loca`'s)."


def checked_profile(profile: str | None) -> str | None:
    if profile is not None and profile not in PROFILE_NAMES:
        raise typer.BadParameter(f"choose {' or '.join(PROFILE_NAMES)}", param_hint="--profile")
    return profile


def checked_bounds(bound: list[str] | None) -> dict[str, int | None]:
    try:
        return parse_bounds(bound)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--bound") from None


def checked_embed_model(spec: str, *, used: bool) -> str:
    """The --embed-model spec; when a PACE case will use it, its key and client are checked
    now (no request is made), so a broken set-up stops the command before any case runs."""
    # Imported here: PACE's scorer needs numpy (the `bench` extra), and this module is shared
    # by commands that run with the `cli` extra alone (`pos doctor`).
    from pos_agent.agents.context.embeddings import LEXICAL_SPEC, check_embed_spec, load_embedder

    try:
        checked = check_embed_spec(spec)
        if used and checked != LEXICAL_SPEC:
            load_embedder(checked)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--embed-model") from None
    except ModelFailure as failure:
        raise typer.BadParameter(failure.message, param_hint="--embed-model") from None
    return checked
