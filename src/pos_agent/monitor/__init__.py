"""Belief-Trapping detection for any agent loop, independent of the PoS agent.

```python
from pos_agent.monitor import TrapMonitor

monitor = TrapMonitor(goal="cook the carrot")
report = monitor.observe("go east", "You are in the hall.")
if report.trapped:
    print(report.pattern, report.recovery)
```

Give `observe` what the agent believes when you have it (a PoS `Belief`, `Facts`, or a set of
fact strings) and a progress label or callable when you have one; without them the monitor works
from the observations alone and says so in `MonitorReport.belief_source`.
"""

from pos_agent.monitor.keys import Facts
from pos_agent.monitor.monitor import (
    BeliefSource,
    MonitorReport,
    ProgressFn,
    ProgressSource,
    TrapMonitor,
)

__all__ = [
    "BeliefSource",
    "Facts",
    "MonitorReport",
    "ProgressFn",
    "ProgressSource",
    "TrapMonitor",
]
