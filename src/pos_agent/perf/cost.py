"""What each method would be billed: tokens, the share a provider's prompt cache could serve,
billed tokens, and PoS against Raw, on the same scripted episodes.

    python -m pos_agent.perf.cost [--steps 50] [--episodes alfworld,rca,loca]
                                  [--methods raw,acon,pace,hiagent,lh,pos]
                                  [--server] [--server-steps 4]

Episodes (every method sees the same one; only the backbone is scripted, the agents, prompts
and schemas are the harness's own, as `pos run` builds them):

- alfworld: the real alfworld-mini `heat-mug` environment, the scripted walk of
  `perf.prompt_growth` (round robin of go to / examine / open, never finishing), `--steps` long;
- rca: one rca-nezha case (nz-tt-010) recorded once with `perf.baselines`' round robin of query
  tools and replayed to every method, `--steps` long;
- loca: one LOCA-Bench 8K case (WoocommerceStockAlert, seed 42) recorded once with read-only
  tool calls and replayed the same way (skipped, and said so, when LOCA's runtime is missing).

For each call the prompt as sent (the messages, in order) is compared with the earlier prompts
of the episode (`cost/cache.py`): the tokens it shares with the longest matching one, cut to
each provider's rule, are what that provider could serve from its cache. Tokens are the
scripted backend's estimate (four characters a token). Billed tokens = uncached prompt tokens +
cached ones at the cached price (a fraction of the input price) + completion tokens (at the
input price). With `--server` the alfworld episode of raw and pos is run once more, shorter,
against llama-cpp-python's OpenAI-compatible server (the embedded SmolLM2 model, prompt cache
on), and the prompt tokens the server itself reported reusing (its log's "prefix-match hit")
are printed next to the estimates under the llamacpp rule (the last prompt's state only) and
the llamacpp-ram rule (`--cache`: the states of earlier prompts too). The server also counts
the repair turns and chat-template tokens the estimate does not see.

The last two lines, under OpenAI's rule:
`billed pos/raw at 0.5x cached: alfworld=<a> rca=<b> loca=<c>` and the same at 0.1x.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pos_agent.agents.baselines import build_baseline, resolve_settings
from pos_agent.agents.methods import METHODS as AGENT_METHODS
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.bench.suite import load_suite
from pos_agent.cost import CACHE_RULES, PrefixCache, TokenCounts, prompt_text
from pos_agent.envs import Environment, TaskKind, make_env
from pos_agent.llm import CallWrapper, Completion, Model, Request, ScriptedModel, TokenLedger
from pos_agent.llm.backend import GenerationRequest
from pos_agent.perf.baselines import Backbone, Probe, Recording, ReplayEnv, record
from pos_agent.perf.prompt_growth import ScriptedRoles
from pos_agent.roles.limits import AgentLimits, ProfileName, role_limits

METHODS = ("raw", "acon", "pace", "hiagent", "lh", "pos")
AGENT_OF = {"lh": "lh_harness"}
EPISODES = ("alfworld", "rca", "loca")
RULES = ("openai", "anthropic", "dashscope", "llamacpp")
CACHED_PRICES = (0.5, 0.25, 0.1)
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


@dataclass
class Calls(CallWrapper):
    """Passes every call on and keeps it."""

    inner: Model
    spec: str = "openai:backbone"
    calls: list[Call] = field(default_factory=list)

    def answer(self, request: Request) -> Completion:
        answer = request.send(self.inner)
        usage = answer.usage
        self.calls.append(
            Call(
                request.role,
                request.purpose,
                prompt_text([(m.role, m.content) for m in request.messages]),
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cached_tokens if usage.cache_reported else None,
            )
        )
        return answer


# -- what a provider could serve from its cache -------------------------------------------------


def cached_tokens(calls: Sequence[Call], rule: str) -> list[int]:
    """Per call, the prompt tokens `rule` would serve from the cache, in the episode's order."""
    cache = PrefixCache(CACHE_RULES[rule])
    return [cache.estimate(c.text, c.prompt_tokens).cached_tokens for c in calls]


