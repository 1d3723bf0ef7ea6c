"""Embeddings from any OpenAI-compatible endpoint, and the PACE scorer a spec names.

--embed-model tfidf                        # offline lexical scorer (default, no key)
--embed-model openai:text-embedding-3-small   # OPENAI_API_KEY; --base-url for vLLM/Ollama
--embed-model dashscope:text-embedding-v4  # DASHSCOPE_API_KEY (the paper's embedder)
"""

from __future__ import annotations

import importlib.util
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from pos_agent.agents.context.calls import ModelCaller
from pos_agent.agents.context.relevance import (
    Embedder,
    Embeddings,
    EmbeddingScorer,
    LexicalScorer,
    RelevanceScorer,
)
from pos_agent.agents.context.tokens import count_tokens
from pos_agent.llm import ModelFailure, ModelOptions
from pos_agent.llm._options import DASHSCOPE_BASE_URL, secret_value
from pos_agent.llm._secrets import public_url, redact
from pos_agent.llm.backend import backoff_delay, plausible_count, prompt_bound

LEXICAL_SPEC = "tfidf"
EMBED_SPEC_FORMS = "tfidf, openai:MODEL or dashscope:MODEL"
# Embedding models read at most 8,192 tokens per input (text-embedding-3, text-embedding-v4);
# longer inputs are cut to this many characters (about 6,000 tokens) for the embedding only.
MAX_INPUT_CHARS = 24_000
# DashScope's text-embedding-v4 takes at most 10 inputs per request; OpenAI takes 2,048.
BATCH = 10


