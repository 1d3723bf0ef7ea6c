"""`benchmarks.cost --server`: raw and pos against llama-cpp-python's OpenAI-compatible server
(prompt cache on), every request recorded as it reached the server (`SentLog`), and the prompt
tokens the server reported reusing next to the estimate."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.cost.episodes import Call, Calls, cached_tokens, play
from pos_agent.cost import PrefixCache, prompt_text
from pos_agent.cost.cache import cache_rule
from pos_agent.envs import make_env
from pos_agent.llm.backend import Backend, GenerationRequest, RawReply

_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit")


@dataclass(frozen=True)
class Sent:
    """One request as it reached the server: the messages as sent (the answer's schema in the
    system message where the server has no native schema mode, the repair turns), the answer,
    the server's own count of the prompt's tokens, and the prompt tokens its log says it
    reused for this request."""

    role: str
    purpose: str
    messages: tuple[tuple[str, str], ...]
    answer: str
    prompt_tokens: int
    server_cached: int

    @property
    def text(self) -> str:
        return prompt_text(self.messages)


class SentLog:
    """A backend that passes every request on and keeps it as sent (`Sent`), with what the
    server's log says about it. `Calls` sees `Model.answer`; the requests below it (the
    schema instruction, the repair turns) are what the server caches."""

    def __init__(self, backend: Backend, log: Path) -> None:
        self.backend = backend
        self.name = backend.name
        self.model_id = backend.model_id
        self.base_url = backend.base_url
        self.log = log
        self.sent: list[Sent] = []

    def __getattr__(self, name: str) -> Any:
        # constrains_output, secrets, ...: the backend's own.
        return getattr(self.backend, name)

    def generate(self, request: GenerationRequest) -> RawReply:
        start = self.log.stat().st_size if self.log.exists() else 0
        reply: RawReply | None = None
        try:
            reply = self.backend.generate(request)
            return reply
        finally:
            # The server logs the hit before it answers (its stderr is line-buffered).
            with self.log.open("rb") as lines:
                lines.seek(start)
                told = lines.read().decode(errors="replace")
            self.sent.append(
                Sent(
                    request.role,
                    request.purpose,
                    tuple((m.role, m.content) for m in request.messages),
                    reply.text if reply is not None else "",
                    reply.usage.prompt_tokens if reply is not None else 0,
                    sum(int(h) for h in _PREFIX_HIT.findall(told)),
                )
            )


Tokens = list[int]


def server_reuse(
    prompts: Sequence[Tokens], answers: Sequence[Tokens], sizes: Sequence[int], *, ram: bool
) -> list[int]:
    """Per request, the prompt tokens llama-cpp-python's server reuses, by its own rule on its
    own tokens: the longest prefix the prompt shares with a state the server kept, the state of
    an earlier request being its prompt followed by its answer; `ram` (`--cache`): any earlier
    state, else the last one only. A prompt held whole still has its last token evaluated
    again. (`sent_estimate` is the same rule on texts, `cost/cache.py`'s llamacpp rules.)"""
    states: list[Tokens] = []
    reused = []
    for prompt, answer, size in zip(prompts, answers, sizes, strict=True):
        pool = states if ram else states[-1:]
        shared = max((_common(state, prompt) for state in pool), default=0)
        reused.append(max(0, size - 1) if shared >= len(prompt) else shared)
        states.append(prompt + answer)
    return reused


def _common(a: Tokens, b: Tokens) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def sent_estimate(sent: Sequence[Sent], *, ram: bool = True) -> list[int]:
    """The estimate on the requests as sent: `cost/cache.py`'s llamacpp rule (`llamacpp-ram`
    with `ram`) by characters, each answer kept after its prompt, with the server's prompt
    token counts (what the ledger records for such a server)."""
    cache = PrefixCache(cache_rule("llamacpp-ram" if ram else "llamacpp"), keep=max(1, len(sent)))
    return [cache.estimate(s.text, s.prompt_tokens, answer=s.answer).cached_tokens for s in sent]


def tokenized_reuse(sent: Sequence[Sent], gguf: Path) -> list[int] | str:
    """`server_reuse` on the server's own tokens: each request put through the model's chat
    template and tokenizer as llama-cpp-python's server does; a reason string if it cannot."""
    try:
        from llama_cpp import Llama
        from llama_cpp._utils import suppress_stdout_stderr
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        with suppress_stdout_stderr(disable=False):  # llama.cpp's load messages
            vocab = Llama(str(gguf), vocab_only=True, verbose=False)
        text_of = vocab._model.token_get_text
        template = Jinja2ChatFormatter(
            vocab.metadata["tokenizer.chat_template"],
            text_of(vocab.token_eos()),
            text_of(vocab.token_bos()),
            stop_token_ids=[vocab.token_eos()],
        )
        prompts: list[Tokens] = []
        answers: list[Tokens] = []
        for s in sent:
            turns: list[Any] = [{"role": r, "content": c} for r, c in s.messages]
            shaped = template(messages=turns)
            prompt = shaped.prompt.encode()
            prompts.append(vocab.tokenize(prompt, add_bos=not shaped.added_special, special=True))
            answers.append(vocab.tokenize(s.answer.encode(), add_bos=False, special=False))
        vocab.close()
        return server_reuse(prompts, answers, [len(p) for p in prompts], ram=True)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:200]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _gap(estimate: int, server: int) -> str:
    return f"{100 * (estimate - server) / server:+.1f}%" if server else "n/a"


