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


BREAKPOINTS_HELP = "Send prompt-cache breakpoints (servers that cache only there)."
CACHE_RULE_HELP = (
    "Rule of cached-token estimates: openai, anthropic, dashscope, dashscope-explicit, "
    "llamacpp, llamacpp-ram, none."
)
TIMEOUT_HELP = "Deadline of one model request (default 180 s)."
RETRIES_HELP = "Retries of a model request that timed out or failed (429, 5xx)."
CASE_TIMEOUT_HELP = "Wall-clock limit per case (default: none); unscored when reached."

GENERATION_HELP = "Generation tokens per agent-side call (default: the paper's)."
PROFILE_HELP = (
    f"Model profile: {', '.join(PROFILE_NAMES)} (default: compact for `local`, else standard)."
)
BOUND_HELP = "Override one schema bound, KEY=VALUE (e.g. patch_ops=20); repeatable."
CONTEXT_HELP = "Cut history-based methods' oldest history to fit (default: never)."
HEALTH_HELP = "Trap diagnosis of the PoS variants: paper (Eq. 5-6) or improved."
ENV_MODEL_HELP = (
    "The environment's own model roles (ClinDiag's provider and judge): SPEC or ROLE=SPEC; "
    "repeatable. Default: offline."
)
EMBED_HELP = "PACE's relevance scorer: tfidf (offline), openai:MODEL or dashscope:MODEL."
AGENT_HELP = (
    "Method: pos, raw, the baselines acon, pace, hiagent, lh_harness, the ablations "
    "no_consistency, no_trapping, generic_recovery, or expert."
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
