"""Memory lookups inside one decision: PACE's `glimpse(i)` and HiAgent's `retrieve(i, ...)`.

A lookup is not an environment action. The policy answers with it instead of an action; the
method shows what was asked for and the policy is asked again, within the same step, until it
gives a real action. Each method caps lookups per step (PACE: 3 glimpses); a policy that still
asks for one after the cap gets no action from this step (the harness then falls back, as for
any unusable answer), so a step always ends and never spends more than one action.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pos_agent.agents.context.hiagent import SubgoalMemory, parse_retrieve
from pos_agent.agents.context.pace import PaceMemory, parse_glimpse


@dataclass(frozen=True)
class Lookup:
    """One lookup the policy made within a step."""

    request: str
    ok: bool
    note: str


Ask = Callable[[Sequence[Lookup]], str | None]
"""Ask the policy for this step's answer, given the lookups made so far in the step."""
Resolve = Callable[[str], Lookup | None]
"""The lookup an answer asks for (done now), or None when the answer is a real action."""


def decide_with_lookups(
    ask: Ask, resolve: Resolve, max_lookups: int
) -> tuple[str | None, list[Lookup]]:
    """The step's action (None when the policy gave none, or only lookups past the cap) and the
    lookups made on the way. The policy is asked at most `max_lookups + 1` times."""
    lookups: list[Lookup] = []
    for _ in range(max_lookups + 1):
        answer = ask(lookups)
        if answer is None:
            return None, lookups
        lookup = resolve(answer)
        if lookup is None:
            return answer, lookups
        lookups.append(lookup)
    return None, lookups


def pace_resolver(memory: PaceMemory, glimpsed: list[int]) -> Resolve:
    """Resolves `glimpse(i)` against `memory`; ids shown in full are appended to `glimpsed`."""

    def resolve(answer: str) -> Lookup | None:
        chunk_id = parse_glimpse(answer)
        if chunk_id is None:
            return None
        result = memory.glimpse(chunk_id)
        if result.ok:
            glimpsed.append(chunk_id)
            return Lookup(answer, True, f"chunk {chunk_id} is shown in full")
        return Lookup(answer, False, result.refusal or "refused")

    return resolve


def hiagent_resolver(memory: SubgoalMemory) -> Resolve:
    """Resolves `retrieve(i, ...)` against `memory` (the subgoals stay expanded until the next)."""

    def resolve(answer: str) -> Lookup | None:
        numbers = parse_retrieve(answer)
        if numbers is None:
            return None
        result = memory.retrieve(numbers)
        return Lookup(answer, bool(result.shown), result.message)

    return resolve
