"""What one case runs: the typed, documented `CaseSpec` every bench module shares.

It lives apart from the module that plays cases (`bench/case.py`), so that the agent factory,
suites, run folders and the CLI can read a spec without importing the case runner.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pos_agent.agents.methods import METHODS
from pos_agent.cost.cache import cache_rule as cache_rule_named
from pos_agent.llm import DEFAULT_CACHE_RULE, Model
from pos_agent.recovery.constraint import RecoveryMode
from pos_agent.roles.limits import ProfileName

ModelLoader = Callable[[str, str], Model]  # (spec, role) -> model
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class CaseSpec(BaseModel):
    """What to run: environment, task, method and models (one case of a run)."""

    model_config = ConfigDict(extra="forbid")

    env: str
    """The environment name (`pos envs` lists them)."""
    task: str
    """The task id within the environment."""
    agent: str = "pos"
    """The method (a name of `agents.methods.METHODS`)."""
    model: str = "local"
    """The model spec every role uses unless `role_models` overrides it."""
    role_models: dict[str, str] = Field(default_factory=dict)
    """Model spec per role (policy, belief, sentinel), overriding `model`."""
    recovery: RecoveryMode = "soft"
    """PoS variants: soft (constraint in the prompt, the paper), hard or both."""
    global_audit_every: int | None = None
    """PoS variants: steps between global audits; None keeps PosConfig's (8)."""
    health: str = "paper"
    """PoS variants' diagnosis: "paper" (Eq. 5-6) or "improved"."""
    generation_tokens: int | None = None
    """Every agent-side call's budget; None: the paper's (App. D.1)."""
    profile: ProfileName | None = None
    """The role profile; None: each role's model picks (compact for `local`)."""
    bounds: dict[str, int | None] = Field(default_factory=dict)
    """Answer-schema bounds overridden (`SchemaBounds` field -> limit, None unbounded)."""
    context_window: int | None = None
    """Tokens every history-based method's prompt is cut to fit (`agents/fit.py`); None: never."""
    max_steps: int | None = None
    """The step budget; None: the environment's."""
    split: str | None = None
    """The environment's data split; None: its default."""
    seed: int | None = None
    """The case's seed (part of the case id when set)."""
    env_options: dict[str, Any] = Field(default_factory=dict)
    """Options passed to the environment."""
    env_models: dict[str, str] = Field(default_factory=dict)
    """Model spec per environment role (ClinDiag provider/judge; "*" for every role); roles
    left out use the environment's offline option. The same for every method (the paper's
    fixed LLM)."""
    method_options: dict[str, Any] = Field(default_factory=dict)
    """Baselines: the suite's parameters for this method (agents/context/settings.py)."""
    embed_model: str = "tfidf"
    """PACE's relevance scorer: tfidf offline, or an embeddings endpoint spec."""
    cache_rule: str = DEFAULT_CACHE_RULE
    """The provider rule (`cost/cache.py`) of the cached-token estimate for calls whose server
    reports no cache counts; it changes only that estimate, never what an agent does."""
    tag: str | None = None
    """A short label appended to the case's folder, so that one run can hold the same case
    under several backbones (a study's backbone label); None: no label."""

    @field_validator("tag")
    @classmethod
    def _folder_safe(cls, tag: str | None) -> str | None:
        if tag is not None and not _TAG.fullmatch(tag):
            raise ValueError(f"tag {tag!r} must be letters, digits, '.', '_' or '-'")
        return tag

    @field_validator("cache_rule")
    @classmethod
    def _known_rule(cls, name: str) -> str:
        cache_rule_named(name)  # a clear error naming the rules there are
        return name

    @property
    def case_id(self) -> str:
        seed = "" if self.seed is None else f"__s{self.seed}"
        return f"{self.env}__{self.task}{seed}".replace("/", "_")

    @property
    def folder(self) -> str:
        """The case's folder name inside a run: method and case id (and the tag, when set)."""
        tag = "" if self.tag is None else f"__{self.tag}"
        return f"{self.agent}__{self.case_id}{tag}"

    def models(self) -> dict[str, str]:
        """The model spec of each role the method calls (raw and the baselines: one backbone
        behind the policy role, App. D.1; the expert: none)."""
        method = METHODS.get(self.agent)
        roles = method.roles if method else ()
        return {role: self.role_models.get(role, self.model) for role in roles}
