"""What `pos run` prints while an episode plays: a line when the environment and agent are
ready, a line when each step starts and one when it ends (with its time), a line for each slow
model call, so that a run on a slow or busy machine is never silent for minutes."""

from __future__ import annotations

import time

from rich.console import Console

from pos_agent.agents.base import StepInfo
from pos_agent.cli.common import shown
from pos_agent.events import EpisodeStartEvent, Event, ModelCallEvent

# A model call that takes this long gets a line of its own (the embedded model on a busy
# machine takes minutes per call; an API model's calls take a second or two and get none).
SLOW_CALL_S = 5.0
ACTION_WIDTH = 44


def clock(seconds: float) -> str:
    """Elapsed time as m:ss (h:mm:ss past an hour)."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class RunProgress:
    """Receives the case's trace events and step reports and prints them as they happen.

    `budget` is the step budget when it is known (the last step gets no start line after it).
    """

    def __init__(self, console: Console, budget: int | None = None) -> None:
        self.console = console
        self.budget = budget
        self.started = time.monotonic()
        self.step_started = self.started
        self.next_step = 1
        self.ready = False

    def elapsed(self) -> str:
        return clock(time.monotonic() - self.started)

    def setting_up(self) -> None:
        self.console.print(
            f"[dim]{self.elapsed()}[/]  setting up the environment and the models ..."
        )

    def on_event(self, event: Event) -> None:
        """A trace event was written: the agent is ready, or a slow model call ended."""
        if isinstance(event, EpisodeStartEvent) and not self.ready:
            self.ready = True
            self.console.print(f"[dim]{self.elapsed()}[/]  ready; the episode starts")
            self._start_step()
        elif isinstance(event, ModelCallEvent) and event.latency_s >= SLOW_CALL_S:
            purpose = f" ({shown(event.purpose)})" if event.purpose else ""
            tokens = event.prompt_tokens + event.completion_tokens
            self.console.print(
                f"[dim]{self.elapsed()}        {shown(event.role)} call{purpose} took "
                f"{event.latency_s:.0f}s, {tokens} tok[/]"
            )

    def on_step(self, info: StepInfo) -> None:
        """A step ended: its line, then the next step's start unless the episode is over."""
        took = time.monotonic() - self.step_started
        self.console.print(f"[dim]{self.elapsed()}[/]  {step_line(info)}  [dim]({took:.1f}s)[/]")
        self.next_step = info.step + 1
        over_budget = self.budget is not None and info.step >= self.budget
        if not (info.success or over_budget):
            self._start_step()

    def _start_step(self) -> None:
        self.step_started = time.monotonic()
        self.console.print(f"[dim]{self.elapsed()}  step {self.next_step:>3} started ...[/]")


def step_line(info: StepInfo) -> str:
    """One step as `pos run` shows it: the action and what the step showed."""
    marks = []
    if info.health is not None:
        marks.append(f"H={info.health:.2f}")
    if info.trapped:
        marks.append(f"[red]TRAPPED {shown(info.pattern or 'no pattern')}[/]")
    if info.recovery:
        marks.append("[yellow]recovery[/]")
    if info.degraded:
        marks.append("[magenta]degraded[/]")
    if info.success:
        marks.append("[green]success[/]")
    action = f"{info.action[:ACTION_WIDTH]:<{ACTION_WIDTH}}"
    line = f"step {info.step:>3}  {shown(action)}  {' '.join(marks)}"
    if info.tokens:
        line += f"  [dim]{info.tokens} tok[/]"
    return line
