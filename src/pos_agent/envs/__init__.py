"""Environments behind one interface: ALFWorld (+ the offline alfworld-mini suite),
ScienceWorld and TextWorldExpress.

```python
from pos_agent.envs import make_env

with make_env("alfworld-mini", "heat-mug") as env:
    observation = env.reset()
    while not observation.done:
        observation = env.step(observation.info["expert_action"])
```
"""

from pos_agent.envs._registry import list_envs, list_tasks, make_env
from pos_agent.envs._types import (
    EnvError,
    Environment,
    InfrastructureError,
    Observation,
    TaskKind,
    TaskSpec,
)

__all__ = [
    "EnvError",
    "Environment",
    "InfrastructureError",
    "Observation",
    "TaskKind",
    "TaskSpec",
    "list_envs",
    "list_tasks",
    "make_env",
]
