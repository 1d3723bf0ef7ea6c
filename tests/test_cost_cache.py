"""Cached prompt tokens (issue 24, item 1): the counts servers report, in their several fields,
and where they report nothing an estimate under a named provider rule, marked as estimated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pos_agent.cost import CACHE_RULES, PrefixCache, cache_rule, shared_prefix
from pos_agent.events import ModelCallEvent
from pos_agent.llm import Completion, Message, TokenLedger, Usage
from pos_agent.llm._usage import checked_usage
from pos_agent.roles.caller import RoleCaller
from pos_agent.trace import TraceWriter, read_events


def usage_of(body: dict[str, object], timings: object = None) -> Usage:
    spent, _ = checked_usage(
        body,
        estimate=Usage(1, 1),
        prompt_bytes=40_000,
        max_tokens=64,
        reply_bytes=10,
        timings=timings,
    )
    return spent


def test_the_cache_fields_of_each_server_are_read() -> None:
    openai = usage_of(
        {
            "prompt_tokens": 2000,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 1920},
        }
    )
    assert (openai.cached_tokens, openai.cache_write_tokens, openai.cache_reported) == (
        1920,
        0,
        True,
    )
    anthropic = usage_of(
        {
            "prompt_tokens": 3000,
            "completion_tokens": 5,
            "cache_read_input_tokens": 1200,
            "cache_creation_input_tokens": 800,
        }
    )
    assert (anthropic.cached_tokens, anthropic.cache_write_tokens) == (1200, 800)
    dashscope = usage_of(
        {
            "prompt_tokens": 3000,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 0, "cache_creation_input_tokens": 2048},
        }
    )
    assert (dashscope.cached_tokens, dashscope.cache_write_tokens) == (0, 2048)
    llama = usage_of({"prompt_tokens": 400, "completion_tokens": 5}, timings={"cache_n": 370})
    assert (llama.cached_tokens, llama.cache_reported) == (370, True)
    silent = usage_of({"prompt_tokens": 400, "completion_tokens": 5})
    assert (silent.cached_tokens, silent.cache_reported) == (0, False)


@pytest.mark.parametrize("bad", [-5, "12", 1.5, 10**9, True])
def test_a_cache_count_that_cannot_be_right_is_not_stored(bad: object) -> None:
    spent = usage_of(
        {
            "prompt_tokens": 400,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": bad},
        }
    )
    assert spent.cached_tokens == 0 and not spent.cache_reported
    assert spent.prompt_tokens == 400


def test_openai_rule_counts_from_1024_tokens_in_blocks_of_128() -> None:
    rule = cache_rule("openai")
    assert rule.cached(1023, 5000) == 0
    assert rule.cached(1024, 5000) == 1024
    assert rule.cached(1300, 5000) == 1280
    assert rule.cached(9000, 2000) == 1920, "never more than the prompt"
    assert CACHE_RULES["dashscope"].cached(300, 1000) == 300
    assert CACHE_RULES["none"].cached(5000, 5000) == 0
    with pytest.raises(ValueError, match="unknown cache rule"):
        cache_rule("nope")


def test_the_estimate_is_the_prefix_shared_with_an_earlier_prompt() -> None:
    cache = PrefixCache(cache_rule("openai"))
    stable = "s" * 6000
    first = cache.estimate(stable + "A" * 400, 1600)  # 4 characters a token
    assert first.cached_tokens == 0, "nothing seen before"
    second = cache.estimate(stable + "B" * 400, 1600)
    assert second.shared_tokens == 1500 and second.cached_tokens == 1408
    assert shared_prefix("abcd", "abxy") == 2 and shared_prefix("", "a") == 0


def test_llamacpp_keeps_only_the_last_prompt() -> None:
    cache = PrefixCache(cache_rule("llamacpp"))
    cache.estimate("x" * 100 + "first", 105)
    cache.estimate("y" * 100, 100)
    assert cache.estimate("x" * 100 + "again", 105).cached_tokens == 0
    ram = PrefixCache(cache_rule("llamacpp-ram"))  # `--cache`: earlier prompts' states too
    ram.estimate("x" * 100 + "first", 105)
    ram.estimate("y" * 100, 100)
    assert ram.estimate("x" * 100 + "again", 105).cached_tokens == 100


def test_anthropic_caches_only_at_breakpoints() -> None:
    cache = PrefixCache(cache_rule("anthropic"))
    prompt = "p" * 8000 + "tail one"
    assert cache.estimate(prompt, 2002).cached_tokens == 0, "no breakpoint: nothing cached"
    first = cache.estimate(prompt, 2002, breakpoints=[8000])
    assert first.cached_tokens == 0 and first.write_tokens == 2000
    again = cache.estimate("p" * 8000 + "tail two", 2002, breakpoints=[8000])
    assert again.cached_tokens == 2000 and again.write_tokens == 0


def completion(prompt_tokens: int, usage: Usage | None = None) -> Completion:
    return Completion(
        text="{}",
        parsed=None,
        usage=usage or Usage(prompt_tokens, 3),
        latency_s=0.01,
        cached=False,
        repairs=0,
        model="scripted",
    )


def test_the_ledger_records_the_servers_count_or_an_estimate_marked_as_one() -> None:
    ledger = TokenLedger()
    prompt = [Message("system", "s" * 6000), Message("user", "first")]
    assert ledger.record("policy", completion(1600), 0, prompt=prompt).source == "estimated:openai"
    again = [Message("system", "s" * 6000), Message("user", "second")]
    count = ledger.record("belief", completion(1600), 0, prompt=again)
    assert count.source == "estimated:openai" and count.cached_tokens >= 1024
    reported = Usage(1600, 3, cached_tokens=1536, cache_reported=True)
    server = ledger.record("sentinel", completion(1600, reported), 0, prompt=again)
    assert (server.source, server.cached_tokens) == ("server", 1536)
    roles = ledger.by_role()
    assert roles["belief"]["estimated_cached_tokens"] == count.cached_tokens
    assert roles["belief"]["cached_prompt_tokens"] == 0
    assert roles["sentinel"]["cached_prompt_tokens"] == 1536
    assert roles["sentinel"]["cache_reported_calls"] == 1
    assert roles["sentinel"]["estimated_cached_tokens"] == 0
    merged = TokenLedger().merge(ledger)
    assert merged.total()["cached_prompt_tokens"] == 1536


def test_the_call_event_carries_the_cache_counts(tmp_path: Path) -> None:
    from pos_agent.llm import ScriptedModel

    ledger = TokenLedger()
    model = ScriptedModel()
    long = "rules " * 1500
    from pos_agent.roles.schemas import PolicyAnswer

    with TraceWriter(tmp_path) as trace:
        caller = RoleCaller(ledger, trace)
        for tail in ("one", "two"):
            messages = [Message("system", long), Message("user", tail)]
            caller("policy", model, messages, PolicyAnswer, step=0, max_tokens=32)
    calls = [e for e in read_events(tmp_path) if isinstance(e, ModelCallEvent)]
    assert [c.cache_source for c in calls] == ["estimated:openai"] * 2
    assert calls[0].cached_tokens == 0 and calls[1].cached_tokens >= 1024
    assert calls[1].cached_tokens % 128 == 0


def test_perf_cost_ends_with_the_two_lines_the_issue_asks_for(capsys: Any) -> None:
    from benchmarks import cost

    cost.main(["--steps", "6", "--episodes", "alfworld", "--methods", "raw,pos"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith("billed pos/raw at 0.5x cached: alfworld=")
    assert lines[-1].startswith("billed pos/raw at 0.1x cached: alfworld=")
    assert lines[-1].endswith("rca=- loca=-"), "episodes not run are shown as '-'"
    ratio = float(lines[-2].split("alfworld=")[1].split()[0])
    assert ratio > 0
    table = next(i for i, line in enumerate(lines) if line.strip().startswith("method"))
    assert "openai %" in lines[table] and "llamacpp %" in lines[table]


class JsonModeServer:
    """A server without a native schema mode that reports no cache counts: it keeps every
    request as it got it (the answer's schema written into the system message, the repair
    turns) and counts a token for every four characters of it."""

    name = "openai"
    model_id = "json-mode"
    base_url: str | None = None
    constrains_output = False

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.got: list[tuple[tuple[Message, ...], int, str]] = []

    def generate(self, request: Any) -> Any:
        from pos_agent.cost import prompt_text
        from pos_agent.llm.backend import RawReply

        text = prompt_text([(m.role, m.content) for m in request.messages])
        answer = self.replies.pop(0)
        self.got.append((request.messages, len(text) // 4, answer))
        return RawReply(answer, Usage(len(text) // 4, len(answer) // 4))


@pytest.mark.parametrize("rule", ["openai", "llamacpp", "llamacpp-ram", "dashscope"])
def test_the_estimate_is_on_the_requests_the_server_got(rule: str) -> None:
    """The schema instruction and a repair turn change what the server caches: the ledger's
    estimate is the rule's on every request as sent, in order, with the server's own prompt
    token counts and, for llama.cpp's rules, the answer kept in the server's state."""
    from pydantic import BaseModel

    from pos_agent.cost import prompt_text
    from pos_agent.llm import ModelOptions, ReliableModel

    class Patch(BaseModel):
        ops: list[str]

    bad, good = "no json here " * 30, '{"ops": ["the mug is in cabinet 1"]}'
    server = JsonModeServer([bad, good, good, good])
    model = ReliableModel(
        server, spec="openai:json-mode", options=ModelOptions(max_repairs=1, max_retries=0)
    )
    ledger = TokenLedger(rule)
    caller = RoleCaller(ledger, None)
    system = "You are the belief updater of an agent. " * 150
    for step in range(3):
        messages = [Message("system", system), Message("user", f"Observation {step}: nothing.")]
        assert caller("belief", model, messages, Patch, step=step, max_tokens=64) is not None
    # Four requests for three answers: the first was repaired, and every one carried the schema.
    assert len(server.got) == 4
    assert all('"ops"' in sent[0].content for sent, _, _ in server.got)
    assert server.got[1][0][-2] == Message("assistant", bad)
    expected = PrefixCache(cache_rule(rule))
    want = 0
    for sent, tokens, answer in server.got:
        text = prompt_text([(m.role, m.content) for m in sent])
        kept = answer if cache_rule(rule).kv_state else None
        want += expected.estimate(text, tokens, answer=kept).cached_tokens
    got = ledger.by_role()["belief"]
    assert got["estimated_cached_tokens"] == want > 0
    assert got["cached_prompt_tokens"] == 0 and got["cache_reported_calls"] == 0
    # The old estimate, on the messages before the schema instruction and without the repair
    # turn (with the call's summed prompt tokens), counts less.
    old = PrefixCache(cache_rule(rule))
    spent = [server.got[0][1] + server.got[1][1], server.got[2][1], server.got[3][1]]
    old_total = sum(
        old.estimate(prompt_text([("system", system), ("user", f"Observation {step}: nothing.")]),
                     tokens).cached_tokens
        for step, tokens in enumerate(spent)
    )  # fmt: skip
    assert old_total < want


def test_a_call_that_failed_after_its_repair_turn_is_estimated_on_both_requests() -> None:
    from pydantic import BaseModel

    from pos_agent.cost import prompt_text
    from pos_agent.llm import ModelOptions, ReliableModel

    class Patch(BaseModel):
        ops: list[str]

    bad = "no json here " * 30
    server = JsonModeServer([bad, bad])
    model = ReliableModel(
        server, spec="openai:json-mode", options=ModelOptions(max_repairs=1, max_retries=0)
    )
    ledger = TokenLedger("llamacpp-ram")
    messages = [Message("system", "You update beliefs. " * 100), Message("user", "Observe.")]
    assert RoleCaller(ledger, None)("belief", model, messages, Patch, step=0, max_tokens=64) is None
    assert len(server.got) == 2
    # The repair turn reuses the first request and the answer the server kept after it.
    expected = PrefixCache(cache_rule("llamacpp-ram"))
    want = [
        expected.estimate(prompt_text([(m.role, m.content) for m in sent]), tokens, answer=answer)
        for sent, tokens, answer in server.got
    ]
    first = prompt_text([(m.role, m.content) for m in server.got[0][0]])
    assert want[1].cached_tokens > len(first) // 4 - 1
    totals = ledger.by_role()["belief"]
    assert totals["failures"] == 1
    assert totals["estimated_cached_tokens"] == sum(e.cached_tokens for e in want) > 0
