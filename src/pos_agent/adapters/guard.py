"""`Guard`: one `TrapMonitor` per agent run, with what every adapter needs around it.

A framework adapter (smolagents, openai-agents, LangChain) or a hand-written loop does three
things with the monitor: feed it each tool call and its output, show the agent the hint once when
the advice says so, and refuse a call the advice blocks. `Guard` holds the monitor and that
state, so that each adapter is only the glue to its framework:

    guard = Guard(goal="make the tests pass")
    report = guard.observe(ToolCall("pytest", {}), output)  # after each tool call
    note = guard.take_hint()  # None, or the text to put where the model reads it next
    refusal = guard.refusal(next_call)  # None, or the text to answer a blocked call with

The adapters call `feed`, which fails open: a monitor that raises is logged and counted, and
the agent's call goes on as if no monitor were there.

**Thread safety.** `TrapMonitor` is not thread-safe (its window is plain state). `Guard`
serialises every call with a lock, so one guard may be fed from the threads a framework runs
tools in (LangGraph runs parallel tool calls in a thread pool), and `aobserve` is the same call
for async code (the monitor costs about 0.1 ms a step: it runs inline, with no thread hop). One
guard watches one agent run; `reset()` starts a new one.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from pos_agent.monitor import Advice, MonitorReport, ToolCall, TrapMonitor

__all__ = ["HINT_PREFIX", "REFUSED", "Guard", "TrapStop", "watch"]

log = logging.getLogger(__name__)

HINT_PREFIX = "[PoS monitor] "
"""Starts every text an adapter shows the agent, so that a reader of the transcript (and a test)
can tell the monitor's words from the tool's."""

REFUSED = HINT_PREFIX + "Refused:"
"""Starts every refusal text: a tool output that holds it is a refused call, never progress."""

P = ParamSpec("P")
R = TypeVar("R")


class TrapStop(RuntimeError):
    """Raised by an adapter that was asked to end the run when the advice says `stop`."""

    def __init__(self, report: MonitorReport) -> None:
        self.report = report
        text = report.advice.text or report.recovery or "still trapped"
        super().__init__(f"PoS monitor: stop at step {report.step} ({report.pattern}): {text}")


class Guard:
    """A `TrapMonitor` for one agent run, with the pending hint, blocking and stop state."""

    def __init__(
        self,
        monitor: TrapMonitor | None = None,
        *,
        goal: str | None = None,
        agent_name: str | None = None,
        session: str | None = None,
        telemetry: bool | None = None,
        **monitor_options: Any,
    ) -> None:
        """
        Args:
            monitor: The monitor to use; by default `TrapMonitor(goal, **monitor_options)`.
            goal: The task in words (only when no monitor is given).
            agent_name: Names the agent in telemetry (`gen_ai.agent.name`).
            session: Names the run in telemetry (`gen_ai.conversation.id`).
            telemetry: Emit an OpenTelemetry span per verdict: True, False, or None to follow
                `pos_agent.telemetry` (off unless enabled there or by `POS_OTEL=1`).
            monitor_options: Passed to `TrapMonitor` (e.g. `exempt_tools`, `polling_tools`).
        """
        if monitor is not None and (goal is not None or monitor_options):
            raise ValueError("give either a monitor or the options to build one, not both")
        self.monitor = monitor or TrapMonitor(goal, **monitor_options)
        self.agent_name = agent_name
        self.session = session
        self.telemetry = telemetry
        self._lock = threading.Lock()
        self._hint: str | None = None
        self.last: MonitorReport | None = None
        """The latest report (None before the first step)."""
        self.reports: list[MonitorReport] = []
        """Every report of this run, in order."""
        self.errors = 0
        """Steps on which the monitor raised (`feed` fails open)."""

    def reset(self) -> None:
        """Forget the run: the next step is step 1 of a new one."""
        with self._lock:
            self.monitor.reset()
            self._hint = None
            self.last = None
            self.reports = []

    def observe(
        self,
        action: object,
        observation: object,
        belief: Any = None,
        *,
        progress: int | bool | None = None,
    ) -> MonitorReport:
        """Feed one step to the monitor (thread-safe). When the advice has a text to show (an
        onset, a block, a stop), it becomes the pending hint that `take_hint` hands out once."""
        text = observation if isinstance(observation, str) else str(observation)
        with self._lock:
            report = self.monitor.observe(action, text, belief, progress=progress)
            self.last = report
            self.reports.append(report)
            if report.advice.text:
                self._hint = HINT_PREFIX + report.advice.text
        self._emit(report, action)
        return report

    def feed(
        self,
        action: object,
        observation: object,
        belief: Any = None,
        *,
        progress: int | bool | None = None,
    ) -> MonitorReport | None:
        """`observe` that fails open, as the adapters call it: an error in the monitor is logged
        and counted (`errors`), and the agent goes on as if no monitor were there (None)."""
        try:
            return self.observe(action, observation, belief, progress=progress)
        except Exception:
            self.errors += 1
            log.exception("PoS monitor failed on a step; the agent goes on unwatched")
            return None

    async def aobserve(
        self,
        action: object,
        observation: object,
        belief: Any = None,
        *,
        progress: int | bool | None = None,
    ) -> MonitorReport:
        """`observe` for async code (the same call: the monitor is fast enough to run inline)."""
        return self.observe(action, observation, belief, progress=progress)

    @property
    def advice(self) -> Advice:
        """What to do now, from the latest step."""
        return self.monitor.advice()

    @property
    def stopped(self) -> bool:
        """The latest advice says to end the run."""
        return self.advice.kind == "stop"

    def take_hint(self) -> str | None:
        """The text to show the agent now, once (then None until the advice says more)."""
        with self._lock:
            hint, self._hint = self._hint, None
        return hint

    def peek_hint(self) -> str | None:
        """The pending hint, without taking it."""
        return self._hint

    def refusal(self, action: object) -> str | None:
        """The text to answer `action` with instead of running it, when the standing advice
        blocks it (compared by canonical key); None when the call may run."""
        try:
            with self._lock:
                blocked = self.monitor.blocks(action)
                last = self.last
        except Exception:  # fail open: a monitor bug never refuses a call
            self.errors += 1
            log.exception("PoS monitor failed to judge a call; it runs")
            return None
        if not blocked or last is None:
            return None
        why = last.recovery or "it was tried already without progress"
        return (
            f"{REFUSED} this call was not run. The agent is trapped "
            f"({last.pattern}) and this call is one of the repeated ones. Do something else.\n"
            f"{why}"
        )

    def _emit(self, report: MonitorReport, action: object) -> None:
        if self.telemetry is False:
            return
        from pos_agent import telemetry

        if self.telemetry is None and not telemetry.enabled():
            return
        try:
            telemetry.record_verdict(
                report,
                agent_name=self.agent_name,
                session=self.session,
                action=action,
                force=self.telemetry is True,
            )
        except Exception:  # telemetry never breaks the agent
            log.exception("PoS telemetry failed")


def watch(guard: Guard, *, name: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a tool function for a hand-written loop (or any framework that takes plain
    functions): each call is fed to `guard` as `ToolCall(name, kwargs)` with its result; a call
    the advice blocks returns the refusal text instead of running; a pending hint is appended to
    the result the model reads next. Works on sync and async functions.

        guard = Guard(goal="fix the build")

        @watch(guard)
        def run_tests(path: str) -> str: ...
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        tool = name or function.__name__
        signature = inspect.signature(function)

        def call_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> ToolCall:
            try:
                bound = signature.bind(*args, **kwargs)
                arguments = dict(bound.arguments)
            except TypeError:
                arguments = {"args": list(args), **kwargs}
            return ToolCall(tool, arguments)

        def finish(call: ToolCall, result: Any) -> Any:
            guard.feed(call, result)
            hint = guard.take_hint()
            if hint is None:
                return result
            return f"{result}\n\n{hint}"

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                call = call_of(args, kwargs)
                refusal = guard.refusal(call)
                if refusal is not None:
                    guard.feed(call, refusal, progress=0)
                    return refusal
                return finish(call, await function(*args, **kwargs))

            return run_async  # type: ignore[return-value]

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            call = call_of(args, kwargs)
            refusal = guard.refusal(call)
            if refusal is not None:
                guard.feed(call, refusal, progress=0)
                return refusal
            return finish(call, function(*args, **kwargs))

        return run

    return decorate
