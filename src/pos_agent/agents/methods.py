"""Every method the harness runs, in one table: what kind it is, which model roles it calls, and
(for PoS and its ablations) which parts of the loop it uses.

Code that behaves differently per method reads these facts (`METHODS[name].uses_trapping`, ...)
instead of testing method names; `bench/agent_factory.py` builds an agent from the method's
`kind`. The table's order is the paper's (Table 1): Raw, the four baselines, PoS, the ablations,
then the expert.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Literal

from pos_agent.agents.baselines import BASELINES
from pos_agent.agents.context_agent import EMBEDDING_METHODS
from pos_agent.agents.pos.config import VARIANT_PARTS, VARIANTS
from pos_agent.llm import POS_ROLES

MethodKind = Literal["pos", "baseline", "raw", "expert"]


@dataclass(frozen=True)
class Method:
    """One method and the facts the harness needs about it."""

    name: str
    kind: MethodKind
    """pos (the PoS loop or an ablation), baseline (a context method or LongHorizon), raw, or
    expert (the environment's planner, no model)."""
    roles: tuple[str, ...]
    """The model roles it calls, each given its own model spec (baselines and raw: one backbone
    behind the policy role, paper App. D.1)."""
    uses_consistency: bool = False
    """PoS: the sentinel's LLM audit, the revision and the global audit (no_consistency: off)."""
    uses_trapping: bool = False
    """PoS: the health check and recovery (no_trapping: off)."""
    generic_recovery: bool = False
    """PoS: one generic "you seem stuck" line instead of the factorized constraint."""
    uses_embeddings: bool = False
    """Scores relevance with `--embed-model` (PACE)."""

    @property
    def health_checked(self) -> bool:
        """Its trapped-step count is a measurement (the method runs the health check)."""
        return self.uses_trapping

    @property
    def is_pos(self) -> bool:
        return self.kind == "pos"


METHODS: Mapping[str, Method] = {
    m.name: m
    for m in (
        Method("raw", "raw", ("policy",)),
        *(
            Method(name, "baseline", ("policy",), uses_embeddings=name in EMBEDDING_METHODS)
            for name in BASELINES
        ),
        *(Method(name, "pos", POS_ROLES, **asdict(VARIANT_PARTS[name])) for name in VARIANTS),
        Method("expert", "expert", ()),
    )
}
METHOD_NAMES: tuple[str, ...] = tuple(METHODS)
FULL_POS = "pos"  # the full method, the one the report compares with the baselines
BASELINE_METHODS: tuple[str, ...] = tuple(m.name for m in METHODS.values() if m.kind == "baseline")
POS_METHODS: tuple[str, ...] = tuple(m.name for m in METHODS.values() if m.is_pos)


def method(name: str) -> Method:
    """The method called `name`; ValueError naming the known ones otherwise."""
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown method {name!r}; choose one of {', '.join(METHOD_NAMES)}"
        ) from None


def uses_embeddings(name: str) -> bool:
    """Whether method `name` scores relevance with `--embed-model` (False for unknown names)."""
    method = METHODS.get(name)
    return method is not None and method.uses_embeddings
