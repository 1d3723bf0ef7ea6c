"""The scripted episodes of `benchmarks.cost`: every method played as `pos run` builds it, with
each model call kept as sent (`Calls`), and what a provider's prompt cache could serve of them."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks.baselines import Backbone, Probe, Recording, ReplayEnv
from benchmarks.prompt_growth import ScriptedRoles
from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.methods import METHODS as AGENT_METHODS
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.bench.suite import load_suite
from pos_agent.cost import (
    CACHE_RULES,
    CacheEstimate,
    PrefixCache,
    TokenCounts,
    prompt_breakpoints,
    prompt_text,
)
from pos_agent.envs import Environment, TaskKind, make_env
from pos_agent.llm import (
    CallWrapper,
    Completion,
    Model,
    Request,
    ScriptedModel,
    TokenLedger,
    request_breakpoints,
)
from pos_agent.llm.backend import GenerationRequest
from pos_agent.roles.limits import AgentLimits, ProfileName, role_limits

METHODS = ("raw", "acon", "pace", "hiagent", "lh", "pos")
AGENT_OF = {"lh": "lh_harness"}
EPISODES = ("alfworld", "rca", "loca")
LOCA_TASK, LOCA_SEED = "WoocommerceStockAlert", 42
LOCA_READS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("woocommerce_woo_products_list", {"perPage": 10}),
    ("filesystem_list_allowed_directories", {}),
    ("woocommerce_woo_products_list", {"perPage": 5, "page": 2}),
)


@dataclass(frozen=True)
class Call:
    """One model call of an episode, as sent."""

    role: str
    purpose: str
    text: str
    prompt_tokens: int
    completion_tokens: int
    reported_cached: int | None = None
    breakpoints: tuple[int, ...] = ()
    """The prompt's cache breakpoints, as offsets in `text`."""


@dataclass
class Calls(CallWrapper):
    """Passes every call on and keeps it."""

    inner: Model
    spec: str = "openai:backbone"
    calls: list[Call] = field(default_factory=list)

    def answer(self, request: Request) -> Completion:
        answer = request.send(self.inner)
        usage = answer.usage
        contents = [(m.role, m.content) for m in request.messages]
        marks = prompt_breakpoints(contents, request_breakpoints(request.messages))
        self.calls.append(
            Call(
                request.role,
                request.purpose,
                prompt_text(contents),
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cached_tokens if usage.cache_reported else None,
                tuple(marks),
            )
        )
        return answer


# -- what a provider could serve from its cache -------------------------------------------------


def estimates(calls: Sequence[Call], rule: str) -> list[CacheEstimate]:
    """Per call, what `rule` would serve from (and write to) the cache, in the episode's
    order; breakpoint rules (anthropic, dashscope-explicit) at the prompts' breakpoints, as
    sent with `--cache-breakpoints`."""
    cache = PrefixCache(CACHE_RULES[rule])
    return [cache.estimate(c.text, c.prompt_tokens, breakpoints=c.breakpoints) for c in calls]


def cached_tokens(calls: Sequence[Call], rule: str) -> list[int]:
    """Per call, the prompt tokens `rule` would serve from the cache, in the episode's order."""
    return [e.cached_tokens for e in estimates(calls, rule)]


def counts(calls: Sequence[Call], rule: str) -> TokenCounts:
    served = estimates(calls, rule)
    return TokenCounts(
        prompt=sum(c.prompt_tokens for c in calls),
        completion=sum(c.completion_tokens for c in calls),
        cached=sum(e.cached_tokens for e in served),
        written=sum(e.write_tokens for e in served),
    )


# -- the episodes -------------------------------------------------------------------------------


class WalkBackbone(Backbone):
    """alfworld-mini: `perf.prompt_growth`'s walk and belief patches, and `perf.baselines`'
    texts for the baselines' own calls (summaries, compressions, plans, reports)."""

    def __init__(self) -> None:
        super().__init__([])
        self.walk = ScriptedRoles()

    def __call__(self, request: GenerationRequest) -> str:
        if request.role in ("belief", "sentinel"):
            return self.walk(request)
        return super().__call__(request)

    def decision(self, request: GenerationRequest, user: str) -> str:
        properties = (request.schema or {}).get("properties", {})
        answer: dict[str, Any] = json.loads(self.walk(request)) if "action" in properties else {}
        if not answer:
            answer = {"thought": "look around", "action": "look"}
        if request.role in ("executor", "auditor") and self.turn % 6 == 5:
            answer["action"] = "finish"
        self.turn += 1
        if "new_subgoal" in properties:
            group = f"explore part {self.turn // 5 + 1} of the room"
            answer["new_subgoal"] = group if group != self.subgoal else ""
            self.subgoal = group
        return json.dumps(answer)


