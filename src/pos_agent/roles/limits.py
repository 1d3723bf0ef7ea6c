"""What each role may write and read: generation budgets, schema bounds and model profiles.

The paper gives every agent-side call the same generation budget at temperature 0 (App. D.1):
512 tokens on ALFWorld, 4,096 on LOCA-Bench, RCA-100 and ClinDiag. Those are the defaults of the
paper's suites (`generation_tokens`), and `paper_generation_tokens` gives them by task kind when
no suite says. The answer schemas put no bound on a real model: its budget bounds it.

A 135M model is another matter: under constrained decoding it repeats list items and pads strings
until the budget runs out, and its answers must close within a few hundred tokens to be usable.
The `compact` profile holds the tight bounds it needs (128 policy tokens, a 60-character thought,
6 ops a patch, 40/80-character strings, 3 audit issues, 40 belief entities and 60 admissible
actions in a prompt, a "Return few ops." line for the belief model, ...). It is chosen for the
embedded model (`local`) only; any other model gets `standard` unless `--profile` asks otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal, get_args

from pos_agent.kinds import TaskKind

ProfileName = Literal["standard", "compact"]
PROFILE_NAMES: tuple[ProfileName, ...] = get_args(ProfileName)

# Paper App. D.1: generation length of every agent-side call.
EXECUTION_GENERATION_TOKENS = 512  # ALFWorld
DIAGNOSIS_GENERATION_TOKENS = 4_096  # LOCA-Bench, RCA-100, ClinDiag
TEMPERATURE = 0.0  # paper App. D.1


# Benchmarks whose generation length the paper states, by environment name (App. D.1). LOCA-Bench
# is a tool benchmark of execution kind but gets the long budget.
PAPER_GENERATION_TOKENS: Mapping[str, int] = {
    "alfworld": EXECUTION_GENERATION_TOKENS,
    "alfworld-mini": EXECUTION_GENERATION_TOKENS,
    "loca": DIAGNOSIS_GENERATION_TOKENS,
    "rca": DIAGNOSIS_GENERATION_TOKENS,
    "rca-nezha": DIAGNOSIS_GENERATION_TOKENS,
    "clindiag": DIAGNOSIS_GENERATION_TOKENS,
}


def paper_generation_tokens(kind: TaskKind, env: str | None = None) -> int:
    """The paper's generation budget (App. D.1) for an environment, else for a task kind
    (ScienceWorld and TextWorldExpress, which the paper does not run, get the execution one)."""
    if env is not None and env in PAPER_GENERATION_TOKENS:
        return PAPER_GENERATION_TOKENS[env]
    return DIAGNOSIS_GENERATION_TOKENS if kind == "diagnosis" else EXECUTION_GENERATION_TOKENS


@dataclass(frozen=True)
class SchemaBounds:
    """Limits compiled into the answer schemas (maxLength / maxItems); None is unbounded."""

    thought_chars: int | None = None
    """The policy's thought."""
    action_chars: int | None = None
    """A free-text action (environments without an admissible list)."""
    tool_arg_chars: int | None = None
    """Each string argument of a tool call."""
    name_chars: int | None = None
    """Entity names and types, state attributes and values, record ids in patches and issues."""
    text_chars: int | None = None
    """Gap text, quotes, and the sentinel's problem, fix and reason."""
    patch_ops: int | None = None
    """Ops in one update, revision or global-revision patch."""
    init_ops: int | None = None
    """Ops in the initial belief (as many as the first observation needs, unless bounded)."""
    evidence_steps: int | None = None
    """Step numbers one record cites as evidence."""
    gap_refs: int | None = None
    """Records one gap refers to."""
    issue_records: int | None = None
    """Records one audit issue names."""
    audit_issues: int | None = None
    """Issues in one local audit."""
    global_audit_issues: int | None = None
    """Issues in one global audit."""

    def merged(self, overrides: Mapping[str, int | None]) -> SchemaBounds:
        """These bounds with some replaced; ValueError names an unknown or negative bound."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(
                f"unknown schema bound(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        for name, value in overrides.items():
            if value is not None and (isinstance(value, bool) or int(value) < 1):
                raise ValueError(f"schema bound {name} must be a positive integer or none")
        return replace(self, **{k: None if v is None else int(v) for k, v in overrides.items()})


@dataclass(frozen=True)
class RoleBudgets:
    """Generation tokens per role call."""

    policy: int
    belief: int
    sentinel: int


@dataclass(frozen=True)
class AuditClips:
    """How much of past observations the sentinel reads (characters; None: whole). The belief
    model and the policy always see each new observation whole."""

    transitions: int = 4
    """Transitions the local audit sees (paper Table 8: the last 4)."""
    audit_observation_chars: int | None = None
    """Each observation in the local audit's and the progress judge's transitions."""
    global_observation_chars: int | None = 400
    """Each observation in the global audit's compact trajectory (the paper: "a compact
    trajectory"; the paper gives no length, 400 characters is our choice)."""
    evidence_chars: int | None = None
    """Each cited observation shown to the belief model with the findings."""


