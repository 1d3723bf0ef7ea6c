"""perf.cost's measurement: the floor arithmetic, the scripted rca belief patch that follows the
updater's prompt, and the llama.cpp server estimate made from the requests the server gets."""

from __future__ import annotations

import json
import math

import pytest

from pos_agent.belief.model import Belief
from pos_agent.belief.patch import apply_patch_detailed
from pos_agent.belief.render import render_belief
from pos_agent.llm.backend import GenerationRequest
from pos_agent.perf import cost
from pos_agent.perf.baselines import Backbone, observed_quote
from pos_agent.sentinel import check_rules, normalize_quote
from pos_agent.transition import Transition
from pos_agent.updater.prompts import belief_update


def call(prompt: int, completion: int, text: str = "x") -> cost.Call:
    return cost.Call("policy", "act", text, prompt, completion)


# -- the floor ------------------------------------------------------------------------------------


def test_the_floor_bills_every_pos_prompt_token_at_the_cached_price() -> None:
    # Short prompts: OpenAI's rule (from 1,024 tokens) caches nothing of raw's.
    pos = [call(600, 40), call(400, 10)]
    raw = [call(300, 20), call(200, 30)]
    # pos: 1000 prompt tokens all cached + 50 completion; raw as measured: 500 + 50 uncached.
    assert cost.floor(pos, raw, 0.5, raw_cached=False) == pytest.approx((500 + 50) / 550)
    assert cost.floor(pos, raw, 0.1, raw_cached=False) == pytest.approx((100 + 50) / 550)
    # Both fully cached: raw's 500 prompt tokens at the cached price too.
    assert cost.floor(pos, raw, 0.5, raw_cached=True) == pytest.approx((500 + 50) / (250 + 50))
    assert cost.floor(pos, raw, 0.1, raw_cached=True) == pytest.approx((100 + 50) / (50 + 50))


def test_the_floor_keeps_raws_measured_cache_share() -> None:
    # raw's second prompt repeats the first's 2,048 tokens: OpenAI's rule serves 2,048 of it.
    first = "a" * 8192
    raw = [call(2048, 0, first), call(4096, 0, first + "b" * 8192)]
    pos = [call(6144, 0, "p")]
    measured = cost.counts(raw, "openai")
    assert measured.cached == 2048
    expected = 6144 * 0.5 / ((6144 - 2048) + 2048 * 0.5)
    assert cost.floor(pos, raw, 0.5, raw_cached=False) == pytest.approx(expected)


def test_the_floor_lines_are_labelled_per_episode() -> None:
    lines = cost.floor_lines("rca", [call(1000, 0)], [call(1000, 0)])
    assert lines == [
        "rca: floor pos/raw if all pos prompts were cached: 0.5x=0.50 0.1x=0.10",
        "rca: floor pos/raw if all prompts of both were cached: 0.5x=1.00 0.1x=1.00",
    ]
    assert math.isnan(cost.floor([call(5, 0)], [], 0.5, raw_cached=True))


def test_perf_cost_prints_the_floor_before_the_two_last_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cost.main(["--steps", "4", "--episodes", "alfworld", "--methods", "raw,pos"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith("billed pos/raw at 0.5x cached: alfworld=")
    assert lines[-1].startswith("billed pos/raw at 0.1x cached: alfworld=")
    floors = [line for line in lines if line.startswith("alfworld: floor pos/raw if")]
    assert len(floors) == 2 and lines.index(floors[-1]) == len(lines) - 3


# -- the scripted rca belief patch ----------------------------------------------------------------

OBSERVATION = """Metrics of frontend (last 10 min):
  cpu_usage: mean 0.93, max 0.99 (anomalous)
  memory_usage: mean 0.41"""


def test_the_scripted_patch_quotes_the_observation_and_passes_the_rules() -> None:
    belief = Belief(goal="find the root cause", step=3)
    action = json.dumps({"tool": "query_metrics", "args": {"entity": "frontend"}})
    step = Transition(3, action, OBSERVATION)
    messages = belief_update(render_belief(belief), step, diagnostic=True)
    request = GenerationRequest(
        tuple(messages), None, None, 512, 0.0, 0, role="belief", purpose="update"
    )
    ops = json.loads(Backbone([])(request))["ops"]
    state = next(op for op in ops if op["op"] == "upsert_state")
    assert state["source"] == "observed" and state["evidence"] == [3]
    assert state["quote"] and state["quote"] in OBSERVATION
    outcome = apply_patch_detailed(belief, {"ops": ops})
    assert outcome.rejected == []
    findings = check_rules(
        outcome.belief, {3: OBSERVATION}, patch={"ops": ops}, changed=outcome.changed
    )
    assert findings == [], findings


def test_the_quote_is_cut_at_a_word_and_absent_without_an_observation() -> None:
    long = "word " * 40
    got = observed_quote(f"Observation at step 7:\n\n  {long}\n\nReturn the patch")
    assert got is not None and got[0] == 7
    assert len(got[1]) <= 80 and not got[1].endswith(" ")
    assert normalize_quote(got[1]) in normalize_quote(long)
    assert observed_quote("Current belief:\n(empty)") is None
    ops = Backbone([]).patch('Current belief:\nAction: {"entity": "db"}')
    state = next(op for op in ops if op["op"] == "upsert_state")
    assert state["source"] == "inferred" and "quote" not in state
