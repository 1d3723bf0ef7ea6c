"""What Raw and the four baselines share: one backbone model behind every call.

Each of them is wired by the harness the same way (token ledger, trace, step callback, the
policy's limits and temperature, paper App. D.1), so the wiring is one typed set of keyword
options and one base class; an agent adds only what its method needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict, Unpack

from pydantic import BaseModel

from pos_agent.agents.base import Episode, RoleCaller, StepCallback, StepInfo, observation_event
from pos_agent.agents.fit import fit_to_window, schema_tokens
from pos_agent.envs import Environment, Observation
from pos_agent.events import ContextCutEvent
from pos_agent.llm import Message, Model, TokenLedger
from pos_agent.roles.limits import RoleLimits, paper_generation_tokens, role_limits
from pos_agent.trace import TraceWriter


class BackboneOptions(TypedDict, total=False):
    """How the harness wires a one-backbone agent; every key may be left out."""

    ledger: TokenLedger | None
    """Where the calls' tokens are counted; None: a ledger of the agent's own."""
    trace: TraceWriter | None
    """Where the calls and steps are traced; None: not traced."""
    on_step: StepCallback | None
    """Told after every environment step (the terminal display listens)."""
    limits: RoleLimits | None
    """The policy's budget and schema bounds; None: the paper's for the environment."""
    temperature: float
    """Sampling temperature of every call (0.0 when left out, paper App. D.1)."""
    context_window: int | None
    """Tokens a policy prompt plus its answer must fit in (`agents/fit.py`, the same rule for
    every history-based method); None or left out: the history is never cut."""
    generation_cap: int | None
    """The case's generation length (paper App. D.1): no call of the method, its own summaries,
    plans and reports and their retries included, asks for more; None or left out: the paper's
    for the environment."""


class BackboneAgent:
    """The shared set-up of an agent whose every call uses one backbone model."""

    def __init__(self, model: Model, **options: Unpack[BackboneOptions]) -> None:
        self.model = model
        self.ledger = options.get("ledger") or TokenLedger()
        self.call = RoleCaller(self.ledger, options.get("trace"))
        self.on_step = options.get("on_step")
        self.limits = options.get("limits")
        self.temperature = options.get("temperature", 0.0)
        self.context_window = options.get("context_window")
        self.generation_cap = options.get("generation_cap")

    def fitted_prompt(
        self,
        build: Callable[[int], list[Message]],
        units: int,
        *,
        step: int,
        max_tokens: int,
        schema: type[BaseModel] | None,
        episode: Episode,
    ) -> list[Message]:
        """The policy prompt `build(dropped)` with as few of its `units` oldest history units
        left out as makes it fit the context window with its answer (and the answer's schema,
        which some backends write into the prompt); a cut is traced and counted."""
        fitted = fit_to_window(
            build, units, self.context_window, max_tokens, reserved=schema_tokens(schema)
        )
        if fitted.dropped and self.context_window is not None:
            episode.context_cuts += 1
            self.call.emit(
                ContextCutEvent(
                    step=step,
                    kept=fitted.kept,
                    dropped=fitted.dropped,
                    context_window=self.context_window,
                )
            )
        return fitted.messages

    def policy_limits(self, env: Environment) -> RoleLimits:
        """The policy's limits: the harness's, else the paper's budget for this environment."""
        return self.limits or role_limits(
            "policy",
            model=self.model.spec,
            generation_tokens=paper_generation_tokens(env.kind, env.name),
        )

    def internal_cap(self, env: Environment) -> int:
        """The cap of the method's own calls: the case's generation length (`generation_cap`),
        else the paper's for this environment."""
        return self.generation_cap or paper_generation_tokens(env.kind, env.name)

    def record_step(
        self,
        episode: Episode,
        step: int,
        action: str,
        observation: Observation,
        *,
        degraded: bool,
    ) -> None:
        """The environment answered `action`, ending step `step`: counted, the observation
        traced, and the step callback told."""
        episode.steps = step
        self.call.emit(observation_event(step, observation))
        if self.on_step is not None:
            info = StepInfo(
                step, action, observation.success, degraded=degraded, tokens=self.call.tokens()
            )
            self.on_step(info)
