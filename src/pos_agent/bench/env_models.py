"""Models an environment takes from the harness (ClinDiag's provider and judge).

The paper fixes one LLM for the benchmark's own roles, identical for every method and
backbone. The harness builds it from `--env-model` (or a suite's `env_model`), wraps it in a
`TracedModel` so each call is a `model_call` event of its role and counts in the case's token
ledger, and passes it to the environment, which never loads a model itself. A role left out
uses the environment's offline option (ClinDiag: `retrieval`, `matcher`), labelled as such in
the result.

    --env-model openai:gpt-4o-mini            every role of the environment
    --env-model judge=openai:gpt-4o-mini      one role (repeat the option for others)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pos_agent.envs import canonical_env, env_model_roles
from pos_agent.events import ModelCallEvent, ModelFailureEvent
from pos_agent.llm import (
    CallWrapper,
    Completion,
    Model,
    ModelFailure,
    Request,
    TokenLedger,
    parse_spec,
)
from pos_agent.trace import TraceWriter

OFFLINE_LABEL = "{name} (offline)"
StepSource = Callable[[], int | None]


def parse_env_models(values: Sequence[str] | str | None) -> dict[str, str]:
    """`SPEC` (every role, key "*") or `ROLE=SPEC` entries as {role or "*": spec}.

    Raises ValueError for an empty value or a role named twice.
    """
    if values is None:
        return {}
    items = [values] if isinstance(values, str) else list(values)
    parsed: dict[str, str] = {}
    for item in items:
        text = item.strip()
        role, equals, spec = text.partition("=")
        key, value = (
            (role.strip(), spec.strip()) if equals and role.strip().isidentifier() else ("*", text)
        )
        if not value:
            raise ValueError(f"--env-model {item!r}: give SPEC or ROLE=SPEC (e.g. judge=local)")
        if key in parsed:
            raise ValueError(f"--env-model names {key!r} twice")
        parsed[key] = value
    return parsed


def resolve_env_models(env: str, requested: dict[str, str]) -> dict[str, str]:
    """{role: spec} for every model role of `env`, offline options filled in.

    Raises ValueError when the environment has no such role (or none at all).
    """
    name = canonical_env(env)
    roles = env_model_roles(name)
    if requested and not roles:
        raise ValueError(
            f"{name} takes no environment model (--env-model / env_model is for environments "
            "with their own model roles, such as clindiag's provider and judge)"
        )
    unknown = sorted(set(requested) - set(roles) - {"*"})
    if unknown:
        raise ValueError(
            f"{name} has no model role {', '.join(unknown)}; its roles: {', '.join(roles)}"
        )
    everyone = requested.get("*")
    chosen = {role: requested.get(role) or everyone or offline for role, offline in roles.items()}
    for role, spec in chosen.items():
        if spec != roles[role]:
            try:
                parse_spec(spec)
            except ModelFailure as failure:
                raise ValueError(
                    f"{role}: {failure.message}, or {roles[role]!r} (the offline option)"
                ) from None
    return chosen


def env_model_labels(env: str, chosen: dict[str, str]) -> dict[str, str]:
    """What the result records per role: the model spec, or `<option> (offline)`."""
    roles = env_model_roles(canonical_env(env))
    return {
        role: OFFLINE_LABEL.format(name=spec) if spec == roles.get(role) else spec
        for role, spec in chosen.items()
    }


class TracedModel(CallWrapper):
    """A `Model` that records each call in the case's ledger and trace under a fixed role.

    The environment calls it like any model; the harness sets `step_source` once the
    environment exists, so the events and ledger rows carry the step being played.
    """

    def __init__(
        self,
        inner: Model,
        role: str,
        ledger: TokenLedger,
        trace: TraceWriter | None,
        step_source: StepSource = lambda: None,
    ) -> None:
        self.inner = inner
        self.role = role
        self.spec = inner.spec
        self.ledger = ledger
        self.trace = trace
        self.step_source = step_source

    def answer(self, request: Request) -> Completion:
        # The harness fixed the role: a provider call is accounted as the provider's.
        purpose = request.purpose
        step = self.step_source()
        started = time.perf_counter()
        try:
            answer = replace(request, role=self.role).send(self.inner)
        except ModelFailure as failure:
            if not failure.latency_s:
                failure.latency_s = time.perf_counter() - started
            self.ledger.record(self.role, failure, step)
            self._emit_failure(step, purpose, failure)
            raise
        self.ledger.record(self.role, answer, step)
        self._emit_call(step, purpose, answer)
        return answer

    def _emit_call(self, step: int | None, purpose: str, answer: Completion) -> None:
        if self.trace is not None:
            self.trace.emit(ModelCallEvent.of(answer, step=step, role=self.role, purpose=purpose))

    def _emit_failure(self, step: int | None, purpose: str, failure: ModelFailure) -> None:
        if self.trace is not None:
            self.trace.emit(
                ModelFailureEvent.of(failure, step=step, role=self.role, purpose=purpose)
            )


def build_env_models(
    chosen: dict[str, str],
    env: str,
    load: Callable[[str, str], Model],
    ledger: TokenLedger,
    trace: TraceWriter | None,
) -> tuple[dict[str, Any], list[TracedModel]]:
    """The make_env options for the chosen roles, and the traced models among them.

    An offline option goes to the environment as its name; a model spec is loaded with
    `load(spec, role)` and wrapped in a TracedModel.
    """
    roles = env_model_roles(canonical_env(env))
    options: dict[str, Any] = {}
    traced: list[TracedModel] = []
    for role, spec in chosen.items():
        if spec == roles.get(role):
            options[role] = spec
            continue
        model = TracedModel(load(spec, role), role, ledger, trace)
        options[role] = model
        traced.append(model)
    return options, traced
