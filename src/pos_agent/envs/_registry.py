"""The table of environments: a name to its factory, task lister, options and the extra it needs.

Everything that needs to know the set of environments asks this table: name and alias lookup,
option checks, `list_tasks`/`make_env`, the model roles an environment takes, and what
`pos envs` and `pos doctor` say about an environment whose extra is not installed. Adding an
environment is one `EnvEntry` here. Backends are imported only when an environment is made (or,
for some, its tasks listed), so importing `pos_agent.envs` never starts a JVM or loads a planner.
"""

from __future__ import annotations

import difflib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pos_agent.envs._types import EnvError, Environment, TaskSpec


@dataclass(frozen=True)
class EnvRequest:
    """What `make_env` was asked for, handed to an entry's factory (options already checked)."""

    name: str
    task: str
    split: str | None
    seed: int | None
    max_steps: int | None
    options: dict[str, Any] = field(default_factory=dict)


EnvFactory = Callable[[EnvRequest], Environment]
TaskLister = Callable[[str, str | None, dict[str, Any]], list[TaskSpec]]
"""(name, split, list options) -> the tasks."""


@dataclass(frozen=True)
class EnvEntry:
    """One environment.

    `options` are the `make_env` options it accepts besides max_steps, split and seed;
    `list_options` the ones `list_tasks` uses (the others are accepted and ignored, so a suite
    can pass its env_options). `extra` is the pyproject extra that installs `modules`, the
    packages it cannot run without (None: it needs no extra). `model_roles` gives the model
    roles it takes from the harness, each with its offline option.
    """

    name: str
    make: EnvFactory
    tasks: TaskLister
    options: frozenset[str] = frozenset()
    list_options: frozenset[str] = frozenset()
    extra: str | None = None
    modules: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    model_roles: Callable[[], Mapping[str, str]] | None = None
    summary: str = ""

    def missing_modules(self) -> list[str]:
        """The packages of `modules` that are not installed."""
        return [module for module in self.modules if not _importable(module)]

    def unavailable(self) -> str | None:
        """Why this environment cannot run here (its extra is missing), or None."""
        missing = self.missing_modules()
        if not missing:
            return None
        return (
            f"{self.name} needs the `{self.extra}` extra ({', '.join(missing)} not installed): "
            f"{install_hint(self.extra or '')}"
        )


def install_hint(extra: str) -> str:
    """How to install one extra."""
    return f"`uv sync --extra {extra}` (or pip install 'pos-agent[{extra}]')"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# -- task listers (backends imported on use) -------------------------------------------------


def _alfworld_tasks(name: str, split: str | None, options: dict[str, Any]) -> list[TaskSpec]:
    from pos_agent.envs.alfworld import list_mini_tasks, list_official_tasks

    return list_mini_tasks(split) if name == "alfworld-mini" else list_official_tasks(split)


def _scienceworld_tasks(name: str, split: str | None, options: dict[str, Any]) -> list[TaskSpec]:
    from pos_agent.envs.scienceworld import list_scienceworld_tasks

    return list_scienceworld_tasks(split)


def _twx_tasks(name: str, split: str | None, options: dict[str, Any]) -> list[TaskSpec]:
    from pos_agent.envs.textworld_express import list_twx_tasks

    return list_twx_tasks(split)


def _clindiag_tasks(name: str, split: str | None, options: dict[str, Any]) -> list[TaskSpec]:
    from pos_agent.envs.clindiag import list_clindiag_tasks

    return list_clindiag_tasks(split, options.get("data_dir"))


def _rca_tasks(name: str, split: str | None, options: dict[str, Any]) -> list[TaskSpec]:
    from pos_agent.envs.rca import list_rca_tasks

    return list_rca_tasks(name, split, options.get("data_dir"))


def _loca_tasks(name: str, split: str | None, options: dict[str, Any]) -> list[TaskSpec]:
    from pos_agent.envs.loca.cases import list_loca_tasks

    return list_loca_tasks(split, options.get("loca_root"))


def _toy_tasks(name: str, split: str | None, options: dict[str, Any]) -> list[TaskSpec]:
    from pos_agent.envs.toy import list_desk_tasks, list_toy_tasks

    return list_desk_tasks(split) if name == "toy-desk" else list_toy_tasks(split)


def _clindiag_roles() -> Mapping[str, str]:
    from pos_agent.envs.clindiag import MODEL_ROLES

    return MODEL_ROLES


def _make_alfworld(request: EnvRequest) -> Environment:
    from pos_agent.envs.alfworld import make_alfworld_env

    # ALFWorld games are deterministic: a seed has nothing to select, so it is ignored.
    return make_alfworld_env(
        request.name,
        request.task,
        split=request.split,
        max_steps=request.max_steps,
        expert=bool(request.options.get("expert", True)),
    )


def _make_scienceworld(request: EnvRequest) -> Environment:
    from pos_agent.envs.scienceworld import ScienceWorldEnvironment

    return ScienceWorldEnvironment(
        request.task,
        split=request.split,
        seed=request.seed,
        max_steps=request.max_steps,
        simplifications=str(request.options.get("simplifications", "")),
    )


