"""The one cut-to-fit rule of every history-based method (raw, acon, pace, hiagent).

By default nothing is cut (the paper's policy, the same for every method): a prompt that does
not fit the model's window ends the case as a scored failure (`context_overflow`). Only with an
explicit `context_window` (`--context-window`, recorded in the settings hash) is a prompt that
would not fit `context_window - max_tokens` rebuilt without its oldest history units (Raw's
turns; ACON's summary, then its turns; PACE's chunks; HiAgent's turns before the first subgoal,
completed subgoals and the active subgoal's turns), keeping the system text, the task, the
first observation and the newest units. Each method says what one unit is; the rule is here.

PoS has no transcript (it conditions on B_t, whose size grows with the belief, not the steps),
and LongHorizon's roles see only their round's own turns and the manager's capped reports, so
the cut does not apply to them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from pos_agent.llm import Message
from pos_agent.llm.backend import json_schema_of

# Prompt tokens are estimated, not counted (the agent has no tokenizer): about three characters
# a token errs on the side of cutting a little early. The margin covers the chat template.
CHARS_PER_TOKEN = 3
TEMPLATE_TOKENS = 64


def estimated_tokens(messages: Sequence[Message]) -> int:
    """A deliberately high estimate of a prompt's tokens."""
    return sum(len(m.content) for m in messages) // CHARS_PER_TOKEN + TEMPLATE_TOKENS


# Backends without a native schema mode write the answer's JSON schema into the system text
# (`llm/_structured.py`), with one line of instruction around it.
SCHEMA_NOTE_CHARS = 120


def schema_tokens(schema: type[BaseModel] | None) -> int:
    """What the answer's schema may add to the prompt, estimated as the prompt is."""
    if schema is None:
        return 0
    text = json.dumps(json_schema_of(schema), separators=(",", ":"))
    return (len(text) + SCHEMA_NOTE_CHARS) // CHARS_PER_TOKEN


def cut_note(dropped: int) -> str:
    """What the prompt says where units were left out."""
    return (
        f"(The {dropped} oldest history entries are left out: the history no longer fits the "
        "model's context window.)"
    )


@dataclass(frozen=True)
class Fitted:
    """A prompt built to fit, and how many of its oldest history units were left out."""

    messages: list[Message]
    dropped: int
    units: int
    """History units there were before the cut."""

    @property
    def kept(self) -> int:
        return self.units - self.dropped


def fit_to_window(
    build: Callable[[int], list[Message]],
    units: int,
    context_window: int | None,
    max_tokens: int,
    reserved: int = 0,
) -> Fitted:
    """`build(0)` when it fits `context_window - max_tokens - reserved` (or no window is set),
    else `build(d)` for the smallest number `d` of oldest units whose removal makes it fit (all
    of them when nothing does: the server then reports the overflow)."""
    messages = build(0)
    if context_window is None or units <= 0:
        return Fitted(messages, 0, units)
    room = context_window - max_tokens - reserved
    if estimated_tokens(messages) <= room:
        return Fitted(messages, 0, units)
    low, high = 1, units
    while low < high:
        middle = (low + high) // 2
        if estimated_tokens(build(middle)) <= room:
            high = middle
        else:
            low = middle + 1
    return Fitted(build(low), low, units)
