"""Explicit prompt-cache breakpoints (issue 24, items 1 and 3): every method's prompts mark
where their stable parts end without changing a byte of the text, at most four a request;
`--cache-breakpoints` sends them as `cache_control` text parts and the ledger estimates the
breakpoint rules with them; `--cache-rule` picks the estimate's rule."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_fixtures import KitchenEnv, Script, ToolDesk
from llm_fakes import FakeServer, chat
from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.cost import prompt_breakpoints, prompt_text
from pos_agent.envs import Environment, make_env
from pos_agent.llm import (
    MAX_CACHE_BREAKPOINTS,
    CallWrapper,
    Completion,
    Message,
    Model,
    ModelOptions,
    Request,
    ScriptedModel,
    TokenLedger,
    Usage,
    load_model,
    request_breakpoints,
)
from pos_agent.llm._openai import chat_messages
from pos_agent.roles.limits import role_limits
from pos_agent.trace import read_events, read_result

pytest_plugins = ["llm_fixtures"]

POS = str(Path(sys.executable).parent / "pos")
METHODS = ("raw", "acon", "pace", "hiagent", "lh_harness", "pos")


@dataclass
class Sent(CallWrapper):
    """Keeps every request as the agent sent it."""

    inner: Model
    spec: str = "scripted"
    requests: list[Request] = field(default_factory=list)

    def answer(self, request: Request) -> Completion:
        self.requests.append(request)
        return request.send(self.inner)


def play(method: str, env: Environment) -> Sent:
    model = Sent(ScriptedModel(Script()) if method == "pos" else ScriptedModel())
    limits = role_limits("policy", model="scripted", generation_tokens=512)
    if method == "pos":
        PosAgent(RoleModels.single(model), PosConfig()).run(env)
    elif method == "raw":
        RawAgent(model, limits=limits).run(env)
    else:
        settings = resolve_settings(env.name, method, {}, generation_tokens=512)
        agent, _ = build_baseline(
            method, model, settings, limits=limits, ledger=TokenLedger(), trace=None,
            on_step=None, temperature=0.0,
        )  # fmt: skip
        agent.run(env)
    assert model.requests, method
    return model


def sent_text(parts: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """What the model is told, from a request's messages: text parts joined."""
    out = []
    for message in parts:
        content = message["content"]
        if isinstance(content, list):
            content = "".join(part["text"] for part in content)
        out.append((message["role"], content))
    return out


def marks_of(request: Request) -> list[int]:
    contents = [(m.role, m.content) for m in request.messages]
    return prompt_breakpoints(contents, request_breakpoints(request.messages))


@pytest.mark.parametrize("method", METHODS)
def test_the_marks_leave_what_every_method_tells_the_model_unchanged(method: str) -> None:
    with make_env("alfworld-mini", "heat-mug", max_steps=8) as env:
        model = play(method, env)
    marked = 0
    for request in model.requests:
        plain = chat_messages(request.messages)
        parted = chat_messages(request.messages, breakpoints=True)
        assert (
            sent_text(parted) == sent_text(plain) == [(m.role, m.content) for m in request.messages]
        )
        cut = sum(
            "cache_control" in part
            for message in parted
            if isinstance(message["content"], list)
            for part in message["content"]
        )
        assert cut == len(marks_of(request)) <= MAX_CACHE_BREAKPOINTS
        marked += cut > 0
        for message in request.messages:
            assert all(0 < mark <= len(message.content) for mark in message.breakpoints)
            assert len(message.breakpoints) <= MAX_CACHE_BREAKPOINTS
    assert marked, f"{method} marks no breakpoint at all"


@pytest.mark.parametrize("method", ["raw", "acon", "hiagent", "lh_harness"])
def test_a_history_method_reads_at_its_next_call_the_prefix_it_marked(method: str) -> None:
    """The end of the history one call marks is a breakpoint of the next call too (the
    history before its newest turn): what a breakpoint server wrote is read back."""
    with make_env("alfworld-mini", "heat-mug", max_steps=8) as env:
        model = play(method, env)
    deciding = [r for r in model.requests if r.role in ("policy", "executor")]
    hits = 0
    for earlier, later in itertools.pairwise(deciding):
        before = prompt_text([(m.role, m.content) for m in earlier.messages])
        after = prompt_text([(m.role, m.content) for m in later.messages])
        last = marks_of(earlier)[-1]
        hits += last in marks_of(later) and after[:last] == before[:last]
    assert hits >= len(deciding) // 2, f"{method}: {hits} of {len(deciding) - 1}"


def test_pos_marks_the_stable_prefix_and_the_belief_block_the_step_shares() -> None:
    with KitchenEnv(max_steps=5) as env:
        model = play("pos", env)
    for request in model.requests:
        system, user = request.messages
        assert system.breakpoints == (len(system.content),), "the shared system text"
        if user.content.startswith("Current belief:\n"):
            belief = user.content.split("\n\n")[0]
            assert len(belief) in user.breakpoints, (request.role, request.purpose)
    policies = [r for r in model.requests if r.role == "policy"]
    updates = [r for r in model.requests if r.purpose == "update"]
    for policy, update in zip(policies[1:], updates[1:], strict=False):
        mark = policy.messages[1].breakpoints[-1]
        assert update.messages[1].content[:mark] == policy.messages[1].content[:mark]
        assert mark in update.messages[1].breakpoints, "the update reads what the policy wrote"


