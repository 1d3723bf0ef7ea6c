"""The measured model behind `pos paper ... --dry-run`: calls and tokens per episode, by component,
for each of the paper's benchmarks and methods.

    python -m benchmarks.study_estimates [--families alfworld,rca,clindiag,loca] [--out PATH]

For each benchmark and method, one scripted episode is played through the harness as `pos bench`
builds it (the suite's parameters and its whole step budget, which is the upper bound a case can
spend): the agents, prompts and schemas are the harness's own, only the backbone is scripted
(`benchmarks.cost`: the walk on alfworld-mini heat-mug; the recorded rca-nezha case nz-tt-010
replayed; one LOCA 8K case replayed; on ClinDiag a Common case with the scripted backbone asking
the history, examination and test tools in turn, and a scripted provider and judge, so their
prompts are the environment's own). The scripted backbone never submits, so every method spends
the whole budget. Each call is counted under its component: policy, belief, sentinel, the
baselines' own calls (compressor, summarizer, LongHorizon's manager, executor and auditor),
provider and judge. Tokens are the scripted backend's estimate (four characters a token);
completions are the scripted answers (realistic lengths for summaries, plans and reports,
short JSON decisions). The result is written as the package's `bench/study/estimates.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.baselines import Backbone, Probe, Recording, ReplayEnv, record
from benchmarks.cost.episodes import (
    Call,
    Calls,
    LocaBackbone,
    LocaReplay,
    WalkBackbone,
    record_loca,
)
from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.methods import METHODS
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.bench.paper import PAPER_METHODS
from pos_agent.bench.study.estimate import COMPONENTS, component_of
from pos_agent.bench.suite import load_suite
from pos_agent.envs import Environment, make_env
from pos_agent.llm import Model, ScriptedModel, TokenLedger
from pos_agent.llm.backend import GenerationRequest
from pos_agent.roles.limits import role_limits

OUT = Path(__file__).resolve().parents[1] / "src/pos_agent/bench/study/estimates.json"
FAMILIES = ("alfworld", "loca", "rca", "clindiag")
SUITES = {"alfworld": "alfworld", "loca": "loca", "rca": "rca-nezha", "clindiag": "clindiag-common"}
CLINDIAG_CASE_INDEX = 0  # the first Common case
CLINDIAG_QUESTIONS = (
    ("ask_history", {"question": "What are the main symptoms and how long have they lasted?"}),
    ("ask_physical_exam", {"question": "What does the physical examination show?"}),
    ("order_lab_test", {"test": "complete blood count"}),
    ("order_radiographic_test", {"test": "chest x-ray"}),
    ("ask_history", {"question": "Any past medical history, medication or allergies?"}),
)


def play(method: str, env: Environment, model: Model, suite: str, budget: int) -> None:
    """One episode of `method` with the suite's parameters, as `pos bench` builds it."""
    kind = METHODS[method].kind
    limits = role_limits("policy", model=model.spec, generation_tokens=budget)
    ledger = TokenLedger()
    settings = load_suite(suite).methods.get(method)
    if kind == "raw":
        RawAgent(model, ledger=ledger, limits=limits).run(env)
    elif kind == "pos":
        config = replace(PosConfig(), variant=method)  # type: ignore[arg-type]
        every = getattr(settings, "global_audit_every", None)
        if every:
            config = replace(config, global_audit_every=every)
        PosAgent(RoleModels.single(model), config, ledger=ledger).run(env)
    else:
        options = settings.baseline_options() if settings is not None else {}
        resolved = resolve_settings(env.name, method, options, generation_tokens=budget)
        agent, _ = build_baseline(
            method,
            model,
            resolved,
            limits=limits,
            ledger=ledger,
            trace=None,
            on_step=None,
            temperature=0.0,
            generation_cap=budget,
        )
        agent.run(env)


