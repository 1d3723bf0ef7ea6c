"""Token counts a server reports, checked before they are stored.

A server's `usage` is outside input like its text: a broken proxy or a hostile server can send a
negative count, a string, a float or 1e12, and one such number would swamp a run's token totals
(Table 2 of the paper is computed from them). Each count must be a non-negative integer within
a generous bound of what the request could have produced; otherwise the call is accounted with
the same estimate used when a server sends no usage, and the call says so.
"""

from __future__ import annotations

from typing import Any

from pos_agent.llm._types import Usage

# A token covers at least one byte of UTF-8 text, so a prompt of B bytes cannot take more than
# B tokens; chat templates, a schema the server adds and special tokens get this much room on
# top, and everything is doubled so that no honest tokenizer is ever refused.
_PROMPT_OVERHEAD_TOKENS = 8192
_COMPLETION_OVERHEAD_TOKENS = 1024


def checked_usage(
    usage: Any,
    *,
    estimate: Usage,
    prompt_bytes: int,
    max_tokens: int,
    reply_bytes: int,
    timings: Any = None,
) -> tuple[Usage, str | None]:
    """The usage to record for one reply and, when it is not the server's, why.

    `estimate` stands in for a count that is missing or implausible: a prompt count above
    2 * prompt_bytes + overhead, or a completion count above 2 * max(max_tokens, reply_bytes) +
    overhead (a reasoning model's hidden tokens are bounded by max_tokens too). The cached
    prompt tokens are read as `cache_counts` says (`timings`: llama.cpp server's).
    """
    if not isinstance(usage, dict):
        return estimate, "the server reported no usage; tokens estimated from the text"
    bounds = {
        "prompt_tokens": prompt_bound(prompt_bytes),
        "completion_tokens": 2 * max(max_tokens, reply_bytes) + _COMPLETION_OVERHEAD_TOKENS,
    }
    fallback = {
        "prompt_tokens": estimate.prompt_tokens,
        "completion_tokens": estimate.completion_tokens,
    }
    counts: dict[str, int] = {}
    problems: list[str] = []
    for name, bound in bounds.items():
        value = usage.get(name)
        problem = _problem(value, bound)
        if problem is None and isinstance(value, int):
            counts[name] = value
        else:
            counts[name] = fallback[name]
            problems.append(f"{name} {problem}")
    read, written, reported = cache_counts(usage, timings, counts["prompt_tokens"])
    spent = Usage(counts["prompt_tokens"], counts["completion_tokens"], read, written, reported)
    if not problems:
        return spent, None
    note = (
        f"usage from the server not stored as sent ({'; '.join(problems)}); "
        "estimated from the text instead"
    )
    return spent, note


def cache_counts(usage: Any, timings: Any, prompt_tokens: int) -> tuple[int, int, bool]:
    """(cached prompt tokens read, written, whether the server reported any) from the fields
    servers use: OpenAI's and DashScope's `usage.prompt_tokens_details.cached_tokens` (and
    DashScope's explicit `cache_creation_input_tokens` there), Anthropic-style
    `usage.cache_read_input_tokens` / `cache_creation_input_tokens`, and llama.cpp server's
    `timings.cache_n`. A count that cannot be right (not a non-negative integer, more than the
    prompt) is left out, as if not sent."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    places: list[tuple[Any, str, str]] = [
        (details, "cached_tokens", "read"),
        (details, "cache_creation_input_tokens", "write"),
        (usage, "cache_read_input_tokens", "read"),
        (usage, "cache_creation_input_tokens", "write"),
        (timings, "cache_n", "read"),
    ]
    found = {"read": 0, "write": 0}
    reported = False
    for holder, name, kind in places:
        if not isinstance(holder, dict) or name not in holder:
            continue
        value = plausible_count(holder[name], prompt_tokens)
        if value is not None:
            found[kind] = max(found[kind], value)
            reported = True
    return found["read"], min(found["write"], prompt_tokens - found["read"]), reported


def prompt_bound(prompt_bytes: int) -> int:
    """The most prompt tokens a prompt of `prompt_bytes` UTF-8 bytes can honestly count."""
    return 2 * prompt_bytes + _PROMPT_OVERHEAD_TOKENS


def plausible_count(value: Any, bound: int) -> int | None:
    """`value` when it can be a token count (a non-negative integer at most `bound`), else
    None: the caller estimates instead of storing it."""
    if _problem(value, bound) is None and isinstance(value, int):
        return value
    return None


def _problem(value: Any, bound: int) -> str | None:
    if value is None:
        return "missing"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"was {_shown(value)}, not an integer"
    if value < 0:
        return f"was negative ({value})"
    if value > bound:
        return f"was {value}, more than this request can produce (at most {bound})"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
