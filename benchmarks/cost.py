"""What each method would be billed: tokens, the share a provider's prompt cache could serve,
billed tokens, and PoS against Raw, on the same scripted episodes.

    python -m benchmarks.cost [--steps 50] [--episodes alfworld,rca,loca]
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
input price). Before the last two lines, per episode, the floor: the billed pos/raw if every
PoS prompt token were served from the cache and raw's stayed as measured, and with raw's all
cached too (what no layout of the same content can beat).

With `--server` the alfworld episode of raw and pos is run once more, shorter, against
llama-cpp-python's OpenAI-compatible server (the embedded SmolLM2 model, `--cache` on: the
server keeps the state of every request, its prompt then its answer, and starts a prompt from
the one sharing the longest prefix). Every request that reaches the server is recorded as sent
(`SentLog`: the answer's schema in the system message, as this server has no native schema
mode, and the repair turns, which `Calls` does not see), with the prompt tokens the server
itself reported reusing for it (its log's "prefix-match hit"). The estimate applies the
server's rule to those requests by characters, with the server's own prompt token counts; it
is printed next to the same rule on `Calls` (what `Model.answer` sees) and on the server's own
tokens (the model's chat template and tokenizer).

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

from benchmarks.baselines import Backbone, Probe, Recording, ReplayEnv, record
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
from pos_agent.cost.cache import cache_rule
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
from pos_agent.llm.backend import Backend, GenerationRequest, RawReply
from pos_agent.roles.limits import AgentLimits, ProfileName, role_limits

METHODS = ("raw", "acon", "pace", "hiagent", "lh", "pos")
AGENT_OF = {"lh": "lh_harness"}
EPISODES = ("alfworld", "rca", "loca")
RULES = ("openai", "anthropic", "dashscope", "dashscope-explicit", "llamacpp")
# Anthropic's prices as fractions of the input price: cache reads 0.1x, 5-minute writes 1.25x.
ANTHROPIC_READ, ANTHROPIC_WRITE = 0.1, 1.25
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


# -- llama-cpp-python's server --------------------------------------------------------------------


_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit")


@dataclass(frozen=True)
class Sent:
    """One request as it reached the server: the messages as sent (the answer's schema in the
    system message where the server has no native schema mode, the repair turns), the answer,
    the server's own count of the prompt's tokens, and the prompt tokens its log says it
    reused for this request."""

    role: str
    purpose: str
    messages: tuple[tuple[str, str], ...]
    answer: str
    prompt_tokens: int
    server_cached: int

    @property
    def text(self) -> str:
        return prompt_text(self.messages)


class SentLog:
    """A backend that passes every request on and keeps it as sent (`Sent`), with what the
    server's log says about it. `Calls` sees `Model.answer`; the requests below it (the
    schema instruction, the repair turns) are what the server caches."""

    def __init__(self, backend: Backend, log: Path) -> None:
        self.backend = backend
        self.name = backend.name
        self.model_id = backend.model_id
        self.base_url = backend.base_url
        self.log = log
        self.sent: list[Sent] = []

    def __getattr__(self, name: str) -> Any:
        # constrains_output, secrets, ...: the backend's own.
        return getattr(self.backend, name)

    def generate(self, request: GenerationRequest) -> RawReply:
        start = self.log.stat().st_size if self.log.exists() else 0
        reply: RawReply | None = None
        try:
            reply = self.backend.generate(request)
            return reply
        finally:
            # The server logs the hit before it answers (its stderr is line-buffered).
            with self.log.open("rb") as lines:
                lines.seek(start)
                told = lines.read().decode(errors="replace")
            self.sent.append(
                Sent(
                    request.role,
                    request.purpose,
                    tuple((m.role, m.content) for m in request.messages),
                    reply.text if reply is not None else "",
                    reply.usage.prompt_tokens if reply is not None else 0,
                    sum(int(h) for h in _PREFIX_HIT.findall(told)),
                )
            )


Tokens = list[int]


def server_reuse(
    prompts: Sequence[Tokens], answers: Sequence[Tokens], sizes: Sequence[int], *, ram: bool
) -> list[int]:
    """Per request, the prompt tokens llama-cpp-python's server reuses, by its own rule on its
    own tokens: the longest prefix the prompt shares with a state the server kept, the state of
    an earlier request being its prompt followed by its answer; `ram` (`--cache`): any earlier
    state, else the last one only. A prompt held whole still has its last token evaluated
    again. (`sent_estimate` is the same rule on texts, `cost/cache.py`'s llamacpp rules.)"""
    states: list[Tokens] = []
    reused = []
    for prompt, answer, size in zip(prompts, answers, sizes, strict=True):
        pool = states if ram else states[-1:]
        shared = max((_common(state, prompt) for state in pool), default=0)
        reused.append(max(0, size - 1) if shared >= len(prompt) else shared)
        states.append(prompt + answer)
    return reused


def _common(a: Tokens, b: Tokens) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def sent_estimate(sent: Sequence[Sent], *, ram: bool = True) -> list[int]:
    """The estimate on the requests as sent: `cost/cache.py`'s llamacpp rule (`llamacpp-ram`
    with `ram`) by characters, each answer kept after its prompt, with the server's prompt
    token counts (what the ledger records for such a server)."""
    cache = PrefixCache(cache_rule("llamacpp-ram" if ram else "llamacpp"), keep=max(1, len(sent)))
    return [cache.estimate(s.text, s.prompt_tokens, answer=s.answer).cached_tokens for s in sent]


def tokenized_reuse(sent: Sequence[Sent], gguf: Path) -> list[int] | str:
    """`server_reuse` on the server's own tokens: each request put through the model's chat
    template and tokenizer as llama-cpp-python's server does; a reason string if it cannot."""
    try:
        from llama_cpp import Llama
        from llama_cpp._utils import suppress_stdout_stderr
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        with suppress_stdout_stderr(disable=False):  # llama.cpp's load messages
            vocab = Llama(str(gguf), vocab_only=True, verbose=False)
        text_of = vocab._model.token_get_text
        template = Jinja2ChatFormatter(
            vocab.metadata["tokenizer.chat_template"],
            text_of(vocab.token_eos()),
            text_of(vocab.token_bos()),
            stop_token_ids=[vocab.token_eos()],
        )
        prompts: list[Tokens] = []
        answers: list[Tokens] = []
        for s in sent:
            turns: list[Any] = [{"role": r, "content": c} for r, c in s.messages]
            shaped = template(messages=turns)
            prompt = shaped.prompt.encode()
            prompts.append(vocab.tokenize(prompt, add_bos=not shaped.added_special, special=True))
            answers.append(vocab.tokenize(s.answer.encode(), add_bos=False, special=False))
        vocab.close()
        return server_reuse(prompts, answers, [len(p) for p in prompts], ram=True)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:200]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _gap(estimate: int, server: int) -> str:
    return f"{100 * (estimate - server) / server:+.1f}%" if server else "n/a"


