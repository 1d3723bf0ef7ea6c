"""What `pos run` and `pos bench` share: the console, and the model options a user sets on the
command line. Options with a closed set of values are annotated with the library's Literal
types (`RecoveryMode`, `CacheMode`), so --help lists the values and bad ones are refused
without a second list here."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

# Text from models, servers, tools, environments and files is printed through `shown`, so that
# a reply such as "[/api/cart]" is data, never rich markup (which it would break or swallow).
console = Console(highlight=False, soft_wrap=True, emoji=False)


def shown(value: object) -> str:
    """`value` as text that rich prints literally."""
    return escape(str(value))


def model_options(
    *,
    base_url: str | None,
    cache: str,
    timeout_s: float | None,
    max_retries: int | None,
) -> dict[str, Any]:
    """ModelOptions fields from the command line; unset ones keep the library defaults."""
    options: dict[str, Any] = {"base_url": base_url, "cache_mode": cache}
    if timeout_s is not None:
        options["timeout_s"] = timeout_s
    if max_retries is not None:
        options["max_retries"] = max_retries
    return options


TIMEOUT_HELP = (
    "Deadline of one model request in seconds (default 60); a server that does not answer in "
    "time is retried, then the case ends as an unscored infra_error."
)
RETRIES_HELP = "Retries of a model request after a timeout, HTTP 429/5xx or a dropped connection."
CASE_TIMEOUT_HELP = (
    "Wall-clock limit per case in seconds (default: none). A case that reaches it is not scored "
    "(infra_error): step budgets, not wall time, are the paper's budget."
)
