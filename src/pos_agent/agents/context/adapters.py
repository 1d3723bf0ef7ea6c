"""ACON, PACE and HiAgent as the shared ReAct harness drives them (`agents/context_agent.py`).

Each adapter holds one method's memory for an episode and answers the harness's questions at
each step: build the context (and say, as trace events, what it holds), render it for the
prompt, which memory lookups the policy may ask for now and how to do one, what to do with the
settled answer (HiAgent's subgoal), and how to keep the turn the step produced. The memory
modules stay harness-independent; everything a trace or result needs is read here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from pos_agent.agents.context.acon import AconContext, AconMemory
from pos_agent.agents.context.hiagent import Subgoal, SubgoalMemory
from pos_agent.agents.context.lookups import (
    GLIMPSE,
    RETRIEVE,
    Lookup,
    glimpse_tool,
    hiagent_resolver,
    pace_resolver,
    retrieve_tool,
)
from pos_agent.agents.context.pace import PaceContext, PaceMemory
from pos_agent.events import (
    AconContextEvent,
    CompressionEvent,
    Event,
    HiAgentContextEvent,
    PaceContextEvent,
    SubgoalEvent,
)
from pos_agent.roles.schemas import SUBGOAL_FIELD
from pos_agent.tokens import estimate_tokens
from pos_agent.transition import Transition

ACON_NOTE = (
    "Your older steps may be replaced by a summary of them (<HISTORY_SUMMARY>); the steps after "
    "it are shown word for word."
)
PACE_NOTE = (
    "Your earlier steps are shown as numbered chunks, one per step, in more or less detail by how "
    "relevant they look now: in full, as a summary, as one line, or as a placeholder. To read a "
    "chunk in full before you act, answer glimpse(i) with its number instead of an action: it "
    "costs no action (at most 3 per step)."
)
HIAGENT_NOTE = (
    "Work in subgoals: a subgoal is a milestone on the way to the goal, reached by several "
    "actions. While the current subgoal is not done, leave `new_subgoal` empty: the action "
    "continues it. When there is no current subgoal, or it is done or cannot be done, write the "
    "next subgoal (one line) in `new_subgoal` with its first action; that closes the current "
    "one. Completed subgoals are shown as summaries; to see one in full again, answer "
    "retrieve(i) with its number instead of an action: it costs no action."
)


@dataclass(frozen=True)
class Offer:
    """The lookups the policy may ask for at this point of a step."""

    verb: str
    """glimpse or retrieve."""
    ids: tuple[int, ...]
    """Chunk numbers (glimpse) or completed subgoal numbers (retrieve) it may name."""
    left: int
    """Lookups left at this step."""
    per_step: int
    """Lookups allowed per step."""

    def entries(self) -> list[str]:
        """As admissible-list entries: `glimpse(3)`, ..."""
        return [f"{self.verb}({i})" for i in self.ids]

    def tool(self) -> dict[str, Any]:
        """As a pseudo-tool for tool environments (the same all episode; the prompt says which
        numbers it may name now)."""
        return glimpse_tool(self.per_step) if self.verb == GLIMPSE else retrieve_tool(self.per_step)

    def hint(self, *, as_tool: bool = False) -> str:
        """One line for the prompt: which numbers may be looked up now."""
        numbers = ", ".join(str(i) for i in self.ids)
        what = "chunk" if self.verb == GLIMPSE else "subgoal"
        how = f"call {self.verb}" if as_tool else f"answer {self.verb}(i)"
        return (
            f"Or, instead of an action, {how} with a {what} number from: {numbers} "
            f"(no action spent; {self.left} left at this step)."
        )


class ContextMethod(Protocol):
    """What the shared ReAct harness asks of a context method."""

    name: str
    note: str
    """What the policy's system prompt says about this method's memory."""
    asks_subgoal: bool
    """The decision carries a `subgoal` field (HiAgent)."""
    max_lookups: int
    """Lookups allowed per step (0: none)."""

    def begin(self, step: int) -> list[Event]:
        """Build the context for the decision at `step`; the events say what it holds."""
        ...

    def render(self, drop: int = 0) -> str:
        """The context as the prompt shows it (after this step's lookups), without its `drop`
        oldest history units (the cut to fit the window, `agents/fit.py`)."""
        ...

    def units(self) -> int:
        """History units `render` may leave out."""
        ...

    def offer(self) -> Offer | None:
        """The lookups the policy may ask for now, if any."""
        ...

    def lookup(self, request: str) -> Lookup | None:
        """Do the lookup `request` asks for; None when it is not one of this method's."""
        ...

    def decided(self, answer: BaseModel | None, step: int) -> list[Event]:
        """The step's settled policy answer (before its action is sent)."""
        ...

    def add(self, turn: Transition) -> None:
        """The turn the step produced."""
        ...

    def record(self) -> dict[str, Any]:
        """What the result keeps about this method's work."""
        ...


class AconAdapter:
    """ACON: a summary that replaces the history past the threshold, the last turns verbatim."""

    name = "acon"
    note = ACON_NOTE
    asks_subgoal = False
    max_lookups = 0

    def __init__(self, memory: AconMemory) -> None:
        self.memory = memory
        self.settings = memory.settings
        self.context: AconContext | None = None

    def begin(self, step: int) -> list[Event]:
        self.context = self.memory.context(step)
        events: list[Event] = []
        done = self.context.compression
        if done is not None:
            events.append(
                CompressionEvent(
                    step=step,
                    first_folded=done.first_folded,
                    last_folded=done.last_folded,
                    input_tokens=done.input_tokens,
                    threshold=self.settings.threshold_tokens,
                    summary=done.summary,
                )
            )
        summary = self.memory.summary
        events.append(
            AconContextEvent(
                step=step,
                summary_tokens=estimate_tokens(summary) if summary else 0,
                turns=[turn.step for turn in self.context.turns],
                pending_tokens=self.memory.pending_tokens(),
                threshold=self.settings.threshold_tokens,
            )
        )
        return events

    def render(self, drop: int = 0) -> str:
        return self.context.render(drop) if self.context is not None else ""

    def units(self) -> int:
        return self.context.units() if self.context is not None else 0

    def offer(self) -> Offer | None:
        return None

    def lookup(self, request: str) -> Lookup | None:
        return None

    def decided(self, answer: BaseModel | None, step: int) -> list[Event]:
        return []

    def add(self, turn: Transition) -> None:
        self.memory.add(turn)

    def record(self) -> dict[str, Any]:
        done = self.memory.compressions
        return {
            "compressions": sum(c.ok for c in done),
            "failed_compressions": sum(not c.ok for c in done),
            "settings": asdict(self.settings),
        }


class PaceAdapter:
    """PACE: each past step at the granularity its relevance earns, with glimpse(i)."""

    name = "pace"
    note = PACE_NOTE
    asks_subgoal = False

    def __init__(self, memory: PaceMemory) -> None:
        self.memory = memory
        self.settings = memory.settings
        self.max_lookups = memory.settings.max_glimpses_per_step
        self.context: PaceContext | None = None
        self.glimpsed: list[int] = []
        self.scorers: Counter[str] = Counter()

    def begin(self, step: int) -> list[Event]:
        written = {i for i, c in self.memory.chunks.items() if c.detailed is not None}
        self.context = built = self.memory.context(step)
        self.glimpsed = []
        scored = any(view.score is not None for view in built.views)
        if scored:
            self.scorers[built.scorer] += 1
        summarized = [
            {"id": c.id, "detailed": c.detailed, "brief": c.brief}
            for i, c in self.memory.chunks.items()
            if c.detailed is not None and i not in written
        ]
        return [
            PaceContextEvent(
                step=step,
                pressure=round(built.pressure, 4),
                thresholds=[round(x, 4) for x in built.thresholds],
                scorer=built.scorer if scored else "none (no older chunk)",
                chunks=[
                    {
                        "id": v.id,
                        "level": v.level,
                        "score": None if v.score is None else round(v.score, 4),
                        "weight": None if v.weight is None else round(v.weight, 4),
                    }
                    for v in built.views
                ],
                summarized=summarized,
            )
        ]

    def render(self, drop: int = 0) -> str:
        return self.context.render(self.glimpsed, drop) if self.context is not None else ""

    def units(self) -> int:
        return self.context.units() if self.context is not None else 0

    def offer(self) -> Offer | None:
        left = self.memory.glimpses_left
        if self.context is None or left <= 0:
            return None
        ids = tuple(
            v.id for v in self.context.views if v.level != "full" and v.id not in self.glimpsed
        )
        return Offer(GLIMPSE, ids, left, self.max_lookups) if ids else None

    def lookup(self, request: str) -> Lookup | None:
        return pace_resolver(self.memory, self.glimpsed)(request)

    def decided(self, answer: BaseModel | None, step: int) -> list[Event]:
        return []

    def add(self, turn: Transition) -> None:
        self.memory.add(turn)

    def record(self) -> dict[str, Any]:
        chunks = self.memory.chunks.values()
        return {
            "summarized_chunks": sum(c.detailed is not None for c in chunks),
            "summary_failures": sum(c.summary_failures for c in chunks),
            "scorer": dict(self.scorers),
            "settings": {**asdict(self.settings), "t_max": self.memory.t_max},
        }


class HiAgentAdapter:
    """HiAgent: working memory folded by subgoal, with retrieve(i)."""

    name = "hiagent"
    note = HIAGENT_NOTE
    asks_subgoal = True

    def __init__(self, memory: SubgoalMemory) -> None:
        self.memory = memory
        self.settings = memory.settings
        self.max_lookups = memory.settings.max_retrieves_per_step

    def begin(self, step: int) -> list[Event]:
        context = self.memory.context()
        active = context.active
        return [
            HiAgentContextEvent(
                step=step,
                completed=[
                    {"number": g.number, "text": g.text, "summary": g.summary}
                    for g in context.completed
                ],
                active=active.text if active else None,
                active_number=active.number if active else None,
                active_turns=len(active.turns) if active else 0,
            )
        ]

    def render(self, drop: int = 0) -> str:
        return self.memory.view().render(drop)

    def units(self) -> int:
        return self.memory.view().units()

    def offer(self) -> Offer | None:
        left = self.memory.retrieves_left
        expanded = self.memory.expanded
        ids = tuple(g.number for g in self.memory.completed if g.number not in expanded)
        return Offer(RETRIEVE, ids, left, self.max_lookups) if ids and left > 0 else None

    def lookup(self, request: str) -> Lookup | None:
        return hiagent_resolver(self.memory)(request)

    def decided(self, answer: BaseModel | None, step: int) -> list[Event]:
        before = self.memory.active
        text = getattr(answer, SUBGOAL_FIELD, None)
        folded = self.memory.set_subgoal(text if isinstance(text, str) else None, step)
        now = self.memory.active
        if now is None or now is before:
            return []
        return [SubgoalEvent(step=step, number=now.number, text=now.text, folded=_fold(folded))]

    def add(self, turn: Transition) -> None:
        self.memory.add(turn)

    def record(self) -> dict[str, Any]:
        memory = self.memory
        return {
            "subgoals": len(memory.completed) + (memory.active is not None),
            "summary_failures": sum(g.summary_failed for g in memory.completed),
            "settings": asdict(self.settings),
        }


def _fold(goal: Subgoal | None) -> dict[str, Any] | None:
    if goal is None:
        return None
    return {
        "number": goal.number,
        "text": goal.text,
        "summary": goal.summary,
        "failed": goal.summary_failed,
    }
