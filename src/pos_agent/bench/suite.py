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
methods:               # settings per method; methods not listed use the defaults
  pos: {recovery: soft}
env_options: {}        # extra keyword arguments for make_env
timeout_s: 120         # optional: deadline of one model request (CLI --timeout wins)
max_retries: 4         # optional: retries of a failed model request (CLI --max-retries wins)
case_timeout_s: 3600   # optional: wall-clock limit per case, unscored when hit (--case-timeout)
```
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pos_agent.bench.case import CaseSpec
from pos_agent.health.recovery import RecoveryMode


def _no_seed() -> list[int | None]:
    return [None]


class MethodSettings(BaseModel):
    """Per-method settings a suite may fix."""

    model_config = ConfigDict(extra="forbid")
    recovery: RecoveryMode = "soft"
    """Recovery mode of PoS variants."""
    global_audit_every: int | None = Field(default=None, ge=0)
    """Steps between global audits of PoS variants (paper: 8; 32 on long-context tool tasks)."""
    max_steps: int | None = Field(default=None, ge=1)
    """Overrides the suite's budget for this method."""


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
    methods: dict[str, MethodSettings] = Field(default_factory=dict)
    """Settings per method (pos, raw, ablations)."""
    env_options: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments for make_env."""
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

    def cases(self, agents: list[str], model: str, limit: int | None = None) -> list[CaseSpec]:
        """Every (method, task, seed) case, methods interleaved so partial runs stay comparable."""
        tasks = self.task_ids()[:limit] if limit else self.task_ids()
        specs = []
        for task in tasks:
            for seed in self.seeds:
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
                            max_steps=settings.max_steps or self.max_steps,
                            split=self.split,
                            seed=seed,
                            env_options=dict(self.env_options),
                        )
                    )
        return specs


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