def server_table(
    runs: Sequence[tuple[str, Sequence[Call], range]],
    sent: Sequence[Sent],
    tokenized: Sequence[int] | str,
) -> list[str]:
    """One row per method: calls and requests, the server's prompt tokens, what it reported
    reusing, the estimate on the requests as sent and its gap, the same on `Calls` (what
    `Model.answer` sees) and on the server's own tokens; then why, where a gap is over 10%."""
    estimate = sent_estimate(sent)
    lines = [
        f"{'method':>8} {'calls':>6} {'sent':>5} {'prompt':>7} {'server cached':>14} "
        f"{'estimate':>9} {'est-srv':>8} {'on calls':>9} {'est-srv':>8} {'tokenized':>10} "
        f"{'tok-srv':>8}"
    ]
    over = []
    for method, calls, span in runs:
        server = sum(sent[i].server_cached for i in span)
        mine = sum(estimate[i] for i in span)
        on_calls = sum(cached_tokens(calls, "llamacpp-ram"))
        exact = "-" if isinstance(tokenized, str) else str(sum(tokenized[i] for i in span))
        exact_gap = "-" if isinstance(tokenized, str) else _gap(int(exact), server)
        prompt = sum(sent[i].prompt_tokens for i in span)
        lines.append(
            f"{method:>8} {len(calls):>6} {len(span):>5} {prompt:>7} {server:>14} {mine:>9} "
            f"{_gap(mine, server):>8} {on_calls:>9} {_gap(on_calls, server):>8} {exact:>10} "
            f"{exact_gap:>8}"
        )
        if server and abs(mine - server) > 0.1 * server:
            over.append(method)
    if isinstance(tokenized, str):
        lines.append(f"(no tokenized column: {tokenized})")
    if over:
        lines.append(
            f"estimate not within 10% on {', '.join(over)}: it counts shared characters where "
            "the server counts tokens (see the tokenized column for the server's own)"
        )
    return lines


def server_run(steps: int) -> list[str]:
    """raw and pos on the alfworld episode against llama-cpp-python's server (prompt cache on):
    the server's reused prompt tokens next to the estimate."""
    from pos_agent.llm import ModelOptions, load_model
    from pos_agent.llm.backend import embedded_gguf_path

    port = _free_port()
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pos-perf-cost-server-") as folder:
        log = Path(folder) / "server.log"
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_gguf_path()),
            "--model_alias", "smollm", "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", "8192", "--n_threads", str(os.cpu_count() or 1), "--cache", "true",
        ]  # fmt: skip
        with log.open("wb") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 300
            while True:
                try:
                    urllib.request.urlopen(f"{url}/models", timeout=5).close()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        return [f"server did not start: {log.read_text(errors='replace')[-500:]}"]
                    time.sleep(0.5)
            options = ModelOptions(base_url=url, api_key="local", timeout_s=900, max_retries=1)
            model = load_model("openai:smollm", options)
            wire = SentLog(model.backend, log)
            model.backend = wire
            runs: list[tuple[str, Sequence[Call], range]] = []
            for method in ("raw", "pos"):
                first = len(wire.sent)
                calls = Calls(model, spec="openai:smollm")
                # The embedded model's profile and budget (what `--model local` runs with).
                try:
                    with make_env("alfworld-mini", "heat-mug", max_steps=steps) as env:
                        play(method, env, calls, suite="alfworld-mini", budget=128,
                             profile="compact")  # fmt: skip
                except Exception as exc:
                    lines.append(f"{method:>8} stopped: {type(exc).__name__}: {exc}"[:300])
                runs.append((method, calls.calls, range(first, len(wire.sent))))
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)
    # The methods ran one after the other on one server: its states carry over.
    tokenized = tokenized_reuse(wire.sent, embedded_gguf_path())
    return server_table(runs, wire.sent, tokenized) + lines
