"""The table of model backends: a spec prefix ("openai" in "openai:gpt-4o") to its factory.

Everything that needs to know the set of backends asks this table: spec parsing, the accepted
forms in error messages, and whether a spec runs in-process (one llama.cpp context per role).
Adding a backend is one entry here, or one `register_backend` call from outside the package;
docs/adding-a-backend.md walks through it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pos_agent.llm import _builtin
from pos_agent.llm._backend import Backend
from pos_agent.llm._options import ModelOptions
from pos_agent.llm._secrets import public_url
from pos_agent.llm._types import ModelFailure

BackendFactory = Callable[[str, ModelOptions], Backend]
"""(target, options) -> Backend. The target is what follows "prefix:" ("" without one)."""
ServerOf = Callable[[ModelOptions], "str | None"]
"""options -> the server URL a backend would call with them (flag, environment variable or its
default), or None for a backend that calls no server."""

DEFAULT_SPEC = "local"


@dataclass(frozen=True)
class BackendEntry:
    """One backend: how its specs look and how to build it.

    `target` is "none" for bare specs ("local"), else the name of what follows the colon
    ("MODEL", "PATH"). `in_process` marks backends that run the model inside this process and
    keep per-context state (llama.cpp): the harness gives each role its own context of them.
    `server` says which server its models call with given options, wherever the URL comes
    from; a run records it as part of its identity (None: no server, or one it cannot tell).
    """

    prefix: str
    factory: BackendFactory
    target: str = "none"
    in_process: bool = False
    summary: str = ""
    server: ServerOf | None = None

    @property
    def form(self) -> str:
        return self.prefix if self.target == "none" else f"{self.prefix}:{self.target}"


_ENTRIES: dict[str, BackendEntry] = {
    entry.prefix: entry
    for entry in (
        BackendEntry(
            "local",
            _builtin.local,
            in_process=True,
            summary="the embedded SmolLM2-135M, run in-process by llama.cpp",
        ),
        BackendEntry(
            "gguf",
            _builtin.gguf,
            target="PATH",
            in_process=True,
            summary="any GGUF model file, run in-process by llama.cpp",
        ),
        BackendEntry(
            "openai",
            _builtin.openai,
            target="MODEL",
            server=_builtin.openai_server,
            summary="any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp server)",
        ),
        BackendEntry(
            "dashscope",
            _builtin.dashscope,
            target="MODEL",
            server=_builtin.dashscope_server,
            summary="Alibaba DashScope's OpenAI-compatible mode (the paper's provider)",
        ),
        BackendEntry(
            "scripted",
            _builtin.scripted,
            summary="deterministic stand-in answering each schema with its smallest object",
        ),
    )
}
_ENTRIES_LOCK = threading.Lock()


def register_backend(entry: BackendEntry, *, replace: bool = False) -> None:
    """Add a backend for this process; an existing prefix is replaced only when asked."""
    if not entry.prefix or ":" in entry.prefix or entry.prefix != entry.prefix.strip():
        raise ValueError(f"a backend prefix is a non-empty word without ':', not {entry.prefix!r}")
    with _ENTRIES_LOCK:
        if entry.prefix in _ENTRIES and not replace:
            raise ValueError(
                f"a backend {entry.prefix!r} exists already; pass replace=True to override it"
            )
        _ENTRIES[entry.prefix] = entry


def backend_entries() -> tuple[BackendEntry, ...]:
    """Every registered backend, in registration order."""
    with _ENTRIES_LOCK:
        return tuple(_ENTRIES.values())


def spec_forms() -> str:
    """The accepted spec forms, for messages: "local, gguf:PATH, ... or scripted"."""
    forms = [entry.form for entry in backend_entries()]
    return forms[0] if len(forms) == 1 else f"{', '.join(forms[:-1])} or {forms[-1]}"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: which backend, and the model name or file it names."""

    backend: str
    target: str

    def __str__(self) -> str:
        return self.backend if not self.target else f"{self.backend}:{self.target}"


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec; raises ModelFailure(kind="config") saying the accepted forms."""
    text = spec.strip() or DEFAULT_SPEC
    prefix, colon, target = text.partition(":")
    with _ENTRIES_LOCK:
        entry = _ENTRIES.get(prefix)
    if entry is not None:
        if entry.target == "none" and not colon:
            return ModelSpec(prefix, "")
        if entry.target != "none" and colon and target.strip():
            return ModelSpec(prefix, target.strip())
    raise ModelFailure("config", f"unknown model spec {spec!r}; use {spec_forms()}", model=spec)


def entry_for(spec: ModelSpec) -> BackendEntry:
    with _ENTRIES_LOCK:
        return _ENTRIES[spec.backend]


def wants_context_per_role(spec: str) -> bool:
    """Whether the spec's model runs in-process and should get one context per role (False
    for specs that do not parse: loading them reports the problem)."""
    try:
        return entry_for(parse_spec(spec)).in_process
    except (ModelFailure, KeyError):
        return False


def effective_server(spec: str, options: ModelOptions) -> str | None:
    """The server a model spec calls with these options, without credentials: `--base-url`,
    else the backend's environment variable (OPENAI_BASE_URL, DASHSCOPE_BASE_URL), else its
    default; None for an in-process or scripted model and for specs that do not parse."""
    try:
        entry = entry_for(parse_spec(spec))
    except (ModelFailure, KeyError):
        return None
    if entry.server is None:
        return None
    return public_url(entry.server(options))


def owned_by_policy(options: ModelOptions, policies: Iterable[str]) -> ModelOptions:
    """`options` with `endpoint_provider` set to the policies' provider when a base URL or a
    key is given: they are the policy's, and a model of another provider (a `dashscope:`
    judge) keeps its own endpoint and key. Unchanged when already set, when nothing is given,
    or when the policies use several HTTP providers (the base URL is then everyone's)."""
    if options.endpoint_provider is not None or (options.base_url is None and not options.api_key):
        return options
    providers = set()
    for spec in policies:
        try:
            parsed = parse_spec(spec)
        except ModelFailure:
            continue
        if entry_for(parsed).server is not None:
            providers.add(parsed.backend)
    if len(providers) != 1:
        return options
    return options.model_copy(update={"endpoint_provider": providers.pop()})
