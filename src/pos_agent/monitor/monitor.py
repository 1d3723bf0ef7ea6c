"""`TrapMonitor`: Belief-Trapping detection for any agent loop, one call per step.

Each step's input is read into keys by `inputs.py`; the window is judged by the health
diagnosis (`pos_agent.health`) and the alarm (`alarm.py`) says what to do; the verdict is a
`MonitorReport` (`report.py`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from pos_agent.belief import Belief, Gap, focus_keys
from pos_agent.health import HealthConfig, HealthReport, WindowStep, WorldKeys, assess_window
from pos_agent.health.improved import TransitionReading, assess_and_read, read_latest
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
from pos_agent.monitor.evidence import Evidence, StepEvidence, call_verb
from pos_agent.monitor.inputs import BeliefInput, InputReader, StepInput, observation_key
from pos_agent.monitor.memory import DEFAULT_MEMORY_KEYS, KeyMemory
from pos_agent.monitor.report import MonitorReport, ProgressFn, ProgressSource, Reading
from pos_agent.monitor.volatile import (
    Normaliser,
    VolatileRule,
    bare,
    meter_advanced,
    meter_readings,
    numbers_shrank,
    skeleton,
)
from pos_agent.recovery.constraint import RecoveryConstraint, compose_recovery
from pos_agent.transition import Transition

_HAS_DIGIT = re.compile(r"\d")


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
        memory_keys: int = DEFAULT_MEMORY_KEYS,
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
            memory_keys: What the monitor remembers of the episode (entities, words, outputs
                and calls seen, to tell what is new) is at most about this many keys of each,
                the oldest forgotten first: a run of any length holds a bounded memory.
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
        self.memory_keys = memory_keys
        for tool, polls in self.polling_tools.items():
            if isinstance(polls, bool) or not isinstance(polls, int) or polls < 1:
                raise ValueError(f"polling_tools[{tool!r}] must be an integer >= 1")
        base = normaliser or Normaliser()
        extra = tuple(volatile)
        self.normalise = Normaliser(base.rules, extra=extra) if extra else base
        self._inputs = InputReader(goal, self.normalise)
        self._gap_belief = Belief(
            goal=self.goal,
            gaps={"goal": Gap(id="goal", kind="achievement", text=self.goal)},
            active_gap_id="goal",
        )
        self.reset()

    @property
    def remembered(self) -> int:
        """Keys the monitor holds of the episode (at most about `memory_keys` of each kind)."""
        return sum(len(m) for m in (self._seen, self._outputs, self._calls)) + len(self._foci)

    def reset(self) -> None:
        """Forget the episode: the next `observe` is step 1 of a new one."""
        self._window: deque[_Observed] = deque(maxlen=self.config.window)
        self._transitions: deque[Transition] = deque(maxlen=self.config.window)
        self._seen = KeyMemory(self.memory_keys)
        self._foci: set[tuple[frozenset[str], frozenset[str], frozenset[str]]] = set()
        self._evidence = Evidence()
        self._last_evidence: StepEvidence | None = None
        """What the floor and the semantic rule made of the latest step (improved only)."""
        self._outputs = KeyMemory(self.memory_keys)
        self._calls = KeyMemory(self.memory_keys)
        self._world: WorldKeys | None = None
        self._actions = ActionHistory()
        self._meter_call: str | None = None
        self._meter_output = ""
        self._meter_shape = ""
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
        read = self._inputs.read(clean, belief)
        novel, shape, informative, goal_moved = self._novelty(read, clean)
        label, progress_source = self._progress(action, observation, progress, novel)
        if goal_moved and progress_source == "novelty":
            label = 1
        moved = self._meter_moved(key.key, observation, shape)
        if moved and progress_source == "novelty":
            label, progress_source = 1, "meter"
        output = None if read.source == "observations" else observation_key(clean)
        seen_before = self._remember(self._outputs, output)
        action_key = self._actions.intern(key)
        failure = self._inputs.failure(clean)
        action_seen = self._remember(self._calls, action_key)
        step = WindowStep(
            read.world,
            read.focus,
            read.epistemic,
            read.achievement,
            label,
            novel,
            action=action_key,
            action_seen=action_seen,
            observation=output,
            observation_seen=seen_before,
            labelled=progress_source in ("label", "callable", "meter"),
            expected=self._normal_poll(key, clean),
            failure=failure,
            relative=not key.tools and key.words is None,
        )
        self._window.append(_Observed(step, read.belief, read.facts, read.about))
        self._transitions.append(
            Transition(self.step, key.text, observation, label, state_before=self._world)
        )
        changed = self._world is not None and self._world != read.world
        self._world = read.world
        report, reading = self._assess(read)
        if self.config.diagnosis == "improved":
            evidence = self._evidence.observe(
                action_key,
                call_verb(key.tools, key.key),
                shape,
                None if failure is None else skeleton(failure),
                informative=informative,
                progress=(label == 1 and progress_source != "novelty") or goal_moved or moved,
                waiting=step.expected,
                new_call=not action_seen,
            )
            self._last_evidence = evidence
            report = _with_evidence(
                report,
                evidence,
                model_free=read.source == "observations"
                and progress_source in ("novelty", "meter")
                and failure is None,
                on=self._since,
            )
        return self._judge(report, reading, read, progress_source, novel, changed)

    def _novelty(self, read: StepInput, clean: str) -> tuple[int, str, int, bool]:
        """First-seen things of a step: (novel, the output's skeleton, units of information
        never seen, a goal-relevant state never held)."""
        new = self._seen.novel(read.world.entities)
        novel = len(new)
        # With a belief or facts, progress is a goal-relevant state never held before in the
        # episode or a first-seen entity; words of the output the belief does not hold are not.
        goal_moved = read.source != "observations" and self._new_focus(read)
        if self.config.diagnosis != "improved":
            return novel, "", 0, goal_moved  # Eq. 5-6 read no skeletons
        shape = skeleton(clean)
        informative = self._evidence.inform(bare(shape))
        if read.source == "observations":
            # Model-free, a word that bears a digit (`etl-w2`, `build7`) is masked as the
            # skeleton masks it: it is no first-seen thing. What the output told that was not
            # known (a line or sentence never seen, numbers of any format masked) is progress
            # too: a listing of another folder, a new error; a restatement is not.
            if novel:
                novel -= sum(1 for word in new if _HAS_DIGIT.search(word) is not None)
            novel += informative
        return novel, shape, informative, goal_moved

    @staticmethod
    def _remember(seen: KeyMemory, key: str | None) -> bool:
        """Whether `key` was seen before (None: never); remembers it (the memory is bounded)."""
        if key is None:
            return False
        before = key in seen
        seen.add(key)
        return before

    def _assess(self, read: StepInput) -> tuple[HealthReport, Reading]:
        """The window's report and how its latest transition was read."""
        steps = self._window_steps(read)
        latest: TransitionReading | None
        if self.config.diagnosis == "improved":
            report, latest = assess_and_read(steps, self.config)
        else:
            # Eq. 5-6 judge the window; the step is still read as improved reads it, to name
            # what it looked like (exploration or drift, a repeat or a poll).
            report, latest = assess_window(steps, self.config), read_latest(steps, self.config)
        return report, latest.kind if latest is not None else "starting"

    def _meter_moved(self, call: str, observation: str, shape: str) -> bool:
        """Model-free, a progress meter of the same call that moved forward (`27%` then `37%`)
        or a small count named beside it that shrank (read only when the call repeats: most
        steps need no meter at all)."""
        meters = None
        moved = False
        if call == self._meter_call:
            before = self._meter_values
            if before is None:
                before = meter_readings(self._meter_output)
            meters = meter_readings(observation)
            moved = meter_advanced(before, meters) or numbers_shrank(self._meter_shape, shape)
        self._meter_call, self._meter_output, self._meter_values = call, observation, meters
        self._meter_shape = shape
        return moved

    # -- alarm -----------------------------------------------------------------------------------

    def _judge(
        self,
        report: HealthReport,
        reading: Reading,
        read: StepInput,
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

    def _new_focus(self, read: StepInput) -> bool:
        """The goal-relevant state (the focus) is one never held before in the episode."""
        focus = read.focus
        if not (focus.entities or focus.states or focus.relations):
            return False
        key = (focus.entities, focus.states, focus.relations)
        if key in self._foci:
            return False
        if len(self._foci) < self.memory_keys:
            self._foci.add(key)
        return len(self._foci) > 1

    def _normal_poll(self, key: ActionKey, clean: str) -> bool:
        """A call to a polling tool within its allowance of calls in a row."""
        tool = key.tools[0] if len(key.tools) == 1 else None
        if tool is None or tool not in self.polling_tools:
            self._poll_tool, self._polls = None, 0
            return False
        self._polls = self._polls + 1 if tool == self._poll_tool else 1
        self._poll_tool = tool
        return self._polls <= self.polling_tools[tool]

    def _progress(
        self, action: object, observation: str, given: int | bool | None, novel: int
    ) -> tuple[int, ProgressSource]:
        if given is not None:
            return int(bool(given)), "label"
        if self.progress_fn is not None:
            return int(bool(self.progress_fn(action, observation))), "callable"
        return int(novel > 0), "novelty"

    def _window_steps(self, current: StepInput) -> list[WindowStep]:
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
                else replace(o.step, focus=self._inputs.facts.about(o.facts, about))
                for o in self._window
            ]
        return [o.step for o in self._window]


def _with_evidence(
    report: HealthReport, evidence: StepEvidence, *, model_free: bool, on: int | None
) -> HealthReport:
    """The window's report, trapped where the floor or the semantic rule fires (an exact
    repeat, or varied attempts failing alike, with no evidence of progress since).

    Model-free, the window's drift (varied calls whose outputs show nothing new) does not
    start an alarm on its own: outputs read as text change with every edit, listing and build,
    and without a belief there is no state to say the change was beside the goal. It starts
    one where the output reports a failure (the window's varied attempts that fail alike), the
    semantic rule agrees, or the alarm is on."""
    pattern = evidence.floor or evidence.semantic
    if (
        model_free
        and on is None
        and report.trapped
        and report.pattern == "drift"
        and evidence.semantic is None
    ):
        report = replace(report, trapped=False, blocked=None)
    if pattern is None or (report.trapped and report.pattern is not None):
        return report
    return replace(
        report,
        ready=True,
        trapped=True,
        pattern=pattern,
        blocked=report.blocked or "achievement",
        health=min(report.health, 0.0),
    )
