"""Environment names, task listings and the `make_env` factory.

Backends are imported only when an environment is made, so listing tasks and importing
`pos_agent.envs` never start a JVM or load a planner.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pos_agent.envs._types import EnvError, Environment, TaskSpec

ENV_NAMES = (
    "alfworld",
    "alfworld-mini",
    "scienceworld",
    "textworld-express",
    "clindiag",
    "rca",
    "rca-nezha",
    "loca",
)
_ALIASES = {
    "alfworld_mini": "alfworld-mini",
    "alfworldmini": "alfworld-mini",
    "sciworld": "scienceworld",
    "science-world": "scienceworld",
    "textworld_express": "textworld-express",
    "textworldexpress": "textworld-express",
    "twx": "textworld-express",
    "clin-diag": "clindiag",
    "clin_diag": "clindiag",
    "rca_nezha": "rca-nezha",
    "nezha": "rca-nezha",
    "loca-bench": "loca",
    "loca_bench": "loca",
    "locabench": "loca",
}
# Options each environment accepts besides max_steps, split and seed.
_OPTIONS: dict[str, set[str]] = {
    "alfworld": {"expert"},
    "alfworld-mini": {"expert"},
    "scienceworld": {"simplifications"},
    "textworld-express": {"game_params"},
    "clindiag": {"data_dir", "provider", "judge"},
    "rca": {"data_dir", "max_tool_calls"},
    "rca-nezha": {"data_dir", "max_tool_calls"},
    "loca": {
        "loca_root",
        "workdir",
        "runtime_dir",
        "keep_workspace",
        "setup_timeout",
        "evaluate_timeout",
        "openai_schemas",
    },
}
# Options `list_tasks` accepts (a suite passes its env_options through).
_LIST_OPTIONS = {
    "clindiag": {"data_dir"},
    "rca": {"data_dir"},
    "rca-nezha": {"data_dir"},
    "loca": {"loca_root"},
}


def canonical_env(env: str) -> str:
    """The registered name for an environment name or alias."""
    key = env.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in ENV_NAMES:
        raise EnvError(f"Unknown environment {env!r}; use one of {', '.join(ENV_NAMES)}.")
    return key


def env_model_roles(env: str) -> dict[str, str]:
    """The model roles an environment takes from the harness, each with its offline option
    (used when no model is given): ClinDiag's provider and judge; none for the others."""
    name = canonical_env(env)
    if name == "clindiag":
        from pos_agent.envs.clindiag import MODEL_ROLES

        return dict(MODEL_ROLES)
    return {}


def accepts_option(env: str, option: str) -> bool:
    """Whether `make_env` takes this option for the environment (e.g. `workdir` for loca)."""
    return option in _OPTIONS[canonical_env(env)]


def list_envs() -> list[str]:
    """Names accepted by `make_env` and `list_tasks`."""
    return list(ENV_NAMES)


def _check_options(name: str, options: Mapping[str, Any]) -> None:
    """Raise EnvError naming the options `name` does not accept, and those it does."""
    unknown = set(options) - _OPTIONS[name]
    if unknown:
        accepted = ", ".join(sorted(_OPTIONS[name])) or "none"
        raise EnvError(
            f"Unknown option(s) for {name}: {', '.join(sorted(unknown))}; accepted: {accepted}."
        )


def list_tasks(env: str, split: str | None = None, **options: Any) -> list[TaskSpec]:
    """The tasks of one environment and split (the environment's default split if None).

    For `alfworld` this raises EnvError naming `alfworld-download` when the data are missing;
    for the diagnosis environments, naming where the data go. Options: `data_dir` for
    clindiag, rca and rca-nezha (other make_env options are accepted and ignored, so a suite
    can pass its env_options).
    """
    name = canonical_env(env)
    _check_options(name, options)
    data_dir = options.get("data_dir") if "data_dir" in _LIST_OPTIONS.get(name, set()) else None
    if name == "clindiag":
        from pos_agent.envs.clindiag import list_clindiag_tasks

        return list_clindiag_tasks(split, data_dir)
    if name in ("rca", "rca-nezha"):
        from pos_agent.envs.rca import list_rca_tasks

        return list_rca_tasks(name, split, data_dir)
    if name == "loca":
        from pos_agent.envs.loca.cases import list_loca_tasks

        return list_loca_tasks(split, options.get("loca_root"))
    if name in ("alfworld", "alfworld-mini"):
        from pos_agent.envs.alfworld import list_mini_tasks, list_official_tasks

        return list_mini_tasks(split) if name == "alfworld-mini" else list_official_tasks(split)
    if name == "scienceworld":
        from pos_agent.envs.scienceworld import list_scienceworld_tasks

        return list_scienceworld_tasks(split)
    from pos_agent.envs.textworld_express import list_twx_tasks

    return list_twx_tasks(split)


