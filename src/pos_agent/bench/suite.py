"""Benchmark suites: YAML files naming an environment's cases, budgets and method settings.

Built-in suites ship in `pos_agent/bench/suites/`; `pos bench PATH.yaml` runs a user's own.

```yaml
name: alfworld-mini
env: alfworld-mini
split: test            # optional, passed to the environment
tasks: all             # or a list of task ids
limit: null            # optional: first N tasks
max_steps: 30          # budget per case (default: the environment's)
seeds: [0]             # optional: one case per task and seed
generation_tokens: 512 # every agent-side call (paper App. D.1: 512 ALFWorld, 4096 RCA/ClinDiag)
profile: null          # null: per model (compact for `local`, standard for the rest)
bounds: {}             # schema bounds overridden, e.g. {patch_ops: 20}
context_window: null   # cut every history-based method's oldest history (raw, acon, pace,
                       # hiagent; agents/fit.py) to fit this many tokens (null: never, the
                       # paper's policy: a prompt that does not fit the model is a scored
                       # failure, context_overflow, for every method)
methods:               # settings per method; methods not listed use the defaults
  pos: {recovery: soft}
  acon: {threshold_tokens: 512, summary_tokens: 256}  # the baselines' parameters
  pace: {t_max: null}  # (agents/context/settings.py: every name, its default and its source)
  hiagent: {summary_tokens: 128}
  lh_harness: {max_rounds: 25}
env_options: {}        # extra keyword arguments for make_env
env_model: null        # environments with model roles (clindiag): SPEC, or {ROLE: SPEC}
timeout_s: 120         # optional: deadline of one model request (CLI --timeout wins)
max_retries: 4         # optional: retries of a failed model request (CLI --max-retries wins)
case_timeout_s: 3600   # optional: wall-clock limit per case, unscored when hit (--case-timeout)
```

`pos bench` options (`--generation-tokens`, `--profile`, `--bound`, `--context-window`) override
the suite's values.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pos_agent.agents.context.settings import baseline_settings, option_names, with_options
from pos_agent.bench.case import CaseSpec
from pos_agent.bench.env_models import parse_env_models, resolve_env_models
from pos_agent.envs import EnvError, env_model_roles
from pos_agent.recovery.constraint import RecoveryMode
from pos_agent.roles.limits import ProfileName, SchemaBounds


def _no_seed() -> list[int | None]:
    return [None]


class MethodSettings(BaseModel):
    """Per-method settings a suite may fix. The baselines (acon, pace, hiagent, lh_harness) also
    take their own parameters by name (`agents/context/settings.py`); the suite checks them."""

    # Extra keys are the baselines' parameters, checked per method by `Suite`.
    model_config = ConfigDict(extra="allow")
    recovery: RecoveryMode = "soft"
    """Recovery mode of PoS variants."""
    global_audit_every: int | None = Field(default=None, ge=0)
    """Steps between global audits of PoS variants (paper Table 8: 8; 32 on LOCA-Bench only)."""
    max_steps: int | None = Field(default=None, ge=1)
    """Overrides the suite's budget for this method."""

    def baseline_options(self) -> dict[str, Any]:
        """The baseline parameters given for this method (the extra keys)."""
        return dict(self.model_extra or {})


