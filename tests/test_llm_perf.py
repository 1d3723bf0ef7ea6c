"""The local-model benchmark script's pure parts (the measurement itself is run by hand)."""

from __future__ import annotations

import math

from benchmarks.local_model import Row, median, rate, render, synthetic_belief
from rich.console import Console


def test_rate_is_the_median_tokens_per_second_skipping_empty_runs() -> None:
    assert rate([100, 200, 0, 50], [1000.0, 1000.0, 5.0, 1000.0]) == 100.0
    assert math.isnan(rate([], []))
    assert math.isnan(median([]))


def test_synthetic_prompts_are_unique_per_tag_and_grow_with_lines() -> None:
    assert synthetic_belief(5, "a") != synthetic_belief(5, "b")
    assert len(synthetic_belief(40, "a")) > 4 * len(synthetic_belief(5, "a"))


def test_render_prints_every_row() -> None:
    console = Console(width=100, record=True)
    console.print(render([Row("prompt eval", "123 tok/s", "median of 5")]))
    assert "123 tok/s" in console.export_text()
