"""The dependency-free `toy` and `toy-desk` environments, and the environment registry table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pos_agent.cli.envs  # noqa: F401  (registers the commands on the app)
from pos_agent.agents.expert import run_expert
from pos_agent.cli.app import app
from pos_agent.envs import EnvError, list_envs, list_tasks, make_env
from pos_agent.envs import _registry as registry
from pos_agent.envs.toy import DESK_CASES, TASKS


@pytest.mark.parametrize("task", [t.task_id for t in TASKS])
def test_the_expert_wins_every_toy_task(task: str) -> None:
    with make_env("toy", task) as env:
        outcome = run_expert(env)
    assert outcome.success and outcome.error is None, outcome
    assert 3 <= outcome.steps <= 10


def test_the_expert_replans_after_a_detour_and_actions_are_deterministic() -> None:
    def play(detour: list[str]) -> tuple[list[str | None], list[str]]:
        with make_env("toy", "heat-mug", max_steps=30) as env:
            first = env.reset()
            texts = [first.text]
            for action in detour:
                observation = env.step(action)
                texts.append(observation.text)
            return [observation.info["expert_action"]], texts

    detour = ["go to fridge 1", "open fridge 1", "fly to the moon"]
    once, twice = play(detour), play(detour)
    assert once == twice
    (expert,), texts = once
    assert expert == "go to countertop 1"  # the mug is there; the fridge was a detour
    assert texts[-1].startswith("Nothing happens. Invalid action 'fly to the moon'")


def test_admissible_actions_budget_and_invalid_actions() -> None:
    with make_env("toy", "put-keychain", max_steps=3) as env:
        observation = env.reset()
        assert env.goal == "put a keychain in safe"
        assert "Your task is to: put a keychain in safe." in observation.text
        assert "go to drawer 1" in (observation.admissible_actions or [])
        assert "take keychain 1 from drawer 1" not in (observation.admissible_actions or [])
        observation = env.step("go to drawer 1")
        assert "The drawer 1 is closed." in observation.text
        observation = env.step("take keychain 1 from drawer 1")  # closed: not admissible
        assert observation.info["invalid_action"] and not observation.done
        observation = env.step("open drawer 1")
        assert observation.done and not observation.success
        assert observation.info["budget_exhausted"]


def test_the_tool_desk_parses_calls_and_judges_the_submission() -> None:
    with make_env("toy-desk", "payment-network") as env:
        first = env.reset()
        assert first.tools and {t["name"] for t in first.tools} == {
            "get_alerts",
            "read_log",
            "submit",
        }
        assert first.fallback_action == '{"tool": "get_alerts", "args": {}}'
        log = env.step(json.dumps({"tool": "read_log", "args": {"service": "payment"}}))
        assert "connection reset" in log.text and not log.done
        bad = env.step("read every log")
        assert bad.info["invalid_action"] and "Send one tool call as JSON" in bad.text
        done = env.step(
            json.dumps({"tool": "submit", "args": {"service": "payment", "fault": "network"}})
        )
        assert done.done and done.success and done.tools is None
    with make_env("toy-desk", "cart-memory") as env:
        env.reset()
        wrong = env.step(
            json.dumps({"tool": "submit", "args": {"service": "payment", "fault": "network"}})
        )
        assert wrong.done and not wrong.success
    assert set(DESK_CASES) == {t.task_id for t in list_tasks("toy-desk")}


def test_unknown_toy_tasks_splits_and_options_say_what_exists() -> None:
    with pytest.raises(EnvError, match="use one of heat-mug"):
        make_env("toy", "heat-mugg")
    with pytest.raises(EnvError, match="split 'train'"):
        list_tasks("toy", "train")
    with pytest.raises(EnvError, match=r"Unknown option\(s\) for toy: expert; accepted: none"):
        make_env("toy", "heat-mug", expert=False)


def test_the_registry_is_one_table() -> None:
    entries = registry.env_entries()
    assert list_envs() == [entry.name for entry in entries]
    assert {"toy", "toy-desk"} <= set(list_envs())
    aliases = [alias for entry in entries for alias in entry.aliases]
    assert len(aliases) == len(set(aliases)) and not set(aliases) & set(list_envs())
    assert registry.canonical_env("TWX") == "textworld-express"
    assert registry.canonical_env("nezha") == "rca-nezha"
    assert registry.accepts_option("loca", "workdir")
    assert not registry.accepts_option("toy", "workdir")
    assert set(registry.env_model_roles("clindiag")) == {"provider", "judge"}
    assert registry.env_model_roles("toy") == {}
    for entry in entries:
        assert entry.list_options <= entry.options, entry.name
        assert (entry.extra is None) == (not entry.modules), entry.name


def test_an_environment_whose_extra_is_missing_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = registry._importable
    monkeypatch.setattr(
        registry, "_importable", lambda module: module != "pyarrow" and real(module)
    )
    entry = registry.env_entry("rca-nezha")
    assert entry.missing_modules() == ["pyarrow"]
    with pytest.raises(EnvError, match=r"needs the `diagnosis` extra \(pyarrow not installed\)"):
        make_env("rca-nezha", "any-case")
    assert registry.env_entry("toy").unavailable() is None
    listed = CliRunner().invoke(app, ["envs"], terminal_width=200)
    assert listed.exit_code == 0, listed.output
    assert "rca-nezha needs the `diagnosis` extra" in listed.output
    assert "uv sync --extra diagnosis" in listed.output


def test_doctor_says_which_extra_each_environment_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    from pos_agent.cli import doctor

    real = registry._importable
    monkeypatch.setattr(
        registry, "_importable", lambda module: module != "scienceworld" and real(module)
    )
    checks = {check.name: check for check in doctor.check_environments()}
    science = checks["env scienceworld"]
    assert science.status == "warn" and "`envs` extra (scienceworld" in science.detail
    assert "uv sync --frozen --extra envs" in science.fix
    assert "env toy" not in checks and "env clindiag" not in checks  # they need no extra
    expected = {f"env {entry.name}" for entry in registry.env_entries() if entry.extra}
    assert set(checks) == expected


@pytest.mark.parametrize(("env", "task"), [("toy", "heat-mug"), ("toy-desk", "payment-network")])
def test_the_harness_plays_both_toy_environments(env: str, task: str, tmp_path: Path) -> None:
    from pos_agent.bench.case import CaseSpec, run_case

    for agent in ("raw", "pos"):
        spec = CaseSpec(env=env, task=task, agent=agent, model="scripted", max_steps=2)
        result = run_case(spec, tmp_path / agent, run_name="toy")
        assert result.status == "failure" and result.steps == 2, result.error
        assert result.tokens["policy"].calls >= 2
