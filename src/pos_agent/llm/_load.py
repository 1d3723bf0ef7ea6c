"""Model specs ("local", "openai:gpt-4o-mini", ...) to ready models, through the registry."""

from __future__ import annotations

import random

from pos_agent.llm._backend import BackendError
from pos_agent.llm._cache import ResponseCache
from pos_agent.llm._options import ModelOptions
from pos_agent.llm._registry import DEFAULT_SPEC, entry_for, parse_spec
from pos_agent.llm._reliable import ReliableModel, Sleep
from pos_agent.llm._secrets import url_secrets
from pos_agent.llm._types import ModelFailure


def load_model(
    spec: str = DEFAULT_SPEC,
    options: ModelOptions | None = None,
    *,
    cache: ResponseCache | None = None,
    sleep: Sleep | None = None,
    rng: random.Random | None = None,
) -> ReliableModel:
    """The model a spec names, wrapped in retries, repairs and (when configured) the cache.

    Nothing heavy happens here: a local model file is loaded on its first call, a server is
    first contacted by the first call. Problems that can be seen now (unknown spec, missing
    package, model file or key) raise ModelFailure(kind="config") with what to do.
    """
    options = options or ModelOptions()
    parsed = parse_spec(spec)
    try:
        backend = entry_for(parsed).factory(parsed.target, options)
    except BackendError as error:
        raise ModelFailure(error.kind, error.message, model=str(parsed)) from None
    return ReliableModel(
        backend,
        spec=str(parsed),
        options=options,
        cache=cache,
        sleep=sleep,
        rng=rng,
        # A base URL's password must stay out of messages even from backends that ignore it.
        secrets=url_secrets(options.base_url),
    )
