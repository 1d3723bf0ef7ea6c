"""The shared episode contract (budget, invalid actions, crashes, closing) on a fake backend,
and the expert agent on plain observations: no Java, no planner."""

from __future__ import annotations

import pytest

from pos_agent.agents.expert import ExpertAgent, NoExpertActionError, run_expert
from pos_agent.envs import EnvError, Environment, InfrastructureError, Observation
from pos_agent.envs._episode import BackendResult, BudgetedEnvironment, normalize_action


class Corridor(BudgetedEnvironment):
    """Walk `length` times 'forward' to win; anything but 'forward' or 'wait' is invalid."""

    name = "corridor"

    def __init__(self, length: int = 3, max_steps: int = 10, crash_on: str = "") -> None:
        super().__init__(task_id="corridor", max_steps=max_steps, category="Test", split="test")
        self.length = length
        self.crash_on = crash_on
        self.position = 0
        self.restarts = 0
        self.closes = 0
        self.restart_fails = False

    def _crash_errors(self) -> tuple[type[BaseException], ...]:
        return (ConnectionError,)

    def _result(self) -> BackendResult:
        won = self.position >= self.length
        return BackendResult(
            text=f"You are at {self.position}.",
            admissible_actions=["forward", "wait"],
            done=won,
            success=won,
            score=self.position / self.length,
            expert_action="forward",
        )

    def _backend_reset(self) -> BackendResult:
        self.goal = "Reach the end of the corridor."
        self.position = 0
        return self._result()

    def _backend_step(self, action: str) -> BackendResult:
        if action == self.crash_on:
            raise ConnectionError("backend vanished")
        if action not in ("forward", "wait"):
            return self.invalid_result(f"Invalid action {action!r}.")
        if action == "forward":
            self.position += 1
        return self._result()

    def _backend_restart(self) -> None:
        if self.restart_fails:
            raise OSError("cannot start")
        self.restarts += 1

    def _backend_close(self) -> None:
        self.closes += 1


def test_corridor_satisfies_the_environment_protocol() -> None:
    assert isinstance(Corridor(), Environment)


def test_a_won_episode_reports_success_score_and_budget_use() -> None:
    env = Corridor(length=2)
    first = env.reset()
    assert first.info["steps_used"] == 0
    assert first.info["budget"] == 10
    assert first.info["expert_action"] == "forward"
    env.step("forward")
    last = env.step("forward")
    assert last.done and last.success
    assert last.score == 1.0
    assert last.info["steps_used"] == 2
    assert last.info["expert_action"] is None
    assert last.info["task_category"] == "Test"


@pytest.mark.parametrize("bad", ["dance", "", "   ", None, 42])
def test_invalid_actions_return_an_error_observation_and_cost_a_step(bad: object) -> None:
    env = Corridor()
    env.reset()
    env.step("forward")
    observation = env.step(bad)  # type: ignore[arg-type]
    assert observation.info["invalid_action"] is True
    assert observation.info["error"]
    assert observation.info["steps_used"] == 2
    assert not observation.done
    # The world is unchanged: same actions, same score, same expert advice.
    assert observation.admissible_actions == ["forward", "wait"]
    assert observation.score == pytest.approx(1 / 3)
    assert observation.info["expert_action"] == "forward"


def test_whitespace_in_actions_is_normalized() -> None:
    assert normalize_action("  go   to\tcabinet 1 ") == "go to cabinet 1"
    env = Corridor(length=1)
    env.reset()
    assert env.step("  forward ").success


def test_exhausting_the_budget_ends_the_episode_as_a_failure() -> None:
    env = Corridor(length=5, max_steps=3)
    env.reset()
    assert not env.step("wait").done
    assert not env.step("nonsense").done
    last = env.step("forward")
    assert last.done and not last.success
    assert last.info["budget_exhausted"] is True
    assert "budget of 3 exhausted" in last.text
    with pytest.raises(EnvError, match="reset"):
        env.step("forward")


def test_winning_on_the_last_step_of_the_budget_is_a_success() -> None:
    env = Corridor(length=2, max_steps=2)
    env.reset()
    env.step("forward")
    last = env.step("forward")
    assert last.success
    assert "budget_exhausted" not in last.info


def test_step_before_reset_and_after_close_are_usage_errors() -> None:
    env = Corridor()
    with pytest.raises(EnvError, match="reset"):
        env.step("forward")
    env.close()
    with pytest.raises(EnvError, match="closed"):
        env.reset()


def test_a_backend_crash_restarts_it_and_raises_infrastructure_error() -> None:
    env = Corridor(crash_on="boom")
    env.reset()
    with pytest.raises(InfrastructureError, match="restarted"):
        env.step("boom")
    assert env.restarts == 1
    with pytest.raises(EnvError, match="reset"):
        env.step("forward")
    assert env.reset().info["steps_used"] == 0


def test_a_failed_restart_says_to_create_a_new_environment() -> None:
    env = Corridor(crash_on="boom")
    env.restart_fails = True
    env.reset()
    with pytest.raises(InfrastructureError, match="could not be restarted"):
        env.step("boom")


def test_close_is_idempotent_and_runs_on_context_exit() -> None:
    with Corridor() as env:
        env.reset()
    assert env.closes == 1
    env.close()
    env.close()
    assert env.closes == 1


def test_max_steps_must_be_positive() -> None:
    with pytest.raises(EnvError, match="at least 1"):
        Corridor(max_steps=0)


def test_run_expert_wins_the_corridor() -> None:
    outcome = run_expert(Corridor(length=4))
    assert outcome.success
    assert outcome.steps == 4
    assert outcome.actions == ("forward",) * 4
    assert outcome.error is None


def test_run_expert_reports_budget_exhaustion() -> None:
    outcome = run_expert(Corridor(length=4, max_steps=2))
    assert not outcome.success
    assert outcome.steps == 2
    assert outcome.error is not None and "budget" in outcome.error


def test_expert_agent_prefers_the_environment_expert_then_walks_its_gold_path() -> None:
    agent = ExpertAgent(gold_path=["a", "b"])
    assert agent.act(Observation(text="", info={"expert_action": "env"})) == "env"
    assert agent.act(Observation(text="", info={"expert_action": None})) == "a"
    assert agent.act(Observation(text="")) == "b"
    with pytest.raises(NoExpertActionError):
        agent.act(Observation(text=""))
    agent.reset()
    assert agent.act(Observation(text="")) == "a"


def test_run_expert_without_expert_actions_fails_cleanly() -> None:
    class Silent(Corridor):
        def _result(self) -> BackendResult:
            result = super()._result()
            result.expert_action = None
            return result

    outcome = run_expert(Silent())
    assert not outcome.success
    assert outcome.steps == 0
    assert outcome.error is not None and "no expert action" in outcome.error
