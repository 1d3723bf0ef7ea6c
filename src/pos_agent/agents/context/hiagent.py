"""HiAgent: working memory folded by subgoal (paper App. D.2; upstream HiAgent2024/HiAgent,
`agentboard/agents/cme_final.py`, with the summarizer of the KAnchor218/HiAgent fork).

A subgoal starts only when the policy says so explicitly, as upstream's answer carries a
`Subgoal:` line only to start the next subgoal (`ContextEfficientAgentV2.run`: any answer with a
subgoal line opens one, whatever its wording; every other answer is an action under the current
one). Here the decision's `new_subgoal` field is that line: empty continues the current
subgoal, any text starts a new one, which closes the previous one; nothing verifies that it was
met. The policy sees, for each
completed subgoal, one line `i. Subgoal: ...` with its summary, then the active subgoal with its
full action-observation trajectory. The summary of a completed subgoal is one LLM call (1-2
sentences on what happened and whether the subgoal was met), made once and cached: upstream
recomputes it at every step, with the same output at temperature 0. `retrieve(i, j)` shows
those subgoals' original trajectories until the next subgoal; it is an internal re-query, not an
environment action, capped per step. A failed summary call falls back to the subgoal's last
observation, and a subgoal with no actions gets no call, as upstream.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pos_agent.agents.context.calls import ModelCaller
from pos_agent.agents.context.settings import HiAgentSettings
from pos_agent.llm import Message
from pos_agent.transition import Transition, render_transitions

SUMMARIZER_SYSTEM = "You summarize an agent's trajectory for one subgoal, concisely."
_RETRIEVE = re.compile(r"^\s*retrieve\s*\(\s*(\d+(?:\s*,\s*\d+)*)\s*\)\s*$", re.IGNORECASE)


def summary_messages(subgoal: str, turns: list[Transition]) -> list[Message]:
    user = (
        f"Subgoal: {subgoal}\nTrajectory:\n{render_transitions(turns) or '(no actions)'}\n\n"
        "In one or two sentences: what happened while working on this subgoal, the key result, "
        "and whether the subgoal was met."
    )
    return [Message("system", SUMMARIZER_SYSTEM), Message("user", user)]


def parse_retrieve(action: str | None) -> list[int] | None:
    """The subgoal numbers of a `retrieve(1, 3)` action, else None."""
    match = _RETRIEVE.match(action or "")
    if not match:
        return None
    return sorted({int(n) for n in match.group(1).split(",")})


@dataclass
class Subgoal:
    """One subgoal with the turns taken under it; `summary` is set once it is completed."""

    number: int
    text: str
    started_at: int
    turns: list[Transition] = field(default_factory=list)
    summary: str | None = None
    summary_failed: bool = False


@dataclass(frozen=True)
class Retrieval:
    """What retrieve(...) did: the subgoals now shown in full, and the numbers refused."""

    shown: tuple[int, ...]
    refused: tuple[int, ...]
    message: str


@dataclass(frozen=True)
class HiAgentContext:
    """What the policy sees at one step besides the task and the current observation."""

    preamble: tuple[Transition, ...]
    completed: tuple[Subgoal, ...]
    expanded: frozenset[int]
    active: Subgoal | None

    def units(self) -> int:
        """History units a cut to fit the window may leave out, oldest first: the turns before
        the first subgoal, each completed subgoal, then the active subgoal's turns."""
        active = len(self.active.turns) if self.active is not None else 0
        return len(self.preamble) + len(self.completed) + active

    def render(self, drop: int = 0) -> str:
        """The memory without its `drop` oldest units (the active subgoal's line stays)."""
        parts = []
        preamble = self.preamble[drop:]
        drop = max(0, drop - len(self.preamble))
        completed = self.completed[drop:]
        drop = max(0, drop - len(self.completed))
        if preamble:
            parts.append("Before the first subgoal:\n" + render_transitions(preamble))
        if completed:
            lines = []
            for goal in completed:
                if goal.number in self.expanded:
                    body = render_transitions(goal.turns) or "(no actions)"
                    lines.append(f"{goal.number}. Subgoal: {goal.text} (retrieved)\n{body}")
                else:
                    lines.append(f"{goal.number}. Subgoal: {goal.text}\n   Summary: {goal.summary}")
            parts.append("Completed subgoals:\n" + "\n".join(lines))
        if self.active is not None:
            turns = render_transitions(self.active.turns[drop:]) or "(no actions yet)"
            parts.append(f"Current subgoal {self.active.number}: {self.active.text}\n{turns}")
        else:
            parts.append("No subgoal yet: name the first one.")
        return "\n\n".join(parts)


