"""A deterministic backend driven by a callable or a queue of replies (tests, offline demos)."""

from __future__ import annotations

import collections
import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

from pydantic import BaseModel

from pos_agent.llm._backend import BackendError, GenerationRequest, RawReply
from pos_agent.llm._cache import ResponseCache
from pos_agent.llm._options import ModelOptions
from pos_agent.llm._reliable import ReliableModel, Sleep
from pos_agent.llm._structured import minimal_instance
from pos_agent.llm._types import Usage
from pos_agent.tokens import estimate_tokens


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer with control over truncation and reported token counts."""

    text: str
    truncated: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


# str: the reply text; BaseModel/dict: serialized to JSON; an exception: raised by the backend
# (BackendError for transport trouble the retry loop handles, anything else for backend bugs).
ScriptedItem: TypeAlias = str | ScriptedReply | BaseModel | dict[str, Any] | BaseException
Responder: TypeAlias = Callable[[GenerationRequest], ScriptedItem]


def default_responder(request: GenerationRequest) -> ScriptedItem:
    """Answers every schema with its smallest valid object, and free text with "ok"."""
    if request.schema is None:
        return "ok"
    return json.dumps(minimal_instance(request.schema))


class ScriptedBackend:
    """Replays a script; records every request it receives in `requests`."""

    name = "scripted"
    base_url: str | None = None

    def __init__(
        self,
        script: Responder | Iterable[ScriptedItem] | None = None,
        *,
        model_id: str = "scripted",
    ) -> None:
        self.model_id = model_id
        self.requests: list[GenerationRequest] = []
        self._responder: Responder | None = None
        self._queue: collections.deque[ScriptedItem] = collections.deque()
        if script is None:
            self._responder = default_responder
        elif callable(script):
            self._responder = script
        else:
            self._queue.extend(script)

    def __repr__(self) -> str:
        source = "callable" if self._responder else f"{len(self._queue)} queued replies"
        return f"ScriptedBackend({source})"

    @property
    def remaining(self) -> int:
        """Queued replies not used yet."""
        return len(self._queue)

    def generate(self, request: GenerationRequest) -> RawReply:
        self.requests.append(request)
        if self._responder is not None:
            item = self._responder(request)
        elif self._queue:
            item = self._queue.popleft()
        else:
            raise BackendError(
                "config",
                f"the scripted model has no replies left after {len(self.requests) - 1} call(s); "
                "give it more replies or a callable",
                retryable=False,
            )
        if isinstance(item, BaseException):
            raise item
        reply = _as_reply(item)
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = sum(estimate_tokens(m.content) for m in request.messages)
        completion_tokens = reply.completion_tokens
        if completion_tokens is None:
            completion_tokens = estimate_tokens(reply.text)
        return RawReply(reply.text, Usage(prompt_tokens, completion_tokens), reply.truncated)


def _as_reply(item: ScriptedItem) -> ScriptedReply:
    if isinstance(item, ScriptedReply):
        return item
    if isinstance(item, str):
        return ScriptedReply(item)
    if isinstance(item, BaseModel):
        return ScriptedReply(item.model_dump_json())
    if isinstance(item, dict):
        return ScriptedReply(json.dumps(item))
    raise TypeError(f"a scripted reply must be str, ScriptedReply, BaseModel or dict, not {item!r}")


class ScriptedModel(ReliableModel):
    """The `scripted` model: a ReliableModel over a ScriptedBackend.

    ScriptedModel(["first reply", {"action": "look"}, BackendError(...)]) answers from the
    queue in order; ScriptedModel(fn) calls fn(request) for every backend call; ScriptedModel()
    answers each schema with its smallest valid object. Retries, repairs, cache and failures
    behave exactly as for real backends.
    """

    def __init__(
        self,
        script: Responder | Iterable[ScriptedItem] | None = None,
        *,
        options: ModelOptions | None = None,
        cache: ResponseCache | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        spec: str = "scripted",
    ) -> None:
        self.scripted = ScriptedBackend(script)
        super().__init__(
            self.scripted,
            spec=spec,
            options=options,
            cache=cache,
            sleep=sleep,
            rng=rng or random.Random(0),
        )

    @property
    def requests(self) -> list[GenerationRequest]:
        """Every backend call made so far, repair turns and retries included."""
        return self.scripted.requests
