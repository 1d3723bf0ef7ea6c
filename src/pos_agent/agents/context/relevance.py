"""Relevance of past chunks to the current step, for PACE.

A scorer keeps one key per chunk, made once when the chunk is added, and scores chunks against a
query text with a cosine. Two scorers:

- `LexicalScorer` ("tfidf"): a TF-IDF vector space over the chunks seen so far, the offline
  default. Our own ~60 lines over numpy rather than scikit-learn: PACE adds one chunk per step
  and scores every step, and scikit-learn's vectorizers refit the whole vocabulary on each call
  (tens of milliseconds at 200 RCA-sized chunks, against a 20 ms budget for building the whole
  context), while this keeps each chunk's term counts from when it was added and only
  re-weights them by the current document frequencies, a few vectorized operations per step.
  It also adds no dependency (numpy already comes with matplotlib).
- `EmbeddingScorer`: dense embeddings from an `Embedder` (an OpenAI-compatible embeddings
  endpoint, as the paper's text-embedding-v4), each chunk embedded once. If a request fails
  with a bad answer, that step falls back to the lexical scores, and `last_scorer` says so.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from pos_agent.agents.context.calls import ModelCaller
from pos_agent.envs import InfrastructureError
from pos_agent.llm import Completion, ModelFailure, Usage

FloatArray = npt.NDArray[np.float64]
_WORD = re.compile(r"[a-z0-9]+")


class RelevanceScorer(Protocol):
    """Keeps one key per chunk and scores chunks against a query (cosine, in [-1, 1])."""

    name: str
    last_scorer: str

    def add(self, key: int, text: str) -> None: ...

    def scores(self, query: str, keys: Sequence[int]) -> list[float]: ...


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words of two or more characters."""
    return [w for w in _WORD.findall(text.lower()) if len(w) > 1]


class LexicalScorer:
    """TF-IDF cosine: sublinear term frequency (1 + ln tf), smoothed idf ln((1+N)/(1+df)) + 1,
    both vectors L2-normalized, N = the chunks added so far."""

    name = "tfidf"

    def __init__(self) -> None:
        self.last_scorer = self.name
        self._vocabulary: dict[str, int] = {}
        self._df: list[int] = []
        self._rows: dict[int, int] = {}
        self._terms: list[npt.NDArray[np.int64]] = []
        self._weights: list[FloatArray] = []
        self._flat: tuple[npt.NDArray[np.int64], FloatArray, npt.NDArray[np.int64]] | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, key: int, text: str) -> None:
        if key in self._rows:
            raise ValueError(f"chunk {key} was already added")
        counts = Counter(words(text))
        ids = []
        for term in counts:
            index = self._vocabulary.setdefault(term, len(self._vocabulary))
            if index == len(self._df):
                self._df.append(0)
            self._df[index] += 1
            ids.append(index)
        self._rows[key] = len(self._terms)
        self._terms.append(np.array(ids, dtype=np.int64))
        self._weights.append(np.array([1.0 + math.log(c) for c in counts.values()]))
        self._flat = None

    def scores(self, query: str, keys: Sequence[int]) -> list[float]:
        self.last_scorer = self.name
        if not keys:
            return []
        rows = [self._rows[key] for key in keys]
        terms, weights, owner = self._flatten()
        n = len(self._terms)
        idf = np.log((1.0 + n) / (1.0 + np.array(self._df, dtype=np.float64))) + 1.0
        weighted = weights * idf[terms]
        norms = np.sqrt(np.bincount(owner, weighted * weighted, minlength=n))
        query_vector = np.zeros(len(self._vocabulary))
        unseen_norm = 0.0
        for term, count in Counter(words(query)).items():
            tf = 1.0 + math.log(count)
            index = self._vocabulary.get(term)
            if index is None:
                # A word no chunk has: it still counts in the query's norm (df = 0).
                unseen_norm += (tf * (math.log(1.0 + n) + 1.0)) ** 2
            else:
                query_vector[index] = tf * idf[index]
        query_norm = math.sqrt(float(query_vector @ query_vector) + unseen_norm)
        if query_norm == 0.0:
            return [0.0] * len(rows)
        dots = np.bincount(owner, weighted * query_vector[terms], minlength=n)
        out = []
        for row in rows:
            norm = float(norms[row])
            out.append(float(dots[row]) / (norm * query_norm) if norm > 0 else 0.0)
        return out

    def _flatten(self) -> tuple[npt.NDArray[np.int64], FloatArray, npt.NDArray[np.int64]]:
        if self._flat is None:
            sizes = [len(t) for t in self._terms]
            self._flat = (
                np.concatenate(self._terms) if self._terms else np.zeros(0, dtype=np.int64),
                np.concatenate(self._weights) if self._weights else np.zeros(0),
                np.repeat(np.arange(len(self._terms), dtype=np.int64), sizes),
            )
        return self._flat


