"""Price tables: what a model's input, cached input, cache writes and output cost, and the bill
of a run's tokens under them.

A price table is a YAML file (`pos report --price-table FILE`); `prices.yaml` next to this
module ships a few documented examples, each with the date it was taken and its source. They
are examples: providers change prices, so check them before quoting a bill. A user's table may
extend or override them:

```yaml
currency: USD
per_tokens: 1000000          # prices are per this many tokens
models:
  gpt-4.1-mini:              # a model spec (`openai:gpt-4.1-mini`) matches by its name too
    cache_rule: openai       # cost/cache.py: openai, anthropic, dashscope, ...
    input: 0.40
    cached_input: 0.10       # a prompt token served from the provider's cache
    cache_write: 0.40        # a prompt token written to it (Anthropic, DashScope explicit)
    output: 1.60
    taken: "2026-06-21"      # when the price was read
    source: https://...
```

Billed tokens put every token at the input price's scale: uncached prompt tokens count 1,
cached ones `cached_input / input`, written ones `cache_write / input`, output tokens
`output / input`. Without a table (`perf.cost`) a cached price is given as a fraction of the
input price, and output tokens count 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pos_agent.cost.cache import CACHE_RULES

EXAMPLES = "prices.yaml"


@dataclass(frozen=True)
class ModelPrice:
    """One model's prices, per `per_tokens` tokens."""

    name: str
    input: float
    output: float
    cached_input: float
    cache_write: float
    cache_rule: str = "openai"
    taken: str = ""
    source: str = ""

    @classmethod
    def of(cls, name: str, data: Mapping[str, Any]) -> ModelPrice:
        """From one `models:` entry; a clear error for a missing or negative price."""
        if not isinstance(data, Mapping):
            raise ValueError(f"price table: {name!r} must be a mapping of prices")
        values: dict[str, float] = {}
        for key in ("input", "output"):
            values[key] = _price(name, key, data.get(key))
        values["cached_input"] = _price(
            name, "cached_input", data.get("cached_input", data["input"])
        )
        values["cache_write"] = _price(name, "cache_write", data.get("cache_write", data["input"]))
        rule = str(data.get("cache_rule", "openai"))
        if rule not in CACHE_RULES:
            raise ValueError(
                f"price table: {name!r} has cache_rule {rule!r}; use one of {', '.join(CACHE_RULES)}"
            )
        return cls(
            name,
            cache_rule=rule,
            taken=str(data.get("taken", "")),
            source=str(data.get("source", "")),
            **values,
        )


@dataclass(frozen=True)
class PriceTable:
    """Prices per model, in one currency."""

    models: dict[str, ModelPrice] = field(default_factory=dict)
    currency: str = "USD"
    per_tokens: int = 1_000_000

    def price(self, model: str) -> ModelPrice | None:
        """The price of a model spec: the spec itself, else its name after the backend prefix
        (`openai:gpt-4.1-mini` -> `gpt-4.1-mini`), else the `*` entry, else None."""
        for key in (model, model.split(":", 1)[-1], "*"):
            if key in self.models:
                return self.models[key]
        return None

    def cost(self, model: str, tokens: TokenCounts) -> float | None:
        """What `tokens` of `model` cost, in `currency`; None when the model has no price."""
        price = self.price(model)
        if price is None:
            return None
        spent = (
            tokens.uncached * price.input
            + tokens.cached * price.cached_input
            + tokens.written * price.cache_write
            + tokens.completion * price.output
        )
        return spent / self.per_tokens

    def billed(self, model: str, tokens: TokenCounts) -> float | None:
        """`tokens` at the input price's scale (see the module's docstring)."""
        price = self.price(model)
        if price is None or price.input <= 0:
            return None
        return tokens.billed(
            price.cached_input / price.input,
            price.cache_write / price.input,
            price.output / price.input,
        )


@dataclass(frozen=True)
class TokenCounts:
    """A bill's token counts: prompt tokens split by how the cache served them."""

    prompt: int = 0
    completion: int = 0
    cached: int = 0
    written: int = 0

    @property
    def uncached(self) -> int:
        return max(0, self.prompt - self.cached - self.written)

    def billed(self, cached_price: float, write_price: float = 1.0, output: float = 1.0) -> float:
        """Billed tokens with cached, written and output tokens at these fractions of the
        input price."""
        return (
            self.uncached
            + self.cached * cached_price
            + self.written * write_price
            + self.completion * output
        )

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.cached + other.cached,
            self.written + other.written,
        )


def token_counts(totals: Mapping[str, Any]) -> TokenCounts:
    """From a ledger's totals of one role (`CallTotals.to_dict()`): the server's cache counts
    where it sent them, the estimate for the calls where it did not. Results written before
    cached tokens were recorded count as uncached."""
    return TokenCounts(
        prompt=int(totals.get("prompt_tokens", 0) or 0),
        completion=int(totals.get("completion_tokens", 0) or 0),
        cached=int(totals.get("cached_prompt_tokens", 0) or 0)
        + int(totals.get("estimated_cached_tokens", 0) or 0),
        written=int(totals.get("cache_write_tokens", 0) or 0)
        + int(totals.get("estimated_write_tokens", 0) or 0),
    )


def load_prices(path: Path | str | None = None, *, with_examples: bool = True) -> PriceTable:
    """The price table in `path` (YAML), over the shipped examples unless `with_examples` is
    False; `path` None: the examples alone."""
    merged: dict[str, ModelPrice] = {}
    currency, per = "USD", 1_000_000
    sources: list[tuple[str, str]] = []
    if with_examples or path is None:
        text = resources.files("pos_agent.cost").joinpath(EXAMPLES).read_text(encoding="utf-8")
        sources.append((EXAMPLES, text))
    if path is not None:
        sources.append((str(path), Path(path).read_text(encoding="utf-8")))
    for where, text in sources:
        data = _yaml(where, text)
        currency = str(data.get("currency", currency))
        per = int(data.get("per_tokens", per))
        models = data.get("models") or {}
        if not isinstance(models, Mapping):
            raise ValueError(f"{where}: `models` must map model names to prices")
        for name, entry in models.items():
            try:
                merged[str(name)] = ModelPrice.of(str(name), entry)
            except (KeyError, ValueError) as exc:
                raise ValueError(f"{where}: {exc}") from None
    return PriceTable(merged, currency, per)


def _yaml(where: str, text: str) -> Mapping[str, Any]:
    import yaml  # the cli extra's; the core never needs it

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{where} is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: a price table is a mapping with `models:`")
    return data


def _price(name: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"price table: {name!r} needs a non-negative number for {key!r}")
    return float(value)
