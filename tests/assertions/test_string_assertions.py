from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agenteval.assertions import (
    AssertionResult,
    IsValidJson,
    MatchesRegex,
    StringContains,
    StringContainsAll,
    StringContainsAny,
    StringDistance,
    StringEndsWith,
    StringLengthBetween,
    StringStartsWith,
)
from agenteval.assertions._base import Assertion

EVERY_ASSERTION = [
    StringContains("refund"),
    StringContainsAll(["refund", "order"]),
    StringContainsAny(["refund", "order"]),
    StringStartsWith("Your"),
    StringEndsWith("."),
    StringLengthBetween(0, 100),
    MatchesRegex(r"\d+"),
    IsValidJson(),
    StringDistance("refund"),
]

NON_STRINGS = [
    (42, "int"),
    (3.14, "float"),
    (True, "bool"),
    (["refund"], "list"),
    ({"refund": 1}, "dict"),
    (None, "NoneType"),
    (b"refund", "bytes"),
    (("refund",), "tuple"),
]


@pytest.mark.parametrize("assertion", EVERY_ASSERTION, ids=lambda a: type(a).__name__)
@pytest.mark.parametrize(("actual", "type_name"), NON_STRINGS, ids=[n for _, n in NON_STRINGS])
def test_every_assertion_fails_on_non_string(
    assertion: Assertion, actual: object, type_name: str
) -> None:
    result = assertion.evaluate(actual)

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message=f"Expected actual value to be a string, got {type_name}",
    )


@pytest.mark.parametrize("assertion", EVERY_ASSERTION, ids=lambda a: type(a).__name__)
def test_every_assertion_is_a_frozen_dataclass_named_after_its_class(
    assertion: Assertion,
) -> None:
    assert isinstance(assertion, Assertion)
    assert dataclasses.is_dataclass(assertion)
    assert assertion.name == type(assertion).__name__
    field = dataclasses.fields(assertion)[0].name if dataclasses.fields(assertion) else "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(assertion, field, "changed")


def test_string_contains_passes_when_keyword_present() -> None:
    result = StringContains("refund").evaluate("Your refund is on its way")

    assert result == AssertionResult(passed=True, score=1.0)


def test_string_contains_fails_with_message() -> None:
    result = StringContains("refund").evaluate("Your order shipped")

    assert result == AssertionResult(
        passed=False, score=0.0, message="Expected 'Your order shipped' to contain 'refund'"
    )


def test_string_contains_is_case_insensitive_by_default() -> None:
    assert StringContains("REFUND").evaluate("your refund").passed


@pytest.mark.parametrize(
    ("actual", "keyword"),
    [
        ("CAFÉ au lait", "café"),
        ("Straße", "STRASSE"),
        ("STRASSE", "straße"),
        ("ΣΊΣΥΦΟΣ", "σίσυφος"),
    ],
)
def test_string_contains_uses_unicode_case_folding(actual: str, keyword: str) -> None:
    assert StringContains(keyword).evaluate(actual).passed


def test_string_contains_case_sensitive_rejects_other_case() -> None:
    result = StringContains("Refund", case_sensitive=True).evaluate("your refund")

    assert result.passed is False
    assert result.message == "Expected 'your refund' to contain 'Refund'"


def test_string_contains_case_sensitive_accepts_exact_case() -> None:
    assert StringContains("Straße", case_sensitive=True).evaluate("Die Straße").passed


def test_string_contains_case_sensitive_does_not_fold() -> None:
    assert not StringContains("STRASSE", case_sensitive=True).evaluate("Straße").passed


def test_string_contains_empty_keyword_passes() -> None:
    assert StringContains("").evaluate("").passed


def test_string_contains_empty_actual_fails_for_nonempty_keyword() -> None:
    result = StringContains("x").evaluate("")

    assert result.message == "Expected '' to contain 'x'"


def test_string_contains_shortens_long_actual_in_message() -> None:
    actual = "a" * 250

    result = StringContains("b").evaluate(actual)

    assert result.message == f"Expected '{'a' * 200}…' to contain 'b'"


def test_string_contains_keeps_actual_of_200_chars_whole() -> None:
    actual = "a" * 200

    result = StringContains("b").evaluate(actual)

    assert result.message == f"Expected '{actual}' to contain 'b'"


