"""A study: suites x methods x backbones, every cell in one run folder.

`pos paper table1 --model SPEC ...` is the paper's grid (`paper_study`); `pos paper run
STUDY.yaml` reads one from a file:

```yaml
name: table1                 # the default run-name prefix
suites: [alfworld, loca, rca-nezha, clindiag-paper]    # or {suite: NAME, limit: N}
methods: [raw, acon, pace, hiagent, lh_harness, pos, no_consistency, no_trapping]
backbones:                   # a model spec, or {model: SPEC, paper: Qwen3.7-Plus}
  - dashscope:qwen3.7-plus
  - {model: openai:kimi-k3, paper: Kimi-K3}
env_model: paper             # ClinDiag's provider and judge: paper (Qwen3.7-Plus via DashScope,
                             # the paper's), backbone (each backbone its own), offline (the
                             # retrieval and matcher stand-ins), or a model spec
embed_model: paper           # PACE's embeddings: paper (DashScope text-embedding-v4), tfidf, or
                             # an embeddings spec
limit: null                  # only the first N tasks of every suite
```

Every paper setting is the default: the suites are the built-in ones, whose budgets, generation
lengths and baseline parameters are the paper's (docs/benchmarks/index.md), and K, L, eps and
the other PoS settings are the code's defaults (paper Table 8). The offline stand-ins are an
explicit choice (`env_model: offline`, `embed_model: tfidf`), never the default.

Cases are tagged with their backbone's label (`CaseSpec.tag`), so the same task and method under
three backbones are three case folders of one run. They are ordered so that a run stopped early
(Ctrl-C, `--max-cost`) holds a balanced part of the grid: the first task of every suite and
backbone, then the second, and so on, the methods of one task side by side.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pos_agent.agents.methods import METHOD_NAMES, uses_embeddings
from pos_agent.bench.paper import (
    BENCHMARKS,
    PAPER_BACKBONES,
    PAPER_EMBED_MODEL,
    PAPER_ENV_MODEL,
    PAPER_METHODS,
    paper_backbone,
)
from pos_agent.bench.spec import CaseSpec
from pos_agent.bench.suite import Suite, load_suite
from pos_agent.envs import env_model_roles

PAPER_SUITES: tuple[str, ...] = tuple(b.suite for b in BENCHMARKS)
ENV_MODEL_CHOICES = ("paper", "backbone", "offline")
EMBED_CHOICES = ("paper", "tfidf")


class Backbone(BaseModel):
    """One backbone of the study: a model spec every agent-side role uses."""

    model_config = ConfigDict(extra="forbid")
    model: str
    """The model spec (openai:MODEL, dashscope:MODEL, gguf:PATH, local, scripted, ...)."""
    paper: str | None = None
    """The paper's backbone it stands for in the comparison (Qwen3.7-Plus, Kimi-K3, GLM-5.3);
    None: read from the spec's name when it is one of them, else no published value."""
    label: str | None = None
    """Its label in case folders and tables; None: from the spec (`openai:gpt-4o` -> gpt-4o)."""

    @field_validator("paper")
    @classmethod
    def _known_paper_backbone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        known = paper_backbone(value)
        if known is None:
            raise ValueError(f"paper backbone {value!r} is not one of {', '.join(PAPER_BACKBONES)}")
        return known

    @property
    def compared_with(self) -> str | None:
        """The paper's backbone whose published figures this one's are shown beside."""
        return self.paper or paper_backbone(self.model)


class StudySuite(BaseModel):
    """One suite of the study, optionally cut to its first tasks."""

    model_config = ConfigDict(extra="forbid")
    suite: str
    """A built-in suite name or a suite YAML path."""
    limit: int | None = Field(default=None, ge=1)
    """Only its first N tasks (before the study's own `limit`)."""


