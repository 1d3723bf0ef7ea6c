"""The episode's events: its start and end, each action and observation, each model call (answered
or failed), a role's fallback and a prompt cut to fit the context window."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import Field

from pos_agent.events.base import Event

if TYPE_CHECKING:
    from pos_agent.llm import CacheCount, Completion, ModelFailure


class EpisodeStartEvent(Event):
    """The case begins: what runs, with which models and settings."""

    event: Literal["episode_start"] = "episode_start"
    run: str = Field(description="Run name.")
    spec: dict[str, Any] = Field(default_factory=dict, description="The case spec as given.")
    models: dict[str, str] = Field(default_factory=dict, description="Model spec per role.")
    settings: dict[str, Any] = Field(
        default_factory=dict,
        description="Budgets, schema bounds, profile and clips the agent runs with.",
    )


class EpisodeEndEvent(Event):
    """The case ends (also after Ctrl-C or an error)."""

    event: Literal["episode_end"] = "episode_end"
    status: str = Field(description="success, failure, interrupted, infra_error or error.")
    success: bool = False
    error: str | None = None


class ObservationEvent(Event):
    """What the environment returned at this step."""

    event: Literal["observation"] = "observation"
    text: str = ""
    done: bool = False
    success: bool = False
    score: float = 0.0
    admissible: int = Field(default=0, description="How many admissible actions were offered.")
    invalid_action: bool = Field(default=False, description="The environment refused the action.")


class ActionEvent(Event):
    """The action sent to the environment; `step` is the step it was decided at."""

    event: Literal["action"] = "action"
    action: str
    thought: str = ""


CACHE_SOURCE_HELP = (
    'Where the cache counts come from: "server" (the server reported them), "estimated:<rule>" '
    "(estimated from the prefix shared with an earlier prompt of the episode under a provider "
    'rule, cost/cache.py), or "" (not counted).'
)


class ModelCallEvent(Event):
    """One answered role call: tokens, latency and the parsed output."""

    event: Literal["model_call"] = "model_call"
    role: str = Field(description="policy, belief, sentinel, provider or judge.")
    purpose: str = Field(default="", description="act, init, update, revision, audit, ...")
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    repairs: int = 0
    output: dict[str, Any] | None = Field(default=None, description="The parsed answer.")
    structured_mode: str | None = Field(
        default=None,
        description="How the answer was held to its schema: grammar (local model), json_schema, "
        "json_object_schema, json_object or prompt (servers); None without a schema.",
    )
    usage_note: str | None = Field(
        default=None,
        description="Why the token counts are not the server's own: it sent none, or numbers "
        "that cannot be right (negative, not integers, beyond what the request can produce), "
        "replaced by an estimate. None when they are as reported.",
    )
    cached_tokens: int = Field(
        default=0, description="Prompt tokens read from the provider's prompt cache."
    )
    cache_write_tokens: int = Field(
        default=0, description="Prompt tokens written to the provider's prompt cache."
    )
    cache_source: str = Field(
        default="",
        description=CACHE_SOURCE_HELP,
    )

    @classmethod
    def of(
        cls,
        answer: Completion,
        *,
        step: int | None,
        role: str,
        purpose: str,
        cache: CacheCount | None = None,
    ) -> Self:
        """The event of one answered call (with the cache counts the ledger recorded)."""
        return cls(
            cached_tokens=cache.cached_tokens if cache else 0,
            cache_write_tokens=cache.write_tokens if cache else 0,
            cache_source=cache.source if cache else "",
            step=step,
            role=role,
            purpose=purpose,
            model=answer.model,
            prompt_tokens=answer.usage.prompt_tokens,
            completion_tokens=answer.usage.completion_tokens,
            latency_s=round(answer.latency_s, 4),
            cached=answer.cached,
            repairs=answer.repairs,
            # by_alias: tool arguments are stored under the tools' own names.
            output=(
                answer.parsed.model_dump(mode="json", by_alias=True)
                if answer.parsed is not None
                else None
            ),
            structured_mode=answer.structured_mode,
            usage_note=answer.usage_note,
        )


class ModelFailureEvent(Event):
    """A role call that gave no usable answer (after retries and repairs)."""

    event: Literal["model_failure"] = "model_failure"
    role: str
    purpose: str = ""
    kind: str = Field(description="transport, timeout, schema, empty, truncated or config.")
    message: str = ""
    last_text: str = Field(default="", description="The last reply, clipped to 2,000 chars.")
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @classmethod
    def of(cls, failure: ModelFailure, *, step: int | None, role: str, purpose: str) -> Self:
        """The event of one failed call."""
        return cls(
            step=step,
            role=role,
            purpose=purpose,
            kind=failure.kind,
            message=failure.message,
            last_text=(failure.last_text or "")[:2000],
            prompt_tokens=failure.usage.prompt_tokens,
            completion_tokens=failure.usage.completion_tokens,
        )


class DegradedEvent(Event):
    """A role fell back: the policy's action was repaired or replaced, a belief was kept, or the
    harness caught an error."""

    event: Literal["degraded"] = "degraded"
    role: str
    reason: str = ""
    fallback: str | None = Field(default=None, description="What was used instead.")
    repaired_to: str | None = Field(default=None, description="The admissible action chosen.")
    traceback: str | None = None


class ContextCutEvent(Event):
    """A history-based method's policy prompt was cut to fit the model's context window
    (`--context-window`; its oldest history units first, `agents/fit.py`)."""

    event: Literal["context_cut"] = "context_cut"
    role: str = "policy"
    kept: int = Field(description="History units (turns, summaries, chunks) kept.")
    dropped: int = Field(description="Oldest history units left out.")
    context_window: int = Field(description="The window the prompt had to fit, in tokens.")