def server_table(
    runs: Sequence[tuple[str, Sequence[Call], range]],
    sent: Sequence[Sent],
    tokenized: Sequence[int] | str,
) -> list[str]:
    """One row per method: calls and requests, the server's prompt tokens, what it reported
    reusing, the estimate on the requests as sent and its gap, the same on `Calls` (what
    `Model.answer` sees) and on the server's own tokens; then why, where a gap is over 10%."""
    estimate = sent_estimate(sent)
    lines = [
        f"{'method':>8} {'calls':>6} {'sent':>5} {'prompt':>7} {'server cached':>14} "
        f"{'estimate':>9} {'est-srv':>8} {'on calls':>9} {'est-srv':>8} {'tokenized':>10} "
        f"{'tok-srv':>8}"
    ]
    over = []
    for method, calls, span in runs:
        server = sum(sent[i].server_cached for i in span)
        mine = sum(estimate[i] for i in span)
        on_calls = sum(cached_tokens(calls, "llamacpp-ram"))
        exact = "-" if isinstance(tokenized, str) else str(sum(tokenized[i] for i in span))
        exact_gap = "-" if isinstance(tokenized, str) else _gap(int(exact), server)
        prompt = sum(sent[i].prompt_tokens for i in span)
        lines.append(
            f"{method:>8} {len(calls):>6} {len(span):>5} {prompt:>7} {server:>14} {mine:>9} "
            f"{_gap(mine, server):>8} {on_calls:>9} {_gap(on_calls, server):>8} {exact:>10} "
            f"{exact_gap:>8}"
        )
        if server and abs(mine - server) > 0.1 * server:
            over.append(method)
    if isinstance(tokenized, str):
        lines.append(f"(no tokenized column: {tokenized})")
    if over:
        lines.append(
            f"estimate not within 10% on {', '.join(over)}: it counts shared characters where "
            "the server counts tokens (see the tokenized column for the server's own)"
        )
    return lines


def server_run(steps: int) -> list[str]:
    """raw and pos on the alfworld episode against llama-cpp-python's server (prompt cache on):
    the server's reused prompt tokens next to the estimate."""
    from pos_agent.llm import ModelOptions, load_model
    from pos_agent.llm.backend import embedded_gguf_path

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
            wire = SentLog(model.backend, log)
            model.backend = wire
            runs: list[tuple[str, Sequence[Call], range]] = []
            for method in ("raw", "pos"):
                first = len(wire.sent)
                calls = Calls(model, spec="openai:smollm")
                # The embedded model's profile and budget (what `--model local` runs with).
                try:
                    with make_env("alfworld-mini", "heat-mug", max_steps=steps) as env:
                        play(method, env, calls, suite="alfworld-mini", budget=128,
                             profile="compact")  # fmt: skip
                except Exception as exc:
                    lines.append(f"{method:>8} stopped: {type(exc).__name__}: {exc}"[:300])
                runs.append((method, calls.calls, range(first, len(wire.sent))))
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)
    # The methods ran one after the other on one server: its states carry over.
    tokenized = tokenized_reuse(wire.sent, embedded_gguf_path())
    return server_table(runs, wire.sent, tokenized) + lines


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
        head += "".join(f" {r + ' %':>{max(12, len(r) + 2)}}" for r in RULES)
        head += "".join(f" {f'billed@{p}x':>12}" for p in CACHED_PRICES)
        print(head)
        billed: dict[str, dict[float, float]] = {}
        anthropic: dict[str, float] = {}
        for method, calls in per_method.items():
            shares = {r: counts(calls, r) for r in RULES}
            base = shares["openai"]
            billed[method] = {p: base.billed(p) for p in CACHED_PRICES}
            anthropic[method] = shares["anthropic"].billed(ANTHROPIC_READ, ANTHROPIC_WRITE)
            row = f"{method:>8} {len(calls):>6} {base.prompt:>9} {base.completion:>7}"
            row += "".join(
                f" {100 * shares[r].cached / max(1, shares[r].prompt):>{max(12, len(r) + 2)}.1f}"
                for r in RULES
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
            print(
                "billed under anthropic (reads 0.1x, writes 1.25x) pos/raw "
                f"{ratio(anthropic['pos'], anthropic['raw'])}"
            )
            for price in CACHED_PRICES:
                billed_ratio[price][name] = ratio(billed["pos"][price], billed["raw"][price])
    if args.server:
        print(
            f"\nllama-cpp-python server (--cache), alfworld {args.server_steps} steps, SmolLM2: "
            "prompt tokens the server reports reusing vs the estimate on the requests it got"
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
