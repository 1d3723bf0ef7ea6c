"""Policy prompts and context building of the four baselines over a scripted RCA episode,
measured through the real agents and prompts of the harness.

    python -m benchmarks.baselines [--steps 50] [--case nz-tt-010] [--data-dir PATH]

The observations are real: one RCA case (rca-nezha) is played once with a fixed round robin of
query tools over its services (overview, metrics, traces, topology, logs, metric names), and the
recorded outputs (up to 4,000 characters each) are replayed to every method, so each sees the
same episode. Every method runs as `pos run` runs it (RawAgent, ContextAgent for ACON, PACE and
HiAgent, LongHorizonAgent, PosAgent), with the rca-nezha suite's parameters and its real policy
prompts and schemas; only the backbone is scripted (summaries, compressions, plans and audit
reports of realistic length, the same tool calls for every method).

For each method and step t it reports the prompt tokens of the decision that produces
observation t (the policy's; LongHorizon-Harness: the executor's or auditor's decision), and
the context building of that decision: the wall time from the previous observation to the
decision call, minus the time spent in model calls in between (summaries, compressions, belief
updates, manager and audit calls). Tokens are the scripted backend's estimate (four characters a
token). The last line is
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

from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.methods import METHODS as AGENT_METHODS
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.bench.suite import load_suite
from pos_agent.envs import BackendResult, BudgetedEnvironment, Observation, TaskKind, make_env
from pos_agent.llm import CallWrapper, Completion, Request, ScriptedModel, TokenLedger
from pos_agent.llm.backend import GenerationRequest
from pos_agent.roles.limits import role_limits

CHECKPOINTS = (10, 25, 50, 100, 200)
METHODS = ("raw", "acon", "pace", "hiagent", "lh", "pos")
AGENT_OF = {"lh": "lh_harness"}
BACKBONE = "openai:backbone"  # a real model's profile: unbounded schemas, the suite's budget
_SERVICE_LINE = re.compile(r"^\s{2}([a-z][\w-]*)\s*$", re.MULTILINE)
# The calls that decide an environment action: (role, purpose).
DECISIONS = frozenset(
    {
        ("policy", "act"),
        ("executor", "act"),
        ("auditor", "query"),
        ("manager", "final_answer"),
    }
)


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


@dataclass
class Series:
    """Per decision (index = actions taken before it): prompt tokens and build seconds."""

    tokens: dict[int, int] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)


@dataclass
class Probe:
    """Times the context building of each decision: from the previous observation to the
    decision call, minus the model calls in between."""

    series: Series = field(default_factory=Series)
    model_seconds: float = 0.0
    """Time spent inside model calls so far."""
    mark: tuple[float, float] = (0.0, 0.0)
    """(wall clock, model_seconds) when the last observation came back."""
    decision: tuple[float, float, int] | None = None
    """(wall clock, model_seconds, prompt tokens) at the start of the latest decision call."""

    def observed(self) -> None:
        self.mark = (time.perf_counter(), self.model_seconds)
        self.decision = None

    def acting(self, index: int) -> None:
        """Action `index` is about to be sent: the decision that chose it is complete."""
        if self.decision is None:
            return
        started, model_at_start, tokens = self.decision
        wall, model_at_mark = self.mark
        self.series.tokens[index] = tokens
        self.series.seconds[index] = (started - wall) - (model_at_start - model_at_mark)


class ReplayEnv(BudgetedEnvironment):
    """Replays a recording in order, whatever the action; the submission ends the case."""

    name = "rca-nezha"  # the benchmark the replay comes from (its family's settings apply)
    kind: TaskKind = "diagnosis"

    def __init__(self, recording: Recording, max_steps: int, probe: Probe) -> None:
        super().__init__(task_id="replay", max_steps=max_steps, category="", split="")
        self.recording = recording
        self.index = 0
        self.probe = probe

    def reset(self) -> Observation:
        observation = super().reset()
        self.probe.observed()
        return observation

    def step(self, action: str) -> Observation:
        self.probe.acting(self.steps_used)
        observation = super().step(action)
        self.probe.observed()
        return observation

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
        first = self.recording.first
        observation.tools = None if result.done else first.tools
        observation.max_calls = first.max_calls
        observation.fallback_action = first.fallback_action
        return observation


# -- the scripted backbone ------------------------------------------------------------------------


def _filler(seed: str, chars: int) -> str:
    words = " ".join(seed.split()) or "no observation"
    return (words + " ") * (chars // max(len(words), 1) + 1)


SUBMISSION = {
    "tool": "submit_root_cause",
    "args": {"root_cause_entity": "frontend", "fault_type": "cpu_contention"},
}


class Backbone:
    """Deterministic answers per role, of the length a real model would write; every method
    gets the same tool calls in the same order.

    The belief patches follow the updater's prompt: a state read from an observation is
    "observed" with that step as evidence and an exact quote from it (`observed_quote`). Before
    (no evidence, no quote) the Sentinel's rules found `missing_evidence` on 47 of 50 steps of
    nz-tt-010, each paid with a revision and a second audit: perf.cost's rca row was then
    `pos 251 calls, 478307 prompt, 7917 completion, openai 54.5%, billed@0.5x 355856`."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = list(cycle)
        self.turn = 0
        self.rounds = 0
        self.subgoal = ""

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
        if (role, purpose) == ("manager", "plan"):
            self.rounds += 1
            return (
                "Task state:\nCompleted: "
                + "; ".join(f"service checked [round_{i:03d}]" for i in range(1, self.rounds))
                + "\nIncomplete: find the root cause\nTask contract:\n- C1: the faulty component "
                "is named; verified by: anomalous telemetry\nDependencies: none\nNext: work\n"
                f"Subtask: check the next service\nAcceptance criteria: its telemetry is read\n"
                f"Related audit rounds: round_{max(self.rounds - 1, 1):03d}\nBoundaries: read only"
            )
        if (role, purpose) == ("executor", "report"):
            return "I queried the service. " + _filler(tail, 400)[:400]
        if (role, purpose) in (("auditor", "audit"), ("auditor", "repair")):
            return (
                "Status: incomplete\nIntegrity: clean\nContract audit: aligned\nFacts: "
                + _filler(tail, 600)[:600]
                + "\nBlocking constraints: C1"
            )
        if role == "belief":
            return json.dumps({"ops": self.patch(user)})
        if role == "sentinel":
            return json.dumps({"issues": [], "progress": 0, "reason": "scripted"})
        return self.decision(request, user)

    def decision(self, request: GenerationRequest, user: str) -> str:
        """A tool decision in the request's schema: the next call of the cycle, or for
        LongHorizon `finish` after 6 executor actions / 2 auditor queries, and the submission."""
        done = {
            "executor": turns_after(user, "Your actions in this subtask:") >= 6,
            "auditor": turns_after(user, "Your queries:") >= 2,
        }
        if request.purpose == "final_answer":
            call: dict[str, Any] = SUBMISSION
        elif done.get(request.role, False):
            call = {"tool": "finish", "args": {}}
        else:
            call = json.loads(self.next_action())
        answer: dict[str, Any] = {"thought": "next query"}
        properties = (request.schema or {}).get("properties", {})
        if "new_subgoal" in properties:
            # A new subgoal every 5 turns, said once (HiAgent's explicit subgoal change).
            group = f"check service group {self.turn // 5 + 1}"
            answer["new_subgoal"] = group if group != self.subgoal else ""
            self.subgoal = group
        if "calls" in properties:
            answer["calls"] = [call]
        else:
            answer["call"] = call
        return json.dumps(answer)

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
            state: dict[str, Any] = {
                "op": "upsert_state",
                "entity": service.group(1),
                "attribute": "checked",
                "value": "telemetry read",
                "source": "inferred",
            }
            seen = observed_quote(user)
            if seen is not None:
                # As the updater's prompt asks: observed, with its step and an exact quote.
                state.update(source="observed", evidence=[seen[0]], quote=seen[1])
            ops.append(state)
        return ops