@dataclass(frozen=True)
class Profile:
    """What a class of model gets: fixed budgets (or the suite's) and schema bounds."""

    name: ProfileName
    bounds: SchemaBounds
    budgets: RoleBudgets | None = None
    """None: every call gets the suite's `generation_tokens` (the paper's setting)."""
    render_entities: int | None = None
    """Entities of the belief rendered into a prompt (the active gap's first, the rest counted);
    None renders the whole belief."""
    clips: AuditClips = AuditClips()
    """What the sentinel reads of past observations."""
    action_list: int | None = None
    """Admissible actions listed in a prompt, in the environment's order (the schema's enum has
    them all); None lists every one (real models)."""
    patch_note: str = ""
    """A line added to the belief model's instructions (none for real models)."""


# Sized for SmolLM2-135M under llama.cpp's grammar: an answer near its bounds still closes its
# JSON within the budget at a few characters per token.
COMPACT = Profile(
    "compact",
    SchemaBounds(
        thought_chars=60,
        action_chars=80,
        tool_arg_chars=60,
        name_chars=40,
        text_chars=80,
        patch_ops=6,
        init_ops=12,
        evidence_steps=2,
        gap_refs=3,
        issue_records=4,
        audit_issues=3,
        global_audit_issues=4,
    ),
    RoleBudgets(policy=128, belief=768, sentinel=512),
    render_entities=40,
    # An 8K context holds the audit prompt only with short observations.
    clips=AuditClips(audit_observation_chars=400, global_observation_chars=120, evidence_chars=600),
    # A prompt with every action of a big room does not fit its 8K window.
    action_list=60,
    # Real models get no such line (it may make them under-record); the 135M model's patches
    # are bounded by the schema's 6 ops, and the line keeps them short within those.
    patch_note="Return few ops.",
)
STANDARD = Profile("standard", SchemaBounds())
PROFILES: dict[ProfileName, Profile] = {"standard": STANDARD, "compact": COMPACT}


def profile_for_model(spec: str) -> ProfileName:
    """The profile a model gets unless one is asked for: compact for the embedded model only."""
    return "compact" if spec == "local" else "standard"


@dataclass(frozen=True)
class RoleLimits:
    """One role's generation budget and schema bounds, with the profile they came from."""

    profile: ProfileName
    max_tokens: int
    bounds: SchemaBounds
    render_entities: int | None = None
    """Entities of the belief this role's prompts show (None: all)."""
    clips: AuditClips = AuditClips()
    """What this role reads of past observations (used by the sentinel)."""
    action_list: int | None = None
    """Admissible actions this role's prompts list (None: all, in the environment's order)."""
    patch_note: str = ""
    """A line added to the belief model's instructions (the profile's)."""


def role_limits(
    role: Literal["policy", "belief", "sentinel"],
    *,
    model: str,
    generation_tokens: int,
    profile: ProfileName | None = None,
    bounds: Mapping[str, int | None] | None = None,
) -> RoleLimits:
    """The limits of one role played by `model`: the asked profile or the model's own, the
    profile's budget or `generation_tokens`, and the profile's bounds with `bounds` applied."""
    chosen = PROFILES[profile or profile_for_model(model)]
    tokens = getattr(chosen.budgets, role) if chosen.budgets else generation_tokens
    return RoleLimits(
        chosen.name,
        tokens,
        chosen.bounds.merged(bounds or {}),
        chosen.render_entities,
        chosen.clips,
        chosen.action_list,
        chosen.patch_note,
    )


@dataclass(frozen=True)
class AgentLimits:
    """The limits of every role of one agent."""

    policy: RoleLimits
    belief: RoleLimits
    sentinel: RoleLimits

    @classmethod
    def for_models(
        cls,
        models: Mapping[str, str],
        *,
        generation_tokens: int,
        profile: ProfileName | None = None,
        bounds: Mapping[str, int | None] | None = None,
    ) -> AgentLimits:
        """Limits for the roles' model specs (a role missing from `models` gets the policy's)."""
        policy_model = models.get("policy", "local")

        def limits(role: Literal["policy", "belief", "sentinel"]) -> RoleLimits:
            return role_limits(
                role,
                model=models.get(role, policy_model),
                generation_tokens=generation_tokens,
                profile=profile,
                bounds=bounds,
            )

        return cls(limits("policy"), limits("belief"), limits("sentinel"))

    @classmethod
    def of_profile(
        cls, profile: ProfileName = "compact", generation_tokens: int = 512
    ) -> AgentLimits:
        """Every role on one profile (library use and tests)."""
        return cls.for_models(
            {"policy": "", "belief": "", "sentinel": ""},
            generation_tokens=generation_tokens,
            profile=profile,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_bounds(items: list[str] | None) -> dict[str, int | None]:
    """`KEY=VALUE` strings (VALUE a positive integer or `none`) as a bounds mapping."""
    out: dict[str, int | None] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bound {item!r} must look like KEY=VALUE, e.g. patch_ops=20")
        text = value.strip().lower()
        if text in ("none", "null", ""):
            out[key.strip()] = None
            continue
        try:
            out[key.strip()] = int(text)
        except ValueError:
            raise ValueError(f"bound {item!r}: {value!r} is not an integer or none") from None
    SchemaBounds().merged(out)  # names and values checked here, once
    return out
