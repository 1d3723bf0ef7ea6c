"""Embeddings from any OpenAI-compatible endpoint, and the PACE scorer a spec names.

--embed-model tfidf                        # offline lexical scorer (default, no key)
--embed-model openai:text-embedding-3-small   # OPENAI_API_KEY; --base-url for vLLM/Ollama
--embed-model dashscope:text-embedding-v4  # DASHSCOPE_API_KEY (the paper's embedder)
"""

from __future__ import annotations

import json
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
from pos_agent.llm import (
    ModelFailure,
    ModelOptions,
    public_url,
    redact,
    url_secrets,
    warn_if_key_goes_in_clear,
)
from pos_agent.llm.backend import (
    OPENAI_DEFAULT_BASE_URL,
    BackendError,
    HttpEndpoint,
    HttpReply,
    api_endpoint,
    backoff_delay,
    error_text,
    http_endpoint,
    plausible_count,
    post_or_raise,
    prompt_bound,
    request_headers,
    require_httpx,
    retry_after_s,
)
from pos_agent.tokens import estimate_tokens

LEXICAL_SPEC = "tfidf"
EMBED_SPEC_FORMS = "tfidf, openai:MODEL or dashscope:MODEL"
# Embedding models read at most 8,192 tokens per input (text-embedding-3, text-embedding-v4);
# longer inputs are cut to this many characters (about 6,000 tokens) for the embedding only.
MAX_INPUT_CHARS = 24_000
# DashScope's text-embedding-v4 takes at most 10 inputs per request; OpenAI takes 2,048.
BATCH = 10


