"""Memory lookups inside one decision: PACE's `glimpse(i)` and HiAgent's `retrieve(i, ...)`.

A lookup is not an environment action. The policy answers with it instead of an action; the
method shows what was asked for and the policy is asked again, within the same step, until it
gives a real action. Each method caps lookups per step (PACE: 3 glimpses); a policy that still
asks for one after the cap gets no action from this step (the harness then falls back, as for
any unusable answer), so a step always ends and never spends more than one action.

The policy asks for a lookup the way it answers everything else: as text (`glimpse(3)`), as an
entry of the admissible list, or in a tool environment as a call of the pseudo-tool `glimpse`
or `retrieve` (`glimpse_tool`, `retrieve_tool`); `split_lookups` reads all three.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pos_agent.agents.context.hiagent import SubgoalMemory, parse_retrieve
from pos_agent.agents.context.pace import PaceMemory, parse_glimpse
from pos_agent.llm import loads_bounded

GLIMPSE = "glimpse"
RETRIEVE = "retrieve"
LOOKUP_TOOLS = frozenset({GLIMPSE, RETRIEVE})


@dataclass(frozen=True)
class Lookup:
    """One lookup the policy made within a step."""

    request: str
    ok: bool
    note: str


Resolve = Callable[[str], Lookup | None]
"""The lookup a text answer asks for (done now), or None when the answer is a real action."""


def decide_with_lookups(
    ask: Callable[[Sequence[Lookup]], str | None], resolve: Resolve, max_lookups: int
) -> tuple[str | None, list[Lookup]]:
    """The step's action (None when the policy gave none, or only lookups past the cap) and the
    lookups made on the way. `ask` gets the lookups made so far in the step and answers with
    text; `resolve` does the lookup an answer asks for, or says None for a real action. The
    policy is asked at most `max_lookups + 1` times."""
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


# -- how the policy asks -----------------------------------------------------------------------


# The pseudo-tools do not list the ids a step may name: their schemas stay the same all episode,
# so the decision schema (a union over every tool) is built once and cached, instead of at every
# step (tens of milliseconds). An id that is not there is refused, as in text.


def _pseudo_tool(name: str, what: str, argument: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A pseudo-tool of one required `argument`; `what` says what it shows."""
    return {
        "name": name,
        "description": what,
        "parameters": {
            "type": "object",
            "properties": {argument: schema},
            "required": [argument],
        },
    }


def glimpse_tool(per_step: int) -> dict[str, Any]:
    """The `glimpse` pseudo-tool offered in tool environments."""
    return _pseudo_tool(
        GLIMPSE,
        "Read one older step (chunk) in full before you act. Not an environment action: "
        f"it costs no budget; at most {per_step} per step.",
        "chunk",
        {"type": "integer", "minimum": 1, "description": "The chunk number."},
    )


def retrieve_tool(per_step: int) -> dict[str, Any]:
    """The `retrieve` pseudo-tool offered in tool environments."""
    return _pseudo_tool(
        RETRIEVE,
        "Show completed subgoals' full trajectories again (until the next subgoal) before "
        f"you act. Not an environment action: it costs no budget; at most {per_step} per step.",
        "subgoals",
        {
            "type": "array",
            "items": {"type": "integer", "minimum": 1},
            "minItems": 1,
            "description": "Completed subgoal numbers.",
        },
    )


def _lookup_call_text(call: dict[str, Any]) -> str:
    given = call.get("args")
    args: dict[str, Any] = given if isinstance(given, dict) else {}
    if call.get("tool") == GLIMPSE:
        return f"{GLIMPSE}({args.get('chunk', '')})"
    numbers = args.get("subgoals")
    numbers = numbers if isinstance(numbers, list) else [numbers]
    return f"{RETRIEVE}({', '.join(str(n) for n in numbers)})"


def split_lookups(action: str | None) -> tuple[str | None, str | None]:
    """(the lookup an answer asks for, as `glimpse(3)` or `retrieve(1, 2)`; the real action).

    Text answers are one or the other. A tool answer may mix pseudo-tool calls with real calls:
    then the real calls are the action and the lookup is dropped (the policy already chose)."""
    text = (action or "").strip()
    if not text:
        return None, None
    if parse_glimpse(text) is not None or parse_retrieve(text) is not None:
        return text, None
    try:
        parsed = loads_bounded(text)
    except ValueError:
        return None, text
    calls = parsed if isinstance(parsed, list) else [parsed]
    if not all(isinstance(c, dict) for c in calls):
        return None, text
    lookups = [c for c in calls if c.get("tool") in LOOKUP_TOOLS]
    if not lookups:
        return None, text
    real = [c for c in calls if c.get("tool") not in LOOKUP_TOOLS]
    if real:
        return None, json.dumps(real[0] if len(real) == 1 else real, ensure_ascii=False)
    return _lookup_call_text(lookups[0]), None


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