class OpenAIEmbedder:
    """`/embeddings` of an OpenAI-compatible server through the official client, with retries
    on timeouts, 429 and 5xx. Keys never appear in messages or reprs."""

    def __init__(
        self,
        provider: str,
        model: str,
        *,
        base_url: str | None,
        api_key: str | None,
        options: ModelOptions,
        key_env: str,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import openai

        self.spec = f"{provider}:{model}"
        self.model = model
        self.base_url = public_url(base_url) or "https://api.openai.com/v1"
        self.options = options
        self.key_env = key_env
        self._sleep = sleep
        self._rng = random.Random(options.seed)
        self._secrets = (api_key,)
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "no-key-set",
            max_retries=0,
            timeout=options.timeout_s,
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(spec={self.spec!r}, base_url={self.base_url!r})"

    def embed(self, texts: Sequence[str]) -> Embeddings:
        started = time.perf_counter()
        vectors: list[list[float]] = []
        tokens = 0
        for first in range(0, len(texts), BATCH):
            batch = [t[:MAX_INPUT_CHARS] or " " for t in texts[first : first + BATCH]]
            got, spent = self._request(batch)
            vectors.extend(got)
            tokens += spent
        return Embeddings(vectors, tokens, time.perf_counter() - started, self.spec)

    def _request(self, batch: list[str]) -> tuple[list[list[float]], int]:
        import openai

        retry = 0
        while True:
            try:
                response = self._client.embeddings.create(model=self.model, input=batch)
                return _vectors_of(response, batch, self.spec)
            except openai.APIStatusError as exc:
                failure, transient = self._status_failure(exc)
            except openai.APITimeoutError:
                where, limit = self.base_url, self.options.timeout_s
                failure, transient = (
                    ModelFailure("timeout", f"no answer from {where} within {limit:g}s"),
                    True,
                )
            except openai.APIConnectionError as exc:
                failure = ModelFailure(
                    "transport", self._clean(f"cannot reach {self.base_url}: {exc}")
                )
                transient = True
            except openai.OpenAIError as exc:
                failure = ModelFailure("transport", self._clean(f"{type(exc).__name__}: {exc}"))
                transient = False
            if not transient or retry >= self.options.max_retries:
                failure.model = self.spec
                failure.attempts = retry + 1
                raise failure
            delay = backoff_delay(
                retry,
                base_s=self.options.backoff_base_s,
                cap_s=self.options.backoff_cap_s,
                rng=self._rng,
            )
            self._sleep(delay)
            retry += 1

    def _status_failure(self, exc: Any) -> tuple[ModelFailure, bool]:
        """The failure an HTTP error status means, and whether to retry it."""
        status = int(exc.status_code)
        detail = self._clean(str(getattr(exc, "message", "") or exc))[:300]
        where = f"{self.base_url} (HTTP {status})"
        if status in (401, 403):
            return ModelFailure(
                "config", f"{where} rejected the API key: {detail}; set {self.key_env}"
            ), False
        if status == 404:
            message = (
                f"{where}: embedding model {self.model!r} or endpoint not found: {detail}; "
                "check the model name and --base-url"
            )
            return ModelFailure("config", message), False
        if status == 408:
            return ModelFailure("timeout", f"{where}: {detail}"), True
        if status == 429 or status >= 500:
            return ModelFailure("transport", f"{where}: {detail}"), True
        # Anything else (400, 413, 422): the server refused this input; no retry helps.
        return ModelFailure("schema", f"{where}: {detail}"), False

    def _clean(self, text: str) -> str:
        return redact(text, self._secrets)


def _vectors_of(response: Any, batch: list[str], spec: str) -> tuple[list[list[float]], int]:
    data = sorted(getattr(response, "data", None) or [], key=lambda d: getattr(d, "index", 0))
    vectors = [list(getattr(item, "embedding", None) or []) for item in data]
    if len(vectors) != len(batch) or not all(vectors):
        raise ModelFailure(
            "schema",
            f"the embeddings endpoint answered {len(vectors)} vectors for {len(batch)} inputs",
            model=spec,
        )
    usage = getattr(response, "usage", None)
    sent = getattr(usage, "prompt_tokens", None) if usage is not None else None
    # A count that cannot be right (negative, not an integer, beyond the input) is not stored.
    bound = prompt_bound(sum(len(text.encode("utf-8", "surrogatepass")) for text in batch))
    tokens = plausible_count(sent, bound)
    if tokens is None:
        tokens = sum(count_tokens(text) for text in batch)
    return vectors, tokens


def check_embed_spec(spec: str) -> str:
    """The spec, stripped, when it has one of the accepted forms; ValueError says which they
    are (the key and the endpoint are checked when a PACE case starts)."""
    text = spec.strip()
    if text in ("", LEXICAL_SPEC):
        return LEXICAL_SPEC
    provider, _, model = text.partition(":")
    if provider not in ("openai", "dashscope") or not model.strip():
        raise ValueError(f"unknown embedding spec {spec!r}; use {EMBED_SPEC_FORMS}")
    return text


def load_embedder(spec: str, options: ModelOptions | None = None) -> Embedder:
    """The embeddings endpoint an `openai:` or `dashscope:` spec names; raises
    ModelFailure(kind="config") with what to do when it cannot be set up."""
    options = options or ModelOptions()
    provider, _, model = spec.strip().partition(":")
    if provider not in ("openai", "dashscope") or not model.strip():
        raise ModelFailure("config", f"unknown embedding spec {spec!r}; use {EMBED_SPEC_FORMS}")
    if importlib.util.find_spec("openai") is None:
        raise ModelFailure(
            "config",
            "the openai package is not installed; install the openai extra: "
            "`uv sync --extra openai` (or pip install 'pos-agent[openai]')",
        )
    base_url: str | None
    if provider == "dashscope":
        key_env = "DASHSCOPE_API_KEY"
        base_url = options.base_url or os.environ.get("DASHSCOPE_BASE_URL") or DASHSCOPE_BASE_URL
    else:
        key_env = "OPENAI_API_KEY"
        base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = secret_value(options.api_key) or os.environ.get(key_env) or None
    if api_key is None and (provider == "dashscope" or base_url is None):
        raise ModelFailure(
            "config",
            f"no API key for the {provider} embeddings endpoint: set {key_env}"
            + (", or give --base-url for a server that needs none" if provider == "openai" else ""),
        )
    return OpenAIEmbedder(
        provider,
        model.strip(),
        base_url=base_url,
        api_key=api_key,
        options=options,
        key_env=key_env,
    )


def make_scorer(
    spec: str, caller: ModelCaller, options: ModelOptions | None = None
) -> RelevanceScorer:
    """The PACE relevance scorer for `--embed-model SPEC` (tfidf: offline, no key)."""
    if spec.strip() in ("", LEXICAL_SPEC):
        return LexicalScorer()
    return EmbeddingScorer(load_embedder(spec, options), caller)
