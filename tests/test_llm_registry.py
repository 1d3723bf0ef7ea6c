"""The backend registry (one table from spec prefix to factory) and the public surface."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator

import pytest

import pos_agent.llm as llm
from pos_agent.bench.case import default_loader
from pos_agent.llm import Message, ModelFailure, ModelOptions, load_model, parse_spec
from pos_agent.llm.backend import (
    BackendEntry,
    GenerationRequest,
    RawReply,
    backend_entries,
    register_backend,
    spec_forms,
)
from pos_agent.llm.backend import estimate_tokens as estimate


class EchoBackend:
    """The worked example of docs/adding-a-backend.md, kept honest by this test."""

    name = "echo"
    base_url: str | None = None

    def __init__(self, prefix: str) -> None:
        self.model_id = f"echo-{prefix}"
        self.prefix = prefix

    @classmethod
    def from_spec(cls, target: str, options: ModelOptions) -> EchoBackend:
        return cls(target)

    def generate(self, request: GenerationRequest) -> RawReply:
        text = f"{self.prefix}: {request.messages[-1].content}"
        return RawReply(text, llm.Usage(estimate(request.messages[-1].content), estimate(text)))


@pytest.fixture
def echo_registered() -> Iterator[None]:
    from pos_agent.llm._registry import _ENTRIES

    before = dict(_ENTRIES)
    register_backend(BackendEntry("echo", EchoBackend.from_spec, target="TEXT", summary="echo"))
    register_backend(BackendEntry("inproc", EchoBackend.from_spec, target="X", in_process=True))
    yield
    _ENTRIES.clear()
    _ENTRIES.update(before)


def test_a_registered_backend_is_one_entry_away(echo_registered: None) -> None:
    model = load_model("echo:parrot")
    answer = model.complete([Message("user", "hello")])
    assert answer.text == "parrot: hello" and answer.model == "echo:parrot"
    assert "echo:TEXT" in spec_forms()
    assert parse_spec("echo:x").backend == "echo"
    with pytest.raises(ModelFailure) as caught:
        parse_spec("echo")  # echo needs a target
    assert "echo:TEXT" in caught.value.message


def test_the_bench_loader_asks_the_registry_about_contexts_per_role(
    echo_registered: None,
) -> None:
    load = default_loader()
    # In-process backends get one instance (one llama.cpp context) per role...
    assert load("inproc:m", "policy") is not load("inproc:m", "belief")
    assert load("inproc:m", "policy") is load("inproc:m", "policy")
    # ...servers are shared by every role.
    assert load("echo:m", "policy") is load("echo:m", "belief")
    assert llm.wants_context_per_role("local") and llm.wants_context_per_role("gguf:/x.gguf")
    assert not llm.wants_context_per_role("openai:gpt-4o")
    assert not llm.wants_context_per_role("nonsense")


def test_registration_is_checked() -> None:
    with pytest.raises(ValueError, match="exists already"):
        register_backend(BackendEntry("openai", EchoBackend.from_spec, target="MODEL"))
    with pytest.raises(ValueError, match="without ':'"):
        register_backend(BackendEntry("a:b", EchoBackend.from_spec))


def test_the_builtin_table_and_the_spec_forms_agree() -> None:
    prefixes = [entry.prefix for entry in backend_entries()]
    assert prefixes == ["local", "gguf", "openai", "dashscope", "scripted"]
    assert spec_forms() == "local, gguf:PATH, openai:MODEL, dashscope:MODEL or scripted"


def test_the_top_level_exports_what_a_library_user_needs() -> None:
    for name in (
        "load_model",
        "Message",
        "Model",
        "Completion",
        "ModelFailure",
        "ModelOptions",
        "ScriptedModel",
        "TokenLedger",
        "preflight",
        "StructuredMode",
    ):
        assert name in llm.__all__ and hasattr(llm, name), name
    for internal in ("BackendError", "GenerationRequest", "RawReply", "CacheRequest", "cache_key"):
        assert internal not in llm.__all__, internal


def test_moved_names_still_import_from_the_top_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="pos_agent.llm.backend"):
        moved = llm.BackendError
    from pos_agent.llm.backend import BackendError

    assert moved is BackendError
    with pytest.raises(AttributeError):
        llm.no_such_name  # noqa: B018


def test_every_public_name_resolves_without_warnings() -> None:
    backend = importlib.import_module("pos_agent.llm.backend")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for module in (llm, backend):
            for name in module.__all__:
                assert getattr(module, name) is not None, name
