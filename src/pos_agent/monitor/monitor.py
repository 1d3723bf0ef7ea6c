"""`TrapMonitor`: Belief-Trapping detection for any agent loop, one call per step."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from pos_agent.belief import Belief, Gap, focus_keys, world_keys
from pos_agent.health import HealthConfig, HealthReport, WindowStep, WorldKeys, assess_window
from pos_agent.health.improved import StepKind, TransitionReading, assess_and_read, read_latest
from pos_agent.health.window import Diagnosis
from pos_agent.monitor.actions import ActionHistory, ActionKey, canonical_action
from pos_agent.monitor.alarm import (
    NO_ADVICE,
    Advice,
    AlarmPolicy,
    Escalation,
    advise,
    escalation_for,
)
from pos_agent.monitor.failures import failure_signature
from pos_agent.monitor.keys import FactParser, Facts, TextKeys, focus_entities, goal_words
from pos_agent.monitor.volatile import Normaliser, VolatileRule, meter_advanced, meter_readings
from pos_agent.recovery.constraint import RecoveryConstraint, compose_recovery
from pos_agent.transition import Transition

BeliefSource = Literal["belief", "facts", "observations"]
ProgressSource = Literal["label", "callable", "novelty", "meter"]
ProgressFn = Callable[[Any, str], "int | bool"]
Reading = StepKind | Literal["exempt", "starting"]
BeliefInput = Belief | Facts | Iterable[str] | None

# Without any goal information, one achievement gap stands for "the task is not done yet".
_GOAL_GAP = frozenset({"goal"})


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
            "reading": self.reading,
            "trapped": self.trapped,
            "window_trapped": self.health.trapped,
            "onset": self.onset,
            "trapped_since": self.trapped_since,
            "escalation": self.escalation,
            "released": self.released,
            "advice": self.advice.to_dict(),
        }


@dataclass(slots=True)
class _Read:
    """What one step's input says, before progress and novelty are known (never changed once
    made; not frozen, which makes it cheaper to build)."""

    source: BeliefSource
    world: WorldKeys
    focus: WorldKeys
    epistemic: frozenset[str]
    achievement: frozenset[str]
    belief: Belief | None = None
    facts: frozenset[str] | None = None
    about: frozenset[str] | None = None
    """Facts input: the entities the focus is about (None: the whole world)."""


@dataclass(slots=True)
class _Observed:
    """One step in the window, with what is needed to re-project it onto a later focus (never
    changed once made)."""

    step: WindowStep
    belief: Belief | None = None
    facts: frozenset[str] | None = None
    about: frozenset[str] | None = None


class TrapMonitor:
    """Watches an agent's steps and says when it is trapped, and what to do about it.

    Each step give `observe` the action (a text command or a tool call) and the observation it
    produced, and optionally what the agent believes (a PoS `Belief`, `Facts`, or a plain set
    of fact strings) and a progress label. Without a belief the world is derived from the
    observations alone (model-free); without a progress label, a step that shows first-seen
    things counts as progress. Volatile tokens (timestamps, ids, durations, ...) are normalised
    away first (`pos_agent.monitor.volatile`). `report.advice` says what to do now.
    """

    def __init__(
        self,
        goal: str | None = None,
        *,
        health: Diagnosis = "improved",
        config: HealthConfig | None = None,
        progress: ProgressFn | None = None,
        max_recent: int = 4,
        policy: AlarmPolicy | None = None,
        exempt_tools: Collection[str] = (),
        polling_tools: Mapping[str, int] | None = None,
        volatile: Iterable[VolatileRule] = (),
        normaliser: Normaliser | None = None,
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
            policy: When a standing alarm escalates from a nudge to a block and a stop.
            exempt_tools: Tool names whose calls are never judged (e.g. a planning or a memory
                tool); they do not enter the window.
            polling_tools: Tool name -> how many calls in a row are normal (a status poll):
                up to that many repeats are `waiting`, not stuck.
            volatile: Extra volatile rules, run after the default ones.
            normaliser: Replaces the default rules altogether (`Normaliser(rules)`).
        """
        if health not in ("paper", "improved"):
            raise ValueError(f"health must be 'paper' or 'improved', got {health!r}")
        self.goal = goal or "the task"
        self.config = replace(config or HealthConfig(), diagnosis=health)
        self.progress_fn = progress
        self.max_recent = max_recent
        self.policy = policy or AlarmPolicy()
        self.exempt_tools = frozenset(exempt_tools)
        self.polling_tools = dict(polling_tools or {})
        for tool, polls in self.polling_tools.items():
            if isinstance(polls, bool) or not isinstance(polls, int) or polls < 1:
                raise ValueError(f"polling_tools[{tool!r}] must be an integer >= 1")
        base = normaliser or Normaliser()
        extra = tuple(volatile)
        self.normalise = Normaliser(base.rules, extra=extra) if extra else base
        self._text = TextKeys(goal_words(goal))
        self._facts = FactParser()
        self._fact_cache: dict[str, str] = {}
        self._failures: dict[str, str | None] = {}
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
        self._seen_words: set[str] = set()
        self._outputs: set[str] = set()
        self._calls: set[str] = set()
        self._world: WorldKeys | None = None
        self._actions = ActionHistory()
        self._meter_call: str | None = None
        self._meter_output = ""
        self._meter_values: tuple[float, ...] | None = None
        """`meter_readings(_meter_output)` once read (a call repeated again reads it once)."""
        self._poll_tool: str | None = None
        self._polls = 0
        self._since: int | None = None
        self._level: Escalation = "none"
        self._last: MonitorReport | None = None
        self.step = 0

    def advice(self) -> Advice:
        """What to do now, from the latest report (nothing before the first step)."""
        return self._last.advice if self._last is not None else NO_ADVICE

    def blocks(self, action: object) -> bool:
        """Whether the standing advice blocks `action` (compared by canonical key)."""
        advice = self.advice()
        if advice.kind not in ("block", "stop") or not advice.forbidden_actions:
            return False
        key = canonical_action(action, self.normalise).key
        return any(canonical_action(a, self.normalise).key == key for a in advice.forbidden_actions)

    def observe(
        self,
        action: object,
        observation: str,
        belief: BeliefInput = None,
        *,
        progress: int | bool | None = None,
    ) -> MonitorReport:
        """Record one step (the action and what it produced) and judge the window.

        `action` is a text command, a tool call (`ToolCall`, an OpenAI-style dict, or an object
        with `.name` and `.arguments`) or a list of the calls made in one turn."""
        self.step += 1
        observation = observation if isinstance(observation, str) else str(observation)
        key = canonical_action(action, self.normalise)
        if key.tools and self.exempt_tools.issuperset(key.tools):
            return self._exempt_report()
        clean = self.normalise(observation)
        read = self._read(clean, belief)
        novel = len(read.world.entities - self._seen)
        if novel:
            self._seen |= read.world.entities
        if read.source != "observations":
            novel += self._novel_words(clean)
        label, progress_source = self._progress(action, observation, progress, novel)
        # Model-free, a progress meter of the same call that moved forward is progress (read
        # only when the call repeats: most steps need no meter at all).
        meters = None
        if progress_source == "novelty" and not label and key.key == self._meter_call:
            before = self._meter_values
            if before is None:
                before = meter_readings(self._meter_output)
            meters = meter_readings(observation)
            if meter_advanced(before, meters):
                label, progress_source = 1, "meter"
        self._meter_call, self._meter_output, self._meter_values = key.key, observation, meters
        observation_key = None if read.source == "observations" else _observation_key(clean)
        seen_before = observation_key is not None and observation_key in self._outputs
        if observation_key is not None and len(self._outputs) < 100_000:
            self._outputs.add(observation_key)
        action_key = self._actions.intern(key)
        action_seen = action_key in self._calls
        if len(self._calls) < 100_000:
            self._calls.add(action_key)
        step = WindowStep(
            read.world,
            read.focus,
            read.epistemic,
            read.achievement,
            label,
            novel,
            action=action_key,
            action_seen=action_seen,
            observation=observation_key,
            observation_seen=seen_before,
            labelled=progress_source in ("label", "callable"),
            expected=self._normal_poll(key, clean),
            failure=self._failure(clean),
            relative=not key.tools and key.words is None,
        )
        self._window.append(_Observed(step, read.belief, read.facts, read.about))
        self._transitions.append(
            Transition(self.step, key.text, observation, label, state_before=self._world)
        )
        changed = self._world is not None and self._world != read.world
        self._world = read.world
        steps = self._window_steps(read)
        latest: TransitionReading | None
        if self.config.diagnosis == "improved":
            report, latest = assess_and_read(steps, self.config)
        else:
            # Eq. 5-6 judge the window; the step is still read as improved reads it, to name
            # what it looked like (exploration or drift, a repeat or a poll).
            report, latest = assess_window(steps, self.config), read_latest(steps, self.config)
        reading: Reading = latest.kind if latest is not None else "starting"
        return self._judge(report, reading, read, progress_source, novel, changed)

    # -- alarm -----------------------------------------------------------------------------------

    def _judge(
        self,
        report: HealthReport,
        reading: Reading,
        read: _Read,
        progress_source: ProgressSource,
        novel: int,
        changed: bool,
    ) -> MonitorReport:
        alarm = report.trapped and report.pattern is not None
        was_on = self._since is not None
        onset = alarm and not was_on
        if not alarm:
            self._since = None
        elif onset:
            self._since = self.step
        since = None if self._since is None else self.step - self._since
        level = escalation_for(self.policy, since)
        recovery: RecoveryConstraint | None = None
        if alarm:
            recovery = compose_recovery(
                report,
                list(self._transitions),
                read.belief or self._gap_belief,
                # Static recovery forbids what was tried in this same state: within eps_W as
                # Eq. 6 judges it, or the same records as the improved diagnosis does. A call
                # repeated while its output kept changing in small ways is static too: then
                # the repeated no-progress calls are what to forbid, whatever state they saw.
                current_state=None if changed and reading == "static" else read.world,
                eps_w=self.config.eps_w if self.config.diagnosis == "paper" else 0.0,
                max_recent=self.max_recent,
            )
        text = recovery.render() if recovery else None
        forbidden = recovery.forbidden_actions if recovery else ()
        advice = advise(level, self._level, text, forbidden, since)
        self._level = level
        result = MonitorReport(
            step=self.step,
            health=report,
            recovery=text,
            forbidden_actions=forbidden,
            diagnosis=self.config.diagnosis,
            belief_source=read.source,
            progress_source=progress_source,
            novel=novel,
            reading=reading,
            onset=onset,
            trapped_since=self._since,
            escalation=level,
            released=was_on and not alarm,
            advice=advice,
        )
        self._last = result
        return result

    def _exempt_report(self) -> MonitorReport:
        """An exempt call: the window is unchanged, and so is the alarm; nothing new to do."""
        last = self._last
        health = last.health if last is not None else HealthReport(ready=False)
        result = MonitorReport(
            step=self.step,
            health=health,
            recovery=last.recovery if last is not None else None,
            forbidden_actions=last.forbidden_actions if last is not None else (),
            diagnosis=self.config.diagnosis,
            belief_source=last.belief_source if last is not None else "observations",
            progress_source=last.progress_source if last is not None else "novelty",
            novel=0,
            reading="exempt",
            trapped_since=self._since,
            escalation=self._level,
            advice=Advice("none", level=self._level),
        )
        self._last = result
        return result

    # -- inputs ----------------------------------------------------------------------------------

    def _failure(self, clean: str) -> str | None:
        """The failure the observation reports (`failures.failure_signature`), once per text."""
        cache = self._failures
        if clean in cache:
            return cache[clean]
        failure = failure_signature(clean)
        if len(cache) < 50_000:
            cache[clean] = failure
        return failure

    def _novel_words(self, clean: str) -> int:
        """Content words of the observation never seen before in this episode."""
        words = self._text.keys(clean)[0].entities
        new = words - self._seen_words
        if new:
            self._seen_words |= new
        return len(new)

    def _normal_poll(self, key: ActionKey, clean: str) -> bool:
        """A call to a polling tool within its allowance of calls in a row."""
        tool = key.tools[0] if len(key.tools) == 1 else None
        if tool is None or tool not in self.polling_tools:
            self._poll_tool, self._polls = None, 0
            return False
        self._polls = self._polls + 1 if tool == self._poll_tool else 1
        self._poll_tool = tool
        return self._polls <= self.polling_tools[tool]

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
        facts = self._clean_facts(
            belief if isinstance(belief, Facts) else Facts(world=frozenset(belief))
        )
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

    def _clean_facts(self, facts: Facts) -> Facts:
        """`facts` with every fact string that holds a digit through the volatile rules, so
        that a new job id or timestamp in a fact is not a new thing (other facts as given)."""
        world = self._clean_set(facts.world)
        goals = self._clean_set(facts.goals)
        questions = self._clean_set(facts.questions)
        about = self._clean_set(facts.about) if facts.about is not None else None
        if (
            world is facts.world
            and goals is facts.goals
            and questions is facts.questions
            and about is facts.about
        ):
            return facts
        return Facts(world=world, goals=goals, questions=questions, about=about)

    def _clean_set(self, strings: frozenset[str]) -> frozenset[str]:
        if not strings:
            return strings
        cache = self._fact_cache
        changed = False
        out = []
        for fact in strings:
            clean = cache.get(fact)
            if clean is None:
                clean = self.normalise(fact) if _DIGITS.search(fact) else fact
                if len(cache) < 200_000:
                    cache[fact] = clean
            changed = changed or clean is not fact
            out.append(clean)
        return frozenset(out) if changed else strings

    def _progress(
        self, action: object, observation: str, given: int | bool | None, novel: int
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


_DIGITS = re.compile(r"\d+")


def _observation_key(clean: str) -> str:
    """What tells outputs apart when a belief gives the world: the normalised text with its
    spaces collapsed and the numbers the volatile rules left masked (a speed, an uptime)."""
    return _DIGITS.sub("#", " ".join(clean.split()))
