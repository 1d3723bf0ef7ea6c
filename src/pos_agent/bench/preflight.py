"""Checks before the first case starts, so that a broken set-up is refused, never scored.

    validate_cases(specs)            methods, duplicate cases, model specs, task ids (no model call)
    check_models(specs, options)     one tiny structured call per model a case may call

Both raise SetupError with every problem found and what to do about it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence

from pos_agent.bench.case import AGENTS, CaseSpec
from pos_agent.bench.identity import called_models
from pos_agent.envs import EnvError, list_tasks
from pos_agent.llm import ROLES, ModelFailure, ModelOptions, parse_spec, preflight


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
    """Every distinct model spec the cases may call, over all roles (the environments' own
    roles, such as ClinDiag's provider and judge, included)."""
    return set(model_roles(specs))


def model_roles(specs: Sequence[CaseSpec]) -> dict[str, list[str]]:
    """{model spec: the roles that call it}, over every case."""
    roles: dict[str, set[str]] = {}
    for spec in specs:
        for role, model in called_models(spec).items():
            roles.setdefault(model, set()).add(role)
    return {model: sorted(names, key=_role_order) for model, names in sorted(roles.items())}


def _role_order(role: str) -> tuple[int, str]:
    return (ROLES.index(role) if role in ROLES else len(ROLES), role)


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


def check_models(
    specs: Sequence[CaseSpec], options: ModelOptions, check: Preflight = preflight
) -> None:
    """One pre-flight call per distinct model spec a case may call (policy, belief, Sentinel,
    and the environment's provider and judge), before any case runs; SetupError naming each
    broken one and the roles that use it."""
    problems = []
    for model, roles in model_roles(specs).items():
        advice = check(model, options)
        if advice is not None:
            problems.append(f"model {model} ({', '.join(roles)}): {advice}")
    if problems:
        raise SetupError(problems)
