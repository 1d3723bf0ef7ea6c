"""Policy prompt size over a 50-step episode: PoS (belief) against raw (transcript).

    python -m benchmarks.prompt_growth [--steps 50]

One fixed, scripted episode in the real alfworld-mini `heat-mug` environment: the scripted policy
walks the room (go to / examine / open, round robin, never finishing), the scripted belief model
records where the agent is and what it saw, the scripted sentinel finds nothing. Both agents see
the same environment; only what the policy is conditioned on differs. Token counts are the
scripted backend's estimate (about four characters a token). The last line is
`policy tokens at step 50: pos=<a> raw=<b>`.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from pos_agent.agents.methods import METHODS
from pos_agent.agents.pos import PosAgent, PosConfig, RoleModels
from pos_agent.agents.raw import RawAgent
from pos_agent.envs import make_env
from pos_agent.llm import ScriptedModel, TokenLedger
from pos_agent.llm.backend import GenerationRequest

CHECKPOINTS = (10, 25, 50)
_ARRIVE = re.compile(r"You arrive at ([a-z]+ \d+)")
_SEE = re.compile(r"\b(?:a|an) ([a-z]+ \d+)")


class ScriptedRoles:
    """Deterministic answers per role (told apart by the request's role and purpose)."""

    def __init__(self) -> None:
        self.turn = 0

    def __call__(self, request: GenerationRequest) -> str:
        user = request.messages[1].content
        if request.role == "policy":
            return json.dumps({"thought": "look around", "action": self._walk(request)})
        if request.role == "belief":
            return json.dumps({"ops": self._patch(user)})
        if request.purpose == "progress":
            return json.dumps({"progress": 0, "reason": "scripted"})
        return json.dumps({"issues": [], "progress": 0, "reason": "scripted"})

    def _walk(self, request: GenerationRequest) -> str:
        schema = request.schema or {}
        choices = schema.get("properties", {}).get("action", {}).get("enum", [])
        moves = [c for c in choices if c.startswith(("go to", "examine", "open", "close"))]
        self.turn += 1
        return moves[(self.turn * 7) % len(moves)] if moves else "look"

    def _patch(self, user: str) -> list[dict[str, Any]]:
        observation = user.split("Observation at step ")[-1]
        step = int(observation.split(":")[0]) if observation[:1].isdigit() else 0
        ops: list[dict[str, Any]] = []
        if step == 0 or "Goal:" in user:
            ops.append({"op": "upsert_entity", "name": "agent", "type": "agent"})
            ops.append(
                {
                    "op": "add_gap",
                    "kind": "achievement",
                    "text": "heat the mug and put it in a cabinet",
                    "refs": ["agent"],
                    "activate": True,
                }
            )
        place = _ARRIVE.search(observation)
        if place:
            ops.append({"op": "upsert_entity", "name": place.group(1), "type": "place"})
            ops.append(
                {
                    "op": "upsert_state",
                    "entity": "agent",
                    "attribute": "location",
                    "value": place.group(1),
                    "evidence": [step],
                }
            )
        for seen in sorted(set(_SEE.findall(observation)))[:3]:
            ops.append({"op": "upsert_entity", "name": seen, "type": "object"})
        return ops


def run(agent_name: str, steps: int) -> TokenLedger:
    ledger = TokenLedger()
    model = ScriptedModel(ScriptedRoles())
    with make_env("alfworld-mini", "heat-mug", max_steps=steps) as env:
        if METHODS[agent_name].is_pos:
            PosAgent(RoleModels.single(model), PosConfig(), ledger=ledger).run(env)
        else:
            RawAgent(model, ledger=ledger).run(env)  # a scripted model has no window: never cut
    return ledger


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=50, help="episode length (default 50)")
    args = parser.parse_args(argv)
    checkpoints = [c for c in CHECKPOINTS if c <= args.steps] or [args.steps]
    ledgers = {name: run(name, args.steps) for name in ("pos", "raw")}

    def policy_prompt(name: str, step: int) -> int:
        # The decision at step t-1 is the one that produces observation t: it is step t's prompt.
        by_step = ledgers[name].by_step()
        return int(by_step.get(step - 1, {}).get("policy", {}).get("prompt_tokens", 0))

    print(
        f"Policy prompt tokens by step ({args.steps}-step scripted episode, alfworld-mini heat-mug)"
    )
    print(f"{'step':>6} {'pos':>8} {'raw':>8}")
    for step in checkpoints:
        print(f"{step:>6} {policy_prompt('pos', step):>8} {policy_prompt('raw', step):>8}")
    print()
    print("Total tokens per role over the episode (prompt + completion)")
    print(f"{'role':>10} {'pos':>10} {'raw':>10}")
    for role in ("policy", "belief", "sentinel"):
        totals = [ledgers[n].by_role()[role] for n in ("pos", "raw")]
        cells = [t["prompt_tokens"] + t["completion_tokens"] for t in totals]
        print(f"{role:>10} {cells[0]:>10} {cells[1]:>10}")
    totals = [ledgers[n].total() for n in ("pos", "raw")]
    print(
        f"{'total':>10} {totals[0]['prompt_tokens'] + totals[0]['completion_tokens']:>10} {totals[1]['prompt_tokens'] + totals[1]['completion_tokens']:>10}"
    )
    last = checkpoints[-1]
    print(
        f"policy tokens at step {last}: pos={policy_prompt('pos', last)} raw={policy_prompt('raw', last)}"
    )


if __name__ == "__main__":
    main()
