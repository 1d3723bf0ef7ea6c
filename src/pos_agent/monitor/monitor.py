"""`TrapMonitor`: Belief-Trapping detection for any agent loop, one call per step."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from pos_agent.belief import Belief, Gap, focus_keys, world_keys
from pos_agent.health import HealthConfig, HealthReport, WindowStep, WorldKeys, assess_window
from pos_agent.health.window import Diagnosis
from pos_agent.monitor.keys import FactParser, Facts, TextKeys, focus_entities, goal_words
from pos_agent.recovery.constraint import RecoveryConstraint, Transition, compose_recovery

BeliefSource = Literal["belief", "facts", "observations"]
ProgressSource = Literal["label", "callable", "novelty"]
ProgressFn = Callable[[str, str], "int | bool"]
BeliefInput = Belief | Facts | Iterable[str] | None

# Without any goal information, one achievement gap stands for "the task is not done yet".
_GOAL_GAP = frozenset({"goal"})


@dataclass(frozen=True, slots=True)
class MonitorReport:
    """The monitor's verdict after one step."""

    step: int
    """1 for the first observed step."""

    health: HealthReport
    """P, S, R, H, trapped, pattern and blocked gap kind of the current window."""

    recovery: str | None
    """When trapped: the recovery text to show the agent (pattern and gap constraints)."""

    forbidden_actions: tuple[str, ...]
    """When trapped: actions the recovery tells the agent not to repeat."""

    diagnosis: Diagnosis
    """Which diagnosis judged the window: "paper" (Eq. 5-6) or "improved"."""

    belief_source: BeliefSource
    """Where the world keys came from: a Belief, plain facts, or the observations alone
    (model-free: only what the text shows)."""

    progress_source: ProgressSource
    """Where the progress label came from: given, a callable, or first-seen words/entities."""

    novel: int
    """Entities first seen at this step (exploration)."""

    @property
    def trapped(self) -> bool:
        return self.health.trapped

    @property
    def pattern(self) -> str | None:
        return self.health.pattern

    @property
    def blocked(self) -> str | None:
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
        }


@dataclass(frozen=True, slots=True)
class _Read:
    """What one step's input says, before progress and novelty are known."""

    source: BeliefSource
    world: WorldKeys
    focus: WorldKeys
    epistemic: frozenset[str]
    achievement: frozenset[str]
    belief: Belief | None = None
    facts: frozenset[str] | None = None
    about: frozenset[str] | None = None
    """Facts input: the entities the focus is about (None: the whole world)."""


@dataclass(frozen=True, slots=True)
class _Observed:
    """One step in the window, with what is needed to re-project it onto a later focus."""

    step: WindowStep
    belief: Belief | None = None
    facts: frozenset[str] | None = None
    about: frozenset[str] | None = None


