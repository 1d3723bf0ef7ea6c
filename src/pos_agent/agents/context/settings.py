"""The four baselines' parameters, with the value each benchmark uses by default.

Paper values are marked as such (paper Table 7 and Appendix D.2-D.3, or the upstream code the
paper ran). Where the paper does not report a value, the comment says so and why this one was
chosen; these stay fixed across backbones, as the paper fixes them per benchmark. A suite sets
any of them by name under `methods: {acon: {...}, pace: ..., hiagent: ..., lh_harness: ...}`
(`with_options` checks names and values), and the built-in suites state the unreported ones.
Nothing here is sized for the embedded 135M model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

Family = Literal[
    "alfworld", "scienceworld", "textworld-express", "clindiag", "rca", "loca", "other"
]

_FAMILIES: dict[str, Family] = {
    "alfworld": "alfworld",
    "alfworld-mini": "alfworld",
    "scienceworld": "scienceworld",
    "textworld-express": "textworld-express",
    "clindiag": "clindiag",
    "rca": "rca",
    "rca-nezha": "rca",
    "loca": "loca",
    "loca-bench": "loca",
}
TOOL_FAMILIES: frozenset[Family] = frozenset({"clindiag", "rca", "loca"})


def benchmark_family(env_name: str) -> Family:
    """Which benchmark an environment belongs to (alfworld-mini is ALFWorld, rca-nezha is RCA)."""
    return _FAMILIES.get(env_name, "other")


def generation_tokens(family: Family) -> int:
    """Output budget of one agent-side call (paper App. D.1: 512 on ALFWorld; 4,096 on LOCA-Bench,
    RCA and ClinDiag). ScienceWorld and TextWorldExpress are not listed; they are text games
    with one-line actions like ALFWorld, so they get ALFWorld's 512."""
    return 4096 if family in TOOL_FAMILIES else 512


# -- ACON ---------------------------------------------------------------------------------------

# What a summary must keep, per benchmark: fixed and case-independent (paper App. D.2). The
# paper names the first four; ScienceWorld, TextWorldExpress and the fallback follow the same
# idea for what their tasks hinge on.
KEEP_CATEGORIES: dict[Family, tuple[str, ...]] = {
    "alfworld": (
        "where each object and receptacle was found (and which receptacles were empty)",
        "what the agent holds (inventory)",
        "the state of receptacles and appliances (open/closed, on/off) and of objects (clean, hot, cool)",
    ),
    "scienceworld": (
        "where each object, substance and device is (room and container)",
        "what the agent holds, and which object is in focus",
        "measured and observed states (temperature, phase, connections, life stage)",
    ),
    "textworld-express": (
        "the rooms visited, their exits and which doors are open",
        "where each object was found and what the agent holds",
        "the recipe or task requirements and which are already met",
    ),
    "clindiag": (
        "every finding obtained: history answers, examination findings and test results with values",
        "the questions and tests already asked that returned nothing useful",
        "the candidate diagnoses and which findings support or contradict each",
    ),
    "rca": (
        "the evidence per component (service, pod, node): anomalous metrics with values, log errors, trace latencies and errors",
        "the components checked and found normal",
        "the candidate root causes and fault types and which evidence supports each",
    ),
    "loca": (
        "the ids, names and values read from tools",
        "the files written or changed, with their paths and contents",
        "the requirements of the task and which are done",
    ),
    "other": (
        "the facts observed that the task depends on, with their values",
        "what was done and what it changed",
    ),
}


@dataclass(frozen=True)
class AconSettings:
    """ACON history compression (paper App. D.2; upstream microsoft/acon)."""

    threshold_tokens: int
    """Compress when the previous summary plus the turns older than the last `keep_last_turns`
    exceed this many tokens."""
    summary_tokens: int
    """Output cap of one compressor call."""
    keep_last_turns: int = 3
    """Turns kept verbatim after a compression (paper: 3; the upstream default is 1)."""
    keep_categories: tuple[str, ...] = ()
    """Benchmark-specific things the summary must keep."""

    def __post_init__(self) -> None:
        if self.threshold_tokens <= 0 or self.summary_tokens <= 0:
            raise ValueError("ACON threshold and summary cap must be positive")
        if self.keep_last_turns < 0:
            raise ValueError("keep_last_turns must be >= 0")