class LocaBackbone(Backbone):
    """The LOCA replay: `perf.baselines`' backbone with LOCA's read-only calls and claim_done."""

    def decision(self, request: GenerationRequest, user: str) -> str:
        if request.purpose == "final_answer":
            properties = (request.schema or {}).get("properties", {})
            call = {"tool": "claim_done", "args": {}}
            key = "calls" if "calls" in properties else "call"
            return json.dumps({"thought": "done", key: [call] if key == "calls" else call})
        return super().decision(request, user)


class LocaReplay(ReplayEnv):
    name = "loca"
    kind: TaskKind = "execution"

    def _backend_step(self, action: str) -> Any:
        if '"claim_done"' in action:
            from pos_agent.envs import BackendResult

            return BackendResult("Claimed done.", None, done=True)
        return super()._backend_step(action)


def record_loca(steps: int) -> Recording | str:
    """One LOCA 8K case played once with read-only calls; a reason string when it cannot run."""
    try:
        from pos_agent.envs.loca.environment import LocaEnvironment

        with tempfile.TemporaryDirectory(prefix="pos-perf-cost-loca-") as folder:
            env = LocaEnvironment(
                f"{LOCA_TASK}-8k", seed=LOCA_SEED, workdir=Path(folder), max_steps=steps + 10
            )
            with env:
                first = env.reset()
                names = {t["name"] for t in first.tools or []}
                reads = [(n, a) for n, a in LOCA_READS if n in names]
                if not reads:
                    return "none of the read-only tools is offered"
                turns = []
                for index in range(steps + 5):
                    name, args = reads[index % len(reads)]
                    action = json.dumps({"tool": name, "args": args})
                    turns.append((action, env.step(action)))
                return Recording(env.goal, first, turns)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:300]


def play(
    method: str,
    env: Environment,
    model: Model,
    *,
    suite: str,
    budget: int,
    profile: ProfileName | None = None,
) -> None:
    """One episode of `method` as `pos run` builds it (the suite's parameters)."""
    agent_name = AGENT_OF.get(method, method)
    kind = AGENT_METHODS[agent_name].kind
    limits = role_limits("policy", model=model.spec, generation_tokens=budget, profile=profile)
    ledger = TokenLedger()
    if kind == "raw":
        RawAgent(model, ledger=ledger, limits=limits).run(env)
    elif kind == "pos":
        config = PosConfig()
        if profile is not None:
            config = PosConfig(limits=AgentLimits.of_profile(profile, budget))
        extra = load_suite(suite).methods.get("pos")
        every = getattr(extra, "global_audit_every", None) if extra is not None else None
        if every:
            config = replace(config, global_audit_every=every)
        PosAgent(RoleModels.single(model), config, ledger=ledger).run(env)
    else:
        method_options = load_suite(suite).methods.get(agent_name)
        options = method_options.baseline_options() if method_options is not None else {}
        settings = resolve_settings(env.name, agent_name, options, generation_tokens=budget)
        agent, _ = build_baseline(
            agent_name,
            model,
            settings,
            limits=limits,
            ledger=ledger,
            trace=None,
            on_step=None,
            temperature=0.0,
        )
        agent.run(env)


def run_episode(name: str, method: str, steps: int, recording: Recording | None) -> list[Call]:
    if name == "alfworld":
        calls = Calls(ScriptedModel(WalkBackbone()))
        with make_env("alfworld-mini", "heat-mug", max_steps=steps) as env:
            play(method, env, calls, suite="alfworld-mini", budget=512)
        return calls.calls
    assert recording is not None
    cycle = [a for a, _ in recording.turns]
    if name == "rca":
        calls = Calls(ScriptedModel(Backbone(cycle)))
        play(method, ReplayEnv(recording, steps, Probe()), calls, suite="rca-nezha", budget=4096)
    else:
        calls = Calls(ScriptedModel(LocaBackbone(cycle)))
        play(method, LocaReplay(recording, steps, Probe()), calls, suite="loca-8k", budget=4096)
    return calls.calls
