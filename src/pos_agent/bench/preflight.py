"""Checks before the first case starts, so that a broken set-up is refused, never scored.

    validate_cases(specs)            methods, duplicate cases, model specs, task ids (no model call)
    check_models(specs, options)     one tiny structured call per distinct model spec

Both raise SetupError with every problem found and what to do about it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel

from pos_agent.bench.case import AGENTS, CaseSpec
from pos_agent.envs import EnvError, list_tasks
from pos_agent.llm import Message, ModelFailure, ModelOptions, load_model, parse_spec


class SetupError(ValueError):
    """The cases cannot run as configured; the message lists each problem and its fix."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


def validate_cases(specs: Sequence[CaseSpec]) -> None:
    """Refuse unknown methods, a case listed twice, unparsable model specs and task ids the
    environment does not have (a typo in a suite's task list), before anything runs."""
    problems: list[str] = []
    unknown_agents = sorted({s.agent for s in specs} - set(AGENTS))
    if unknown_agents:
        problems.append(f"unknown method(s) {unknown_agents}; choose from {', '.join(AGENTS)}")
    counts = Counter(spec.folder for spec in specs)
    twice = sorted(folder for folder, n in counts.items() if n > 1)
    if twice:
        problems.append(f"case(s) listed more than once: {', '.join(twice)}")
    for spec in sorted(model_specs(specs)):
        try:
            parse_spec(spec)
        except ModelFailure as failure:
            problems.append(failure.message)
    problems += _unknown_tasks(specs)
    if problems:
        raise SetupError(problems)


def model_specs(specs: Sequence[CaseSpec]) -> set[str]:
    """Every distinct model spec the cases use, over all roles."""
    return {model for spec in specs for model in spec.models().values()}


def _unknown_tasks(specs: Sequence[CaseSpec]) -> list[str]:
    groups: dict[tuple[str, str | None, str], list[CaseSpec]] = {}
    for spec in specs:
        options = json.dumps(spec.env_options, sort_keys=True, default=repr)
        groups.setdefault((spec.env, spec.split, options), []).append(spec)
    problems = []
    for (env, split, _), group in groups.items():
        try:
            known = {t.task_id for t in list_tasks(env, split, **group[0].env_options)}
        except (EnvError, ValueError, OSError) as exc:
            problems.append(f"cannot list the tasks of {env}: {exc}")
            continue
        missing = sorted({s.task for s in group} - known)
        if missing:
            where = f"{env} ({split})" if split else env
            problems.append(
                f"{where} has no task(s) {', '.join(missing)}; `pos envs {env}` lists them"
            )
    return problems


# -- one real call per model ---------------------------------------------------------------------

Preflight = Callable[[str, ModelOptions], "str | None"]

_PROBE = [
    Message("system", "You are a calculator that answers in JSON."),
    Message("user", 'What is 2 + 3? Reply with status "ok" and the answer.'),
]


class _Probe(BaseModel):
    status: Literal["ok"]
    answer: int


def preflight(spec: str, options: ModelOptions) -> str | None:
    """None when `spec` answers one small structured call, else what is wrong and what to do.

    A stand-in with the shape of the LLM layer's `preflight`, doing what `pos doctor` does for
    one model: load it and make one schema-constrained call, with few retries and no cache (a
    replayed answer proves nothing about the server).
    """
    probe_options = options.model_copy(
        update={
            "max_retries": min(options.max_retries, 1),
            "backoff_cap_s": min(options.backoff_cap_s, 1.0),
            "cache_mode": "off",
        }
    )
    try:
        load_model(spec, probe_options).complete(_PROBE, schema=_Probe, max_tokens=64)
    except ModelFailure as failure:
        return f"{failure}; {_advice(failure)}"
    return None


def _advice(failure: ModelFailure) -> str:
    if failure.kind == "config":
        return "docs/models.md lists the model specs and the settings each one needs"
    if failure.kind in ("transport", "timeout"):
        return (
            "check that the server is running and reachable (--base-url, usually ending in /v1) "
            "and that the key variable is set"
        )
    return (
        "the model answered, but not in the required shape; use a stronger model or a server "
        "with JSON-schema output (or --no-preflight to run anyway)"
    )


def check_models(
    specs: Sequence[CaseSpec], options: ModelOptions, check: Preflight = preflight
) -> None:
    """One pre-flight call per distinct model spec; SetupError naming each broken one."""
    problems = []
    for model in sorted(model_specs(specs)):
        advice = check(model, options)
        if advice is not None:
            problems.append(f"model {model}: {advice}")
    if problems:
        raise SetupError(problems)