# ACON's threshold and summary cap per benchmark. The paper fixes both per benchmark but does
# not report them; upstream ACON uses T = 4096 on AppWorld (tool outputs) and 2048 on QA. A
# threshold only means something if compression happens within the benchmark's step budget:
# - RCA, LOCA (tool outputs of hundreds to thousands of tokens a turn): 4096, as upstream's
#   tool benchmark; cap T/4, so the next compression does not fire right after one. Measured on
#   RCA (`python -m benchmarks.acon_turns --bench rca`, 25 rca-nezha incidents x 50 turns
#   of one call, a lower bound: a turn may carry 3): 153 tokens median (p90 650, max 750);
#   4096 fires in 25 of 25 cases, first at step 22 (median) of 50. LOCA is not measured
#   offline here (its cases need LOCA's runtime and minutes of data generation each); its
#   observations are file and database contents, larger than RCA's.
# - ClinDiag: the offline answers are clipped (4 lines / 1,500 characters), so a turn is small:
#   measured by `python -m benchmarks.acon_turns` over 25 Common cases x 29 questions,
#   47 tokens median (p90 116, max 297). At 4096 the trigger fires in 0 of 25 cases within the
#   30 calls (2048: 3 of 25), so ACON would be the raw trajectory; 512 fires in 25 of 25, first
#   at step 11 (median), then every five or so turns. Cap T/2, as on ALFWorld: the summary
#   must keep every finding with its value.
# - ALFWorld: a turn is about 20 tokens (measured: 19.5 median on alfworld-mini, 4 chars a
#   token), so 2048 would never fire in its 50 steps and ACON would be the raw trajectory; 512
#   first fires after about 25 steps, then every dozen or so. Cap T/2: the summary must keep
#   every object's location and the inventory, about 150 tokens on an ALFWorld room.
# - ScienceWorld and TextWorldExpress (room descriptions of a few hundred tokens, 100 steps):
#   2048, upstream's QA value; cap T/4.
ACON_LIMITS: dict[Family, tuple[int, int]] = {
    "alfworld": (512, 256),
    "scienceworld": (2048, 512),
    "textworld-express": (2048, 512),
    "clindiag": (512, 256),
    "rca": (4096, 1024),
    "loca": (4096, 1024),
    "other": (2048, 512),
}


def acon_settings(family: Family) -> AconSettings:
    threshold, cap = ACON_LIMITS[family]
    return AconSettings(
        threshold_tokens=threshold,
        summary_tokens=cap,
        keep_categories=KEEP_CATEGORIES[family],
    )


# -- PACE ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PaceSettings:
    """PACE adaptive granularity (paper App. D.2; PACE paper Eqs. 1-8, Algorithm 1)."""

    tau: float = 0.3
    """Softmax temperature over relevance scores (paper)."""
    thresholds: tuple[float, float, float] = (0.4, 0.8, 1.5)
    """(alpha, beta, gamma) at zero pressure (paper)."""
    pressure_gain: float = 0.5
    """Thresholds scale by (1 + gain * pressure) (paper)."""
    context_window_tokens: int = 128_000
    """The context size pressure is measured against (paper: 128K)."""
    t_max: int | None = None
    """Step count at which step pressure reaches 1. None: the benchmark's step budget (paper;
    the PACE paper uses a 95th-percentile task length, which the baselines paper replaces)."""
    recent_full: int = 2
    """The most recent chunks, always shown in full (paper)."""
    max_glimpses_per_step: int = 3
    """glimpse(i) calls allowed per step (paper)."""
    detailed_tokens: int = 256
    """Output cap of a detailed chunk summary. Not reported: a detailed summary is a paragraph."""
    brief_tokens: int = 64
    """Output cap of a brief summary. Not reported: 1-2 sentences fit in about 50 tokens."""

    def __post_init__(self) -> None:
        alpha, beta, gamma = self.thresholds
        if not 0 <= alpha <= beta <= gamma:
            raise ValueError("PACE thresholds must satisfy 0 <= alpha <= beta <= gamma")
        if self.tau <= 0:
            raise ValueError("PACE tau must be positive")
        if self.recent_full < 0 or self.max_glimpses_per_step < 0:
            raise ValueError("recent_full and max_glimpses_per_step must be >= 0")


# -- HiAgent ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HiAgentSettings:
    """HiAgent subgoal-folded working memory (paper App. D.2; upstream HiAgent2024/HiAgent)."""

    summary_tokens: int = 128
    """Output cap of one subgoal summary. Not reported; the upstream summarizer asks for 1-2
    sentences with no cap of its own, and 128 tokens holds that with room to spare."""
    max_retrieves_per_step: int = 3
    """retrieve(...) re-queries allowed per step. Upstream has no cap (it recurses); capped
    like PACE's glimpse so a policy that keeps retrieving cannot loop."""

    def __post_init__(self) -> None:
        if self.summary_tokens <= 0 or self.max_retrieves_per_step < 0:
            raise ValueError("HiAgent summary_tokens must be positive, retrieves >= 0")