class SubgoalMemory:
    """The subgoal tree of one episode (flat, as upstream's)."""

    def __init__(self, task: str, settings: HiAgentSettings, caller: ModelCaller) -> None:
        self.task = task
        self.settings = settings
        self.caller = caller
        self.preamble: list[Transition] = []
        self.completed: list[Subgoal] = []
        self.active: Subgoal | None = None
        self.expanded: set[int] = set()
        self._retrieves_left = settings.max_retrieves_per_step

    def set_subgoal(self, text: str | None, step: int) -> Subgoal | None:
        """This step's explicit new subgoal, if the answer started one. Any text starts a new
        subgoal and folds the active one (one summary call), which is returned; an empty one
        (or None) continues the active subgoal and changes nothing."""
        text = " ".join((text or "").split())
        if not text:
            return None
        folded = self.active
        if folded is not None:
            self._fold(folded)
        self.active = Subgoal(len(self.completed) + 1, text, step)
        self.expanded = set()
        return folded

    def add(self, turn: Transition) -> None:
        """The turn this step produced, under the active subgoal."""
        (self.active.turns if self.active is not None else self.preamble).append(turn)

    def context(self) -> HiAgentContext:
        """The context for a new step (the retrieve allowance starts again)."""
        self._retrieves_left = self.settings.max_retrieves_per_step
        return self.view()

    def view(self) -> HiAgentContext:
        """The context as it stands (after retrievals within the step)."""
        return HiAgentContext(
            tuple(self.preamble), tuple(self.completed), frozenset(self.expanded), self.active
        )

    def retrieve(self, numbers: Iterable[int]) -> Retrieval:
        """Show these completed subgoals in full until the next subgoal (no action spent)."""
        wanted = sorted(set(numbers))
        if self._retrieves_left <= 0:
            limit = self.settings.max_retrieves_per_step
            return Retrieval(
                (), tuple(wanted), f"no retrievals left at this step (at most {limit})"
            )
        self._retrieves_left -= 1
        known = {goal.number for goal in self.completed}
        shown = tuple(n for n in wanted if n in known)
        refused = tuple(n for n in wanted if n not in known)
        self.expanded.update(shown)
        message = f"showing subgoal(s) {', '.join(map(str, shown))} in full" if shown else ""
        if refused:
            choices = ", ".join(str(n) for n in sorted(known)) or "none yet"
            message += ("; " if message else "") + (
                f"no completed subgoal {', '.join(map(str, refused))} (completed: {choices})"
            )
        return Retrieval(shown, refused, message)

    @property
    def retrieves_left(self) -> int:
        return self._retrieves_left

    def _fold(self, goal: Subgoal) -> None:
        if not goal.turns:
            # Nothing to summarize (upstream answers without a call too).
            goal.summary = "(no actions were taken for this subgoal)"
            self.completed.append(goal)
            return
        summary = self.caller.text(
            "summarizer",
            "summarize_subgoal",
            summary_messages(goal.text, goal.turns),
            max_tokens=self.settings.summary_tokens,
        )
        if summary is None:
            goal.summary_failed = True
            summary = goal.turns[-1].observation.strip()
        goal.summary = " ".join(summary.split())
        self.completed.append(goal)
