"""LOCA-Bench (the paper's fourth benchmark): MCP tool tasks whose environment grows from 8K to
256K tokens, run offline over a LOCA-Bench checkout in LOCA's own runtime.

```python
from pos_agent.envs import make_env

with make_env("loca", "WoocommerceStockAlert-8k", seed=42) as env:
    observation = env.reset()          # the task instruction; observation.tools: the MCP tools
    observation = env.step('{"tool": "filesystem_list_allowed_directories", "args": {}}')
```

`cases` lists the 525 cases and their categories, `runtime` builds the separate environment
LOCA's servers need, `environment` is the adapter and `bridge` its LOCA-side process.
"""

from pos_agent.envs.loca.cases import (
    CATEGORIES,
    CATEGORY_TITLES,
    LENGTHS,
    ROOT_ENV_VAR,
    SEEDS,
    LocaCase,
    list_loca_tasks,
    locate_checkout,
    read_cases,
)
from pos_agent.envs.loca.environment import DEFAULT_MAX_TOOL_CALLS, LocaEnvironment
from pos_agent.envs.loca.runtime import (
    RUNTIME_ENV_VAR,
    LocaRuntime,
    default_runtime_dir,
    ensure_runtime,
)

__all__ = [
    "CATEGORIES",
    "CATEGORY_TITLES",
    "DEFAULT_MAX_TOOL_CALLS",
    "LENGTHS",
    "ROOT_ENV_VAR",
    "RUNTIME_ENV_VAR",
    "SEEDS",
    "LocaCase",
    "LocaEnvironment",
    "LocaRuntime",
    "default_runtime_dir",
    "ensure_runtime",
    "list_loca_tasks",
    "locate_checkout",
    "read_cases",
]