def test_string_contains_rejects_non_string_keyword() -> None:
    with pytest.raises(TypeError) as info:
        StringContains(None)  # type: ignore[arg-type]

    assert str(info.value) == "StringContains: keyword must be a string, got NoneType (None)"


@pytest.mark.parametrize("cls", [StringContains, StringContainsAll, StringContainsAny])
def test_string_containment_rejects_a_case_sensitive_that_is_not_a_bool(cls: Any) -> None:
    keyword: Any = "x" if cls is StringContains else ["x"]
    with pytest.raises(TypeError) as info:
        cls(keyword, case_sensitive="no")  # would be true, and match exactly

    assert (
        str(info.value) == f"{cls.__name__}: case_sensitive must be True or False, got str ('no')"
    )


def test_string_contains_all_passes_when_every_keyword_present() -> None:
    result = StringContainsAll(["hello", "WORLD"]).evaluate("Hello, world!")

    assert result == AssertionResult(passed=True, score=1.0)


def test_string_contains_all_scores_fraction_found_and_lists_missing_in_order() -> None:
    result = StringContainsAll(["zeta", "hello", "alpha", "world"]).evaluate("hello world")

    assert result == AssertionResult(
        passed=False,
        score=0.5,
        message="Expected 'hello world' to contain all keywords. Missing: zeta, alpha",
        context={"missing": ["zeta", "alpha"]},
    )


def test_string_contains_all_none_found_scores_zero() -> None:
    result = StringContainsAll(["x", "y", "z"]).evaluate("abc")

    assert result.passed is False
    assert result.score == 0.0
    assert result.message == "Expected 'abc' to contain all keywords. Missing: x, y, z"


def test_string_contains_all_empty_list_passes() -> None:
    assert StringContainsAll([]).evaluate("anything") == AssertionResult(passed=True, score=1.0)


def test_string_contains_all_case_folds() -> None:
    assert StringContainsAll(["café", "STRASSE"]).evaluate("CAFÉ in der Straße").passed


def test_string_contains_all_case_sensitive() -> None:
    result = StringContainsAll(["Hello", "World"], case_sensitive=True).evaluate("Hello world")

    assert result.score == 0.5
    assert result.message == "Expected 'Hello world' to contain all keywords. Missing: World"


def test_string_contains_all_accepts_tuple_and_equals_list_form() -> None:
    assert StringContainsAll(("a", "b")) == StringContainsAll(["a", "b"])
    assert hash(StringContainsAll(("a", "b"))) == hash(StringContainsAll(["a", "b"]))


def test_string_contains_all_rejects_bare_string() -> None:
    with pytest.raises(TypeError) as info:
        StringContainsAll("hello")

    assert str(info.value) == (
        "StringContainsAll: keywords must be a list of strings, got str ('hello'); "
        "wrap a single keyword in a list: ['hello']"
    )


def test_string_contains_all_rejects_bytes_with_the_fix() -> None:
    with pytest.raises(TypeError) as info:
        StringContainsAll(b"hello")  # type: ignore[arg-type]

    assert str(info.value) == (
        "StringContainsAll: keywords must be a list of strings, got bytes (b'hello'); "
        "decode it and wrap it in a list: ['hello']"
    )


def test_string_contains_all_rejects_non_string_keyword() -> None:
    with pytest.raises(TypeError) as info:
        StringContainsAll(["a", 3])  # type: ignore[list-item]

    assert str(info.value) == "StringContainsAll: keywords[1] must be a string, got int (3)"


def test_string_contains_any_rejects_non_sequence() -> None:
    with pytest.raises(TypeError) as info:
        StringContainsAny({"a"})  # type: ignore[arg-type]

    assert str(info.value) == (
        "StringContainsAny: keywords must be a list of strings, got set ({'a'})"
    )


def test_string_contains_any_passes_when_one_keyword_present() -> None:
    result = StringContainsAny(["success", "completed"]).evaluate("Task COMPLETED")

    assert result == AssertionResult(passed=True, score=1.0)


def test_string_contains_any_fails_with_every_keyword_listed() -> None:
    result = StringContainsAny(["success", "completed"]).evaluate("Task failed")

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message="Expected 'Task failed' to contain any of: success, completed",
    )


def test_string_contains_any_empty_list_fails() -> None:
    result = StringContainsAny([]).evaluate("anything")

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message="Expected 'anything' to contain any of: (no keywords given, so none can be found)",
    )


