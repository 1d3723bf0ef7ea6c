"""Per-step cost of PoS's non-LLM work, by belief size.

    python -m benchmarks.overhead [--sizes 100,200,1000,10000] [--steps N]

One step = apply a 10-op patch, run the sentinel rules on what changed, compute the world keys
and the projection onto the active gap, and assess a full health window. Times are medians over
`--steps` steps on beliefs of the given numbers of world records. The last line is
`per-step ms: 200=<x> 10000=<y>` (targets on a 2-core machine: x <= 2, y <= 50).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import deque
from typing import Any

from pos_agent.belief import Belief, apply_patch_detailed, focus_keys, world_keys
from pos_agent.health import HealthConfig, WindowStep, assess_window
from pos_agent.sentinel import check_rules

ROOMS = ("kitchen", "hall", "bedroom", "bath", "garage", "study")
ATTRIBUTES = ("location", "temperature", "door", "cleanliness", "power")
VALUES = {
    "location": [f"{room} shelf {i}" for room in ROOMS for i in range(1, 6)],
    "temperature": ["hot", "cold", "room temperature"],
    "door": ["open", "closed"],
    "cleanliness": ["clean", "dirty"],
    "power": ["on", "off"],
}


def build_belief(records: int, seed: int = 0) -> Belief:
    """A belief with about `records` world records: 1/4 entities, 1/2 states, 1/4 relations."""
    rng = random.Random(seed)
    n_entities = max(2, records // 4)
    ops: list[dict[str, Any]] = [
        {"op": "upsert_entity", "name": f"object {i}", "type": rng.choice(ROOMS)}
        for i in range(n_entities)
    ]
    n_states = records // 2
    for i in range(n_states):
        attribute = ATTRIBUTES[(i // n_entities) % len(ATTRIBUTES)]
        ops.append(
            {
                "op": "upsert_state",
                "entity": f"e{i % n_entities + 1}",
                "attribute": attribute,
                "value": rng.choice(VALUES[attribute]),
                "confidence": rng.choice([0.6, 0.8, 1.0]),
                "evidence": [0],
            }
        )
    for i in range(records - n_entities - n_states):
        src = i % n_entities + 1
        ops.append(
            {
                "op": "upsert_relation",
                "src": f"e{src}",
                "type": f"near {i // n_entities}",
                "dst": f"e{(src + 1 + i // n_entities) % n_entities + 1}",
                "confidence": 0.9,
            }
        )
    ops.append(
        {
            "op": "add_gap",
            "kind": "achievement",
            "text": "heat object 1",
            "refs": ["e1"],
            "activate": True,
        }
    )
    ops.append({"op": "add_gap", "kind": "epistemic", "text": "where is object 2", "refs": ["e2"]})
    outcome = apply_patch_detailed(Belief(goal="benchmark"), ops)
    assert not outcome.rejected, outcome.rejected[:3]
    return outcome.belief


def step_patch(belief: Belief, step: int, rng: random.Random) -> list[dict[str, Any]]:
    """Ten realistic ops: state changes, a relation, a new entity, gap bookkeeping."""
    n_entities = len(belief.entities)
    ops: list[dict[str, Any]] = []
    for number in rng.sample(range(1, n_entities + 1), 6):
        entity = f"e{number}"
        ops.append(
            {
                "op": "upsert_state",
                "entity": entity,
                "attribute": "location",
                "value": rng.choice(VALUES["location"]),
                "confidence": 1.0,
                "evidence": [step],
                "quote": "you see",
            }
        )
    ops.append({"op": "upsert_entity", "name": f"new object {step}", "type": "object"})
    ops.append(
        {
            "op": "upsert_relation",
            "src": f"new object {step}",
            "type": "inside",
            "dst": "e1",
            "confidence": 0.7,
        }
    )
    ops.append({"op": "add_gap", "kind": "epistemic", "text": f"what is inside box {step}"})
    ops.append({"op": "set_active_gap", "id": belief.active_gap_id or "g1"})
    return ops


def measure(records: int, steps: int, config: HealthConfig) -> dict[str, float]:
    rng = random.Random(records)
    belief = build_belief(records)
    window: deque[WindowStep] = deque(maxlen=config.window)
    observations = {0: "you see nothing"}
    for _ in range(config.window):  # a full window before timing starts
        window.append(_window_step(belief))
    phases: dict[str, list[float]] = {k: [] for k in ("patch", "rules", "keys", "health", "total")}
    for n in range(1, steps + 1):
        observations[n] = f"At step {n} you see a box {n}; you see a mug."
        belief = belief.at_step(n)
        patch = step_patch(belief, n, rng)
        t0 = time.perf_counter()
        outcome = apply_patch_detailed(belief, patch)
        t1 = time.perf_counter()
        check_rules(outcome.belief, observations, patch=patch, changed=outcome.changed)
        t2 = time.perf_counter()
        window.append(_window_step(outcome.belief))
        t3 = time.perf_counter()
        report = assess_window(list(window), config)
        t4 = time.perf_counter()
        assert report.ready and outcome.rejected == [], outcome.rejected
        belief = outcome.belief
        for name, value in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True):
            value_ms = value * 1000.0
            phases[name].append(value_ms)
    return {name: statistics.median(values) for name, values in phases.items()}


def _window_step(belief: Belief) -> WindowStep:
    return WindowStep(
        world=world_keys(belief),
        focus=focus_keys(belief, belief.active_gap_id),
        epistemic=belief.open_gap_ids("epistemic"),
        achievement=belief.open_gap_ids("achievement"),
        progress=0,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="100,200,1000,10000", help="belief sizes in world records"
    )
    parser.add_argument(
        "--steps", type=int, default=40, help="timed steps per size (median reported)"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    config = HealthConfig()
    print(f"PoS non-LLM per-step overhead (median of {args.steps} steps, window K={config.window})")
    header = f"{'records':>8} {'patch ms':>9} {'rules ms':>9} {'keys ms':>8} {'health ms':>10} {'total ms':>9} {'ms/1k rec':>10}"
    print(header)
    print("-" * len(header))
    totals: dict[int, float] = {}
    for size in sizes:
        result = measure(size, args.steps, config)
        totals[size] = result["total"]
        print(
            f"{size:>8} {result['patch']:>9.3f} {result['rules']:>9.3f} {result['keys']:>8.3f} "
            f"{result['health']:>10.3f} {result['total']:>9.3f} {1000 * result['total'] / size:>10.3f}"
        )
    summary = " ".join(f"{size}={totals[size]:.3f}" for size in (200, 10000) if size in totals)
    print(f"per-step ms: {summary}")


if __name__ == "__main__":
    main()
