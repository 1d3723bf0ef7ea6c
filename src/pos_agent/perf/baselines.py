"""Context building of the four baselines over a scripted RCA episode.

    python -m pos_agent.perf.baselines [--steps 50] [--case nz-tt-010] [--data-dir PATH]

The observations are real: one RCA case (rca-nezha) is played once with a fixed round robin of
query tools over its services (overview, metrics, traces, topology, logs, metric names), and the
recorded outputs (up to 4,000 characters each) are replayed to every method, so each sees the
same episode. The backbone is scripted (summaries, compressions, plans and audit reports of
realistic length); for PoS the belief model records what each tool call was about.

For each method and step t it reports the policy prompt tokens of the decision that produces
observation t, and the time that decision's context took to build, model calls excluded (the
scripted backbone answers instantly, but its time is subtracted anyway). Tokens are the scripted
backend's estimate (four characters a token). Raw is the complete, unclipped trajectory. The
policy prompt of the four baselines is a stand-in (system, task, the method's context, the
current observation and the tools) until the shared ReAct harness lands; PoS runs its own loop.
LongHorizon-Harness decides in rounds: its per-step time is the harness work between two
environment actions (manager and audit prompts included). The last line is
`policy tokens at step <T>: raw=<a> acon=<b> pace=<c> hiagent=<d> lh=<e> pos=<f>`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pos_agent.agents.context import (
    AconMemory,
    ModelCaller,
    PaceMemory,
    SubgoalMemory,
    Turn,
    baseline_settings,
    count_tokens,
    make_scorer,
)
from pos_agent.agents.context.longhorizon import FINISH, DecisionRequest, LongHorizonHarness
from pos_agent.agents.context.turns import render_turns
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.envs import Observation, TaskKind, make_env
from pos_agent.envs._episode import BackendResult, BudgetedEnvironment
from pos_agent.llm import Completion, Message, ScriptedModel, TokenLedger
from pos_agent.llm.backend import GenerationRequest

CHECKPOINTS = (10, 25, 50, 100, 200)
METHODS = ("raw", "acon", "pace", "hiagent", "lh", "pos")
POLICY_SYSTEM = (
    "You are an agent solving a task with tools. Read the task and your context, think briefly, "
    "then choose the next tool call."
)
_SERVICE_LINE = re.compile(r"^\s{2}([a-z][\w-]*)\s*$", re.MULTILINE)


# -- the recorded episode -------------------------------------------------------------------------


@dataclass
class Recording:
    goal: str
    first: Observation
    turns: list[tuple[str, Observation]]


def tool_cycle(services: Sequence[str]) -> list[str]:
    calls: list[dict[str, Any]] = []
    for service in services:
        calls += [
            {"tool": "query_metrics", "args": {"entity": service}},
            {"tool": "query_traces", "args": {"service": service}},
            {"tool": "get_topology", "args": {"entity": service}},
            {"tool": "search_logs", "args": {"entity": service, "pattern": "error|exception"}},
            {"tool": "list_metric_names", "args": {"entity": service}},
        ]
    return [json.dumps(c) for c in calls]


def record(case: str, data_dir: Path | None, steps: int) -> Recording:
    """Play `case` once with the round robin and keep every observation."""
    options: dict[str, Any] = {"max_tool_calls": 3 * steps + 10}
    if data_dir is not None:
        options["data_dir"] = data_dir
    with make_env("rca-nezha", case, max_steps=steps + 5, **options) as env:
        first = env.reset()
        turns: list[tuple[str, Observation]] = []
        opening = [
            json.dumps({"tool": "get_data_overview", "args": {}}),
            json.dumps({"tool": "list_entities", "args": {"type": "service"}}),
            json.dumps({"tool": "get_alerts", "args": {}}),
        ]
        for action in opening:
            turns.append((action, env.step(action)))
        services = _SERVICE_LINE.findall(turns[1][1].text) or ["frontend"]
        cycle = tool_cycle(services)
        while len(turns) < steps + 5:
            action = cycle[(len(turns) - len(opening)) % len(cycle)]
            turns.append((action, env.step(action)))
        return Recording(env.goal, first, turns)


class ReplayEnv(BudgetedEnvironment):
    """Replays a recording in order, whatever the action; the submission ends the case."""

    name = "rca-replay"
    kind: TaskKind = "diagnosis"

    def __init__(self, recording: Recording, max_steps: int) -> None:
        super().__init__(task_id="replay", max_steps=max_steps, category="", split="")
        self.recording = recording
        self.index = 0
        self.seconds = 0.0

    def step(self, action: str) -> Observation:
        started = time.perf_counter()
        try:
            return super().step(action)
        finally:
            self.seconds += time.perf_counter() - started

    def _backend_reset(self) -> BackendResult:
        self.goal = self.recording.goal
        self.index = 0
        return BackendResult(self.recording.first.text, None)

    def _backend_step(self, action: str) -> BackendResult:
        if '"submit_root_cause"' in action:
            return BackendResult("Submitted.", None, done=True)
        _, observation = self.recording.turns[self.index % len(self.recording.turns)]
        self.index += 1
        return BackendResult(observation.text, None)

    def _backend_restart(self) -> None:
        pass

    def _backend_close(self) -> None:
        pass

    def _observation(self, result: BackendResult, *, budget_exhausted: bool) -> Observation:
        observation = super()._observation(result, budget_exhausted=budget_exhausted)
        observation.tools = None if result.done else self.recording.first.tools
        return observation


# -- the scripted backbone ------------------------------------------------------------------------


def _filler(seed: str, chars: int) -> str:
    words = " ".join(seed.split()) or "no observation"
    return (words + " ") * (chars // max(len(words), 1) + 1)


class Backbone:
    """Deterministic answers per role, of the length a real model would write."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = list(cycle)
        self.turn = 0
        self.rounds = 0

    def __call__(self, request: GenerationRequest) -> str:
        user = next((m.content for m in request.messages if m.role == "user"), "")
        tail = user[-3000:]
        role, purpose = request.role, request.purpose
        if role == "compressor":
            return (
                "### REASONING\n" + _filler(tail, 1800)[:1800] + "\n### COMPLETED\n- queried tools"
            )
        if purpose in ("summarize_detailed", "summarize_brief"):
            # A summary is shorter than what it summarizes: half the step, at most a paragraph
            # (detailed) or two sentences (brief).
            step = user.split("Step:\n", 1)[-1].rsplit("\n\n", 1)[0]
            cap = 600 if purpose == "summarize_detailed" else 160
            size = min(cap, len(step) // 2)
            return _filler(step, size)[:size]
        if purpose == "summarize_subgoal":
            return _filler(tail, 200)[:200]
        if role == "manager":
            self.rounds += 1
            return (
                "Task state:\nCompleted: "
                + "; ".join(f"service checked [round_{i:03d}]" for i in range(1, self.rounds))
                + "\nIncomplete: find the root cause\nTask contract:\n- C1: the faulty component "
                "is named; verified by: anomalous telemetry\nDependencies: none\nNext: work\n"
                f"Subtask: check the next service\nAcceptance criteria: its telemetry is read\n"
                f"Related audit rounds: round_{max(self.rounds - 1, 1):03d}\nBoundaries: read only"
            )
        if role == "executor":
            return "I queried the service. " + _filler(tail, 400)[:400]
        if role == "auditor":
            return (
                "Status: incomplete\nIntegrity: clean\nContract audit: aligned\nFacts: "
                + _filler(tail, 600)[:600]
                + "\nBlocking constraints: C1"
            )
        if role == "policy":
            return json.dumps({"thought": "next query", **json.loads(self.next_action())})
        if role == "belief":
            return json.dumps({"ops": self.patch(user)})
        return json.dumps({"issues": [], "progress": 0, "reason": "scripted"})

    def next_action(self) -> str:
        action = self.cycle[self.turn % len(self.cycle)]
        self.turn += 1
        return action

    def patch(self, user: str) -> list[dict[str, Any]]:
        ops: list[dict[str, Any]] = []
        if "Current belief" not in user:
            ops.append({"op": "upsert_entity", "name": "system", "type": "system"})
            ops.append(
                {
                    "op": "add_gap",
                    "kind": "epistemic",
                    "text": "which component is the root cause",
                    "refs": ["system"],
                    "activate": True,
                }
            )
        service = re.search(r'"(?:entity|service)": "([\w-]+)"', user)
        if service:
            ops.append({"op": "upsert_entity", "name": service.group(1), "type": "service"})
            ops.append(
                {
                    "op": "upsert_state",
                    "entity": service.group(1),
                    "attribute": "checked",
                    "value": "telemetry read",
                    "source": "observed",
                }
            )
        return ops


class TimedModel:
    """A model that adds the time spent in its calls to `seconds`."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.seconds = 0.0

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        role: str = "",
        purpose: str = "",
    ) -> Completion:
        started = time.perf_counter()
        try:
            return self.inner.complete(
                messages,
                schema=schema,
                max_tokens=max_tokens,
                temperature=temperature,
                role=role,
                purpose=purpose,
            )
        finally:
            self.seconds += time.perf_counter() - started


# -- one method over the replay ---------------------------------------------------------------------


@dataclass
class Series:
    """Per decision (index = actions taken before it): prompt tokens and build seconds."""

    tokens: dict[int, int] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)


def tools_block(tools: Sequence[dict[str, Any]] | None) -> str:
    lines = [f"- {t.get('name')}: {t.get('description', '')}" for t in tools or []]
    return "Tools (answer with one tool call):\n" + "\n".join(lines)


def policy_tokens(goal: str, first: str, context: str, observation: Observation) -> int:
    user = (
        f"Goal: {goal}\n\nStep 0:\n{first}\n\n{context}\n\n"
        f"Current observation:\n{observation.text}\n\n{tools_block(observation.tools)}"
    )
    return count_tokens(POLICY_SYSTEM) + count_tokens(user)


def run_react(method: str, recording: Recording, steps: int) -> Series:
    """raw, acon, pace or hiagent: context, decision, action, record the turn."""
    settings = baseline_settings("rca-nezha")
    backbone = Backbone([a for a, _ in recording.turns])
    model = TimedModel(ScriptedModel(backbone))
    caller = ModelCaller(model)
    env = ReplayEnv(recording, steps)
    observation = env.reset()
    goal, first = env.goal, observation.text
    acon = AconMemory(goal, settings.acon, caller)
    pace = PaceMemory(goal, settings.pace, caller, make_scorer("tfidf", caller), step_budget=steps)
    hiagent = SubgoalMemory(goal, settings.hiagent, caller)
    history: list[Turn] = []
    series = Series()
    for t in range(steps):
        model.seconds = 0.0
        started = time.perf_counter()
        if method == "raw":
            context = "History:\n" + render_turns(history)
        elif method == "acon":
            context = acon.context(t).render()
        elif method == "pace":
            context = pace.context(t).render()
        else:
            if t % 5 == 0:
                hiagent.set_subgoal(f"check service group {t // 5 + 1}", t)
            context = hiagent.context().render()
        tokens = policy_tokens(goal, first, context, observation)
        series.seconds[t] = time.perf_counter() - started - model.seconds
        series.tokens[t] = tokens
        action = backbone.next_action()
        observation = env.step(action)
        turn = Turn(t + 1, action, observation.text)
        history.append(turn)
        acon.add(turn)
        pace.add(turn)
        hiagent.add(turn)
    return series


def turns_after(context: str, marker: str) -> int:
    """How many turns a role context shows after `marker` (its own actions this round)."""
    return context.rsplit(marker, 1)[-1].count("[step ")


def run_long_horizon(recording: Recording, steps: int) -> Series:
    """Six executor actions and two audit queries per round; the harness work between two
    decisions (manager, report and audit prompts) is that decision's build time."""
    backbone = Backbone([a for a, _ in recording.turns])
    model = TimedModel(ScriptedModel(backbone))
    env = ReplayEnv(recording, steps)
    series = Series()
    mark = time.perf_counter()

    def decide(request: DecisionRequest) -> str | None:
        nonlocal mark
        series.tokens[request.step] = policy_tokens(
            env.goal, recording.first.text, request.context, request.observation
        )
        series.seconds[request.step] = time.perf_counter() - mark - model.seconds - env.seconds
        if request.role == "manager":
            answer = json.dumps(
                {"tool": "submit_root_cause", "args": {"root_cause_entity": "frontend"}}
            )
        elif request.role == "executor":
            done = turns_after(request.context, "Your actions in this subtask:")
            answer = FINISH if done >= 6 else backbone.next_action()
        else:
            done = turns_after(request.context, "Your queries:")
            answer = FINISH if done >= 2 else backbone.next_action()
        model.seconds = env.seconds = 0.0
        mark = time.perf_counter()
        return answer

    settings = baseline_settings("rca-nezha").long_horizon
    LongHorizonHarness(settings, ModelCaller(model), decide, family="rca").run(env)
    return series


def run_pos(recording: Recording, steps: int) -> Series:
    backbone = Backbone([a for a, _ in recording.turns])
    ledger = TokenLedger()
    env = ReplayEnv(recording, steps)
    PosAgent(RoleModels.single(ScriptedModel(backbone)), PosConfig(), ledger=ledger).run(env)
    by_step = ledger.by_step()
    series = Series()
    for step, roles in by_step.items():
        if "policy" in roles:
            series.tokens[step] = int(roles["policy"]["prompt_tokens"])
    return series


def run(method: str, recording: Recording, steps: int) -> Series:
    if method == "lh":
        return run_long_horizon(recording, steps)
    if method == "pos":
        return run_pos(recording, steps)
    return run_react(method, recording, steps)


# -- report -----------------------------------------------------------------------------------------


def at(series: Series, step: int) -> tuple[int | None, float | None]:
    """The decision that produces observation `step` (taken after step - 1 actions)."""
    index = step - 1
    return series.tokens.get(index), series.seconds.get(index)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=50, help="episode length (default 50)")
    parser.add_argument("--case", default="nz-tt-010", help="rca-nezha case (default nz-tt-010)")
    parser.add_argument("--data-dir", type=Path, default=None, help="rca-nezha data folder")
    parser.add_argument(
        "--methods", default=",".join(METHODS), help=f"comma-separated, from {','.join(METHODS)}"
    )
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown or args.steps < 1:
        parser.error(f"unknown method(s) {', '.join(unknown)}" if unknown else "--steps >= 1")
    checkpoints = sorted({c for c in CHECKPOINTS if c <= args.steps} | {args.steps})
    recording = record(args.case, args.data_dir, args.steps)
    sizes = [len(o.text) for _, o in recording.turns]
    print(
        f"Scripted {args.steps}-step RCA episode (rca-nezha {args.case}): observations of "
        f"{statistics.median(sizes):.0f} chars median, {max(sizes)} max"
    )
    results: dict[str, Series] = {}
    for method in methods:
        results[method] = run(method, recording, args.steps)

    def cell(value: float | int | None, fmt: Callable[[Any], str]) -> str:
        return fmt(value) if value is not None else "-"

    print("\nPolicy prompt tokens at step t")
    print(f"{'step':>6} " + " ".join(f"{m:>8}" for m in methods))
    for step in checkpoints:
        row = [cell(at(results[m], step)[0], str) for m in methods]
        print(f"{step:>6} " + " ".join(f"{c:>8}" for c in row))
    timed = [m for m in methods if m != "pos"]
    print("\nContext building per step, ms (model calls excluded)")
    print(f"{'step':>6} " + " ".join(f"{m:>8}" for m in timed))
    for step in checkpoints:
        row = [cell(at(results[m], step)[1], lambda s: f"{s * 1000:.2f}") for m in timed]
        print(f"{step:>6} " + " ".join(f"{c:>8}" for c in row))
    for label, pick in (("median", statistics.median), ("max", max)):
        values = [pick(results[m].seconds.values() or [0.0]) * 1000 for m in timed]
        print(f"{label:>6} " + " ".join(f"{v:>8.2f}" for v in values))
    last = checkpoints[-1]
    figures = " ".join(f"{m}={cell(at(results[m], last)[0], str)}" for m in METHODS if m in results)
    print(f"policy tokens at step {last}: {figures}")


if __name__ == "__main__":
    main()