def counts(calls: Sequence[Call], rule: str) -> TokenCounts:
    return TokenCounts(
        prompt=sum(c.prompt_tokens for c in calls),
        completion=sum(c.completion_tokens for c in calls),
        cached=sum(cached_tokens(calls, rule)),
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
            from pos_agent.envs._episode import BackendResult

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


# -- llama-cpp-python's server --------------------------------------------------------------------


_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_run(steps: int) -> list[str]:
    """raw and pos on the alfworld episode against llama-cpp-python's server (prompt cache on):
    the server's reused prompt tokens next to the llamacpp estimate."""
    from pos_agent.llm import ModelOptions, load_model
    from pos_agent.llm._local import embedded_gguf_path

    port = _free_port()
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pos-perf-cost-server-") as folder:
        log = Path(folder) / "server.log"
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_gguf_path()),
            "--model_alias", "smollm", "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", "8192", "--n_threads", str(os.cpu_count() or 1), "--cache", "true",
        ]  # fmt: skip
        with log.open("wb") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 300
            while True:
                try:
                    urllib.request.urlopen(f"{url}/models", timeout=5).close()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        return [f"server did not start: {log.read_text(errors='replace')[-500:]}"]
                    time.sleep(0.5)
            options = ModelOptions(base_url=url, api_key="local", timeout_s=900, max_retries=1)
            model = load_model("openai:smollm", options)
            for method in ("raw", "pos"):
                before = len(_PREFIX_HIT.findall(log.read_text(errors="replace")))
                calls = Calls(model, spec="openai:smollm")
                # The embedded model's profile and budget (what `--model local` runs with).
                try:
                    with make_env("alfworld-mini", "heat-mug", max_steps=steps) as env:
                        play(method, env, calls, suite="alfworld-mini", budget=128,
                             profile="compact")  # fmt: skip
                except Exception as exc:
                    lines.append(f"{method:>8} stopped: {type(exc).__name__}: {exc}"[:300])
                hits = [int(h) for h in _PREFIX_HIT.findall(log.read_text(errors="replace"))]
                server = sum(hits[before:])
                last = sum(cached_tokens(calls.calls, "llamacpp"))
                ram = sum(cached_tokens(calls.calls, "llamacpp-ram"))
                prompt = sum(c.prompt_tokens for c in calls.calls)
                gaps = [
                    f"{100 * (e - server) / server:+.1f}%" if server else "n/a" for e in (last, ram)
                ]
                lines.append(
                    f"{method:>8} {len(calls.calls):>6} {prompt:>10} {server:>14} {last:>10} "
                    f"{gaps[0]:>9} {ram:>10} {gaps[1]:>9}"
                )
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)
    return lines


# -- report -------------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def all_cached(calls: Sequence[Call]) -> TokenCounts:
    """The calls' tokens with every prompt token served from the cache."""
    prompt = sum(c.prompt_tokens for c in calls)
    return TokenCounts(prompt, sum(c.completion_tokens for c in calls), cached=prompt)


def floor(pos: Sequence[Call], raw: Sequence[Call], price: float, *, raw_cached: bool) -> float:
    """The lowest billed pos/raw a prompt layout could reach at `price`: every PoS prompt token
    served from the cache, raw's as measured under OpenAI's rule (or, with `raw_cached`, all of
    raw's too). The content is the same, so the completions and the prompt sizes are too."""
    pos_bill = all_cached(pos).billed(price)
    raw_bill = (all_cached(raw) if raw_cached else counts(raw, "openai")).billed(price)
    return pos_bill / raw_bill if raw_bill else float("nan")


