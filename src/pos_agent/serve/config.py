"""How `pos serve` runs: `ServeConfig`, its policies, and where the session traces go."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pos_agent.health.window import Diagnosis
from pos_agent.monitor import TrapMonitor
from pos_agent.serve.limits import DEFAULT_MAX_BODY
from pos_agent.serve.parsers import DEFAULT_PARSERS, StepParser

__all__ = ["NOTE_PREFIX", "POLICIES", "Policy", "ServeConfig", "default_trace_dir"]

Policy = Literal["observe", "nudge", "block"]
POLICIES: tuple[Policy, ...] = ("observe", "nudge", "block")
NOTE_PREFIX = "[PoS monitor]"
"""How every note and refusal the proxy writes starts, so the agent (and a test) can tell it."""
GOAL_CHARS = 500
"""The first user message, clipped, is the session's goal (the monitor's and the belief's)."""


def default_trace_dir() -> Path:
    """`runs/serve-<UTC time>`: one folder per proxy start, one sub-folder per session."""
    return Path("runs") / f"serve-{datetime.now(UTC):%Y%m%d-%H%M%S}"


@dataclass
class ServeConfig:
    """How `pos serve` runs. The defaults are what `pos serve --upstream URL` uses."""

    upstream: str
    """The upstream's base URL, e.g. `http://127.0.0.1:8080/v1` (`/v1/X` goes to `<upstream>/X`)."""
    policy: Policy = "observe"
    """`observe` changes nothing; `nudge` adds the monitor's note to the request; `block` also
    answers a forbidden repeated call with a refusal from the alarm's block level, and every
    call at its stop level."""
    health: Diagnosis = "improved"
    """The monitor's diagnosis: `improved` or `paper` (Eq. 5-6)."""
    belief_model: str | None = None
    """A `--model` spec: keep a PoS belief per session and give it to the monitor."""
    show_belief: bool = False
    """In belief mode, also show the agent its current belief (a note at the end)."""
    trace_dir: Path | None = None
    """Where each session writes `<session>/events.jsonl`; None: no traces."""
    trace_outputs: bool = False
    """Write the tools' outputs into the traces (redacted); by default a trace names only each
    output's length, since tool outputs are where a run's secrets are (files, env dumps)."""
    max_sessions: int = 1024
    """Sessions kept; past it the least recently used idle one goes."""
    ttl_s: float = 3600.0
    """Seconds an idle session is kept."""
    max_body_bytes: int = DEFAULT_MAX_BODY
    """A request body past this many bytes is refused with 413, without being read whole."""
    max_notes: int = 16
    """Monitor notes a session keeps to show again (the latest); older ones are dropped."""
    memory_keys: int = 20_000
    """What a session's monitor remembers of the run (entities, words, outputs and calls it
    has seen): at most about this many keys of each, the oldest forgotten first."""
    pos_token: str | None = None
    """The token the `/pos/*` endpoints need (`Authorization: Bearer TOKEN` or `X-PoS-Token`);
    None: one is made at start (`config.pos_token` holds it then)."""
    timeout_s: float = 600.0
    """Upstream timeout per request (a local model can take minutes)."""
    note_role: Literal["user", "system"] = "user"
    """The role of the note message the proxy adds (some chat templates refuse a late system)."""
    parsers: Sequence[StepParser] = DEFAULT_PARSERS
    monitor_factory: Callable[[str], TrapMonitor] | None = None
    """Builds a session's monitor from its goal (default: `TrapMonitor(goal, health=...)`)."""
    belief_model_factory: Callable[[], Any] | None = None
    """Builds the belief model (default: `load_model(belief_model)`)."""
    settings: dict[str, Any] = field(default_factory=dict)
    polling_tools: Mapping[str, int] = field(default_factory=dict)
    """Tool name -> calls in a row that are normal (a status poll); within it, no alarm."""
    exempt_tools: Collection[str] = ()
    """Tools whose calls the monitor never judges (a planning or a memory tool)."""

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        self.upstream = self.upstream.rstrip("/")
        self.polling_tools = dict(self.polling_tools)
        self.exempt_tools = tuple(self.exempt_tools)
        for name in ("max_body_bytes", "max_notes", "memory_keys"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.pos_token:
            self.pos_token = secrets.token_urlsafe(24)

    def new_monitor(self, goal: str) -> TrapMonitor:
        """A session's monitor: `monitor_factory(goal)`, else one with this config's health,
        polling and exempt tools."""
        if self.monitor_factory is not None:
            return self.monitor_factory(goal)
        return TrapMonitor(
            goal or None,
            health=self.health,
            polling_tools=self.polling_tools,
            exempt_tools=self.exempt_tools,
            memory_keys=self.memory_keys,
        )
