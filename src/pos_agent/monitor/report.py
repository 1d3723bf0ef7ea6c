"""`MonitorReport`: the monitor's verdict after one step, and the vocabulary it is told in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pos_agent.health import HealthReport
from pos_agent.health.improved import StepKind
from pos_agent.health.window import Diagnosis
from pos_agent.kinds import GapKind, TrapPattern
from pos_agent.monitor.alarm import NO_ADVICE, Advice, Escalation

BeliefSource = Literal["belief", "facts", "observations"]
ProgressSource = Literal["label", "callable", "novelty", "meter"]
ProgressFn = Callable[[Any, str], "int | bool"]
Reading = StepKind | Literal["exempt", "starting"]


@dataclass(frozen=True, slots=True)
class MonitorReport:
    """The monitor's verdict after one step."""

    step: int
    """1 for the first observed step."""

    health: HealthReport
    """The window's health: `persistence_e`, `persistence_a`, `stagnation`, `recurrence`,
    `lag`, `health`, and the raw `trapped`, `pattern` and `blocked` of the diagnosis."""

    recovery: str | None
    """While the alarm is on: the recovery text (pattern and gap constraints). Whether to show
    it now is `advice`'s call."""

    forbidden_actions: tuple[str, ...]
    """While the alarm is on: actions the recovery tells the agent not to repeat (canonical
    text for tool calls, e.g. `read_file {"path":"a.py"}`)."""

    diagnosis: Diagnosis
    """Which diagnosis judged the window: "paper" (Eq. 5-6) or "improved"."""

    belief_source: BeliefSource
    """Where the world keys came from: a Belief, plain facts, or the observations alone
    (model-free: only what the text shows)."""

    progress_source: ProgressSource
    """Where the progress label came from: given (`label`), a `callable`, or, without either,
    first-seen things (`novelty`) or a progress meter of the same call that moved forward
    (`meter`: 27% then 37%, rows 101,344/375,350 then 138,879/375,350)."""

    novel: int
    """Entities first seen at this step (exploration): of the belief, plus content words of
    the observation, both after the volatile rules."""

    reading: Reading = "starting"
    """How the latest transition was read: `productive`, `exploring` (no progress but
    first-seen things), `waiting` (a normal poll), `static`, `cycle`, `drift`, `unexplained`
    (nothing repeated, nothing new), `exempt` (an exempt tool), `starting` (first step)."""

    onset: bool = False
    """This step starts a new alarm."""

    trapped_since: int | None = None
    """The step the standing alarm started at; None when no alarm is on."""

    escalation: Escalation = "none"
    """The alarm's level: `none`, `nudge`, `block` or `stop` (see `AlarmPolicy`)."""

    released: bool = False
    """The alarm that stood at the previous step cleared at this one (drop any block)."""

    advice: Advice = NO_ADVICE
    """What to do now: inject a text, block actions, stop, or nothing (`Advice.kind`)."""

    @property
    def trapped(self) -> bool:
        """The alarm is on: the window is trapped and its pattern is known."""
        return self.trapped_since is not None

    @property
    def pattern(self) -> TrapPattern | None:
        return self.health.pattern

    @property
    def blocked(self) -> GapKind | None:
        return self.health.blocked

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON-able dict."""
        return {
            "step": self.step,
            **self.health.to_dict(),
            "recovery": self.recovery,
            "forbidden_actions": list(self.forbidden_actions),
            "diagnosis": self.diagnosis,
            "belief_source": self.belief_source,
            "progress_source": self.progress_source,
            "novel": self.novel,
            "reading": self.reading,
            "trapped": self.trapped,
            "window_trapped": self.health.trapped,
            "onset": self.onset,
            "trapped_since": self.trapped_since,
            "escalation": self.escalation,
            "released": self.released,
            "advice": self.advice.to_dict(),
        }
