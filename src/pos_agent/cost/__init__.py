"""What a run costs in money: provider prompt-cache rules, the estimate of cached tokens where
a server reports none, and price tables (YAML) to bill tokens with.

Pure functions and small dataclasses; no import of the rest of the package, so the token
ledger (`llm`) and the reports (`bench`) can both use it.
"""

from pos_agent.cost.cache import (
    CACHE_RULES,
    CacheEstimate,
    CacheRule,
    PrefixCache,
    cache_rule,
    prompt_breakpoints,
    prompt_text,
    shared_prefix,
)
from pos_agent.cost.prices import (
    ModelPrice,
    PriceTable,
    TokenCounts,
    load_prices,
    token_counts,
)

__all__ = [
    "CACHE_RULES",
    "CacheEstimate",
    "CacheRule",
    "ModelPrice",
    "PrefixCache",
    "PriceTable",
    "TokenCounts",
    "cache_rule",
    "load_prices",
    "prompt_breakpoints",
    "prompt_text",
    "shared_prefix",
    "token_counts",
]