class Suite(BaseModel):
    """A named set of cases with their budgets and method settings."""

    model_config = ConfigDict(extra="forbid")
    name: str
    """Suite name (also the default run-name prefix)."""
    description: str = ""
    """What the suite measures, for humans."""
    env: str
    """Environment name, as `pos envs` lists it."""
    split: str | None = None
    """Split passed to the environment (e.g. valid_unseen, test)."""
    tasks: list[str] | Literal["all"] = "all"
    """Task ids, or all tasks of the environment (in that split)."""
    limit: int | None = Field(default=None, ge=1)
    """Keep only the first N tasks."""
    max_steps: int | None = Field(default=None, ge=1)
    """Budget per case; None uses the environment's default."""
    seeds: list[int | None] = Field(default_factory=_no_seed)
    """One case per task and seed."""
    generation_tokens: int | None = Field(default=None, ge=16)
    """Generation budget of every agent-side call (paper App. D.1: 512 on ALFWorld, 4,096 on
    LOCA-Bench, RCA and ClinDiag); None: the paper's value for the environment's task kind.
    Roles on the compact profile keep its own budgets."""
    profile: ProfileName | None = None
    """Model profile for every role; None: per model (compact for `local`, else standard)."""
    bounds: dict[str, int | None] = Field(default_factory=dict)
    """Schema bounds overridden on top of the profile's (see roles/limits.py SchemaBounds)."""
    context_window: int | None = Field(default=None, ge=512)
    """Tokens the raw baseline's prompt and answer must fit; None: a local model's n_ctx, and
    never cut for a server."""
    methods: dict[str, MethodSettings] = Field(default_factory=dict)
    """Settings per method (pos, raw, ablations)."""
    env_options: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments for make_env."""
    env_model: str | dict[str, str] | None = None
    """The environment's own model roles (ClinDiag provider and judge): one spec for every
    role, or {role: spec}; a role left out uses its offline option. The same for every method
    and backbone (the paper's fixed LLM); `--env-model` overrides it."""

    @model_validator(mode="after")
    def _roles_not_in_env_options(self) -> Suite:
        try:
            roles = set(env_model_roles(self.env))
        except EnvError:
            return self  # an unknown environment is reported when the cases are listed
        misplaced = sorted(roles & set(self.env_options))
        if misplaced:
            raise ValueError(
                f"{', '.join(misplaced)} go under `env_model:` (a model spec or the offline "
                "option), not under env_options: the harness builds, traces and accounts them"
            )
        resolve_env_models(self.env, self.requested_env_models())
        return self

    def requested_env_models(self) -> dict[str, str]:
        """`env_model` as {role or "*": spec}."""
        if isinstance(self.env_model, dict):
            return {str(k): str(v) for k, v in self.env_model.items()}
        return parse_env_models(self.env_model)

    @model_validator(mode="after")
    def _method_parameters(self) -> Suite:
        """Each method's extra keys must be that baseline's parameters, with valid values."""
        for method, settings in self.methods.items():
            options = settings.baseline_options()
            if not options:
                continue
            if not option_names(method):
                raise ValueError(
                    f"methods.{method}: unknown setting(s) {', '.join(sorted(options))}; "
                    "known: recovery, global_audit_every, max_steps (the baselines acon, pace, "
                    "hiagent and lh_harness also take their parameters)"
                )
            try:
                with_options(baseline_settings(self.env), method, options)
            except ValueError as exc:
                raise ValueError(f"methods.{method}: {exc}") from None
        return self

    @field_validator("bounds")
    @classmethod
    def _known_bounds(cls, value: dict[str, int | None]) -> dict[str, int | None]:
        SchemaBounds().merged(value)  # raises ValueError naming an unknown or bad bound
        return value

    timeout_s: float | None = Field(default=None, gt=0)
    """Deadline of one model request in seconds; None keeps the model options' default."""
    max_retries: int | None = Field(default=None, ge=0)
    """Retries of a failed model request; None keeps the model options' default."""
    case_timeout_s: float | None = Field(default=None, gt=0)
    """Wall-clock limit per case in seconds; a case that reaches it is not scored."""

    @field_validator("tasks")
    @classmethod
    def _each_task_once(cls, tasks: list[str] | Literal["all"]) -> list[str] | Literal["all"]:
        if tasks != "all":
            twice = sorted({t for t in tasks if tasks.count(t) > 1})
            if twice:
                raise ValueError(f"task(s) listed more than once: {', '.join(twice)}")
        return tasks

    def task_ids(self) -> list[str]:
        if self.tasks == "all":
            from pos_agent.envs import list_tasks

            ids = [t.task_id for t in list_tasks(self.env, self.split, **self.env_options)]
        else:
            ids = list(self.tasks)
        return ids[: self.limit] if self.limit else ids

    def cases(
        self,
        agents: list[str],
        model: str,
        limit: int | None = None,
        env_models: dict[str, str] | None = None,
        *,
        lengths: list[str] | None = None,
        seeds: list[int] | None = None,
    ) -> list[CaseSpec]:
        """Every (method, task, seed) case, methods interleaved so partial runs stay comparable.

        `env_models` ({role or "*": spec}, e.g. from `--env-model`) replaces the suite's
        `env_model`; either way every case gets the same environment models. Override the
        suite's budgets first with `model_copy(update=...)`. `lengths` keeps LOCA tasks of those
        environment lengths and `seeds` keeps those of the suite's seeds; `limit` then keeps the
        first N tasks.
        """
        chosen = resolve_env_models(
            self.env, env_models if env_models else self.requested_env_models()
        )
        tasks = self.task_ids()
        if lengths:
            tasks = self._with_lengths(tasks, lengths)
        chosen_seeds = self.seeds
        if seeds:
            unknown = [s for s in seeds if s not in self.seeds]
            if unknown:
                listed = ", ".join(str(s) for s in self.seeds)
                raise ValueError(f"suite {self.name} has no seed(s) {unknown}; its seeds: {listed}")
            chosen_seeds = [s for s in self.seeds if s in seeds]
        tasks = tasks[:limit] if limit else tasks
        specs = []
        for task in tasks:
            for seed in chosen_seeds:
                for agent in agents:
                    settings = self.methods.get(agent, MethodSettings())
                    specs.append(
                        CaseSpec(
                            env=self.env,
                            task=task,
                            agent=agent,
                            model=model,
                            recovery=settings.recovery,
                            global_audit_every=settings.global_audit_every,
                            generation_tokens=self.generation_tokens,
                            profile=self.profile,
                            bounds=dict(self.bounds),
                            context_window=self.context_window,
                            max_steps=settings.max_steps or self.max_steps,
                            split=self.split,
                            seed=seed,
                            env_options=dict(self.env_options),
                            env_models=dict(chosen),
                            method_options=settings.baseline_options(),
                        )
                    )
        return specs

    def _with_lengths(self, tasks: list[str], lengths: list[str]) -> list[str]:
        if self.env != "loca":
            raise ValueError(f"--lengths applies to LOCA suites; {self.name} runs {self.env}")
        from pos_agent.envs import EnvError
        from pos_agent.envs.loca.cases import normalize_length, parse_task_id

        try:
            wanted = {normalize_length(length) for length in lengths}
        except EnvError as exc:
            raise ValueError(str(exc)) from exc
        kept = [t for t in tasks if parse_task_id(t)[1] in wanted]
        if not kept:
            raise ValueError(
                f"suite {self.name} has no task at length(s) {', '.join(sorted(wanted))}"
            )
        return kept


def builtin_suites() -> list[str]:
    """Names of the suites shipped with the package."""
    folder = resources.files("pos_agent.bench") / "suites"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_suite(name_or_path: str) -> Suite:
    """A built-in suite by name, or a YAML file by path; ValueError says what is wrong."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ValueError(f"suite file {path} does not exist")
        text = path.read_text(encoding="utf-8")
    else:
        resource = resources.files("pos_agent.bench") / "suites" / f"{name_or_path}.yaml"
        if not resource.is_file():
            raise ValueError(
                f"unknown suite {name_or_path!r}; built-in suites: {', '.join(builtin_suites())}, "
                "or give the path of your own YAML file"
            )
        text = resource.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
        return Suite.model_validate(data)
    except yaml.YAMLError as exc:
        raise ValueError(f"suite {name_or_path} is not valid YAML: {exc}") from exc
    except ValidationError as exc:
        raise ValueError(f"suite {name_or_path} is not a valid suite:\n{exc}") from exc