class TrapMonitor:
    """Watches an agent's steps and says when it is trapped, and how to get out.

    Each step give `observe` the action and the observation it produced, and optionally what
    the agent believes (a PoS `Belief`, `Facts`, or a plain set of fact strings) and a progress
    label. Without a belief the world is derived from the observations alone (model-free);
    without a progress label, a step that shows first-seen things counts as progress.
    """

    def __init__(
        self,
        goal: str | None = None,
        *,
        health: Diagnosis = "improved",
        config: HealthConfig | None = None,
        progress: ProgressFn | None = None,
        max_recent: int = 4,
    ) -> None:
        """
        Args:
            goal: The task in words; names the gap in recovery text and, model-free, decides
                which sentences are in focus.
            health: "improved" (default) or "paper" (Eq. 5-6 exactly as published).
            config: Window and thresholds; defaults to the paper's Table 8 values.
            progress: A callable `(action, observation) -> 0/1` used when `observe` is given
                no label.
            max_recent: No-progress steps quoted in recovery text (paper Table 8: 4).
        """
        if health not in ("paper", "improved"):
            raise ValueError(f"health must be 'paper' or 'improved', got {health!r}")
        self.goal = goal or "the task"
        self.config = replace(config or HealthConfig(), diagnosis=health)
        self.progress_fn = progress
        self.max_recent = max_recent
        self._text = TextKeys(goal_words(goal))
        self._facts = FactParser()
        self._gap_belief = Belief(
            goal=self.goal,
            gaps={"goal": Gap(id="goal", kind="achievement", text=self.goal)},
            active_gap_id="goal",
        )
        self.reset()

    def reset(self) -> None:
        """Forget the episode: the next `observe` is step 1 of a new one."""
        self._window: deque[_Observed] = deque(maxlen=self.config.window)
        self._transitions: deque[Transition] = deque(maxlen=self.config.window)
        self._seen: set[str] = set()
        self._world: WorldKeys | None = None
        self.step = 0

    def observe(
        self,
        action: str,
        observation: str,
        belief: BeliefInput = None,
        *,
        progress: int | bool | None = None,
    ) -> MonitorReport:
        """Record one step (the action and what it produced) and judge the window."""
        self.step += 1
        read = self._read(observation, belief)
        novel = len(read.world.entities - self._seen)
        if novel:
            self._seen |= read.world.entities
        label, progress_source = self._progress(action, observation, progress, novel)
        step = WindowStep(read.world, read.focus, read.epistemic, read.achievement, label, novel)
        self._window.append(_Observed(step, read.belief, read.facts, read.about))
        self._transitions.append(
            Transition(self.step, action, observation, label, state_before=self._world)
        )
        self._world = read.world
        report = assess_window(self._window_steps(read), self.config)
        recovery: RecoveryConstraint | None = None
        if report.trapped:
            recovery = compose_recovery(
                report,
                list(self._transitions),
                read.belief or self._gap_belief,
                current_state=read.world,
                # Static recovery forbids what was tried in this same state: within eps_W as
                # Eq. 6 judges it, or the same records as the improved diagnosis does.
                eps_w=self.config.eps_w if self.config.diagnosis == "paper" else 0.0,
                max_recent=self.max_recent,
            )
        return MonitorReport(
            step=self.step,
            health=report,
            recovery=recovery.render() if recovery else None,
            forbidden_actions=recovery.forbidden_actions if recovery else (),
            diagnosis=self.config.diagnosis,
            belief_source=read.source,
            progress_source=progress_source,
            novel=novel,
        )

    # -- inputs ----------------------------------------------------------------------------------

    def _read(self, observation: str, belief: BeliefInput) -> _Read:
        """World keys, focus and gaps of one step."""
        if belief is None:
            world, focus = self._text.keys(observation)
            return _Read("observations", world, focus, frozenset(), _GOAL_GAP)
        if isinstance(belief, Belief):
            return _Read(
                "belief",
                world_keys(belief),
                focus_keys(belief, belief.active_gap_id),
                belief.open_gap_ids("epistemic"),
                belief.open_gap_ids("achievement"),
                belief=belief,
            )
        facts = belief if isinstance(belief, Facts) else Facts(world=frozenset(belief))
        about = focus_entities(facts, self._facts)
        if facts.goals:
            achievement = facts.goals - facts.world
        else:
            achievement = frozenset() if facts.questions else _GOAL_GAP
        return _Read(
            "facts",
            self._facts.keys(facts.world),
            self._facts.about(facts.world, about),
            facts.questions,
            achievement,
            facts=facts.world,
            about=about,
        )

    def _progress(
        self, action: str, observation: str, given: int | bool | None, novel: int
    ) -> tuple[int, ProgressSource]:
        if given is not None:
            return int(bool(given)), "label"
        if self.progress_fn is not None:
            return int(bool(self.progress_fn(action, observation))), "callable"
        return int(novel > 0), "novelty"

    def _window_steps(self, current: _Read) -> list[WindowStep]:
        """The window as `WindowStep`s, every past world projected onto the *current* focus."""
        latest = self._window[-1]
        if current.belief is not None:
            gap = current.belief.active_gap_id
            return [
                o.step
                if o is latest or o.belief is None
                else replace(o.step, focus=focus_keys(o.belief, gap))
                for o in self._window
            ]
        if current.facts is not None:
            about = current.about
            return [
                o.step
                if o is latest or o.facts is None or o.about == about
                else replace(o.step, focus=self._facts.about(o.facts, about))
                for o in self._window
            ]
        return [o.step for o in self._window]
