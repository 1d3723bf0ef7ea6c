"""ACON: cumulative history compression (paper App. D.2; upstream microsoft/acon at d63f9ae).

The policy sees the task, one `<HISTORY_SUMMARY>` and the turns not yet summarized, of which the
last `keep_last_turns` (3 in the paper) are always verbatim. Before each acting call the trigger
is checked: when the previous summary plus the turns older than the last three exceed the
threshold, one compressor call gets the task, the previous summary and those aged-out turns and
writes a new summary that replaces the old one (upstream rule `reset`), so it stays cumulative.
Before the first compression the whole trajectory is kept.

Deviations from upstream: the guideline is the unoptimized one (ACON Prompt E.5) plus fixed
per-benchmark keep categories, as in the paper; no guideline optimization, distillation or
observation compression. A failed compressor call keeps the previous summary and the turns, and
the trigger fires again at the next step (upstream has no failure path).
"""

from __future__ import annotations

from dataclasses import dataclass

from pos_agent.agents.context.calls import ModelCaller
from pos_agent.agents.context.settings import AconSettings
from pos_agent.llm import Message
from pos_agent.tokens import estimate_tokens
from pos_agent.transition import Transition, render_transitions

COMPRESSOR_SYSTEM = """You keep the running summary of an agent's work on a task. You get the
task, the previous summary (if any) and the interactions since then. Write the new summary that
replaces the previous one: it must carry everything the previous summary held that still matters,
plus what the new interactions added, so that the agent can resume with no loss of information."""

COMPRESSOR_FORMAT = """Write exactly two sections:

### REASONING
Progress so far, decisions made and why, important observed outcomes, and failed attempts with
the reason they failed (so they are not repeated). Say how earlier steps shaped later ones.

### COMPLETED
The subtasks finished or outcomes reached, each with its result.

Always keep:
{categories}

Be concise, use compact structured lists for data, and return only the two sections."""


def compressor_messages(
    task: str, previous: str | None, aged: list[Transition], keep_categories: tuple[str, ...]
) -> list[Message]:
    """The one compressor call: task, previous summary, the aged-out turns, the guideline."""
    categories = "\n".join(f"- {c}" for c in keep_categories) or "- the facts the task needs"
    user = (
        f"TASK\n{task.strip()}\n\n"
        f"PREVIOUS SUMMARY\n{previous.strip() if previous else '(none yet)'}\n\n"
        f"INTERACTIONS SINCE THE PREVIOUS SUMMARY\n{render_transitions(aged)}\n\n"
        + COMPRESSOR_FORMAT.format(categories=categories)
    )
    return [Message("system", COMPRESSOR_SYSTEM), Message("user", user)]


@dataclass(frozen=True)
class Compression:
    """One compressor call, for the trace: which steps it folded and what it produced."""

    step: int
    first_folded: int
    last_folded: int
    input_tokens: int
    """Tokens of the previous summary plus the aged-out turns: what crossed the threshold."""
    summary: str | None
    """The new summary, or None when the call failed (the previous one is kept)."""

    @property
    def ok(self) -> bool:
        return self.summary is not None


@dataclass(frozen=True)
class AconContext:
    """What the policy sees at one step besides the task and the current observation."""

    summary: str | None
    turns: tuple[Transition, ...]
    compression: Compression | None
    """The compression made before this step's decision, if the trigger fired."""

    def units(self) -> int:
        """History units a cut to fit the window may leave out, oldest first: the summary,
        then each turn (`agents/fit.py`)."""
        return (self.summary is not None) + len(self.turns)

    def render(self, drop: int = 0) -> str:
        """The summary and the turns, without the `drop` oldest units."""
        parts = []
        summary = self.summary if drop == 0 else None
        turns = self.turns[max(0, drop - (self.summary is not None)) :]
        if summary is not None:
            parts.append(f"<HISTORY_SUMMARY>\n{summary}\n</HISTORY_SUMMARY>")
        if turns:
            label = "History since the summary" if self.summary is not None else "History"
            parts.append(f"{label}:\n" + render_transitions(turns))
        return "\n\n".join(parts)


class AconMemory:
    """The compressor state of one episode: the summary and the turns not yet folded into it."""

    def __init__(self, task: str, settings: AconSettings, caller: ModelCaller) -> None:
        self.task = task
        self.settings = settings
        self.caller = caller
        self.summary: str | None = None
        self.unfolded: list[Transition] = []
        self.compressions: list[Compression] = []

    def add(self, turn: Transition) -> None:
        """Record the turn a step produced."""
        self.unfolded.append(turn)

    def aged(self) -> list[Transition]:
        """The unfolded turns older than the last `keep_last_turns`."""
        keep = self.settings.keep_last_turns
        return self.unfolded[: len(self.unfolded) - keep] if keep else list(self.unfolded)

    def pending_tokens(self) -> int:
        """Tokens the trigger compares with the threshold."""
        summary = estimate_tokens(self.summary) if self.summary else 0
        return summary + sum(turn.tokens for turn in self.aged())

    def context(self, step: int) -> AconContext:
        """The context for the decision at `step`, compressing first when the trigger fires."""
        compression = None
        aged = self.aged()
        if aged and self.pending_tokens() > self.settings.threshold_tokens:
            compression = self._compress(step, aged)
        return AconContext(self.summary, tuple(self.unfolded), compression)

    def _compress(self, step: int, aged: list[Transition]) -> Compression:
        input_tokens = self.pending_tokens()
        summary = self.caller.text(
            "compressor",
            "compress",
            compressor_messages(self.task, self.summary, aged, self.settings.keep_categories),
            max_tokens=self.settings.summary_tokens,
        )
        if summary is not None:
            self.summary = summary
            self.unfolded = self.unfolded[len(aged) :]
        compression = Compression(step, aged[0].step, aged[-1].step, input_tokens, summary)
        self.compressions.append(compression)
        return compression
