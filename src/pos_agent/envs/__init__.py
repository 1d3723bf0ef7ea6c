"""Environments behind one interface: ALFWorld (+ the offline alfworld-mini suite),
ScienceWorld and TextWorldExpress.

```python
from pos_agent.envs import make_env

with make_env("alfworld-mini", "heat-mug") as env:
    observation = env.reset()
    while not observation.done:
        observation = env.step(observation.info["expert_action"])
```

An adapter of a new environment subclasses `BudgetedEnvironment` (budgets, termination and crash
handling) and returns a `BackendResult` per reset and step. The registry's entries (`env_entries`,
`env_entry`) say which extra an environment needs, which models its own roles use and which
options it takes.
"""

from pos_agent.envs._episode import BackendResult, BudgetedEnvironment
from pos_agent.envs._registry import (
    EnvEntry,
    accepts_option,
    canonical_env,
    env_entries,
    env_entry,
    env_model_roles,
    list_envs,
    list_tasks,
    make_env,
)
from pos_agent.envs._types import (
    EnvError,
    Environment,
    InfrastructureError,
    Observation,
    TaskKind,
    TaskSpec,
)

__all__ = [
    "BackendResult",
    "BudgetedEnvironment",
    "EnvEntry",
    "EnvError",
    "Environment",
    "InfrastructureError",
    "Observation",
    "TaskKind",
    "TaskSpec",
    "accepts_option",
    "canonical_env",
    "env_entries",
    "env_entry",
    "env_model_roles",
    "list_envs",
    "list_tasks",
    "make_env",
]