class OpenAIEmbedder:
    """`/embeddings` of an OpenAI-compatible server over the chat backend's HTTP client: the
    same whole-exchange deadline (`timeout_s`), reply-size cap (`max_reply_bytes`) and retries
    (timeouts, 429, 5xx, dropped connections; `max_retries` with capped, jittered backoff and a
    server's Retry-After). Keys never appear in messages or reprs."""

    def __init__(
        self,
        model: str,
        endpoint: HttpEndpoint,
        options: ModelOptions,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        full_url = endpoint.base_url or OPENAI_DEFAULT_BASE_URL
        self.spec = f"{endpoint.provider}:{model}"
        self.model = model
        self.base_url = public_url(full_url) or OPENAI_DEFAULT_BASE_URL
        self.options = options
        self.key_env = endpoint.key_env
        self._sleep = sleep
        self._rng = random.Random(options.seed)
        self._secrets = tuple(s for s in (endpoint.api_key, *url_secrets(full_url)) if s)
        try:
            self._url = api_endpoint(full_url, "embeddings", self._secrets)
        except BackendError as exc:
            raise ModelFailure("config", exc.message, model=self.spec) from None
        warn_if_key_goes_in_clear(full_url, has_key=endpoint.api_key is not None)
        self._headers = request_headers(endpoint.api_key, full_url)
        self._client = httpx.Client(follow_redirects=False)

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
        retry = 0
        while True:
            try:
                return self._exchange(batch)
            except ModelFailure as failure:
                failure.attempts = retry + 1
                raise
            except BackendError as error:
                if not error.retryable or retry >= self.options.max_retries:
                    raise ModelFailure(
                        error.kind,
                        redact(error.message, self._secrets),
                        model=self.spec,
                        attempts=retry + 1,
                    ) from None
                delay = backoff_delay(
                    retry,
                    base_s=self.options.backoff_base_s,
                    cap_s=self.options.backoff_cap_s,
                    rng=self._rng,
                )
                if error.retry_after_s is not None:
                    delay = max(delay, min(error.retry_after_s, self.options.backoff_cap_s))
                self._sleep(delay)
                retry += 1

    def _exchange(self, batch: list[str]) -> tuple[list[list[float]], int]:
        """One POST; BackendError for what a retry may fix or what the set-up must fix,
        ModelFailure("schema") for an answer that holds no usable vectors."""
        reply = post_or_raise(
            self._client,
            self._url,
            {"model": self.model, "input": batch},
            self._headers,
            timeout_s=self.options.timeout_s,
            max_bytes=self.options.max_reply_bytes,
            where=self.base_url,
            secrets=self._secrets,
        )
        if reply.oversize:
            raise ModelFailure(
                "schema",
                f"the embeddings reply was larger than the {self.options.max_reply_bytes:,}-byte "
                "limit (max_reply_bytes) and was not read further",
                model=self.spec,
            )
        if reply.status >= 300:
            raise self._status_error(reply)
        try:
            body = json.loads(reply.body.decode("utf-8", errors="replace"))
        except ValueError:
            body = None
        return _vectors_of(body, batch, self.spec, self.base_url)

    def _status_error(self, reply: HttpReply) -> BackendError | ModelFailure:
        """The failure an HTTP error status means: a BackendError says whether to retry it;
        a ModelFailure("schema") is an input the server refused, which no retry helps."""
        status = reply.status
        detail = redact(error_text(reply), self._secrets)[:300]
        where = f"{self.base_url} (HTTP {status})"
        if status in (401, 403):
            message = f"{where} rejected the API key: {detail}; set {self.key_env}"
            return BackendError("config", message, retryable=False)
        if status == 404:
            message = (
                f"{where}: embedding model {self.model!r} or endpoint not found: {detail}; "
                "check the model name and --base-url"
            )
            return BackendError("config", message, retryable=False)
        if 300 <= status < 400:
            message = f"{where} redirects elsewhere; use the final address as --base-url"
            return BackendError("config", message, retryable=False)
        if status == 408:
            return BackendError("timeout", f"{where}: {detail}", retryable=True)
        if status == 429 or status >= 500:
            return BackendError(
                "transport",
                f"{where}: {detail}",
                retryable=True,
                retry_after_s=retry_after_s(reply.headers),
            )
        # Anything else (400, 413, 422): the server refused this input. A schema failure, so
        # PACE scores the step lexically instead.
        return ModelFailure("schema", f"{where}: {detail}", model=self.spec)


def _vectors_of(
    body: Any, batch: list[str], spec: str, where: str
) -> tuple[list[list[float]], int]:
    items = body.get("data") if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise ModelFailure(
            "schema",
            f"{where} answered something that is not an embeddings list; check --base-url",
            model=spec,
        )
    data = sorted(
        (item for item in items if isinstance(item, dict)),
        key=lambda item: item.get("index", 0) if isinstance(item.get("index"), int) else 0,
    )
    vectors = [_vector(item.get("embedding")) for item in data]
    if len(vectors) != len(batch) or not all(vectors):
        raise ModelFailure(
            "schema",
            f"the embeddings endpoint answered {sum(1 for v in vectors if v)} usable vectors "
            f"for {len(batch)} inputs",
            model=spec,
        )
    usage = body.get("usage")
    sent = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    # A count that cannot be right (negative, not an integer, beyond the input) is not stored.
    bound = prompt_bound(sum(len(text.encode("utf-8", "surrogatepass")) for text in batch))
    tokens = plausible_count(sent, bound)
    if tokens is None:
        tokens = sum(estimate_tokens(text) for text in batch)
    return vectors, tokens


def _vector(raw: Any) -> list[float]:
    """The numbers of one embedding; empty when it is not a list of numbers."""
    if not isinstance(raw, list):
        return []
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw):
        return []
    return [float(x) for x in raw]


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
    try:
        require_httpx()
        endpoint = http_endpoint(provider, options)
    except BackendError as exc:
        raise ModelFailure("config", exc.message, model=spec.strip()) from None
    return OpenAIEmbedder(model.strip(), endpoint, options)


def make_scorer(
    spec: str, caller: ModelCaller, options: ModelOptions | None = None
) -> RelevanceScorer:
    """The PACE relevance scorer for `--embed-model SPEC` (tfidf: offline, no key)."""
    if spec.strip() in ("", LEXICAL_SPEC):
        return LexicalScorer()
    return EmbeddingScorer(load_embedder(spec, options), caller)
