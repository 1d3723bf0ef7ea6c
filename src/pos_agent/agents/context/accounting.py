"""The baselines' internal calls into the token ledger and the trace, counted by role.

A context method keeps its calls in its `ModelCaller`; the agent settles them once per piece of
work (a step's context, a subgoal fold, a round's manager and audit calls) with the step they
belong to, so `pos report` splits a baseline's cost by role as it splits PoS's, and the result
can say how many internal calls a method made next to its environment actions.
"""

from __future__ import annotations

from collections import Counter

from pos_agent.agents.base import RoleCaller
from pos_agent.agents.context.calls import ModelCaller
from pos_agent.events import ModelCallEvent, ModelFailureEvent
from pos_agent.llm import Completion


class InternalCalls:
    """Settles one episode's internal calls: ledger, trace, and counts per role."""

    def __init__(self, caller: ModelCaller, call: RoleCaller) -> None:
        self.caller = caller
        self.call = call
        self.by_role: Counter[str] = Counter()
        self.failures = 0

    def settle(self, step: int) -> int:
        """Account the calls made since the last settle to `step`; returns how many failed."""
        failed = 0
        for made in self.caller.drain():
            cache = self.call.ledger.record(
                made.role, made.outcome, step, prompt=made.messages or None
            )
            self.by_role[made.role] += 1
            outcome = made.outcome
            if isinstance(outcome, Completion):
                event = ModelCallEvent.of(
                    outcome, step=step, role=made.role, purpose=made.purpose, cache=cache
                )
                self.call.emit(event)
            else:
                failed += 1
                self.call.emit(
                    ModelFailureEvent.of(outcome, step=step, role=made.role, purpose=made.purpose)
                )
        self.failures += failed
        return failed
