"""perf.cost's measurement: the floor arithmetic, the scripted rca belief patch that follows the
updater's prompt, and the llama.cpp server estimate made from the requests the server gets."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from benchmarks import cost
from benchmarks.baselines import Backbone, observed_quote
from pydantic import BaseModel

from pos_agent.belief.model import Belief
from pos_agent.belief.patch import apply_patch_detailed
from pos_agent.belief.render import render_belief
from pos_agent.cost import prompt_text
from pos_agent.cost.cache import ANSWER_MARK
from pos_agent.llm import Message, ModelOptions, ReliableModel, Usage
from pos_agent.llm.backend import GenerationRequest, RawReply
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


# -- the llama.cpp server estimate: the requests as the server gets them ---------------------------


class Patch(BaseModel):
    ops: list[str]


class Verdict(BaseModel):
    issues: list[str]


class CharServer:
    """llama-cpp-python's server in miniature, a character for a token: it keeps the state of
    every request (its prompt, then the answer), reuses the longest prefix a new prompt shares
    with one of them (re-evaluating the last token of a prompt held whole) and says so only in
    its log."""

    name = "openai"
    model_id = "fake"
    base_url: str | None = None

    def __init__(self, log: Path, replies: list[str]) -> None:
        self.log = log
        self.replies = replies
        self.states: list[str] = []

    def generate(self, request: GenerationRequest) -> RawReply:
        prompt = prompt_text([(m.role, m.content) for m in request.messages])
        best = 0
        for state in self.states:
            same = 0
            while same < min(len(state), len(prompt)) and state[same] == prompt[same]:
                same += 1
            best = max(best, same)
        best = min(best, len(prompt) - 1)
        with self.log.open("a") as out:
            out.write(f"Llama.generate: {best} prefix-match hit, remaining {len(prompt) - best}\n")
        answer = self.replies.pop(0)
        self.states.append(prompt + ANSWER_MARK + answer)
        return RawReply(answer, Usage(len(prompt), len(answer)))


def test_the_estimate_sees_the_repair_turns_and_the_schema_the_server_gets(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("starting\n")
    bad, patch, verdict = "no json here", '{"ops": ["a"]}', '{"issues": []}'
    server = CharServer(log, [bad, patch, verdict, patch, verdict, patch, verdict])
    wire = cost.SentLog(server, log)
    options = ModelOptions(schema_in_prompt=True, max_repairs=1, max_retries=0)
    calls = cost.Calls(ReliableModel(wire, spec="openai:fake", options=options))
    system = "You are one of the roles of an agent. " * 20
    for step in range(3):
        belief = f"Current belief at step {step}: the mug is in cabinet {step}."
        calls.complete(
            [Message("system", system), Message("user", belief + " Update it.")],
            schema=Patch,
            role="belief",
        )
        calls.complete(
            [Message("system", system), Message("user", belief + " Audit it.")],
            schema=Verdict,
            role="sentinel",
        )
    # Calls sees six answers; the server got seven requests, the repair turn among them.
    assert len(calls.calls) == 6 and len(wire.sent) == 7
    repair = wire.sent[1]
    assert ("assistant", bad) in repair.messages and repair.role == "belief"
    assert '"ops"' in wire.sent[0].messages[0][1], "the schema is in the system message as sent"
    told = [int(n) for n in re.findall(r"(\d+) prefix-match hit", log.read_text())]
    assert [s.server_cached for s in wire.sent] == told
    server_total = sum(told)
    # The repair reuses its first attempt and the answer the server generated to it.
    assert told[1] > len(wire.sent[0].text)
    # A character for a token: the estimate on the requests as sent is the server's count.
    assert cost.sent_estimate(wire.sent) == told
    # What `Model.answer` sees (no schema, no repair) misses most of it: the old estimate.
    on_calls = sum(cost.cached_tokens(calls.calls, "llamacpp-ram"))
    assert on_calls < 0.9 * server_total


def test_server_reuse_follows_llama_cpp_pythons_rule() -> None:
    # Token lists: the second prompt extends the first's state (prompt + answer).
    prompts: list[cost.Tokens] = [[1, 2, 3], [1, 2, 3, 9, 4], [1, 2, 3], [5, 6]]
    answers: list[cost.Tokens] = [[9], [8], [7], [1]]
    sizes = [3, 5, 3, 2]
    ram = cost.server_reuse(prompts, answers, sizes, ram=True)
    # 2nd: [1,2,3,9] of the first state; 3rd: held whole, so its last token is evaluated again.
    assert ram == [0, 4, 2, 0]
    last = cost.server_reuse([[1, 2], [7, 7], [1, 2, 5]], [[], [], []], [2, 2, 3], ram=False)
    assert last == [0, 0, 0], "without --cache only the last state counts"
    with_ram = cost.server_reuse([[1, 2], [7, 7], [1, 2, 5]], [[], [], []], [2, 2, 3], ram=True)
    assert with_ram == [0, 0, 2]
    # Texts (the estimate, `cost/cache.py`'s rule): shared characters converted with the
    # prompt's own token count, the answer kept after the prompt.
    texts = cost.sent_estimate(
        [
            cost.Sent("policy", "act", (("user", "abcdefgh"),), "", 4, 0),
            cost.Sent("policy", "act", (("user", "abcdxxxx"),), "", 2, 0),
        ]
    )
    assert texts == [0, 1]


def test_the_server_table_says_why_when_the_gap_is_over_ten_percent() -> None:
    sent = [
        cost.Sent("policy", "act", (("user", "a" * 40),), "x", 10, 0),
        cost.Sent("policy", "act", (("user", "a" * 40 + "b"),), "x", 10, 5),
    ]
    runs = [("raw", [call(10, 1), call(10, 1)], range(0, 2))]
    lines = cost.server_table(runs, sent, [0, 5])
    assert lines[0].split()[:4] == ["method", "calls", "sent", "prompt"]
    row = lines[1].split()
    assert row[:5] == ["raw", "2", "2", "20", "5"]
    assert row[-2:] == ["5", "+0.0%"]
    assert lines[-1].startswith("estimate not within 10% on raw:")
    fine = cost.server_table(runs, sent, "no tokenizer")
    assert fine[-1].startswith("estimate not within 10%") and "no tokenizer" in fine[-2]
