"""The paper's grid: its benchmarks (with their case counts and the suites that stand for them
here), its eight methods, its three backbones and the LLMs it fixes beside them.

Case counts are the paper's Table 5 (ALFWorld 134 valid_unseen games, LOCA-Bench 525 cases,
RCA-100 103 cases, ClinDiag 302 Common + 302 Rare). Where this project runs something else, the
benchmark says so (`substitute`), and the paper report names it in a footnote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PAPER = (
    '"Beyond Memory: Harnessing Long-Horizon Agents with Explicit Belief States" (2026), '
    "Tables 1, 2 and 9"
)
"""The source of the published figures, as the report cites it."""

PAPER_METHODS: tuple[str, ...] = (
    "raw",
    "acon",
    "pace",
    "hiagent",
    "lh_harness",
    "pos",
    "no_consistency",
    "no_trapping",
)
"""Table 1's rows, in its order: Raw Trajectory, the four baselines, PoS and its two ablations."""

METHOD_TITLES: Mapping[str, str] = {
    "raw": "Raw Trajectory",
    "acon": "ACON",
    "pace": "PACE",
    "hiagent": "HiAgent",
    "lh_harness": "LongHorizon-Harness",
    "pos": "PoS (Ours)",
    "no_consistency": "- Consistency Validation",
    "no_trapping": "- Trapping Diagnosis",
}
"""Each method's row title in the paper."""

PAPER_BACKBONES: tuple[str, ...] = ("Qwen3.7-Plus", "Kimi-K3", "GLM-5.3")
"""Table 1's backbone groups, in its order."""

PAPER_ENV_MODEL = "dashscope:qwen3.7-plus"
"""ClinDiag's provider and judge in the paper: one fixed LLM (Qwen3.7-Plus, via DashScope), the
same for every method and backbone."""

PAPER_EMBED_MODEL = "dashscope:text-embedding-v4"
"""PACE's relevance embeddings in the paper (App. D.2: text-embedding-v4)."""


@dataclass(frozen=True)
class Benchmark:
    """One of the paper's four benchmarks, and what stands for it here."""

    key: str
    """alfworld, loca, rca or clindiag."""
    column: str
    """Its Table 1 column: ALF, LOCA, RCA or Clin."""
    title: str
    """Its name in the paper."""
    paper_cases: int
    """Cases the paper ran (Table 5)."""
    suite: str
    """The built-in suite the study runs for it."""
    envs: tuple[str, ...]
    """Environment names whose results count for it."""
    substitute: Mapping[str, str]
    """Environment -> what differs from the paper's data when it runs there (a footnote)."""
    metric: str
    """What Table 1 reports for it."""
    suite_cases: int
    """Cases the suite holds here (the plan counts them when the data is not fetched yet)."""


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "alfworld",
        "ALF",
        "ALFWorld",
        134,
        "alfworld",
        ("alfworld", "alfworld-mini"),
        {
            "alfworld-mini": "alfworld-mini: 12 tasks authored for this project in ALFWorld's "
            "engine, not the 134 valid_unseen games"
        },
        "success",
        134,
    ),
    Benchmark("loca", "LOCA", "LOCA-Bench", 525, "loca", ("loca",), {}, "success", 525),
    Benchmark(
        "rca",
        "RCA",
        "RCA-100",
        103,
        "rca-nezha",
        ("rca-nezha", "rca"),
        {
            "rca-nezha": "RCA-100 is substituted by Nezha's 101 real incidents in the RCA100 "
            "case layout (the paper's 103 cases are not public)",
            "rca": "RCA-100 is substituted by cases in the RCA100 layout that are not the "
            "paper's 103",
        },
        "joint accuracy",
        101,
    ),
    Benchmark(
        "clindiag",
        "Clin",
        "ClinDiag",
        604,
        "clindiag-paper",
        ("clindiag",),
        {},
        "overall accuracy",
        604,
    ),
)
CLINDIAG_HALVES: Mapping[str, int] = {"common": 302, "rare": 302}
"""ClinDiag's two halves in the paper (Table 5), by the task category that marks them here: the
Common 302 (the paper's list) and the Rare 302 (ClinDiag's Rare Disease subset, rare0 ..
rare301, identified by name and count: the paper lists no Rare ids)."""
BENCHMARK_OF_ENV: Mapping[str, Benchmark] = {env: b for b in BENCHMARKS for env in b.envs}
BENCHMARK_BY_KEY: Mapping[str, Benchmark] = {b.key: b for b in BENCHMARKS}


def benchmark_of(env: str) -> Benchmark | None:
    """The paper benchmark an environment's results count for, or None (not in the paper)."""
    return BENCHMARK_OF_ENV.get(env)


def paper_backbone(name: str) -> str | None:
    """The paper's backbone a name stands for (`Qwen3.7-Plus`, `qwen3.7-plus`,
    `dashscope:qwen3.7-plus` all give Qwen3.7-Plus), or None."""
    text = name.strip().lower().rpartition(":")[2]
    for backbone in PAPER_BACKBONES:
        if backbone.lower() == text:
            return backbone
    return None
