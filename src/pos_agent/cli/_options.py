"""The options `pos run` and `pos bench` share, declared once: one typed `CaseOptions` object.

Each command declares only its own parameters and takes `options: CaseOptions`; the
`case_options` decorator adds the shared ones to the command's signature (so typer lists and
documents them in --help like any other option) and hands them to the command as one object.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any

import typer

from pos_agent.bench.env_models import parse_env_models
from pos_agent.bench.signals import stop_on_signals
from pos_agent.cli.common import (
    BOUND_HELP,
    BREAKPOINTS_HELP,
    CACHE_RULE_HELP,
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
)
from pos_agent.cost import CACHE_RULES
from pos_agent.health.window import Diagnosis
from pos_agent.llm import DEFAULT_CACHE_RULE, CacheMode

# The panels --help groups the options of `pos run` and `pos bench` into.
EPISODE = "Episode"
MODEL = "Model"
BUDGET = "Budget"
OUTPUT = "Output"
ADVANCED = "Advanced"


@dataclass(frozen=True)
class CaseOptions:
    """How the cases of `pos run` and `pos bench` are played: models, budgets, bounds,
    time-outs, retries, cache, health diagnosis and records. Field names are the options'
    names (`--base-url` is `base_url`)."""

    model: str = "local"
    """Model spec for every role (local, gguf:PATH, openai:MODEL, dashscope:MODEL)."""
    health: Diagnosis = "paper"
    """Trap diagnosis of the PoS variants (paper, improved)."""
    out: Path = Path("runs")
    """Folder that holds runs."""
    base_url: str | None = None
    """OpenAI-compatible server URL."""
    cache: CacheMode = "off"
    """Response cache mode."""
    timeout: float | None = None
    """Deadline of one model request in seconds (None: the suite's, else the library's)."""
    max_retries: int | None = None
    """Retries of one model request (None: the suite's, else the library's)."""
    case_timeout: float | None = None
    """Wall-clock limit per case in seconds (None: the suite's, else none)."""
    env_model: list[str] | None = None
    """The environment's own model roles, SPEC or ROLE=SPEC each."""
    generation_tokens: int | None = None
    """Generation tokens of every agent-side call (None: the paper's)."""
    profile: str | None = None
    """Model profile for every role (None: chosen per model)."""
    bound: list[str] | None = None
    """Schema bounds overridden, KEY=VALUE each."""
    context_window: int | None = None
    """Tokens history-based prompts are cut to fit (None: never cut, the paper's policy)."""
    embed_model: str = "tfidf"
    """PACE's relevance scorer."""
    loca_root: Path | None = None
    """LOCA-Bench checkout."""
    cache_breakpoints: bool = False
    """Send explicit prompt-cache breakpoints (ModelOptions.cache_breakpoints)."""
    cache_rule: str = DEFAULT_CACHE_RULE
    """The provider rule of the cached-token estimates (cost/cache.py)."""

    def checked_cache_rule(self) -> str:
        if self.cache_rule not in CACHE_RULES:
            raise typer.BadParameter(
                f"unknown cache rule {self.cache_rule!r}; choose one of {', '.join(CACHE_RULES)}",
                param_hint="--cache-rule",
            )
        return self.cache_rule

    def checked_profile(self) -> str | None:
        return checked_profile(self.profile)

    def checked_bounds(self) -> dict[str, int | None]:
        return checked_bounds(self.bound)

    def checked_embed_model(self, *, used: bool) -> str:
        return checked_embed_model(self.embed_model, used=used)

    def spec_fields(self) -> dict[str, Any]:
        """The CaseSpec fields these options give as they are."""
        return {
            "model": self.model,
            "health": self.health,
            "generation_tokens": self.generation_tokens,
            "context_window": self.context_window,
            "cache_rule": self.checked_cache_rule(),
        }

    def requested_env_models(self) -> dict[str, str]:
        """--env-model as ROLE -> SPEC (ValueError when malformed)."""
        return parse_env_models(self.env_model)

    def model_options(
        self, *, timeout_s: float | None = None, max_retries: int | None = None
    ) -> dict[str, Any]:
        """ModelOptions fields; the command line wins over the given (suite) defaults."""
        options = model_options(
            base_url=self.base_url,
            cache=self.cache,
            timeout_s=self.timeout if self.timeout is not None else timeout_s,
            max_retries=self.max_retries if self.max_retries is not None else max_retries,
        )
        if self.cache_breakpoints:
            options["cache_breakpoints"] = True
        return options

    def loca_root_option(self) -> str | None:
        return str(self.loca_root.expanduser().resolve()) if self.loca_root else None


# The shared parameters as typer sees them: (name, annotation). Defaults come from CaseOptions.
_PARAMETERS: tuple[tuple[str, Any], ...] = (
    (
        "model",
        Annotated[
            str,
            typer.Option(
                help="Model of every role: local, gguf:PATH, openai:MODEL, dashscope:MODEL.",
                metavar="SPEC",
                rich_help_panel=MODEL,
            ),
        ],
    ),
    ("health", Annotated[Diagnosis, typer.Option(help=HEALTH_HELP, rich_help_panel=EPISODE)]),
    (
        "out",
        Annotated[
            Path,
            typer.Option(help="Folder that holds runs.", metavar="DIR", rich_help_panel=OUTPUT),
        ],
    ),
    (
        "base_url",
        Annotated[
            str | None,
            typer.Option(
                help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp).",
                metavar="URL",
                rich_help_panel=MODEL,
            ),
        ],
    ),
    ("cache", Annotated[CacheMode, typer.Option(help="Response cache.", rich_help_panel=OUTPUT)]),
    (
        "timeout",
        Annotated[
            float | None,
            typer.Option(help=TIMEOUT_HELP, min=0.001, metavar="SECONDS", rich_help_panel=BUDGET),
        ],
    ),
    (
        "max_retries",
        Annotated[
            int | None, typer.Option(help=RETRIES_HELP, min=0, metavar="N", rich_help_panel=BUDGET)
        ],
    ),
    (
        "case_timeout",
        Annotated[
            float | None,
            typer.Option(
                help=CASE_TIMEOUT_HELP, min=0.001, metavar="SECONDS", rich_help_panel=BUDGET
            ),
        ],
    ),
    (
        "env_model",
        Annotated[
            list[str] | None,
            typer.Option(help=ENV_MODEL_HELP, metavar="SPEC", rich_help_panel=MODEL),
        ],
    ),
    (
        "generation_tokens",
        Annotated[
            int | None,
            typer.Option(help=GENERATION_HELP, min=16, metavar="TOKENS", rich_help_panel=BUDGET),
        ],
    ),
    (
        "profile",
        Annotated[
            str | None, typer.Option(help=PROFILE_HELP, metavar="NAME", rich_help_panel=ADVANCED)
        ],
    ),
    (
        "bound",
        Annotated[
            list[str] | None,
            typer.Option(help=BOUND_HELP, metavar="KEY=VALUE", rich_help_panel=ADVANCED),
        ],
    ),
    (
        "context_window",
        Annotated[
            int | None,
            typer.Option(help=CONTEXT_HELP, min=512, metavar="TOKENS", rich_help_panel=BUDGET),
        ],
    ),
    (
        "embed_model",
        Annotated[str, typer.Option(help=EMBED_HELP, metavar="SPEC", rich_help_panel=ADVANCED)],
    ),
    (
        "loca_root",
        Annotated[
            Path | None, typer.Option(help=LOCA_ROOT_HELP, metavar="DIR", rich_help_panel=ADVANCED)
        ],
    ),
    (
        "cache_breakpoints",
        Annotated[
            bool,
            typer.Option("--cache-breakpoints", help=BREAKPOINTS_HELP, rich_help_panel=ADVANCED),
        ],
    ),
    (
        "cache_rule",
        Annotated[
            str, typer.Option(help=CACHE_RULE_HELP, metavar="RULE", rich_help_panel=ADVANCED)
        ],
    ),
)
_DEFAULTS = {f.name: f.default for f in fields(CaseOptions)}
if {name for name, _ in _PARAMETERS} != set(_DEFAULTS):
    raise AssertionError("every CaseOptions field is a shared command-line option")


def case_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command` the shared options: they join its signature (after its own) and reach
    it as `options: CaseOptions`."""
    own = inspect.signature(command, eval_str=True)
    shared = [
        inspect.Parameter(
            name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=_DEFAULTS[name], annotation=kind
        )
        for name, kind in _PARAMETERS
    ]
    parameters = [p for p in own.parameters.values() if p.name != "options"] + shared

    @functools.wraps(command)
    def with_options(**values: Any) -> None:
        options = CaseOptions(**{name: values.pop(name) for name, _ in _PARAMETERS})
        # Ctrl-C, SIGTERM and SIGHUP, at any point (set-up and pre-flight included), exit 130.
        with stop_on_signals():
            try:
                command(options=options, **values)
            except KeyboardInterrupt:
                console.print(
                    "\n[yellow]Interrupted[/] before any case started; nothing to resume."
                )
                raise typer.Exit(130) from None

    with_options.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    return with_options
