"""The event every trace line is: the common fields, and the registry of kinds by their `event`
literal (a subclass registers itself when it is defined)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field

TRACE_VERSION = 2
"""Version 2: typed events (this module). Version 1 wrote free keyword payloads; `upgrade_v1`
reads them."""

Scope = Literal["local", "global"]


class Event(BaseModel):
    """Fields every event carries. Subclasses set `event` to a literal kind name."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    v: int = Field(default=TRACE_VERSION, description="Trace version the event was written with.")
    event: str = Field(description="The event kind.")
    step: int | None = Field(
        default=None, description="Episode step (the observation index) it belongs to."
    )
    t: float = Field(default=0.0, description="Seconds since the trace was opened.")

    kinds: ClassVar[dict[str, type[Event]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Register a concrete kind: a subclass whose `event` is a one-value Literal."""
        super().__pydantic_init_subclass__(**kwargs)
        declared = cls.model_fields["event"]
        if get_origin(declared.annotation) is not Literal:
            return  # a base that groups shared fields, not a kind of its own
        (kind,) = get_args(declared.annotation)
        if declared.default != kind:
            raise TypeError(f'{cls.__name__}: write `event: Literal["{kind}"] = "{kind}"`')
        if kind in Event.kinds and Event.kinds[kind].__qualname__ != cls.__qualname__:
            raise TypeError(f"event kind {kind!r} is defined twice")
        Event.kinds[kind] = cls
