"""PACE: levels from relative weights, thresholds that move with pressure, the two newest chunks
full and chronological order, summaries written once, glimpses capped and free of budget, and the
relevance scorers (TF-IDF against a plain reference, embeddings through a fake endpoint)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import pytest

from agent_fixtures import KitchenEnv
from context_fixtures import RoleScript, numbered, user_text
from pos_agent.agents.context import (
    Embeddings,
    EmbeddingScorer,
    LexicalScorer,
    ModelCaller,
    PaceMemory,
    PaceSettings,
    RelevanceScorer,
    decide_with_lookups,
    pace_resolver,
)
from pos_agent.agents.context.pace import (
    level_of,
    parse_glimpse,
    pressure,
    relative_weights,
    thresholds,
)
from pos_agent.agents.context.relevance import words
from pos_agent.envs import InfrastructureError
from pos_agent.llm import ModelFailure
from pos_agent.transition import Transition

TASK = "heat some mug and put it in cabinet"


class FixedScorer:
    """Scores set by the test; records each query."""

    name = "fixed"

    def __init__(self, scores: dict[int, float]) -> None:
        self.last_scorer = self.name
        self.table = scores
        self.added: list[int] = []
        self.queries: list[str] = []

    def add(self, key: int, text: str) -> None:
        self.added.append(key)

    def scores(self, query: str, keys: Sequence[int]) -> list[float]:
        self.queries.append(query)
        return [self.table.get(k, 0.0) for k in keys]


def score_for(weight: float) -> float:
    """A score whose exp(s / tau) is `weight` (tau = 0.3), so targets summing to M come out as
    exactly those relative weights."""
    return 0.3 * math.log(weight)


def summaries() -> RoleScript:
    return RoleScript(
        {
            "summarizer/summarize_detailed": numbered("detailed"),
            "summarizer/summarize_brief": numbered("brief"),
        }
    )


def pace(scorer: RelevanceScorer, script: RoleScript, budget: int = 10) -> PaceMemory:
    return PaceMemory(TASK, PaceSettings(), ModelCaller(script.model()), scorer, step_budget=budget)


def turn(step: int) -> Transition:
    return Transition(
        step, f"go to place {step}", f"You arrive at place {step}. You see thing {step}."
    )


# -- the math -----------------------------------------------------------------------------------


def test_relative_weights_average_one_and_follow_the_scores() -> None:
    assert relative_weights([0.2, 0.2, 0.2], 0.3) == pytest.approx([1.0, 1.0, 1.0])
    weights = relative_weights([0.9, 0.5, 0.1], 0.3)
    assert sum(weights) == pytest.approx(3.0)
    assert weights[0] > weights[1] > weights[2]
    assert weights[0] / weights[1] == pytest.approx(math.exp(0.4 / 0.3))
    assert relative_weights([], 0.3) == []


def test_thresholds_move_with_pressure() -> None:
    base = (0.4, 0.8, 1.5)
    assert thresholds(base, 0.5, 0.0) == pytest.approx(base)
    assert thresholds(base, 0.5, 1.0) == pytest.approx((0.6, 1.2, 2.25))
    assert thresholds(base, 0.5, 0.4) == pytest.approx((0.48, 0.96, 1.8))
    # P = max(t / T_max, |previous context| / 128K)
    assert pressure(5, 50, 0, 128_000) == pytest.approx(0.1)
    assert pressure(5, 50, 64_000, 128_000) == pytest.approx(0.5)
    assert level_of(1.6, base) == "full"
    assert level_of(1.5, base) == "detailed"
    assert level_of(0.8, base) == "brief"
    assert level_of(0.4, base) == "placeholder"


# -- the memory ---------------------------------------------------------------------------------


def test_each_chunk_lands_at_the_level_its_weight_dictates_and_moves_with_pressure() -> None:
    targets = {1: 2.0, 2: 1.1, 3: 0.7, 4: 0.2}  # sum 4 = M: the relative weights themselves
    scorer = FixedScorer({k: score_for(w) for k, w in targets.items()})
    memory = pace(scorer, summaries(), budget=10)
    for step in range(1, 7):
        memory.add(turn(step))

    calm = memory.context(0)  # t = 0, nothing built before: P = 0
    assert calm.pressure == pytest.approx(0.0)
    assert [v.weight for v in calm.views[:4]] == pytest.approx([2.0, 1.1, 0.7, 0.2])
    assert calm.levels() == {
        1: "full",
        2: "detailed",
        3: "brief",
        4: "placeholder",
        5: "full",
        6: "full",
    }
    pressed = memory.context(10)  # t = T_max: P = 1, thresholds x 1.5
    assert pressed.pressure == pytest.approx(1.0)
    assert pressed.thresholds == pytest.approx((0.6, 1.2, 2.25))
    assert pressed.levels() == {
        1: "detailed",
        2: "brief",
        3: "brief",
        4: "placeholder",
        5: "full",
        6: "full",
    }
    text = calm.render()
    assert "You arrive at place 1." in text  # full
    assert "[chunk 2, summary] > go to place 2\ndetailed" in text
    assert "[chunk 3, brief] > go to place 3: brief" in text
    assert "[chunk 4: go to place 4 - omitted; glimpse(4) to read]" in text
    assert "You arrive at place 4." not in text


def test_the_two_newest_chunks_are_full_and_order_stays_chronological() -> None:
    # The newest chunks score lowest; they are still full, and nothing is reordered by score.
    scorer = FixedScorer({1: 0.9, 2: 0.1, 3: 0.8, 4: -0.5, 5: -0.9, 6: -0.9})
    memory = pace(scorer, summaries())
    for step in range(1, 7):
        memory.add(turn(step))
        view = memory.context(step)
        assert [v.id for v in view.views] == list(range(1, step + 1))
        assert all(v.level == "full" and v.weight is None for v in view.views[-2:])
    query = scorer.queries[-1]
    assert query.startswith(TASK)
    assert "place 5" in query and "place 6" in query and "place 4" not in query
    text = view.render()
    positions = [text.index(f"chunk {i}") for i in range(1, 7)]
    assert positions == sorted(positions)


def test_summaries_are_written_once_per_chunk_when_it_leaves_the_recent_window() -> None:
    script = summaries()
    memory = pace(FixedScorer({}), script)
    for step in range(1, 6):
        memory.add(turn(step))
        memory.context(step)
    # Chunks 1-3 have aged (4 and 5 are the recent two): two calls each, never repeated.
    assert len(script.of("summarizer", "summarize_detailed")) == 3
    assert len(script.of("summarizer", "summarize_brief")) == 3
    memory.context(6)
    assert len(script.calls) == 6
    assert "You arrive at place 1." in user_text(script.calls[0])
    assert memory.chunks[1].detailed == "detailed 1" and memory.chunks[1].brief == "brief 1"
    assert memory.chunks[4].detailed is None


def test_a_failed_summary_leaves_a_marked_extract() -> None:
    script = RoleScript({"summarizer": lambda request: ""})
    memory = pace(FixedScorer({}), script)
    for step in range(1, 4):
        memory.add(turn(step))
    memory.context(3)
    chunk = memory.chunks[1]
    assert chunk.summary_failures == 2
    assert chunk.detailed is not None and chunk.detailed.startswith("(no summary;")
    assert "place 1" in chunk.detailed


def test_at_most_three_glimpses_per_step_and_a_glimpse_spends_no_action() -> None:
    script = summaries()
    memory = pace(FixedScorer({k: -1.0 for k in range(1, 9)}), script)
    env = KitchenEnv(max_steps=5)
    env.reset()
    for step in range(1, 7):
        memory.add(turn(step))
    view = memory.context(1)
    assert view.levels()[1] != "full"

    answers = iter(["glimpse(1)", "glimpse(2)", "glimpse(99)", "glimpse(3)", "go to sink 1"])
    shown: list[str] = []
    glimpsed: list[int] = []

    def ask(lookups: object) -> str:
        shown.append(view.render(glimpsed))
        return next(answers)

    action, lookups = decide_with_lookups(
        ask, pace_resolver(memory, glimpsed), memory.settings.max_glimpses_per_step
    )
    # Three glimpses allowed (the unknown id counts); a fourth is refused and ends the step
    # without an action (the harness then falls back).
    assert action is None
    assert [lk.ok for lk in lookups] == [True, True, False, False]
    assert "no chunk 99" in lookups[2].note and "no glimpses left" in lookups[3].note
    assert glimpsed == [1, 2]
    assert "You arrive at place 1." in shown[1] and "You arrive at place 2." in shown[2]
    assert env.steps_used == 0  # glimpses never reach the environment

    # Next step: two glimpses, then an action, which is the only thing the environment sees.
    view = memory.context(2)
    glimpsed.clear()
    answers = iter(["glimpse(1)", "glimpse(3)", "go to sink 1"])
    action, lookups = decide_with_lookups(
        ask, pace_resolver(memory, glimpsed), memory.settings.max_glimpses_per_step
    )
    assert action == "go to sink 1" and len(lookups) == 2
    env.step(action)
    assert env.steps_used == 1
    assert memory.glimpses_left == 1

    memory.context(3)  # a new step: the allowance is back
    assert memory.glimpses_left == 3 and memory.glimpse(3).ok
    assert parse_glimpse(" Glimpse( 12 ) ") == 12 and parse_glimpse("go to glimpse") is None


# -- relevance ----------------------------------------------------------------------------------


def reference_tfidf(docs: list[str], query: str) -> list[float]:
    """TF-IDF cosine written out plainly, to check the vectorized scorer against."""
    n = len(docs)
    counts = [Counter(words(d)) for d in docs]
    df = Counter(term for c in counts for term in c)

    def vector(c: Counter[str]) -> dict[str, float]:
        return {t: (1 + math.log(k)) * (math.log((1 + n) / (1 + df[t])) + 1) for t, k in c.items()}

    q = vector(Counter(words(query)))
    q_norm = math.sqrt(sum(v * v for v in q.values()))
    out = []
    for c in counts:
        d = vector(c)
        norm = math.sqrt(sum(v * v for v in d.values()))
        out.append(sum(v * q.get(t, 0.0) for t, v in d.items()) / (norm * q_norm))
    return out


def test_the_lexical_scorer_is_tfidf_cosine_and_ranks_by_shared_rare_words() -> None:
    docs = [
        "checkout-service pod checkout-7f latency p99 rose to 2300 ms",
        "frontend logs show 503 errors calling checkout service",
        "node-2 cpu usage normal memory normal",
        "cartservice redis connection refused errors in logs",
    ]
    scorer = LexicalScorer()
    for key, doc in enumerate(docs):
        scorer.add(key, doc)
    query = "why is checkout latency high on the checkout pod"
    got = scorer.scores(query, [0, 1, 2, 3])
    assert got == pytest.approx(reference_tfidf(docs, query))
    assert got[0] > got[1] > got[3] and got[2] == 0.0
    assert scorer.scores("zebra", [0, 1]) == [0.0, 0.0]
    scorer.add(4, "checkout latency again")  # a new chunk re-weights the old ones
    assert scorer.scores(query, [0])[0] == pytest.approx(
        reference_tfidf([*docs, "checkout latency again"], query)[0]
    )
    with pytest.raises(ValueError, match="already"):
        scorer.add(4, "twice")


class FakeEmbedder:
    """Embeds by counting three marker words; `broken` answers vectors of the wrong size."""

    spec = "fake:embed"

    def __init__(self) -> None:
        self.requests: list[list[str]] = []
        self.broken = False
        self.down = False

    def embed(self, texts: Sequence[str]) -> Embeddings:
        if self.down:
            raise ModelFailure("transport", "connection refused")
        self.requests.append(list(texts))
        vectors = [
            [float(t.count("mug")), float(t.count("cabinet")), float(t.count("sink")) + 0.01]
            for t in texts
        ]
        if self.broken:
            vectors = vectors[:-1]
        return Embeddings(vectors, 7 * len(texts), 0.01, self.spec)


def test_embeddings_are_made_once_per_chunk_in_one_request_per_step_and_recorded() -> None:
    embedder = FakeEmbedder()
    caller = ModelCaller(summaries().model())
    scorer = EmbeddingScorer(embedder, caller)
    scorer.add(1, "a mug on the sink")
    scorer.add(2, "the cabinet is closed")
    first = scorer.scores("find the mug", [1, 2])
    assert first[0] > first[1]
    scorer.add(3, "another mug")
    scorer.scores("find the mug", [1, 2, 3])
    assert embedder.requests == [
        ["a mug on the sink", "the cabinet is closed", "find the mug"],
        ["another mug", "find the mug"],
    ]
    assert [(c.role, c.prompt_tokens) for c in caller.calls] == [("embedder", 21), ("embedder", 14)]
    assert scorer.last_scorer == "embedding:fake:embed"

    embedder.broken = True  # a bad answer: this step is scored lexically, and says so
    scorer.add(4, "mug mug")
    lexical = scorer.scores("mug", [1, 4])
    assert scorer.last_scorer.startswith("tfidf (fallback")
    assert lexical == pytest.approx(scorer.fallback.scores("mug", [1, 4]))

    embedder.down = True
    with pytest.raises(InfrastructureError, match="embedding"):
        scorer.scores("mug", [1])
