"""Alarm semantics an agent loop can act on: onset, escalation, release, and one piece of advice.

An **alarm** is on while the health window is trapped *and* names a pattern (static, cycle or
drift): the monitor never says "stuck" without saying how. It starts (`onset`) on the first such
step, and clears on the first step the window no longer says trapped, with nothing carried over.
While it is on, its **level** rises with the steps since onset, as `AlarmPolicy` says:

| level | when (steps since onset) | advice |
|---|---|---|
| `nudge` | 0 (the onset) | `inject` the recovery text once |
| `nudge` | 1 .. block_after - 1 | `none`: the hint is already in the agent's context |
| `block` | block_after .. stop_after - 1 | `block` the forbidden actions every step; the text once |
| `stop` | stop_after and later | `stop` the run |

Re-injecting the hint on every trapped step sends an agent back into its loop (seen with
smolagents), so the hint is given once per level. The defaults follow the anchors that escalate
(OpenRouter's agent SDK observes, then blocks, then stops; Gemini CLI nudges before it halts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Advice", "AdviceKind", "AlarmPolicy", "Escalation", "escalation_for"]

Escalation = Literal["none", "nudge", "block", "stop"]
AdviceKind = Literal["none", "inject", "block", "stop"]


@dataclass(frozen=True, slots=True)
class AlarmPolicy:
    """When a standing alarm escalates; `None` turns a level off."""

    block_after: int | None = 3
    """Steps after onset at which a still-standing alarm blocks the forbidden actions."""

    stop_after: int | None = 8
    """Steps after onset at which a still-standing alarm advises stopping the run."""

    def __post_init__(self) -> None:
        for name in ("block_after", "stop_after"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(f"AlarmPolicy.{name} must be None or an integer >= 1")
        if (
            self.block_after is not None
            and self.stop_after is not None
            and self.stop_after <= self.block_after
        ):
            raise ValueError("AlarmPolicy.stop_after must be later than block_after")


def escalation_for(policy: AlarmPolicy, steps_since_onset: int | None) -> Escalation:
    """The level of an alarm standing for `steps_since_onset` steps (None: no alarm)."""
    if steps_since_onset is None:
        return "none"
    if policy.stop_after is not None and steps_since_onset >= policy.stop_after:
        return "stop"
    if policy.block_after is not None and steps_since_onset >= policy.block_after:
        return "block"
    return "nudge"


@dataclass(frozen=True, slots=True)
class Advice:
    """What the agent loop should do now, from one step's report."""

    kind: AdviceKind
    """`none`; `inject` the text into the agent's next prompt; `block` the forbidden actions
    (and inject the text when there is one); `stop` the run (the text says why)."""

    text: str | None = None
    """The text to show the agent (or, for `stop`, the reason); None when there is nothing new
    to say this step."""

    forbidden_actions: tuple[str, ...] = ()
    """With `block`: the actions to refuse this step (`TrapMonitor.blocks(action)` tests one)."""

    level: Escalation = "none"
    """The alarm's level this step."""

    def __bool__(self) -> bool:
        """True when there is something to do."""
        return self.kind != "none"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "text": self.text,
            "forbidden_actions": list(self.forbidden_actions),
            "level": self.level,
        }


NO_ADVICE = Advice("none")


def advise(
    level: Escalation,
    previous: Escalation,
    recovery: str | None,
    forbidden: tuple[str, ...],
    steps_since_onset: int | None,
) -> Advice:
    """The advice of one step, from its level and the level of the step before."""
    if level == "none" or recovery is None:
        return NO_ADVICE
    if level == "stop":
        reason = f"Still trapped {steps_since_onset} steps after the first hint.\n{recovery}"
        return Advice("stop", reason if previous != "stop" else None, forbidden, level)
    if level == "block":
        first = previous != "block"
        if not forbidden:
            # Nothing to refuse (e.g. drift): say it again, once, more firmly.
            return Advice("inject", recovery, (), level) if first else Advice("none", level=level)
        return Advice("block", recovery if first else None, forbidden, level)
    if previous == "none":
        return Advice("inject", recovery, forbidden, level)
    return Advice("none", level=level)
