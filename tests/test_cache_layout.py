"""The cache-aware prompt layout of every method (issue 24, item 3): stable parts first (system
text, tool schemas, task), what changes last, the same bytes from step to step where the
content is the same, and for PoS one prefix shared by the roles of a step (the shared system
text, the task and B_t), each role's instructions after it, their content unchanged."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from agent_fixtures import KitchenEnv, Script, ToolDesk
from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.pos import prompts as pos_prompts
from pos_agent.agents.raw import RawAgent
from pos_agent.cost import shared_prefix
from pos_agent.envs import Environment, make_env
from pos_agent.llm import (
    CallWrapper,
    Completion,
    Message,
    Model,
    Request,
    ScriptedModel,
    TokenLedger,
)
from pos_agent.roles.limits import role_limits
from pos_agent.roles.prompts import SHARED_SYSTEM
from pos_agent.sentinel import prompts as sentinel_prompts


@dataclass
class Sent(CallWrapper):
    """Keeps the messages of every call as the agent sent them."""

    inner: Model
    spec: str = "scripted"
    calls: list[tuple[str, str, list[Message]]] = field(default_factory=list)

    def answer(self, request: Request) -> Completion:
        self.calls.append((request.role, request.purpose, list(request.messages)))
        return request.send(self.inner)

    def of(self, role: str, purpose: str | None = None) -> list[list[Message]]:
        return [m for r, p, m in self.calls if r == role and (purpose is None or p == purpose)]


def play(method: str, env: Environment, model: Sent) -> None:
    limits = role_limits("policy", model="scripted", generation_tokens=512)
    if method == "raw":
        RawAgent(model, limits=limits).run(env)
        return
    settings = resolve_settings(env.name, method, {}, generation_tokens=512)
    agent, _ = build_baseline(
        method, model, settings, limits=limits, ledger=TokenLedger(), trace=None, on_step=None,
        temperature=0.0,
    )  # fmt: skip
    agent.run(env)


def text(messages: Sequence[Message]) -> str:
    return "".join(f"[{m.role}]{m.content}" for m in messages)


@pytest.mark.parametrize("method", ["raw", "acon", "hiagent"])
def test_a_history_method_sends_the_same_bytes_step_to_step(method: str) -> None:
    model = Sent(ScriptedModel())
    with make_env("alfworld-mini", "heat-mug", max_steps=12) as env:
        play(method, env, model)
    prompts = [text(m) for m in model.of("policy")]
    assert len(prompts) == 12
    for earlier, later in itertools.pairwise(prompts[1:]):
        # Everything before the position line (system, task, history so far) is kept as it was;
        # HiAgent's line asking for a first subgoal follows its turns.
        ends = [earlier.find(m) for m in ("You are at step", "No subgoal yet")]
        kept = earlier[: min(e for e in ends if e >= 0)]
        assert shared_prefix(earlier, later) >= len(kept), method


@pytest.mark.parametrize("method", ["raw", "acon", "pace", "hiagent", "pos"])
def test_tool_schemas_come_before_the_task_and_what_changes(method: str) -> None:
    model = Sent(ScriptedModel(Script()) if method == "pos" else ScriptedModel())
    env = ToolDesk(max_steps=3)
    if method == "pos":
        PosAgent(RoleModels.single(model), PosConfig()).run(env)
    else:
        play(method, env, model)
    for messages in model.of("policy"):
        user = messages[1].content
        assert user.count("Tools (") == 1 and "get_alerts" in user
        if method != "pos":
            assert user.startswith("Tools ("), "first, before the task"
        assert user.index("Tools (") < user.index(
            "Current observation" if method == "pos" else "Goal:"
        )


def test_the_pos_roles_of_a_step_share_one_prefix() -> None:
    model = Sent(ScriptedModel(Script()))
    with KitchenEnv(max_steps=9) as env:
        PosAgent(RoleModels.single(model), PosConfig()).run(env)
    policies = model.of("policy")
    updates = model.of("belief", "update")
    audits = model.of("sentinel", "audit")
    globals_ = model.of("sentinel", "global_audit")
    assert policies and updates and audits and globals_
    every = [*policies, *updates, *audits, *globals_, *model.of("belief", "init")]
    assert {m[0].content for m in every} == {SHARED_SYSTEM}, "one system text for every role"
    for policy, update in zip(policies[1:], updates[1:], strict=False):
        # Step t's decision and the update of its transition both open with B_t.
        head = policy[1].content.split(pos_prompts.POLICY_SYSTEM)[0]
        assert head.startswith("Current belief:\nGoal: ")
        assert update[1].content.startswith(head), "the same task and B_t, byte for byte"
        assert len(head) > 100
    whole = globals_[0][1].content
    assert whole.startswith("Current belief:\nGoal: "), "the global audit puts B_t first too"


def test_each_role_is_still_told_what_it_was_told() -> None:
    model = Sent(ScriptedModel(Script()))
    with KitchenEnv(max_steps=2) as env:
        PosAgent(RoleModels.single(model), PosConfig()).run(env)
    assert pos_prompts.POLICY_SYSTEM in model.of("policy")[0][1].content
    assert pos_prompts.BELIEF_SYSTEM in model.of("belief", "update")[0][1].content
    assert pos_prompts.BELIEF_SYSTEM in model.of("belief", "init")[0][1].content
    audit = model.of("sentinel", "audit")[0][1].content
    assert audit.startswith(sentinel_prompts.audit_system(judge_progress=True))
    policy = model.of("policy")[0][1].content
    assert policy.index(pos_prompts.POLICY_SYSTEM) < policy.index("Current observation")
    assert policy.index("Current belief:") < policy.index(pos_prompts.POLICY_SYSTEM)


def test_a_profile_note_follows_the_belief_instructions_not_the_shared_system_text() -> None:
    from pos_agent.belief.model import Belief
    from pos_agent.updater import init_messages, update_messages

    for messages in (
        init_messages("heat the mug", "You are in a kitchen.", note="Return few ops."),
        update_messages(Belief(goal="heat the mug"), 1, "look", "A mug.", note="Return few ops."),
    ):
        assert messages[0].content == SHARED_SYSTEM, "the shared bytes stay the same"
        assert "Keep only what matters for the goal. Return few ops." in messages[1].content