_OBSERVATION_AT = re.compile(r"Observation at step (\d+):\n")


def observed_quote(user: str, chars: int = 80) -> tuple[int, str] | None:
    """The step of the last observation a belief prompt shows and an exact quote from it (its
    first non-blank line, cut at a word within `chars`); None when it shows none."""
    found = list(_OBSERVATION_AT.finditer(user))
    if not found:
        return None
    step = int(found[-1].group(1))
    line = next((x.strip() for x in user[found[-1].end() :].splitlines() if x.strip()), "")
    if len(line) > chars:
        line = line[:chars].rsplit(" ", 1)[0] or line[:chars]
    return (step, line) if line else None


def turns_after(context: str, marker: str) -> int:
    """How many turns a role context shows after `marker` (its own actions this round)."""
    if marker not in context:
        return 0
    return context.rsplit(marker, 1)[-1].count("[step ")


class TimedModel(CallWrapper):
    """A model that tells the probe how long its calls take and when a decision starts."""

    def __init__(self, inner: ScriptedModel, probe: Probe) -> None:
        self.inner = inner
        self.spec = BACKBONE
        self.probe = probe

    def answer(self, request: Request) -> Completion:
        started = time.perf_counter()
        model_at_start = self.probe.model_seconds
        try:
            answer = request.send(self.inner)
        finally:
            self.probe.model_seconds += time.perf_counter() - started
        if (request.role, request.purpose) in DECISIONS:
            self.probe.decision = (started, model_at_start, answer.usage.prompt_tokens)
        return answer


# -- one method over the replay ---------------------------------------------------------------------


def run(method: str, recording: Recording, steps: int) -> Series:
    """One episode of `method` (as `pos run` builds it) over the replay."""
    probe = Probe()
    model = TimedModel(ScriptedModel(Backbone([a for a, _ in recording.turns])), probe)
    env = ReplayEnv(recording, steps, probe)
    budget = load_suite("rca-nezha").generation_tokens or 4096
    ledger = TokenLedger()
    agent_name = AGENT_OF.get(method, method)
    kind = AGENT_METHODS[agent_name].kind
    if kind == "raw":
        limits = role_limits("policy", model=model.spec, generation_tokens=budget)
        RawAgent(model, ledger=ledger, limits=limits).run(env)
    elif kind == "pos":
        PosAgent(RoleModels.single(model), PosConfig(), ledger=ledger).run(env)
    else:
        options = load_suite("rca-nezha").methods[agent_name].baseline_options()
        settings = resolve_settings(env.name, agent_name, options, generation_tokens=budget)
        agent, _ = build_baseline(
            agent_name,
            model,
            settings,
            limits=role_limits("policy", model=model.spec, generation_tokens=budget),
            ledger=ledger,
            trace=None,
            on_step=None,
            temperature=0.0,
        )
        agent.run(env)
    return probe.series


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
    timed = methods
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
