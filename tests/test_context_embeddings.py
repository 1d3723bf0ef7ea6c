"""The PACE embeddings endpoint against an in-process OpenAI-compatible server on 127.0.0.1:
batching, usage, retries on 429, a rejected key, bad answers, and the scorer a spec names."""

from __future__ import annotations

import json
import sys
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from pos_agent.agents.context import (
    EmbeddingScorer,
    LexicalScorer,
    ModelCaller,
    load_embedder,
    make_scorer,
)
from pos_agent.llm import ModelFailure, ModelOptions, ScriptedModel

SECRET = "sk-embed-DO-NOT-LEAK-7731"


class EmbeddingServer:
    """POST /v1/embeddings: answers each input with [len, vowels, 1] unless a canned status is
    queued; records every request body and Authorization header."""

    def __init__(self) -> None:
        self.statuses: deque[int] = deque()
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str] = []
        self.drop_one = False
        self.usage: Any = None  # None: an honest count, 3 tokens per input
        self.raw_reply: bytes | None = None  # sent as is (status 200) instead of embeddings
        self.hold = threading.Event()  # set: the next replies wait until `release` is set
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                server.bodies.append(body)
                server.auth.append(self.headers.get("authorization", ""))
                status = server.statuses.popleft() if server.statuses else 200
                if server.hold.is_set():
                    server.release.wait(timeout=30)
                if status != 200:
                    payload: dict[str, Any] = {"error": {"message": f"status {status}"}}
                else:
                    texts = body["input"]
                    data = [
                        {
                            "object": "embedding",
                            "index": i,
                            "embedding": [float(len(t)), float(sum(c in "aeiou" for c in t)), 1.0],
                        }
                        for i, t in enumerate(texts)
                    ]
                    if server.drop_one:
                        data = data[:-1]
                    payload = {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {
                            "prompt_tokens": 3 * len(texts)
                            if server.usage is None
                            else server.usage,
                            "total_tokens": 3 * len(texts),
                        },
                    }
                raw = json.dumps(payload).encode() if server.raw_reply is None else server.raw_reply
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    fake = EmbeddingServer()
    fake.thread.start()
    yield fake
    fake.release.set()
    fake.httpd.shutdown()
    fake.httpd.server_close()


def options(server: EmbeddingServer, **extra: Any) -> ModelOptions:
    return ModelOptions(
        base_url=server.base_url,
        api_key=SecretStr(SECRET),
        backoff_base_s=0.0,
        backoff_cap_s=0.0,
        **extra,
    )


def test_batches_of_ten_with_usage_and_the_key_sent(server: EmbeddingServer) -> None:
    embedder = load_embedder("openai:text-embedding-3-small", options(server))
    texts = [f"text number {i}" for i in range(13)]
    answer = embedder.embed(texts)
    assert [len(b["input"]) for b in server.bodies] == [10, 3]
    assert server.bodies[0]["model"] == "text-embedding-3-small"
    assert answer.vectors[12] == [float(len(texts[12])), 3.0, 1.0]  # "text number 12"
    assert answer.prompt_tokens == 39
    assert server.auth[0] == f"Bearer {SECRET}"
    assert SECRET not in repr(embedder)


@pytest.mark.parametrize("sent", [-40, 10**12, "39", 2.5])
def test_usage_that_cannot_be_right_is_estimated_not_stored(
    server: EmbeddingServer, sent: Any
) -> None:
    server.usage = sent
    answer = load_embedder("openai:text-embedding-3-small", options(server)).embed(["a b c"])
    assert isinstance(answer.prompt_tokens, int) and 0 < answer.prompt_tokens < 100


def test_retries_a_429_then_succeeds_and_a_rejected_key_is_a_config_failure(
    server: EmbeddingServer,
) -> None:
    embedder = load_embedder("dashscope:text-embedding-v4", options(server))
    server.statuses.extend([429, 503])
    assert len(embedder.embed(["a", "b"]).vectors) == 2
    assert len(server.bodies) == 3
    server.statuses.append(401)
    with pytest.raises(ModelFailure) as failure:
        embedder.embed(["a"])
    assert failure.value.kind == "config" and "DASHSCOPE_API_KEY" in failure.value.message
    assert SECRET not in str(failure.value)
    server.statuses.extend([500] * 3)
    with pytest.raises(ModelFailure) as down:
        load_embedder("openai:e", options(server, max_retries=2)).embed(["a"])
    assert down.value.kind == "transport" and down.value.attempts == 3


