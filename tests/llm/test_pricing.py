from __future__ import annotations

from typing import Any

import pytest

from agenteval._errors import ConfigError
from agenteval._usage import Usage
from agenteval.llm._pricing import check_prices, cost_of, price_for

PRICES = {
    "claude-x": {"input": 3.0, "output": 15.0},
    "openai:gpt-y": {"input": 0.15, "output": 0.6, "cache_read": 0.075},
    "llama3:8b": {"input": 0.0, "output": 0.0},
}


def test_cost_of_prices_input_and_output_per_million_tokens() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=2_000)

    assert cost_of(usage, "claude-x", PRICES) == pytest.approx(3.03)


def test_cost_of_uses_cache_prices_or_falls_back_to_the_input_price() -> None:
    usage = Usage(cache_read_tokens=1_000_000, cache_write_tokens=1_000_000)

    assert cost_of(usage, "openai:gpt-y", PRICES) == pytest.approx(0.075 + 0.15)


def test_cost_of_an_unpriced_model_is_none() -> None:
    assert cost_of(Usage(input_tokens=5), "anthropic:unknown", PRICES) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("claude-x", "claude-x"),
        ("anthropic:claude-x", "claude-x"),
        ("openai:gpt-y", "openai:gpt-y"),
        ("openai-compatible:llama3:8b@http://127.0.0.1:8000/v1", "llama3:8b"),
        # OpenAI's or Anthropic's model behind a gateway: priced as the provider's own
        ("openai-compatible:gpt-y@https://gateway.example/v1", "openai:gpt-y"),
        ("anthropic:claude-x@https://gateway.example", "claude-x"),
    ],
)
def test_price_for_tries_the_name_without_provider_and_url(name: str, expected: str) -> None:
    assert price_for(name, PRICES) is PRICES[expected]


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        (
            [],
            "prices must be a dict of model name -> {'input': ..., 'output': ...} "
            "(USD per 1M tokens), got list",
        ),
        (
            {"m": 3.0},
            "prices['m'] must be a dict like {'input': 0.8, 'output': 4.0} (USD per 1M "
            "tokens), got 3.0",
        ),
        ({"m": {"input": 1.0}}, "prices['m'] needs an 'output' price (USD per 1M tokens)"),
        (
            {"m": {"input": 1.0, "output": 2.0, "cached": 0.1}},
            "prices['m'] has unknown key 'cached': use 'input', 'output', 'cache_read', "
            "'cache_write'",
        ),
        (
            {"m": {"input": -1, "output": 2.0}},
            "prices['m']['input'] must be a non-negative number of USD per 1M tokens, got -1",
        ),
        (
            {"m": {"input": "1", "output": 2.0}},
            "prices['m']['input'] must be a non-negative number of USD per 1M tokens, got '1'",
        ),
    ],
)
def test_check_prices_rejects_a_malformed_table(prices: Any, message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        check_prices(prices)

    assert str(excinfo.value) == message


def test_check_prices_returns_a_float_copy() -> None:
    assert check_prices({"m": {"input": 1, "output": 2}}) == {"m": {"input": 1.0, "output": 2.0}}
