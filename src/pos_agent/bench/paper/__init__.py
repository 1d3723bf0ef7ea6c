"""The paper's grid (benchmarks, methods, backbones, case counts) and its published Tables 1, 2
and 9, for the study (`bench/study`) and the paper report (`bench/report/paper`)."""

from pos_agent.bench.paper.grid import (
    BENCHMARK_BY_KEY,
    BENCHMARKS,
    CLINDIAG_HALVES,
    METHOD_TITLES,
    PAPER,
    PAPER_BACKBONES,
    PAPER_EMBED_MODEL,
    PAPER_ENV_MODEL,
    PAPER_METHODS,
    Benchmark,
    benchmark_of,
    paper_backbone,
)
from pos_agent.bench.paper.published import (
    TABLE2_ROLES,
    TABLE9_COLUMNS,
    Published,
    published,
)

__all__ = [
    "BENCHMARKS",
    "BENCHMARK_BY_KEY",
    "CLINDIAG_HALVES",
    "METHOD_TITLES",
    "PAPER",
    "PAPER_BACKBONES",
    "PAPER_EMBED_MODEL",
    "PAPER_ENV_MODEL",
    "PAPER_METHODS",
    "TABLE2_ROLES",
    "TABLE9_COLUMNS",
    "Benchmark",
    "Published",
    "benchmark_of",
    "paper_backbone",
    "published",
]
