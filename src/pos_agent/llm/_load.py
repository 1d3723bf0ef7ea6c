"""Model specs ("local", "gguf:PATH", "openai:MODEL", "dashscope:MODEL", "scripted") to models."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from pos_agent.llm._backend import BackendError
from pos_agent.llm._cache import ResponseCache
from pos_agent.llm._options import DASHSCOPE_BASE_URL, ModelOptions, secret_value
from pos_agent.llm._reliable import ReliableModel, Sleep
from pos_agent.llm._types import ModelFailure

DEFAULT_SPEC = "local"
SPEC_FORMS = "local, gguf:PATH, openai:MODEL, dashscope:MODEL or scripted"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: which backend, and the model name or file it names."""

    backend: str
    target: str

    def __str__(self) -> str:
        return self.backend if not self.target else f"{self.backend}:{self.target}"


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec; raises ModelFailure(kind="config") saying the accepted forms."""
    text = spec.strip()
    if text in ("", "local"):
        return ModelSpec("local", "")
    if text == "scripted":
        return ModelSpec("scripted", "")
    backend, colon, target = text.partition(":")
    if colon and backend in ("gguf", "openai", "dashscope") and target.strip():
        return ModelSpec(backend, target.strip())
    raise ModelFailure("config", f"unknown model spec {spec!r}; use {SPEC_FORMS}", model=spec)


def load_model(
    spec: str = DEFAULT_SPEC,
    options: ModelOptions | None = None,
    *,
    cache: ResponseCache | None = None,
    sleep: Sleep | None = None,
    rng: random.Random | None = None,
) -> ReliableModel:
    """The model a spec names, wrapped in retries, repairs and (when configured) the cache.

    Nothing heavy happens here: a local model file is loaded on its first call. Problems that
    can be seen now (unknown spec, missing package, model file or key) raise
    ModelFailure(kind="config") with what to do.
    """
    options = options or ModelOptions()
    parsed = parse_spec(spec)
    try:
        return _build(parsed, options, cache, sleep, rng)
    except BackendError as error:
        raise ModelFailure(error.kind, error.message, model=str(parsed)) from None


def _build(
    spec: ModelSpec,
    options: ModelOptions,
    cache: ResponseCache | None,
    sleep: Sleep | None,
    rng: random.Random | None,
) -> ReliableModel:
    if spec.backend == "scripted":
        from pos_agent.llm._scripted import ScriptedModel

        return ScriptedModel(options=options, cache=cache, sleep=sleep, rng=rng)
    if spec.backend in ("local", "gguf"):
        from pos_agent.llm._local import LlamaCppBackend, embedded_gguf_path, llama_cpp_available

        if not llama_cpp_available():
            raise BackendError(
                "config",
                "llama-cpp-python is not installed; install the local extra: "
                "`uv sync --extra local` (or pip install 'pos-agent[local]')",
                retryable=False,
            )
        if spec.backend == "local":
            path = embedded_gguf_path()
        else:
            path = Path(spec.target).expanduser()
            if not path.is_file():
                raise BackendError(
                    "config",
                    f"no GGUF file at {path}; give the path of a .gguf model file",
                    retryable=False,
                )
        backend = LlamaCppBackend(
            path,
            n_ctx=options.n_ctx,
            n_threads=options.threads(),
            seed=options.seed,
            slot=options.context_slot,
        )
        return ReliableModel(
            backend, spec=str(spec), options=options, cache=cache, sleep=sleep, rng=rng
        )

    from pos_agent.llm._openai import OpenAICompatibleBackend, openai_available

    if not openai_available():
        raise BackendError(
            "config",
            "the openai package is not installed; install the openai extra: "
            "`uv sync --extra openai` (or pip install 'pos-agent[openai]')",
            retryable=False,
        )
    base_url: str | None
    if spec.backend == "dashscope":
        key_env = "DASHSCOPE_API_KEY"
        base_url = options.base_url or os.environ.get("DASHSCOPE_BASE_URL") or DASHSCOPE_BASE_URL
        api_key = secret_value(options.api_key) or os.environ.get(key_env) or None
        if api_key is None:
            raise BackendError(
                "config",
                f"no DashScope API key: set {key_env} (or pass an api_key in the options)",
                retryable=False,
            )
    else:
        key_env = "OPENAI_API_KEY"
        base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = secret_value(options.api_key) or os.environ.get(key_env) or None
        if api_key is None and base_url is None:
            # Local servers (vLLM, Ollama, llama.cpp) need no key; OpenAI itself always does.
            raise BackendError(
                "config",
                f"no OpenAI API key: set {key_env}, or pass --base-url for an "
                "OpenAI-compatible server that needs none (vLLM, Ollama, llama.cpp server)",
                retryable=False,
            )
    backend_openai = OpenAICompatibleBackend(
        spec.target,
        base_url=base_url,
        api_key=api_key,
        timeout_s=options.timeout_s,
        provider=spec.backend,
        key_env=key_env,
    )
    return ReliableModel(
        backend_openai,
        spec=str(spec),
        options=options,
        cache=cache,
        sleep=sleep,
        rng=rng,
        secrets=(api_key,),
    )