def floor_lines(name: str, pos: Sequence[Call], raw: Sequence[Call]) -> list[str]:
    """The episode's floor lines, at the cached prices of the issue's targets."""
    lines = []
    for label, raw_cached in (("all pos prompts", False), ("all prompts of both", True)):
        cells = " ".join(
            f"{p}x={floor(pos, raw, p, raw_cached=raw_cached):.2f}" for p in (0.5, 0.1)
        )
        lines.append(f"{name}: floor pos/raw if {label} were cached: {cells}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=50, help="episode length (default 50)")
    parser.add_argument("--episodes", default=",".join(EPISODES))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--server", action="store_true", help="also run llama-cpp-python's server")
    parser.add_argument("--server-steps", type=int, default=4)
    args = parser.parse_args(argv)
    episodes = [e.strip() for e in args.episodes.split(",") if e.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = sorted(set(episodes) - set(EPISODES)) + sorted(set(methods) - set(METHODS))
    if bad:
        parser.error(f"unknown: {', '.join(bad)}")
    billed_ratio: dict[float, dict[str, str]] = {p: {} for p in CACHED_PRICES}
    played: dict[str, dict[str, list[Call]]] = {}
    for name in episodes:
        recording: Recording | None = None
        if name == "rca":
            recording = record("nz-tt-010", None, args.steps)
        elif name == "loca":
            got = record_loca(args.steps)
            if isinstance(got, str):
                print(f"\n{name}: skipped ({got})")
                for price in CACHED_PRICES:
                    billed_ratio[price][name] = "-"
                continue
            recording = got
        per_method = {m: run_episode(name, m, args.steps, recording) for m in methods}
        played[name] = per_method
        print(f"\n{name}: {args.steps}-step scripted episode")
        head = f"{'method':>8} {'calls':>6} {'prompt':>9} {'compl.':>7}"
        head += "".join(f" {r + ' %':>12}" for r in RULES)
        head += "".join(f" {f'billed@{p}x':>12}" for p in CACHED_PRICES)
        print(head)
        billed: dict[str, dict[float, float]] = {}
        for method, calls in per_method.items():
            shares = {r: counts(calls, r) for r in RULES}
            base = shares["openai"]
            billed[method] = {p: base.billed(p) for p in CACHED_PRICES}
            row = f"{method:>8} {len(calls):>6} {base.prompt:>9} {base.completion:>7}"
            row += "".join(
                f" {100 * shares[r].cached / max(1, shares[r].prompt):>12.1f}" for r in RULES
            )
            row += "".join(f" {billed[method][p]:>12.0f}" for p in CACHED_PRICES)
            print(row)
        if "pos" in per_method and "raw" in per_method:
            pos, raw = per_method["pos"], per_method["raw"]
            total = ratio(
                sum(c.prompt_tokens + c.completion_tokens for c in pos),
                sum(c.prompt_tokens + c.completion_tokens for c in raw),
            )
            cells = " ".join(
                f"{p}x={ratio(billed['pos'][p], billed['raw'][p])}" for p in CACHED_PRICES
            )
            print(f"pos/raw total tokens {total}; billed under openai: {cells}")
            for price in CACHED_PRICES:
                billed_ratio[price][name] = ratio(billed["pos"][price], billed["raw"][price])
    if args.server:
        print(
            f"\nllama-cpp-python server, alfworld {args.server_steps} steps, SmolLM2 "
            "(prompt tokens the server reports reusing vs the llamacpp estimate)"
        )
        print(
            f"{'method':>8} {'calls':>6} {'prompt':>10} {'server cached':>14} {'last only':>10} "
            f"{'est-srv':>9} {'ram cache':>10} {'est-srv':>9}"
        )
        for line in server_run(args.server_steps):
            print(line)
    floors = [
        line
        for name, per_method in played.items()
        if "pos" in per_method and "raw" in per_method
        for line in floor_lines(name, per_method["pos"], per_method["raw"])
    ]
    if floors:
        print("\nfloor: billed pos/raw under openai with the same tokens, cached at best")
        print("\n".join(floors))
    for price in (0.5, 0.1):
        cells = " ".join(f"{e}={billed_ratio[price].get(e, '-')}" for e in EPISODES)
        print(f"billed pos/raw at {price}x cached: {cells}")


if __name__ == "__main__":
    main()