class ClinDiagBackbone(Backbone):
    """The RCA backbone's answers, with ClinDiag's questions in turn and never a submission
    before the budget's end (LongHorizon's final answer submits one)."""

    def decision(self, request: GenerationRequest, user: str) -> str:
        if request.purpose == "final_answer":
            args = {"final_diagnosis": "unknown"}
            call: dict[str, Any] = {"tool": "submit_diagnosis", "args": args}
            properties = (request.schema or {}).get("properties", {})
            key = "calls" if "calls" in properties else "call"
            return json.dumps({"thought": "submit", key: [call] if key == "calls" else call})
        return super().decision(request, user)


def scripted_provider(request: GenerationRequest) -> str:
    if request.role == "judge":
        return json.dumps({"correct": False, "reason": "scripted judge"})
    return json.dumps({"answer": "Not documented in the record."})


def clindiag_episode(method: str, budget: int) -> list[Call]:
    from pos_agent.envs import list_tasks

    task = list_tasks("clindiag", "common")[CLINDIAG_CASE_INDEX].task_id
    cycle = [json.dumps({"tool": t, "args": a}) for t, a in CLINDIAG_QUESTIONS]
    calls = Calls(ScriptedModel(ClinDiagBackbone(cycle)))
    env_calls = Calls(ScriptedModel(scripted_provider))
    with make_env(
        "clindiag", task, split="common", max_steps=budget, provider=env_calls, judge=env_calls
    ) as env:
        play(method, env, calls, "clindiag-common", 4096)
    return calls.calls + env_calls.calls


def episode(family: str, method: str, recording: Recording | None) -> list[Call]:
    steps = load_suite(SUITES[family]).max_steps or 50
    if family == "alfworld":
        calls = Calls(ScriptedModel(WalkBackbone()))
        with make_env("alfworld-mini", "heat-mug", max_steps=steps) as env:
            play(method, env, calls, "alfworld", 512)
        return calls.calls
    if family == "clindiag":
        return clindiag_episode(method, steps)
    assert recording is not None
    cycle = [a for a, _ in recording.turns]
    if family == "rca":
        calls = Calls(ScriptedModel(Backbone(cycle)))
        play(method, ReplayEnv(recording, steps, Probe()), calls, "rca-nezha", 4096)
    else:
        calls = Calls(ScriptedModel(LocaBackbone(cycle)))
        play(method, LocaReplay(recording, steps, Probe()), calls, "loca", 4096)
    return calls.calls


def tally(calls: list[Call]) -> dict[str, dict[str, int]]:
    out = {c: {"calls": 0, "prompt": 0, "completion": 0} for c in COMPONENTS}
    for call in calls:
        entry = out[component_of(call.role)]
        entry["calls"] += 1
        entry["prompt"] += call.prompt_tokens
        entry["completion"] += call.completion_tokens
    return {c: v for c, v in out.items() if v["calls"]}


def measure(family: str, methods: list[str], log: Callable[[str], None]) -> dict[str, Any] | str:
    steps = load_suite(SUITES[family]).max_steps or 50
    recording: Recording | str | None = None
    if family == "rca":
        recording = record("nz-tt-010", None, steps)
    elif family == "loca":
        recording = record_loca(steps)
        if isinstance(recording, str):
            return recording
    if isinstance(recording, str):
        return recording
    per_method = {}
    for method in methods:
        started = time.monotonic()
        per_method[method] = tally(episode(family, method, recording))
        total = sum(v["prompt"] + v["completion"] for v in per_method[method].values())
        log(f"{family} {method}: {total} tokens ({time.monotonic() - started:.0f}s)")
    return {"suite": SUITES[family], "steps": steps, "methods": per_method}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--methods", default=",".join(PAPER_METHODS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    families = dict(previous.get("families", {}))
    for family in [f.strip() for f in args.families.split(",") if f.strip()]:
        found = measure(family, args.methods.split(","), print)
        if isinstance(found, str):
            print(f"{family}: skipped ({found})")
            continue
        families[family] = found
    data = {
        "how": __doc__.split("\n\n", 2)[2].strip().replace("\n", " "),
        "command": "python -m benchmarks.study_estimates",
        "measured": time.strftime("%Y-%m-%d"),
        "commit": os.popen("git rev-parse --short HEAD 2>/dev/null").read().strip() or None,
        "families": families,
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