def test_a_short_answer_scores_the_step_lexically(server: EmbeddingServer) -> None:
    caller = ModelCaller(ScriptedModel())
    scorer = make_scorer("openai:text-embedding-3-small", caller, options(server))
    assert isinstance(scorer, EmbeddingScorer)
    scorer.add(1, "open the microwave")
    scorer.add(2, "go to the sink")
    assert len(scorer.scores("microwave", [1, 2])) == 2
    assert scorer.last_scorer == "embedding:openai:text-embedding-3-small"
    server.drop_one = True
    scorer.add(3, "take the mug")
    scores = scorer.scores("microwave", [1, 2, 3])
    assert scorer.last_scorer.startswith("tfidf (fallback: schema)")
    assert scores[0] > 0 and scores[1] == 0.0
    assert [c.role for c in caller.calls] == ["embedder", "embedder"]


def test_specs_without_a_key_or_of_an_unknown_form_fail_with_what_to_do() -> None:
    caller = ModelCaller(ScriptedModel())
    assert isinstance(make_scorer("tfidf", caller), LexicalScorer)
    with pytest.raises(ModelFailure, match="DASHSCOPE_API_KEY"):
        make_scorer("dashscope:text-embedding-v4", caller)
    with pytest.raises(ModelFailure, match="OPENAI_API_KEY"):
        make_scorer("openai:text-embedding-3-small", caller)
    with pytest.raises(ModelFailure, match="tfidf, openai:MODEL or dashscope:MODEL"):
        make_scorer("bert", caller)


def test_embeddings_need_no_openai_sdk(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `openai` extra installs httpx only: embeddings must work without the SDK."""
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` now fails
    embedder = load_embedder("openai:text-embedding-3-small", options(server))
    assert len(embedder.embed(["a", "b"]).vectors) == 2


def test_the_base_url_and_key_come_from_the_chat_backends_lookup(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    embedder = load_embedder("openai:e", ModelOptions(backoff_base_s=0.0))
    assert embedder.embed(["a"]).vectors == [[1.0, 1.0, 1.0]]
    assert server.auth == [""]  # a server named by URL may need no key
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    load_embedder("openai:e", ModelOptions()).embed(["a"])
    assert server.auth[-1] == f"Bearer {SECRET}"
    monkeypatch.setenv("DASHSCOPE_BASE_URL", server.base_url)
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-dash")
    load_embedder("dashscope:text-embedding-v4").embed(["a"])
    assert server.auth[-1] == "Bearer sk-dash"


def test_a_stalled_server_hits_the_whole_request_deadline(server: EmbeddingServer) -> None:
    server.hold.set()
    embedder = load_embedder("openai:e", options(server, timeout_s=0.3, max_retries=1))
    with pytest.raises(ModelFailure) as stalled:
        embedder.embed(["a"])
    assert stalled.value.kind == "timeout" and stalled.value.attempts == 2
    assert "within 0.3s" in stalled.value.message


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"<html>not an API</html>", "not an embeddings list"),
        (
            json.dumps({"data": [{"index": 0, "embedding": ["x"]}]}).encode(),
            "0 usable vectors for 1 inputs",
        ),
        (b"x" * 5000, "larger than the 2,048-byte limit"),
    ],
)
def test_replies_that_hold_no_vectors_are_schema_failures(
    server: EmbeddingServer, reply: bytes, message: str
) -> None:
    server.raw_reply = reply
    embedder = load_embedder("openai:e", options(server, max_reply_bytes=2048))
    with pytest.raises(ModelFailure, match=message) as failure:
        embedder.embed(["a"])
    assert failure.value.kind == "schema" and failure.value.attempts == 1


def test_a_refused_input_is_a_schema_failure_without_retries(server: EmbeddingServer) -> None:
    server.statuses.append(400)
    with pytest.raises(ModelFailure, match="HTTP 400") as refused:
        load_embedder("openai:e", options(server)).embed(["a"])
    assert refused.value.kind == "schema" and len(server.bodies) == 1