@dataclass(frozen=True)
class Embeddings:
    """One embeddings request: a vector per input text, and what it cost."""

    vectors: list[list[float]]
    prompt_tokens: int
    latency_s: float
    model: str


class Embedder(Protocol):
    """An embeddings endpoint. `embed` raises ModelFailure when it cannot answer."""

    spec: str

    def embed(self, texts: Sequence[str]) -> Embeddings: ...


class EmbeddingScorer:
    """Cosine between dense embeddings; each chunk is embedded once, on the first `scores`
    after it was added (together with the query, so one request per step).

    Every request is recorded in `caller` under the ledger role `embedder`. An unreachable
    endpoint raises InfrastructureError (the case is retried, not scored); a missing key or
    model raises the ModelFailure (the run is misconfigured); any other failure scores that
    step lexically.
    """

    def __init__(self, embedder: Embedder, caller: ModelCaller) -> None:
        self.embedder = embedder
        self.caller = caller
        self.name = f"embedding:{embedder.spec}"
        self.last_scorer = self.name
        self.fallback = LexicalScorer()
        self._vectors: dict[int, FloatArray] = {}
        self._pending: dict[int, str] = {}

    def add(self, key: int, text: str) -> None:
        self.fallback.add(key, text)
        self._pending[key] = text

    def scores(self, query: str, keys: Sequence[int]) -> list[float]:
        if not keys:
            self.last_scorer = self.name
            return []
        pending = [k for k in keys if k in self._pending]
        texts = [self._pending[k] for k in pending] + [query]
        try:
            vectors = self._embed(texts)
        except ModelFailure as failure:
            if failure.unavailable:
                raise InfrastructureError(
                    f"the embedding endpoint is unavailable: {failure}"
                ) from None
            if failure.kind in ("config", "context_overflow"):
                raise
            self.last_scorer = f"{self.fallback.name} (fallback: {failure.kind})"
            return self.fallback.scores(query, keys)
        for key, vector in zip(pending, vectors[:-1], strict=True):
            self._vectors[key] = vector
            del self._pending[key]
        query_vector = vectors[-1]
        self.last_scorer = self.name
        return [float(self._vectors[k] @ query_vector) for k in keys]

    def _embed(self, texts: list[str]) -> list[FloatArray]:
        try:
            answer = self.embedder.embed(texts)
        except ModelFailure as failure:
            self.caller.record("embedder", "embed", failure)
            raise
        usage = Usage(answer.prompt_tokens, 0)
        self.caller.record(
            "embedder",
            "embed",
            Completion("", None, usage, answer.latency_s, False, 0, answer.model),
        )
        vectors = [np.asarray(v, dtype=np.float64) for v in answer.vectors]
        if len(vectors) != len(texts) or len({v.shape for v in vectors}) != 1:
            raise ModelFailure(
                "schema",
                f"the embeddings endpoint returned {len(vectors)} vectors of differing or "
                f"wrong shape for {len(texts)} texts",
                model=answer.model,
            )
        normalized = []
        for vector in vectors:
            norm = float(np.linalg.norm(vector))
            if vector.ndim != 1 or not math.isfinite(norm) or norm == 0.0:
                raise ModelFailure("schema", "an embedding was empty, zero or not finite")
            normalized.append(vector / norm)
        if self._vectors:
            width = next(iter(self._vectors.values())).shape
            if normalized[0].shape != width:
                raise ModelFailure("schema", "the embedding size changed during the episode")
        return normalized