# -- LongHorizon-Harness ------------------------------------------------------------------------


@dataclass(frozen=True)
class LongHorizonSettings:
    """LongHorizon-Harness Manager / Executor / Auditor rounds (paper App. D.3; upstream
    AMAP-ML/LongHorizon-Harness v0.1.7)."""

    max_rounds: int = 25
    """Round cap (upstream default 25; the paper does not report one). Rounds also end at the
    action budget."""
    executor_actions: int = 10
    """Environment actions one executor subtask may take. Not reported (upstream bounds an
    executor episode by wall time): a subtask is one dominant state change, which takes a
    handful of actions, and 10 leaves room to audit within a 30-50 action budget."""
    auditor_queries: int = 3
    """Read-only environment queries one audit may make (they spend the action budget).
    Not reported: enough to check one subtask's outcome without eating the budget."""
    generation_tokens: int = 512
    """Output cap of manager, executor-report and auditor calls (the suite's generation budget)."""
    repair_tokens: int = 512
    """Output cap of the one header-repair call."""
    manager_history_chars: int = 100_000
    """Characters of audit reports the manager sees, oldest dropped first. Upstream's run value:
    `RunConfig.role_history_chars = 100_000` (src/lh_harness/types.py at v0.1.7), which
    manager.py passes to the manager prompt; 36,000 is only the prompt builder's fallback
    argument, never used by a run."""
    related_report_chars: int = 60_000
    """Characters of the cited audit reports an executor or auditor sees (upstream's run value,
    `RunConfig.role_verified_context_chars`)."""
    executor_output_chars: int = 24_000
    """Characters of the executor's report the auditor sees (upstream's run value,
    `RunConfig.auditor_output_chars`)."""

    def __post_init__(self) -> None:
        if min(self.max_rounds, self.executor_actions, self.generation_tokens) <= 0:
            raise ValueError("LongHorizon round cap, executor actions and budgets must be positive")
        if self.auditor_queries < 0:
            raise ValueError("auditor_queries must be >= 0")


def long_horizon_settings(family: Family) -> LongHorizonSettings:
    budget = generation_tokens(family)
    return LongHorizonSettings(generation_tokens=budget, repair_tokens=budget)


@dataclass(frozen=True)
class BaselineSettings:
    """Every baseline's settings for one benchmark."""

    family: Family
    acon: AconSettings
    pace: PaceSettings = field(default_factory=PaceSettings)
    hiagent: HiAgentSettings = field(default_factory=HiAgentSettings)
    long_horizon: LongHorizonSettings = field(default_factory=LongHorizonSettings)


def baseline_settings(env_name: str) -> BaselineSettings:
    """The defaults for an environment's benchmark."""
    family = benchmark_family(env_name)
    return BaselineSettings(
        family=family,
        acon=acon_settings(family),
        long_horizon=long_horizon_settings(family),
    )


# Where each method's parameters live in `BaselineSettings`, and their type, by method name.
SETTINGS_FIELD: dict[str, tuple[str, type[Any]]] = {
    "acon": ("acon", AconSettings),
    "pace": ("pace", PaceSettings),
    "hiagent": ("hiagent", HiAgentSettings),
    "lh_harness": ("long_horizon", LongHorizonSettings),
}


def option_names(method: str) -> tuple[str, ...]:
    """The parameters a suite may set for `method` (none for methods that are not baselines)."""
    if method not in SETTINGS_FIELD:
        return ()
    return tuple(f.name for f in fields(SETTINGS_FIELD[method][1]))


def with_options(
    settings: BaselineSettings, method: str, options: Mapping[str, Any]
) -> BaselineSettings:
    """`settings` with some of `method`'s parameters replaced (from a suite's `methods:`);
    ValueError says which name or value is wrong and what is allowed."""
    if not options:
        return settings
    if method not in SETTINGS_FIELD:
        raise ValueError(f"{method} has no baseline parameters; got {', '.join(sorted(options))}")
    attr, _ = SETTINGS_FIELD[method]
    current = getattr(settings, attr)
    known = [f.name for f in fields(current)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"unknown {method} parameter(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    try:
        updated = TypeAdapter(type(current)).validate_python({**asdict(current), **options})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or method}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"{method} parameters: {problems}") from None
    return replace(settings, **{attr: updated})
