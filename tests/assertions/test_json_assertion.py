from __future__ import annotations

import sys

import pytest

from agenteval.assertions import AssertionResult, IsValidJson


@pytest.mark.parametrize(
    "actual",
    ['{"a": 1}', "[1, 2, 3]", '"text"', "42", "-1.5e3", "true", "null", ' \n {"a": [] } \n'],
)
def test_is_valid_json_passes_on_json(actual: str) -> None:
    assert IsValidJson().evaluate(actual) == AssertionResult(passed=True, score=1.0)


@pytest.mark.parametrize(
    ("actual", "error"),
    [
        ("", "Expecting value: line 1 column 1 (char 0)"),
        ("{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ("{'a': 1}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('{"a": 1} extra', "Extra data: line 1 column 10 (char 9)"),
        ("Sure! Here is the JSON", "Expecting value: line 1 column 1 (char 0)"),
    ],
)
def test_is_valid_json_fails_with_parser_error(actual: str, error: str) -> None:
    result = IsValidJson().evaluate(actual)

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message=f"Expected valid JSON response: {error}",
        context={"actual": actual},
    )


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_is_valid_json_rejects_nan_and_infinity(constant: str) -> None:
    actual = f'{{"score": {constant}}}'

    result = IsValidJson().evaluate(actual)

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message=(
            f"Expected valid JSON response: {constant} is not valid JSON "
            "(NaN and Infinity are not part of JSON)"
        ),
        context={"actual": actual},
    )


def test_is_valid_json_accepts_nan_inside_a_string() -> None:
    assert IsValidJson().evaluate('{"value": "NaN"}').passed


def test_is_valid_json_rejects_byte_order_mark() -> None:
    result = IsValidJson().evaluate('\ufeff{"a": 1}')

    assert result.message == (
        "Expected valid JSON response: Unexpected UTF-8 BOM (decode using utf-8-sig): "
        "line 1 column 1 (char 0)"
    )


def test_is_valid_json_keeps_full_actual_in_context() -> None:
    actual = "x" * 5000

    result = IsValidJson().evaluate(actual)

    assert result.context == {"actual": actual}


def test_is_valid_json_deep_nesting_fails_instead_of_raising() -> None:
    actual = "[" * 200_000

    result = IsValidJson().evaluate(actual)

    assert result.passed is False
    assert result.message == "Expected valid JSON response: nesting too deep to parse"


@pytest.mark.skipif(
    not hasattr(sys, "get_int_max_str_digits"), reason="no integer string limit on this Python"
)
def test_is_valid_json_huge_integer_is_valid_json() -> None:
    # it failed with Python's advice to call sys.set_int_max_str_digits()
    assert IsValidJson().evaluate("1" * 10_000).passed
    assert IsValidJson().evaluate('{"n": -' + "9" * 5_000 + "}").passed