def test_tool_schemas_end_the_stable_prefix_of_pos_and_raw() -> None:
    for method in ("pos", "raw"):
        model = play(method, ToolDesk(max_steps=3))
        policy = next(r for r in model.requests if r.role == "policy")
        user = policy.messages[1].content
        first = user[: policy.messages[1].breakpoints[0]]
        assert "get_alerts" in first, method


def test_at_most_four_breakpoints_a_request_the_latest_kept() -> None:
    messages = [
        Message("system", "s" * 10, (10,)),
        Message("user", "u" * 50, (5, 10, 20, 30, 40, 50)),
    ]
    assert request_breakpoints(messages) == [(), (20, 30, 40, 50)]
    parted = chat_messages(messages, breakpoints=True)
    assert parted[0] == {"role": "system", "content": "s" * 10}
    texts = [part["text"] for part in parted[1]["content"]]
    assert texts == ["u" * 20, "u" * 10, "u" * 10, "u" * 10]


def test_the_server_sees_cache_control_parts_with_the_option_and_plain_strings_without(
    server: FakeServer,
) -> None:
    with KitchenEnv(max_steps=2) as env:
        request = play("pos", env).requests[0]
    bodies = []
    for on in (False, True, False):
        server.queue(chat("fine"))
        options = ModelOptions(base_url=server.base_url, api_key="k", cache_breakpoints=on)
        load_model("openai:fake-model", options).complete(request.messages, max_tokens=8)
        bodies.append(server.seen[-1])
    off, marked, unmarked = bodies
    assert all(isinstance(m["content"], str) for m in off.body["messages"])
    parts = [
        p for m in marked.body["messages"] if isinstance(m["content"], list) for p in m["content"]
    ]
    assert [p["cache_control"] for p in parts if "cache_control" in p] == [
        {"type": "ephemeral"}
    ] * len(marks_of(request))
    assert all(p["type"] == "text" for p in parts)
    assert sent_text(marked.body["messages"]) == sent_text(off.body["messages"])
    # Off, the body is the one a message without any breakpoint gets: byte for byte.
    server.queue(chat("fine"))
    bare = [Message(m.role, m.content) for m in request.messages]
    options = ModelOptions(base_url=server.base_url, api_key="k")
    load_model("openai:fake-model", options).complete(bare, max_tokens=8)
    assert server.seen[-1].body == off.body == unmarked.body
    assert server.seen[-1].size == off.size


def two_calls(ledger: TokenLedger, *, shared_chars: int) -> list[int]:
    """Two calls sharing a prefix of `shared_chars` characters, marked at its end."""
    stable = "x" * shared_chars
    cached = []
    for step in (0, 1):
        prompt = [
            Message("system", stable, (len(stable),)),
            Message("user", f"step {step}: what now?"),
        ]
        tokens = (len(stable) + 20) // 4
        answer = Completion("ok", None, Usage(tokens, 2), 0.0, False, 0, "scripted")
        cached.append(ledger.record("policy", answer, step=step, prompt=prompt).cached_tokens)
    return cached


@pytest.mark.parametrize("rule", ["anthropic", "dashscope-explicit"])
def test_the_ledger_estimates_breakpoint_rules_with_the_marks_only_when_they_are_sent(
    rule: str,
) -> None:
    on = TokenLedger(rule, breakpoints=True)
    first, second = two_calls(on, shared_chars=4 * 1100)  # about 1,100 shared tokens
    assert first == 0 and second >= 1024
    assert on.total()["estimated_write_tokens"] >= 1024, "the first call wrote the prefix"
    off = TokenLedger(rule)
    assert two_calls(off, shared_chars=4 * 1100) == [0, 0], "no breakpoint sent, no cache"
    assert two_calls(TokenLedger(rule, breakpoints=True), shared_chars=4 * 900) == [0, 0]
    assert on.to_dict()["cache_rule"] == rule


def test_cache_rule_bogus_is_refused_with_exit_code_2(tmp_path: Path) -> None:
    for command in (["run", "toy", "heat-mug"], ["bench", "alfworld-mini"]):
        done = subprocess.run(
            [POS, *command, "--model", "scripted", "--cache-rule", "bogus",
             "--out", str(tmp_path)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        said = " ".join((done.stdout + done.stderr).split())
        assert "unknown cache rule 'bogus'" in said and "dashscope-explicit" in said, said


def run_raw(out: Path, name: str, *options: str) -> Path:
    done = subprocess.run(
        [POS, "run", "toy", "heat-mug", "--agent", "raw", "--model", "scripted",
         "--max-steps", "2", "--out", str(out), "--run", name, *options],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return out / name / "raw__toy__heat-mug"


def test_the_rule_and_the_option_are_recorded_with_the_run(tmp_path: Path) -> None:
    folder = run_raw(tmp_path, "r", "--cache-rule", "anthropic", "--cache-breakpoints")
    result = read_result(folder)
    assert result is not None
    assert result.extra["cache_rule"] == "anthropic"
    assert result.settings["cache_breakpoints"] is True
    assert result.model_options["cache_breakpoints"] is True
    assert result.spec["cache_rule"] == "anthropic"
    start = next(e for e in read_events(folder) if e.event == "episode_start")
    assert start.settings["cache_breakpoints"] is True  # type: ignore[attr-defined]
    plain = read_result(run_raw(tmp_path, "plain"))
    assert plain is not None and plain.extra["cache_rule"] == "openai"
    assert plain.settings_hash != result.settings_hash, "the option is part of the settings"
    # At their defaults neither is in the settings: runs recorded before keep their hash.
    assert "cache_breakpoints" not in plain.model_options and "cache_rule" not in plain.spec
    assert "cache_breakpoints" not in plain.settings