class Study(BaseModel):
    """Suites x methods x backbones, with the environment and embedding models they share."""

    model_config = ConfigDict(extra="forbid")
    name: str = "table1"
    """The default run-name prefix."""
    description: str = ""
    suites: list[str | StudySuite] = Field(default_factory=lambda: _paper_suites())
    """The suites, in the report's order (default: the paper's four benchmarks)."""
    methods: list[str] = Field(default_factory=lambda: list(PAPER_METHODS))
    """The methods, in the paper's order (default: its eight)."""
    backbones: list[str | Backbone] = Field(min_length=1)
    """The backbones (model specs), each running every suite and method."""
    env_model: str = "paper"
    """ClinDiag's provider and judge: paper, backbone, offline, or a model spec."""
    embed_model: str = "paper"
    """PACE's relevance scorer: paper (text-embedding-v4), tfidf, or an embeddings spec."""
    limit: int | None = Field(default=None, ge=1)
    """Only the first N tasks of every suite."""

    @field_validator("methods")
    @classmethod
    def _known_methods(cls, methods: list[str]) -> list[str]:
        unknown = [m for m in methods if m not in METHOD_NAMES or m == "expert"]
        if unknown or not methods:
            raise ValueError(f"unknown method(s) {unknown}; choose from {', '.join(PAPER_METHODS)}")
        if len(set(methods)) != len(methods):
            raise ValueError("a method is listed twice")
        return methods

    def backbone_list(self) -> list[Backbone]:
        """The backbones with their labels, each label unique."""
        out: list[Backbone] = []
        used: set[str] = set()
        for entry in self.backbones:
            backbone = Backbone(model=entry) if isinstance(entry, str) else entry
            label = backbone.label or _label(backbone.model)
            base, n = label, 2
            while label in used:
                label, n = f"{base}-{n}", n + 1
            used.add(label)
            out.append(backbone.model_copy(update={"label": label}))
        return out

    def suite_list(self) -> list[StudySuite]:
        return [StudySuite(suite=s) if isinstance(s, str) else s for s in self.suites]

    def env_models_for(self, env: str, backbone: Backbone) -> dict[str, str]:
        """The environment's model roles for one backbone's cases (none for environments
        without roles)."""
        if not env_model_roles(env):
            return {}
        if self.env_model == "offline":
            return dict(env_model_roles(env))
        if self.env_model == "backbone":
            return {"*": backbone.model}
        return {"*": PAPER_ENV_MODEL if self.env_model == "paper" else self.env_model}

    def embed_for(self, method: str) -> str:
        """PACE's scorer (the other methods keep the default, tfidf: they never use one)."""
        if not uses_embeddings(method):
            return "tfidf"
        return PAPER_EMBED_MODEL if self.embed_model == "paper" else self.embed_model


def _paper_suites() -> list[str | StudySuite]:
    return list(PAPER_SUITES)


def _label(model: str) -> str:
    name = model.rpartition(":")[2] or model
    name = Path(name).stem if "/" in name else name
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._") or "model"
    return text[:48]


def paper_study(
    models: Sequence[str | Backbone], *, env_model: str = "paper", embed_model: str = "paper"
) -> Study:
    """The paper's grid (Table 1): its four benchmarks and eight methods for these backbones."""
    return Study(
        name="table1",
        description="The paper's Table 1: 4 benchmarks x 8 methods per backbone.",
        backbones=list(models),
        env_model=env_model,
        embed_model=embed_model,
    )


def load_study(path: Path) -> Study:
    """A study YAML; ValueError says what is wrong."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read the study {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"the study {path} is not valid YAML: {exc}") from None
    try:
        return Study.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"the study {path} is not valid:\n{exc}") from None


def study_suites(study: Study) -> list[tuple[Suite, int | None]]:
    """Each suite of the study, loaded, with its own task limit."""
    return [(load_suite(s.suite), s.limit) for s in study.suite_list()]


MissingData = Callable[[Suite, Exception], None]


def study_cases(
    study: Study, *, loca_root: str | None = None, missing: MissingData | None = None
) -> list[CaseSpec]:
    """Every case of the study, tagged by backbone, in a balanced order (module docstring).

    A suite whose tasks cannot be listed (its data is not fetched yet) raises, unless `missing`
    is given (the dry run): then it is told, and the suite counts the cases it holds once its
    data is there, under placeholder task ids."""
    blocks: list[list[list[CaseSpec]]] = []  # per (suite, backbone): per task, its cases
    for suite, limit in study_suites(study):
        if loca_root is not None and suite.env == "loca":
            suite.env_options["loca_root"] = loca_root
        if missing is not None:
            suite = _listable(suite, missing)
        cuts = [x for x in (limit, study.limit) if x is not None]
        cut = min(cuts) if cuts else None
        for backbone in study.backbone_list():
            specs = suite.cases(
                study.methods,
                backbone.model,
                cut,
                env_models=study.env_models_for(suite.env, backbone),
            )
            tagged = [
                s.model_copy(
                    update={"tag": backbone.label, "embed_model": study.embed_for(s.agent)}
                )
                for s in specs
            ]
            blocks.append(_by_task(tagged))
    ordered: list[CaseSpec] = []
    for index in range(max((len(b) for b in blocks), default=0)):
        for block in blocks:
            if index < len(block):
                ordered += block[index]
    return ordered


def _listable(suite: Suite, missing: MissingData) -> Suite:
    """The suite, or (its data missing) a copy whose tasks are placeholders, as many as the
    suite holds with its data (the grid's count for the paper's suites)."""
    try:
        suite.task_ids()
        return suite
    except Exception as exc:  # missing data: any environment's own error
        missing(suite, exc)
    found = next((b for b in BENCHMARKS if b.suite == suite.name), None)
    count = found.suite_cases // max(1, len(suite.seeds)) if found else 1
    return suite.model_copy(update={"tasks": [f"placeholder-{i + 1}" for i in range(count)]})


def _by_task(specs: list[CaseSpec]) -> list[list[CaseSpec]]:
    groups: dict[str, list[CaseSpec]] = {}
    for spec in specs:
        groups.setdefault(spec.case_id, []).append(spec)
    return list(groups.values())