def make_env(
    env: str,
    task: str,
    *,
    max_steps: int | None = None,
    split: str | None = None,
    seed: int | None = None,
    **options: Any,
) -> Environment:
    """Create one task instance; close it (or use it as a context manager) when done.

    `max_steps` is the step budget (defaults: ALFWorld 50, ScienceWorld 100,
    TextWorldExpress 100). `seed` selects the instance where the benchmark has several
    (ScienceWorld variation, TextWorldExpress seed); ALFWorld games are fixed by `task`.
    Options: ALFWorld `expert` (bool, compute the planner expert; default True);
    ScienceWorld `simplifications` (the package's comma-separated string);
    TextWorldExpress `game_params` (dict or "key=value,..." string).
    Diagnosis (budget = tool calls for ClinDiag, 30; decision turns for RCA, 50): ClinDiag
    `data_dir`, `provider` ("retrieval" or a Model), `judge` ("matcher" or a Model) — the
    environment never loads a model, the harness passes them (`env_model_roles`); RCA
    `data_dir`, `max_tool_calls` (150). `rca` needs `data_dir` (or POS_RCA_DATA); `rca-nezha`
    defaults to ../shared/data/rca-nezha.
    LOCA-Bench (`loca`; task `<Task>-<length>`, seed 42/123/456/789/2024, budget 100 tool
    calls): `loca_root` (default $POS_LOCA_ROOT or ../shared/vendor/LOCA-bench), `workdir`
    (per-case folder for generated data; default a temporary one), `runtime_dir`,
    `keep_workspace`, `setup_timeout` (seconds, 3600), `evaluate_timeout` (seconds, 1800),
    `openai_schemas` (LOCA's fix_schema_for_openai; `pos bench` sets it for OpenAI models).
    """
    name = canonical_env(env)
    _check_options(name, options)
    builders: dict[str, Callable[[], Environment]] = {
        "alfworld": lambda: _make_alfworld(name, task, split, seed, max_steps, options),
        "alfworld-mini": lambda: _make_alfworld(name, task, split, seed, max_steps, options),
        "scienceworld": lambda: _make_scienceworld(task, split, seed, max_steps, options),
        "textworld-express": lambda: _make_twx(task, split, seed, max_steps, options),
        "clindiag": lambda: _make_clindiag(task, split, max_steps, options),
        "rca": lambda: _make_rca(name, task, split, max_steps, options),
        "rca-nezha": lambda: _make_rca(name, task, split, max_steps, options),
        "loca": lambda: _make_loca(task, split, seed, max_steps, options),
    }
    return builders[name]()


def _make_alfworld(
    name: str,
    task: str,
    split: str | None,
    seed: int | None,
    max_steps: int | None,
    options: dict[str, Any],
) -> Environment:
    from pos_agent.envs.alfworld import make_alfworld_env

    # ALFWorld games are deterministic: a seed has nothing to select, so it is ignored.
    del seed
    return make_alfworld_env(
        name, task, split=split, max_steps=max_steps, expert=bool(options.get("expert", True))
    )


def _make_scienceworld(
    task: str, split: str | None, seed: int | None, max_steps: int | None, options: dict[str, Any]
) -> Environment:
    from pos_agent.envs.scienceworld import ScienceWorldEnvironment

    return ScienceWorldEnvironment(
        task,
        split=split,
        seed=seed,
        max_steps=max_steps,
        simplifications=str(options.get("simplifications", "")),
    )


def _make_twx(
    task: str, split: str | None, seed: int | None, max_steps: int | None, options: dict[str, Any]
) -> Environment:
    from pos_agent.envs.textworld_express import TextWorldExpressEnvironment

    return TextWorldExpressEnvironment(
        task, split=split, seed=seed, max_steps=max_steps, game_params=options.get("game_params")
    )


def _make_clindiag(
    task: str, split: str | None, max_steps: int | None, options: dict[str, Any]
) -> Environment:
    from pos_agent.envs.clindiag import ClinDiagEnvironment

    # Cases are fixed records: a seed has nothing to select.
    return ClinDiagEnvironment(
        task,
        split=split,
        max_steps=max_steps,
        data_dir=options.get("data_dir"),
        provider=options.get("provider") or "retrieval",
        judge=options.get("judge") or "matcher",
    )


Number = TypeVar("Number", int, float)


def _number_option(
    options: dict[str, Any], key: str, kind: type[Number], what: str
) -> Number | None:
    """`options[key]` as `kind`, None when absent; an `EnvError` naming the option otherwise."""
    value = options.get(key)
    if value is None:
        return None
    try:
        return kind(value)
    except (TypeError, ValueError) as exc:
        raise EnvError(f"{key} must be {what} (got {value!r}).") from exc


def _make_rca(
    name: str, task: str, split: str | None, max_steps: int | None, options: dict[str, Any]
) -> Environment:
    from pos_agent.envs.rca import RcaEnvironment

    max_tool_calls = _number_option(options, "max_tool_calls", int, "an integer")
    return RcaEnvironment(
        task,
        env_name=name,
        split=split,
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        data_dir=options.get("data_dir"),
    )


def _make_loca(
    task: str, split: str | None, seed: int | None, max_steps: int | None, options: dict[str, Any]
) -> Environment:
    from pos_agent.envs.loca.environment import EVALUATE_TIMEOUT, SETUP_TIMEOUT, LocaEnvironment

    timeout = _number_option(options, "setup_timeout", float, "a number of seconds")
    setup_timeout = SETUP_TIMEOUT if timeout is None else timeout
    timeout = _number_option(options, "evaluate_timeout", float, "a number of seconds")
    evaluate_timeout = EVALUATE_TIMEOUT if timeout is None else timeout
    return LocaEnvironment(
        task,
        split=split,
        seed=seed,
        max_steps=max_steps,
        loca_root=options.get("loca_root"),
        workdir=options.get("workdir"),
        runtime_dir=options.get("runtime_dir"),
        keep_workspace=bool(options.get("keep_workspace", False)),
        setup_timeout=setup_timeout,
        evaluate_timeout=evaluate_timeout,
        openai_schemas=bool(options.get("openai_schemas", False)),
    )
