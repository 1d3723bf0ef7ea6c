"""The report of `benchmarks.cost`: per episode, each method's tokens, the share each provider's
rule could serve from its cache and the billed tokens; PoS against Raw, and the floor."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from benchmarks.baselines import Recording, record
from benchmarks.cost.episodes import EPISODES, METHODS, Call, counts, record_loca, run_episode
from benchmarks.cost.server import server_run
from pos_agent.cost import TokenCounts

RULES = ("openai", "anthropic", "dashscope", "dashscope-explicit", "llamacpp")
# Anthropic's prices as fractions of the input price: cache reads 0.1x, 5-minute writes 1.25x.
ANTHROPIC_READ, ANTHROPIC_WRITE = 0.1, 1.25
CACHED_PRICES = (0.5, 0.25, 0.1)


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
    args = _parser().parse_args(argv)
    episodes = [e.strip() for e in args.episodes.split(",") if e.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = sorted(set(episodes) - set(EPISODES)) + sorted(set(methods) - set(METHODS))
    if bad:
        _parser().error(f"unknown: {', '.join(bad)}")
    billed_ratio: dict[float, dict[str, str]] = {p: {} for p in CACHED_PRICES}
    played: dict[str, dict[str, list[Call]]] = {}
    for name in episodes:
        recording = _recording(name, args.steps)
        if isinstance(recording, str):
            print(f"\n{name}: skipped ({recording})")
            for price in CACHED_PRICES:
                billed_ratio[price][name] = "-"
            continue
        per_method = {m: run_episode(name, m, args.steps, recording) for m in methods}
        played[name] = per_method
        print(f"\n{name}: {args.steps}-step scripted episode")
        for price, value in _episode_table(per_method).items():
            billed_ratio[price][name] = value
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


def _parser() -> argparse.ArgumentParser:
    import benchmarks.cost

    parser = argparse.ArgumentParser(
        description=benchmarks.cost.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=50, help="episode length (default 50)")
    parser.add_argument("--episodes", default=",".join(EPISODES))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--server", action="store_true", help="also run llama-cpp-python's server")
    parser.add_argument("--server-steps", type=int, default=4)
    return parser


def _recording(name: str, steps: int) -> Recording | str | None:
    """The episode's recorded turns (rca, loca), None for alfworld (played live), or why the
    episode cannot run."""
    if name == "rca":
        return record("nz-tt-010", None, steps)
    if name == "loca":
        return record_loca(steps)
    return None


def _episode_table(per_method: dict[str, list[Call]]) -> dict[float, str]:
    """Print one episode's table and pos/raw lines; the billed pos/raw per cached price
    (nothing without both methods)."""
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
    if "pos" not in per_method or "raw" not in per_method:
        return {}
    pos, raw = per_method["pos"], per_method["raw"]
    total = ratio(
        sum(c.prompt_tokens + c.completion_tokens for c in pos),
        sum(c.prompt_tokens + c.completion_tokens for c in raw),
    )
    cells = " ".join(f"{p}x={ratio(billed['pos'][p], billed['raw'][p])}" for p in CACHED_PRICES)
    print(f"pos/raw total tokens {total}; billed under openai: {cells}")
    print(
        "billed under anthropic (reads 0.1x, writes 1.25x) pos/raw "
        f"{ratio(anthropic['pos'], anthropic['raw'])}"
    )
    return {p: ratio(billed["pos"][p], billed["raw"][p]) for p in CACHED_PRICES}