def _make_twx(request: EnvRequest) -> Environment:
    from pos_agent.envs.textworld_express import TextWorldExpressEnvironment

    return TextWorldExpressEnvironment(
        request.task,
        split=request.split,
        seed=request.seed,
        max_steps=request.max_steps,
        game_params=request.options.get("game_params"),
    )


def _make_clindiag(request: EnvRequest) -> Environment:
    from pos_agent.envs.clindiag import ClinDiagEnvironment

    # Cases are fixed records: a seed has nothing to select.
    options = request.options
    return ClinDiagEnvironment(
        request.task,
        split=request.split,
        max_steps=request.max_steps,
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


def _make_rca(request: EnvRequest) -> Environment:
    from pos_agent.envs.rca import RcaEnvironment

    max_tool_calls = _number_option(request.options, "max_tool_calls", int, "an integer")
    return RcaEnvironment(
        request.task,
        env_name=request.name,
        split=request.split,
        max_steps=request.max_steps,
        max_tool_calls=max_tool_calls,
        data_dir=request.options.get("data_dir"),
    )


def _make_loca(request: EnvRequest) -> Environment:
    from pos_agent.envs.loca.environment import EVALUATE_TIMEOUT, SETUP_TIMEOUT, LocaEnvironment

    options = request.options
    timeout = _number_option(options, "setup_timeout", float, "a number of seconds")
    setup_timeout = SETUP_TIMEOUT if timeout is None else timeout
    timeout = _number_option(options, "evaluate_timeout", float, "a number of seconds")
    evaluate_timeout = EVALUATE_TIMEOUT if timeout is None else timeout
    return LocaEnvironment(
        request.task,
        split=request.split,
        seed=request.seed,
        max_steps=request.max_steps,
        loca_root=options.get("loca_root"),
        workdir=options.get("workdir"),
        runtime_dir=options.get("runtime_dir"),
        keep_workspace=bool(options.get("keep_workspace", False)),
        setup_timeout=setup_timeout,
        evaluate_timeout=evaluate_timeout,
        openai_schemas=bool(options.get("openai_schemas", False)),
    )


def _make_toy(request: EnvRequest) -> Environment:
    from pos_agent.envs.toy import ToyDeskEnvironment, ToyEnvironment

    # Every toy task is one fixed instance: a seed has nothing to select.
    kind = ToyDeskEnvironment if request.name == "toy-desk" else ToyEnvironment
    return kind(request.task, split=request.split, max_steps=request.max_steps)


_ALFWORLD_MODULES = ("alfworld", "textworld")
_LOCA_OPTIONS = frozenset(
    {
        "loca_root",
        "workdir",
        "runtime_dir",
        "keep_workspace",
        "setup_timeout",
        "evaluate_timeout",
        "openai_schemas",
    }
)


def _rca_entry(name: str, summary: str, aliases: tuple[str, ...] = ()) -> EnvEntry:
    """An RCA environment: the RCA100 and the Nezha cases share the tools and the options."""
    return EnvEntry(
        name,
        _make_rca,
        _rca_tasks,
        options=frozenset({"data_dir", "max_tool_calls"}),
        list_options=frozenset({"data_dir"}),
        extra="diagnosis",
        modules=("pyarrow",),
        aliases=aliases,
        summary=summary,
    )


_ENTRIES: dict[str, EnvEntry] = {
    entry.name: entry
    for entry in (
        EnvEntry(
            "alfworld",
            _make_alfworld,
            _alfworld_tasks,
            options=frozenset({"expert"}),
            extra="envs",
            modules=_ALFWORLD_MODULES,
            summary="ALFWorld's official games (after `alfworld-download`)",
        ),
        EnvEntry(
            "alfworld-mini",
            _make_alfworld,
            _alfworld_tasks,
            options=frozenset({"expert"}),
            extra="envs",
            modules=_ALFWORLD_MODULES,
            aliases=("alfworld_mini", "alfworldmini"),
            summary="12 offline tasks in ALFWorld's own engine",
        ),
        EnvEntry(
            "scienceworld",
            _make_scienceworld,
            _scienceworld_tasks,
            options=frozenset({"simplifications"}),
            extra="envs",
            modules=("scienceworld",),
            aliases=("sciworld", "science-world"),
            summary="ScienceWorld (runs on Java)",
        ),
        EnvEntry(
            "textworld-express",
            _make_twx,
            _twx_tasks,
            options=frozenset({"game_params"}),
            extra="envs",
            modules=("textworld_express",),
            aliases=("textworld_express", "textworldexpress", "twx"),
            summary="TextWorldExpress (runs on Java)",
        ),
        EnvEntry(
            "clindiag",
            _make_clindiag,
            _clindiag_tasks,
            options=frozenset({"data_dir", "provider", "judge"}),
            list_options=frozenset({"data_dir"}),
            aliases=("clin-diag", "clin_diag"),
            model_roles=_clindiag_roles,
            summary="clinical diagnosis from case records",
        ),
        _rca_entry("rca", "root-cause analysis on RCA100-layout case folders"),
        _rca_entry(
            "rca-nezha", "root-cause analysis on the Nezha cases", aliases=("rca_nezha", "nezha")
        ),
        EnvEntry(
            "loca",
            _make_loca,
            _loca_tasks,
            options=_LOCA_OPTIONS,
            list_options=frozenset({"loca_root"}),
            aliases=("loca-bench", "loca_bench", "locabench"),
            summary="LOCA-Bench tool tasks (MCP servers; `make loca-runtime`)",
        ),
        EnvEntry(
            "toy",
            _make_toy,
            _toy_tasks,
            summary="a tiny pure-Python household world (tests and demos, no extra)",
        ),
        EnvEntry(
            "toy-desk",
            _make_toy,
            _toy_tasks,
            aliases=("toy_desk",),
            summary="a tiny pure-Python tool-calling desk (tests and demos, no extra)",
        ),
    )
}
_ALIASES = {alias: entry.name for entry in _ENTRIES.values() for alias in entry.aliases}
ENV_NAMES = tuple(_ENTRIES)


def env_entries() -> tuple[EnvEntry, ...]:
    """Every environment, in table order."""
    return tuple(_ENTRIES.values())


def env_entry(env: str) -> EnvEntry:
    """The entry of an environment name or alias; EnvError naming the known ones."""
    return _ENTRIES[canonical_env(env)]


def canonical_env(env: str) -> str:
    """The registered name for an environment name or alias."""
    key = env.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _ENTRIES:
        close = difflib.get_close_matches(key, [*ENV_NAMES, *_ALIASES], n=1)
        hint = f"did you mean {_ALIASES.get(close[0], close[0])}? " if close else ""
        raise EnvError(
            f"Unknown environment {env!r}; {hint}use one of {', '.join(ENV_NAMES)} "
            "(`pos envs` lists them)."
        )
    return key


def env_model_roles(env: str) -> dict[str, str]:
    """The model roles an environment takes from the harness, each with its offline option
    (used when no model is given): ClinDiag's provider and judge; none for the others."""
    roles = env_entry(env).model_roles
    return dict(roles()) if roles is not None else {}


def accepts_option(env: str, option: str) -> bool:
    """Whether `make_env` takes this option for the environment (e.g. `workdir` for loca)."""
    return option in env_entry(env).options


def list_envs() -> list[str]:
    """Names accepted by `make_env` and `list_tasks`."""
    return list(ENV_NAMES)


def _check_options(entry: EnvEntry, options: Mapping[str, Any]) -> None:
    """Raise EnvError naming the options `entry` does not accept, and those it does."""
    unknown = set(options) - entry.options
    if unknown:
        accepted = ", ".join(sorted(entry.options)) or "none"
        raise EnvError(
            f"Unknown option(s) for {entry.name}: {', '.join(sorted(unknown))}; "
            f"accepted: {accepted}."
        )


def list_tasks(env: str, split: str | None = None, **options: Any) -> list[TaskSpec]:
    """The tasks of one environment and split (the environment's default split if None).

    For `alfworld` this raises EnvError naming `alfworld-download` when the data are missing;
    for the diagnosis environments, naming where the data go. Options: `data_dir` for
    clindiag, rca and rca-nezha, `loca_root` for loca (other make_env options are accepted
    and ignored, so a suite can pass its env_options).
    """
    entry = env_entry(env)
    _check_options(entry, options)
    used = {key: value for key, value in options.items() if key in entry.list_options}
    return entry.tasks(entry.name, split, used)


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
    TextWorldExpress 100, toy 30, toy-desk 8). `seed` selects the instance where the benchmark
    has several (ScienceWorld variation, TextWorldExpress seed); ALFWorld games are fixed by
    `task`. Options: ALFWorld `expert` (bool, compute the planner expert; default True);
    ScienceWorld `simplifications` (the package's comma-separated string);
    TextWorldExpress `game_params` (dict or "key=value,..." string).
    Diagnosis (budget = tool calls for ClinDiag, 30; decision turns for RCA, 50): ClinDiag
    `data_dir`, `provider` ("retrieval" or a Model), `judge` ("matcher" or a Model) — the
    environment never loads a model, the harness passes them (`env_model_roles`); RCA
    `data_dir`, `max_tool_calls` (150). `rca` needs `data_dir` (or POS_RCA_DATA); `rca-nezha`
    and ClinDiag also find what `pos data get` prepared.
    LOCA-Bench (`loca`; task `<Task>-<length>`, seed 42/123/456/789/2024, budget 100 tool
    calls): `loca_root` (default $POS_LOCA_ROOT, else `pos data get loca`'s checkout), `workdir`
    (per-case folder for generated data; default a temporary one), `runtime_dir`,
    `keep_workspace`, `setup_timeout` (seconds, 3600), `evaluate_timeout` (seconds, 1800),
    `openai_schemas` (LOCA's fix_schema_for_openai; `pos bench` sets it for OpenAI models).
    An environment whose extra is not installed raises EnvError naming the extra.
    """
    entry = env_entry(env)
    _check_options(entry, options)
    problem = entry.unavailable()
    if problem is not None:
        raise EnvError(problem)
    return entry.make(EnvRequest(entry.name, task, split, seed, max_steps, dict(options)))