def test_string_contains_any_case_sensitive() -> None:
    assert not StringContainsAny(["Done"], case_sensitive=True).evaluate("done").passed
    assert StringContainsAny(["Done"], case_sensitive=True).evaluate("Done.").passed


def test_string_contains_any_folds_case() -> None:
    assert StringContainsAny(["nope", "STRASSE"]).evaluate("Straße").passed


def test_string_starts_with_passes() -> None:
    assert StringStartsWith("Hello").evaluate("Hello there") == AssertionResult(
        passed=True, score=1.0
    )


def test_string_starts_with_is_case_sensitive() -> None:
    result = StringStartsWith("Hello").evaluate("hello there")

    assert result == AssertionResult(
        passed=False, score=0.0, message="Expected response to start with 'Hello'"
    )


def test_string_starts_with_empty_prefix_passes() -> None:
    assert StringStartsWith("").evaluate("").passed


def test_string_starts_with_rejects_non_string_prefix() -> None:
    with pytest.raises(TypeError) as info:
        StringStartsWith(1)  # type: ignore[arg-type]

    assert str(info.value) == "StringStartsWith: prefix must be a string, got int (1)"


def test_string_ends_with_passes() -> None:
    assert StringEndsWith("!").evaluate("Done!") == AssertionResult(passed=True, score=1.0)


def test_string_ends_with_fails_with_message() -> None:
    result = StringEndsWith("!").evaluate("Done.")

    assert result == AssertionResult(
        passed=False, score=0.0, message="Expected response to end with '!'"
    )


def test_string_ends_with_is_case_sensitive() -> None:
    assert not StringEndsWith("DONE").evaluate("done").passed


def test_string_ends_with_empty_suffix_passes() -> None:
    assert StringEndsWith("").evaluate("x").passed


@pytest.mark.parametrize("actual", ["a" * 10, "a" * 15, "a" * 20])
def test_string_length_between_is_inclusive(actual: str) -> None:
    assert StringLengthBetween(10, 20).evaluate(actual) == AssertionResult(passed=True, score=1.0)


@pytest.mark.parametrize(("actual", "length"), [("a" * 9, 9), ("a" * 21, 21), ("", 0)])
def test_string_length_between_fails_outside_bounds(actual: str, length: int) -> None:
    result = StringLengthBetween(10, 20).evaluate(actual)

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message=f"Expected string length to be between 10 and 20, got {length}",
        context={"length": length},
    )


def test_string_length_between_counts_code_points_not_bytes() -> None:
    # 'é' as e + combining acute is 2 code points; the family emoji is 5 (3 people, 2 ZWJ).
    assert StringLengthBetween(1, 1).evaluate("👍").passed
    assert StringLengthBetween(1, 1).evaluate("\u00e9").passed
    assert StringLengthBetween(2, 2).evaluate("e\u0301").passed
    assert StringLengthBetween(5, 5).evaluate("👨\u200d👩\u200d👧").passed
    assert StringLengthBetween(3, 3).evaluate("日本語").passed


def test_string_length_between_emoji_over_limit_message() -> None:
    result = StringLengthBetween(0, 2).evaluate("👍👍👍")

    assert result.message == "Expected string length to be between 0 and 2, got 3"


def test_string_length_between_equal_bounds_allowed() -> None:
    assert StringLengthBetween(0, 0).evaluate("").passed


def test_string_length_between_min_greater_than_max_raises_at_construction() -> None:
    with pytest.raises(ValueError) as info:
        StringLengthBetween(10, 5)

    assert str(info.value) == (
        "StringLengthBetween: min_length (10) is greater than max_length (5); "
        "pass min_length <= max_length"
    )


def test_string_length_between_negative_bound_raises() -> None:
    with pytest.raises(ValueError) as info:
        StringLengthBetween(-1, 5)

    assert str(info.value) == "StringLengthBetween: min_length must be 0 or more, got -1"


@pytest.mark.parametrize(("bad", "shown"), [(1.5, "float (1.5)"), (True, "bool (True)")])
def test_string_length_between_non_int_bound_raises(bad: object, shown: str) -> None:
    with pytest.raises(TypeError) as info:
        StringLengthBetween(0, bad)  # type: ignore[arg-type]

    assert str(info.value) == f"StringLengthBetween: max_length must be an int, got {shown}"
