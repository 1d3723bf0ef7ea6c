"""The factories of the built-in backends; `_registry` lists them, one entry each.

A factory turns the target of a spec (what follows "prefix:") and the options into a Backend.
It imports its heavy packages itself, so importing the model layer stays cheap, and raises
BackendError(kind="config") saying what to do when something is missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pos_agent.llm._backend import Backend, BackendError
from pos_agent.llm._options import DASHSCOPE_BASE_URL, ModelOptions, for_provider, secret_value

_INSTALL_LOCAL = (
    "llama-cpp-python is not installed; install the local extra: "
    "`uv sync --extra local` (or pip install 'pos-agent[local]')"
)
INSTALL_OPENAI = (
    "httpx is not installed; install the openai extra: "
    "`uv sync --extra openai` (or pip install 'pos-agent[openai]')"
)


def scripted(target: str, options: ModelOptions) -> Backend:
    from pos_agent.llm._scripted import ScriptedBackend

    return ScriptedBackend()


def local(target: str, options: ModelOptions) -> Backend:
    from pos_agent.llm._local import embedded_gguf_path

    _require_llama_cpp()
    return _llama_cpp(embedded_gguf_path(), options)


def gguf(target: str, options: ModelOptions) -> Backend:
    _require_llama_cpp()
    path = Path(target).expanduser()
    if not path.is_file():
        raise BackendError(
            "config",
            f"no GGUF file at {path}; give the path of a .gguf model file",
            retryable=False,
        )
    return _llama_cpp(path, options)


def openai_server(options: ModelOptions) -> str:
    """The server of `openai:` specs: the option, else OPENAI_BASE_URL, else OpenAI's API."""
    from pos_agent.llm._openai_http import OPENAI_DEFAULT_BASE_URL

    return _configured_url(for_provider(options, "openai")) or OPENAI_DEFAULT_BASE_URL


def dashscope_server(options: ModelOptions) -> str:
    """The server of `dashscope:` specs: the option, else DASHSCOPE_BASE_URL, else DashScope's
    compatible mode."""
    options = for_provider(options, "dashscope")
    return options.base_url or os.environ.get("DASHSCOPE_BASE_URL") or DASHSCOPE_BASE_URL


def _configured_url(options: ModelOptions) -> str | None:
    return options.base_url or os.environ.get("OPENAI_BASE_URL") or None


@dataclass(frozen=True)
class HttpEndpoint:
    """Where an `openai:` or `dashscope:` spec sends its requests, and with which key.

    `key_env` names the variable to set when the key is missing or rejected. The key never
    appears in the repr.
    """

    provider: str
    base_url: str | None
    api_key: str | None = field(repr=False)
    key_env: str


def http_endpoint(provider: str, options: ModelOptions) -> HttpEndpoint:
    """The base URL and key of an OpenAI-compatible provider: the options first, then the
    provider's environment variables. Chat backends and PACE's embeddings both ask here.

    Raises BackendError(kind="config") saying what to set when there is no key: always for
    DashScope, and for `openai:` unless a base URL names a server that may need none.
    """
    base_url: str | None
    options = for_provider(options, provider)
    if provider == "dashscope":
        base_url = dashscope_server(options)
        api_key = secret_value(options.api_key) or os.environ.get("DASHSCOPE_API_KEY") or None
        if api_key is None:
            raise BackendError(
                "config",
                "no DashScope API key: set DASHSCOPE_API_KEY (or pass an api_key in the options)",
                retryable=False,
            )
        return HttpEndpoint(provider, base_url, api_key, "DASHSCOPE_API_KEY")
    if provider != "openai":
        raise ValueError(f"no HTTP endpoint lookup for provider {provider!r}")
    base_url = _configured_url(options)
    api_key = secret_value(options.api_key) or os.environ.get("OPENAI_API_KEY") or None
    if api_key is None and base_url is None:
        # Local servers (vLLM, Ollama, llama.cpp) need no key; OpenAI itself always does.
        raise BackendError(
            "config",
            "no OpenAI API key: set OPENAI_API_KEY, or pass --base-url for an "
            "OpenAI-compatible server that needs none (vLLM, Ollama, llama.cpp server)",
            retryable=False,
        )
    return HttpEndpoint(provider, base_url, api_key, "OPENAI_API_KEY")


def openai(target: str, options: ModelOptions) -> Backend:
    return _http_chat(target, options, http_endpoint("openai", options))


def dashscope(target: str, options: ModelOptions) -> Backend:
    return _http_chat(target, options, http_endpoint("dashscope", options))


def require_httpx() -> None:
    """BackendError(kind="config") naming the `openai` extra when httpx is missing."""
    from pos_agent.llm._openai_http import openai_available

    if not openai_available():
        raise BackendError("config", INSTALL_OPENAI, retryable=False)


def _require_llama_cpp() -> None:
    from pos_agent.llm._local import llama_cpp_available

    if not llama_cpp_available():
        raise BackendError("config", _INSTALL_LOCAL, retryable=False)


def _llama_cpp(path: Path, options: ModelOptions) -> Backend:
    from pos_agent.llm._local import LlamaCppBackend

    return LlamaCppBackend(
        path,
        n_ctx=options.n_ctx,
        n_threads=options.threads(),
        seed=options.seed,
        slot=options.context_slot,
    )


def _http_chat(model: str, options: ModelOptions, endpoint: HttpEndpoint) -> Backend:
    require_httpx()
    from pos_agent.llm._openai import OpenAICompatibleBackend

    return OpenAICompatibleBackend(
        model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        timeout_s=options.timeout_s,
        max_reply_bytes=options.max_reply_bytes,
        provider=endpoint.provider,
        key_env=endpoint.key_env,
        cache_breakpoints=options.cache_breakpoints,
    )
