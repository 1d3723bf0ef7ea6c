"""Belief-Trapping detection for any agent loop, independent of the PoS agent.

```python
from pos_agent.monitor import TrapMonitor

monitor = TrapMonitor(goal="cook the carrot")
report = monitor.observe("go east", "You are in the hall.")
advice = report.advice  # what to do now: none, inject a text, block actions, or stop
if advice.kind == "inject":
    print(report.pattern, advice.text)
```

Give `observe` what the agent believes when you have it (a PoS `Belief`, `Facts`, or a set of
fact strings) and a progress label or callable when you have one; without them the monitor works
from the observations alone and says so in `MonitorReport.belief_source`. Actions may be tool
calls (`ToolCall(name, arguments)` or an OpenAI-style dict); volatile tokens in outputs and
arguments (timestamps, ids, durations, ...) are normalised first. See docs/monitor.md.
"""

from pos_agent.monitor.actions import ActionKey, ToolCall, canonical_action
from pos_agent.monitor.alarm import Advice, AdviceKind, AlarmPolicy, Escalation
from pos_agent.monitor.keys import Facts
from pos_agent.monitor.monitor import TrapMonitor
from pos_agent.monitor.report import (
    BeliefSource,
    MonitorReport,
    ProgressFn,
    ProgressSource,
    Reading,
)
from pos_agent.monitor.volatile import DEFAULT_RULES, Normaliser, VolatileRule, normalise

__all__ = [
    "DEFAULT_RULES",
    "ActionKey",
    "Advice",
    "AdviceKind",
    "AlarmPolicy",
    "BeliefSource",
    "Escalation",
    "Facts",
    "MonitorReport",
    "Normaliser",
    "ProgressFn",
    "ProgressSource",
    "Reading",
    "ToolCall",
    "TrapMonitor",
    "VolatileRule",
    "canonical_action",
    "normalise",
]
