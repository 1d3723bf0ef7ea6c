"""Token and latency accounting per role, per step and per episode."""

from __future__ import annotations

import json

import pytest

from pos_agent.agents.context import INTERNAL_ROLES
from pos_agent.llm import ROLES, Completion, ModelFailure, TokenLedger, Usage


def answer(prompt: int, completion: int, latency: float = 0.5, cached: bool = False) -> Completion:
    return Completion("x", None, Usage(prompt, completion), latency, cached, 0, "scripted")


def test_roles_are_the_papers() -> None:
    # PoS's roles, the diagnosis environments' roles, then the baselines' internal roles.
    assert ROLES[:5] == ("policy", "belief", "sentinel", "provider", "judge")
    assert set(ROLES[5:]) == set(INTERNAL_ROLES)


def test_every_baseline_role_is_accounted() -> None:
    ledger = TokenLedger()
    for role in INTERNAL_ROLES:
        ledger.record(role, answer(10, 2), step=3)
    assert {role: ledger.by_role()[role]["calls"] for role in INTERNAL_ROLES} == dict.fromkeys(
        INTERNAL_ROLES, 1
    )
    with pytest.raises(ValueError, match="unknown role"):
        ledger.record("planner", answer(1, 1))


def test_totals_per_role_and_overall() -> None:
    ledger = TokenLedger()
    ledger.record("policy", answer(100, 10), step=0)
    ledger.record("policy", answer(50, 5, cached=True), step=1)
    ledger.record("belief", answer(200, 40, latency=1.0), step=1)
    failure = ModelFailure("schema", "bad", usage=Usage(30, 3), latency_s=0.25)
    ledger.record("sentinel", failure, step=1)

    by_role = ledger.by_role()
    assert set(by_role) == set(ROLES)
    assert by_role["policy"]["calls"] == 2
    assert by_role["policy"]["prompt_tokens"] == 150
    assert by_role["policy"]["completion_tokens"] == 15
    assert by_role["policy"]["latency_s"] == pytest.approx(1.0)
    assert by_role["policy"]["cached_calls"] == 1
    assert by_role["sentinel"]["failures"] == 1
    assert by_role["sentinel"]["prompt_tokens"] == 30
    assert by_role["judge"]["calls"] == 0
    assert ledger.total()["prompt_tokens"] == 380
    assert ledger.by_step()[1]["belief"]["completion_tokens"] == 40
    assert set(ledger.by_step()[1]) == {"policy", "belief", "sentinel"}


def test_to_dict_is_json_ready() -> None:
    ledger = TokenLedger()
    ledger.record("judge", answer(1, 2), step=3)
    data = json.loads(json.dumps(ledger.to_dict()))
    assert data["by_role"]["judge"]["calls"] == 1
    assert data["by_step"]["3"]["judge"]["completion_tokens"] == 2
    assert data["total"]["calls"] == 1


def test_merge_adds_episodes_and_reset_starts_over() -> None:
    first, second = TokenLedger(), TokenLedger()
    first.record("policy", answer(10, 1), step=0)
    second.record("policy", answer(20, 2), step=0)
    second.record("provider", answer(5, 5))
    run = TokenLedger().merge(first).merge(second)
    assert run.by_role()["policy"]["prompt_tokens"] == 30
    assert run.by_role()["provider"]["calls"] == 1
    assert run.by_step()[0]["policy"]["calls"] == 2
    assert first.by_role()["policy"]["prompt_tokens"] == 10  # merge leaves the source alone
    with pytest.raises(ValueError):
        run.merge(run)
    run.reset()
    assert run.total()["calls"] == 0 and run.by_step() == {}


def test_unknown_role_is_rejected_with_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="policy"):
        TokenLedger().record("planner", answer(1, 1))
