"""PACE: each past step kept at the granularity its relevance earns (paper App. D.2; PACE paper
Eqs. 1-8 and Algorithm 1; no public code, so this follows the equations).

One chunk per step (action + observation) exists at four levels: full, a detailed summary, a
brief one (1-2 sentences) and a placeholder that says how to read it (`glimpse(i)`). The two
most recent chunks are always full. Every older chunk i is scored against the query
q = task + those two chunks: s_i = cos(q, k_i), w_i = softmax(s / tau), w~_i = M * w_i over the
M older chunks (so 1 is the average). Pressure P = max(t / T_max, |previous context| / 128K)
raises the thresholds (alpha, beta, gamma) = (0.4, 0.8, 1.5) * (1 + 0.5 P):
w~ > gamma is full, beta < w~ <= gamma detailed, alpha < w~ <= beta brief, else placeholder.
Chunks stay in chronological order.

Deviations: the backbone writes both summaries of a chunk synchronously (two calls, once, when
the chunk leaves the recent window) instead of in the background, so runs are reproducible; a
summary call that fails leaves a marked extract of the observation in its place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pos_agent.agents.context.calls import ModelCaller
from pos_agent.agents.context.relevance import RelevanceScorer
from pos_agent.agents.context.settings import PaceSettings
from pos_agent.llm import Message, loads_bounded
from pos_agent.tokens import estimate_tokens
from pos_agent.transition import Transition

Level = Literal["full", "detailed", "brief", "placeholder"]
LEVELS: tuple[Level, ...] = ("full", "detailed", "brief", "placeholder")
_GLIMPSE = re.compile(r"^\s*glimpse\s*\(\s*(\d+)\s*\)\s*$", re.IGNORECASE)

# -- the math (pure) ------------------------------------------------------------------------------


def relative_weights(scores: Sequence[float], tau: float) -> list[float]:
    """w~_i = M * softmax(s / tau)_i: 1 for every chunk when all scores are equal."""
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp((s - top) / tau) for s in scores]
    total = sum(exps)
    return [len(scores) * e / total for e in exps]


def pressure(step: int, t_max: int, previous_tokens: int, window_tokens: int) -> float:
    """P = max(t / T_max, |previous context| / window)."""
    return max(step / max(t_max, 1), previous_tokens / max(window_tokens, 1))


def thresholds(
    base: tuple[float, float, float], gain: float, pressure_value: float
) -> tuple[float, float, float]:
    """(alpha, beta, gamma) * (1 + gain * P)."""
    scale = 1.0 + gain * pressure_value
    alpha, beta, gamma = base
    return alpha * scale, beta * scale, gamma * scale


def level_of(weight: float, bounds: tuple[float, float, float]) -> Level:
    alpha, beta, gamma = bounds
    if weight > gamma:
        return "full"
    if weight > beta:
        return "detailed"
    if weight > alpha:
        return "brief"
    return "placeholder"


# -- chunks ---------------------------------------------------------------------------------------

DETAILED_ASK = (
    "Summarize this step of the agent in one short paragraph: what it did, what the observation "
    "showed (keep names, ids, numbers and error messages that may matter later) and the outcome."
)
BRIEF_ASK = "Summarize this step of the agent in one or two sentences: what it did and the outcome."
SUMMARIZER_SYSTEM = (
    "You summarize one step of an agent working on a task. Answer with the summary only."
)


def summary_messages(task: str, turn: Transition, ask: str) -> list[Message]:
    user = f"Task: {task.strip()}\n\nStep:\n{turn.render()}\n\n{ask}"
    return [Message("system", SUMMARIZER_SYSTEM), Message("user", user)]


def action_label(action: str) -> str:
    """A short name for a step: the tool(s) of a tool call, else the action text."""
    try:
        parsed = loads_bounded(action)
    except ValueError:
        parsed = None
    calls = parsed if isinstance(parsed, list) else [parsed]
    tools = [str(c["tool"]) for c in calls if isinstance(c, dict) and "tool" in c]
    if tools:
        return ", ".join(tools)
    text = " ".join(action.split())
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class Chunk:
    """One step at every level; `detailed` and `brief` are written once, when it ages."""

    id: int
    turn: Transition
    detailed: str | None = None
    brief: str | None = None
    summary_failures: int = 0

    def render(self, level: Level) -> str:
        turn = self.turn
        if level == "full":
            return f"[chunk {self.id}] > {turn.action}\n{turn.observation.strip()}"
        if level == "detailed":
            return f"[chunk {self.id}, summary] > {turn.action}\n{self.detailed}"
        if level == "brief":
            return f"[chunk {self.id}, brief] > {turn.action}: {self.brief}"
        return (
            f"[chunk {self.id}: {action_label(turn.action)} - omitted; glimpse({self.id}) to read]"
        )


def _extract(turn: Transition, limit: int) -> str:
    text = " ".join(turn.observation.split())
    clipped = text if len(text) <= limit else text[:limit].rstrip() + " ..."
    return f"(no summary; start of the observation) {clipped}"


@dataclass(frozen=True)
class ChunkView:
    """How one chunk appears at one step, with the numbers that put it there (for the trace)."""

    id: int
    level: Level
    score: float | None
    """Cosine with the query; None for the recent chunks, which are not scored."""
    weight: float | None
    """Relative weight M * softmax(s / tau)."""


@dataclass(frozen=True)
class PaceContext:
    """The chunk block of one step, in chronological order."""

    step: int
    views: tuple[ChunkView, ...]
    pressure: float
    thresholds: tuple[float, float, float]
    scorer: str
    """Which scorer ran this step (tfidf, embedding:..., or tfidf after an embedding failure)."""
    chunks: dict[int, Chunk] = field(repr=False)

    def units(self) -> int:
        """History units a cut to fit the window may leave out: the chunks, oldest first."""
        return len(self.views)

    def render(self, glimpsed: Sequence[int] = (), drop: int = 0) -> str:
        """The block without its `drop` oldest chunks; glimpsed chunks are shown in full where
        they stand."""
        shown = set(glimpsed)
        lines = [
            self.chunks[v.id].render("full" if v.id in shown else v.level)
            for v in self.views[drop:]
        ]
        return "\n\n".join(lines)

    def levels(self) -> dict[int, Level]:
        return {v.id: v.level for v in self.views}


@dataclass(frozen=True)
class Glimpse:
    """The answer to glimpse(i): the chunk in full, or why not."""

    chunk_id: int
    text: str | None
    refusal: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None


def parse_glimpse(action: str | None) -> int | None:
    """The chunk id of a `glimpse(i)` action, else None."""
    match = _GLIMPSE.match(action or "")
    return int(match.group(1)) if match else None


class PaceMemory:
    """The chunks of one episode and the per-step context PACE builds from them."""

    def __init__(
        self,
        task: str,
        settings: PaceSettings,
        caller: ModelCaller,
        scorer: RelevanceScorer,
        *,
        step_budget: int,
    ) -> None:
        self.task = task
        self.settings = settings
        self.caller = caller
        self.scorer = scorer
        self.t_max = settings.t_max or step_budget
        self.chunks: dict[int, Chunk] = {}
        self.order: list[int] = []
        self.previous_tokens = 0
        self._glimpses_left = settings.max_glimpses_per_step

    def add(self, turn: Transition) -> None:
        """One new chunk; its key is computed now, once."""
        if turn.step in self.chunks:
            raise ValueError(f"chunk {turn.step} already exists")
        self.chunks[turn.step] = Chunk(turn.step, turn)
        self.order.append(turn.step)
        self.scorer.add(turn.step, turn.render())

    def context(self, step: int) -> PaceContext:
        """The chunk block for the decision at `step` (t = `step` actions taken so far)."""
        self._glimpses_left = self.settings.max_glimpses_per_step
        split = max(len(self.order) - self.settings.recent_full, 0)
        older, recent = self.order[:split], self.order[split:]
        for chunk_id in older:
            self._summarize(self.chunks[chunk_id])
        p = pressure(step, self.t_max, self.previous_tokens, self.settings.context_window_tokens)
        bounds = thresholds(self.settings.thresholds, self.settings.pressure_gain, p)
        views: list[ChunkView] = []
        if older:
            query = "\n\n".join([self.task, *(self.chunks[i].turn.render() for i in recent)])
            scores = self.scorer.scores(query, older)
            weights = relative_weights(scores, self.settings.tau)
            views = [
                ChunkView(i, level_of(w, bounds), s, w)
                for i, s, w in zip(older, scores, weights, strict=True)
            ]
        views += [ChunkView(i, "full", None, None) for i in recent]
        built = PaceContext(step, tuple(views), p, bounds, self.scorer.last_scorer, self.chunks)
        self.previous_tokens = estimate_tokens(self.task) + estimate_tokens(built.render())
        return built

    def glimpse(self, chunk_id: int) -> Glimpse:
        """Chunk `chunk_id` in full (at most `max_glimpses_per_step` per step; no action spent)."""
        if self._glimpses_left <= 0:
            limit = self.settings.max_glimpses_per_step
            return Glimpse(chunk_id, None, f"no glimpses left at this step (at most {limit})")
        self._glimpses_left -= 1
        chunk = self.chunks.get(chunk_id)
        if chunk is None:
            known = f"{self.order[0]}..{self.order[-1]}" if self.order else "none yet"
            return Glimpse(chunk_id, None, f"there is no chunk {chunk_id} (chunks: {known})")
        return Glimpse(chunk_id, chunk.render("full"))

    @property
    def glimpses_left(self) -> int:
        return self._glimpses_left

    def _summarize(self, chunk: Chunk) -> None:
        if chunk.detailed is None:
            chunk.detailed = self._write(
                chunk, DETAILED_ASK, "summarize_detailed", self.settings.detailed_tokens
            )
        if chunk.brief is None:
            chunk.brief = self._write(
                chunk, BRIEF_ASK, "summarize_brief", self.settings.brief_tokens
            )

    def _write(self, chunk: Chunk, ask: str, purpose: str, max_tokens: int) -> str:
        text = self.caller.text(
            "summarizer",
            purpose,
            summary_messages(self.task, chunk.turn, ask),
            max_tokens=max_tokens,
        )
        if text is None:
            chunk.summary_failures += 1
            return _extract(chunk.turn, max_tokens * 4)
        return " ".join(text.split()) if purpose == "summarize_brief" else text
