"""Turning token usage into money with a user-supplied price table.

agenteval ships no prices (they change too often to be right for long). A price table maps
a model name to USD per **million** tokens::

    prices = {
        "claude-3-5-haiku-latest": {"input": 0.80, "output": 4.00},
        "openai:gpt-4o-mini": {"input": 0.15, "output": 0.60, "cache_read": 0.075},
    }

``cache_read`` and ``cache_write`` are optional; tokens of those kinds are priced at the
``input`` price when they are missing. For cache reads that is an upper bound (they cost
less than input); for cache writes it is not: Anthropic charges 1.25x the input price for
a 5-minute cache write and 2x for a 1-hour one, so give ``cache_write`` for Anthropic
models that write the cache, or their cost is under-counted. ``Usage.input_tokens`` is
taken to exclude cache reads and writes, as the providers' usage figures are mapped in
agenteval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .._errors import ConfigError
from .._usage import Usage

Prices = Mapping[str, Mapping[str, float]]
"""Model name -> ``{"input": USD per 1M tokens, "output": ..., "cache_read": ..., ...}``."""

_KINDS = ("input", "output", "cache_read", "cache_write")

AGENT = "agent"
"""The entry that prices the agent's own tokens (what ``run`` reported)."""


def check_prices(prices: object, source: str = "prices") -> dict[str, dict[str, float]]:
    """Validate a price table (e.g. ``prices`` in ``evaluation.py``) and return a copy.

    Raises:
        ConfigError: an entry is not a mapping, lacks ``input``/``output``, has an unknown
            key, or a price that is not a non-negative number.
    """
    if not isinstance(prices, Mapping):
        raise ConfigError(
            f"{source} must be a dict of model name -> {{'input': ..., 'output': ...}} "
            f"(USD per 1M tokens), got {type(prices).__name__}"
        )
    table: dict[str, dict[str, float]] = {}
    for name, entry in prices.items():
        where = f"{source}[{name!r}]"
        if not isinstance(name, str):
            raise ConfigError(f"{where}: a model's name must be text, like 'gpt-4o-mini'")
        if name != AGENT and name.strip().lower() == AGENT:  # (no model is named so)
            raise ConfigError(f"{where}: the agent's prices go under {AGENT!r}, just so")
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"{where} must be a dict like {{'input': 0.8, 'output': 4.0}} "
                f"(USD per 1M tokens), got {entry!r}"
            )
        unknown = sorted(str(k) for k in entry if k not in _KINDS)
        if unknown:
            raise ConfigError(
                f"{where} has unknown key {unknown[0]!r}: use {', '.join(map(repr, _KINDS))}"
            )
        for kind in ("input", "output"):
            if kind not in entry:
                raise ConfigError(f"{where} needs an {kind!r} price (USD per 1M tokens)")
        for kind, value in entry.items():
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise ConfigError(
                    f"{where}[{kind!r}] must be a non-negative number of USD per 1M tokens, "
                    f"got {value!r}"
                )
        table[str(name)] = {str(k): float(v) for k, v in entry.items()}
    return table


def price_for(model_name: str, prices: Prices) -> Mapping[str, float] | None:
    """The price entry for ``model_name``, or ``None`` when the table has none.

    Tried in order: the exact name (``"anthropic:claude-x"``), the name without its
    provider prefix (``"claude-x"``), and for the name of a model on another server,
    ``"PROVIDER:NAME@url"``, ``"PROVIDER:NAME"`` (``openai`` for ``openai-compatible``) and
    the bare ``NAME``.
    """
    candidates = [model_name]
    provider, sep, bare = model_name.partition(":")
    if sep:
        candidates.append(bare)
    else:
        bare = model_name
    if "@" in bare:
        name = bare.split("@", 1)[0]
        if sep:
            candidates += [f"{provider}:{name}", f"{provider.removesuffix('-compatible')}:{name}"]
        candidates.append(name)
    for candidate in candidates:
        entry = prices.get(candidate)
        if entry is not None:
            return entry
    return None


def cost_of(usage: Usage, model_name: str, prices: Prices) -> float | None:
    """The cost in USD of ``usage`` on ``model_name``, or ``None`` if it has no price.

    Example::

        cost_of(Usage(input_tokens=1_000_000, output_tokens=2_000), "claude-x",
                {"claude-x": {"input": 3.0, "output": 15.0}})   # 3.03
    """
    entry = price_for(model_name, prices)
    if entry is None:
        return None
    input_price = entry["input"]
    per_million = (
        usage.input_tokens * input_price
        + usage.output_tokens * entry["output"]
        + usage.cache_read_tokens * entry.get("cache_read", input_price)
        + usage.cache_write_tokens * entry.get("cache_write", input_price)
    )
    return per_million / 1_000_000
