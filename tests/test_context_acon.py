"""ACON: no compression below the threshold; at it, one compressor call with the last 3 turns
kept verbatim; the next compression gets the previous summary and replaces it."""

from __future__ import annotations

import pytest

from context_fixtures import RoleScript, numbered, user_text
from pos_agent.agents.context import AconMemory, AconSettings, ModelCaller
from pos_agent.agents.context.settings import acon_settings, benchmark_family
from pos_agent.envs import InfrastructureError
from pos_agent.llm.backend import BackendError
from pos_agent.transition import Transition

TASK = "find the key and open the chest"


def turn(step: int, size: int = 200) -> Transition:
    body = f"observation {step}: " + "x" * size
    return Transition(step, f"action {step}", body)


def memory(script: RoleScript, threshold: int, keep: int = 3) -> AconMemory:
    settings = AconSettings(threshold_tokens=threshold, summary_tokens=64, keep_last_turns=keep)
    return AconMemory(TASK, settings, ModelCaller(script.model()))


def aged_tokens(turns: list[Transition], keep: int = 3) -> int:
    return sum(t.tokens for t in turns[: len(turns) - keep])


def test_below_the_threshold_nothing_is_compressed_and_the_full_history_is_kept() -> None:
    script = RoleScript({"compressor": numbered("summary")})
    turns = [turn(step) for step in range(1, 9)]
    acon = memory(script, threshold=aged_tokens(turns))  # exactly at T: not above it
    for t in turns:
        acon.add(t)
        view = acon.context(t.step)
        assert view.compression is None
    assert script.calls == []
    assert view.summary is None
    assert view.turns == tuple(turns)
    rendered = view.render()
    assert "<HISTORY_SUMMARY>" not in rendered
    assert all(t.observation in rendered for t in turns)


def test_crossing_the_threshold_makes_one_call_and_keeps_the_last_three_turns_verbatim() -> None:
    script = RoleScript({"compressor/compress": numbered("summary")})
    turns = [turn(step) for step in range(1, 9)]
    acon = memory(script, threshold=aged_tokens(turns) - 1)
    for t in turns[:-1]:
        acon.add(t)
        assert acon.context(t.step).compression is None
    acon.add(turns[-1])
    view = acon.context(8)

    assert len(script.calls) == 1
    assert view.compression is not None and view.compression.ok
    assert (view.compression.first_folded, view.compression.last_folded) == (1, 5)
    assert view.summary == "summary 1"
    assert view.turns == tuple(turns[-3:])
    prompt = user_text(script.calls[0])
    assert TASK in prompt and "(none yet)" in prompt
    assert all(t.observation in prompt for t in turns[:5])
    assert not any(t.observation in prompt for t in turns[5:])
    assert "### REASONING" in prompt and "### COMPLETED" in prompt
    rendered = view.render()
    assert "<HISTORY_SUMMARY>\nsummary 1\n</HISTORY_SUMMARY>" in rendered
    assert all(t.render() in rendered for t in turns[-3:])
    assert not any(t.observation in rendered for t in turns[:5])
    # The next step is below the threshold again: no call.
    acon.add(turn(9))
    assert acon.context(9).compression is None and len(script.calls) == 1


def test_the_next_compression_gets_the_previous_summary_and_replaces_it() -> None:
    script = RoleScript({"compressor": numbered("summary")})
    acon = memory(script, threshold=150)
    calls_at: list[int] = []
    for step in range(1, 16):
        acon.add(turn(step))
        if acon.context(step).compression is not None:
            calls_at.append(step)
    assert len(calls_at) >= 2
    second = user_text(script.calls[1])
    assert "PREVIOUS SUMMARY\nsummary 1" in second
    # Only the turns since the first compression, not the ones it already folded.
    folded = acon.compressions[0]
    assert f"observation {folded.last_folded}:" not in second
    assert f"observation {acon.compressions[1].first_folded}:" in second
    assert acon.compressions[1].first_folded == folded.last_folded + 1
    view = acon.context(16)
    assert view.summary == f"summary {len(script.calls)}"
    assert "summary 1\n" not in view.render()
    assert view.render().count("<HISTORY_SUMMARY>") == 1


def test_a_failed_compression_keeps_everything_and_tries_again_next_step() -> None:
    working = False  # until then every attempt (repair turns included) answers blank

    def compressor(request: object) -> str:
        return "summary after retry" if working else ""

    script = RoleScript({"compressor": compressor})
    turns = [turn(step) for step in range(1, 9)]
    acon = memory(script, threshold=aged_tokens(turns[:-1]) - 1)
    for t in turns[:-1]:
        acon.add(t)
    failed = acon.context(7)
    assert failed.compression is not None and not failed.compression.ok
    assert failed.summary is None and failed.turns == tuple(turns[:-1])
    working = True
    acon.add(turns[-1])
    retried = acon.context(8)
    assert retried.compression is not None and retried.summary == "summary after retry"
    assert retried.turns == tuple(turns[-3:])


def test_an_unreachable_compressor_is_an_infrastructure_error() -> None:
    down = BackendError("transport", "connection refused", retryable=False)
    script = RoleScript({"compressor": lambda request: down})
    acon = memory(script, threshold=10)
    for step in range(1, 6):
        acon.add(turn(step))
    with pytest.raises(InfrastructureError, match="compressor"):
        acon.context(5)
    assert [c.role for c in acon.caller.calls] == ["compressor"]
    assert not acon.caller.calls[0].ok


def test_benchmark_settings_are_fixed_per_benchmark() -> None:
    assert benchmark_family("alfworld-mini") == "alfworld"
    assert benchmark_family("rca-nezha") == "rca"
    alfworld, rca = acon_settings("alfworld"), acon_settings("rca")
    assert alfworld.threshold_tokens < rca.threshold_tokens
    assert alfworld.keep_last_turns == rca.keep_last_turns == 3
    assert any("inventory" in c for c in alfworld.keep_categories)
    assert any("component" in c for c in rca.keep_categories)
    with pytest.raises(ValueError):
        AconSettings(threshold_tokens=0, summary_tokens=10)
