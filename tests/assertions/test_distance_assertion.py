from __future__ import annotations

import subprocess
import sys

import pytest

from agenteval._errors import MissingDependencyError
from agenteval.assertions import AssertionResult, StringDistance, _distance


def test_string_distance_identical_scores_one() -> None:
    result = StringDistance("hello world").evaluate("hello world")

    assert result == AssertionResult(passed=True, score=1.0, context={"distance": 0})


def test_string_distance_score_is_one_minus_distance_over_max() -> None:
    # kitten -> sitting: 3 edits
    result = StringDistance("sitting", threshold=0.5, max_distance=10).evaluate("kitten")

    assert result == AssertionResult(passed=True, score=0.7, context={"distance": 3})


def test_string_distance_below_threshold_fails_with_message() -> None:
    result = StringDistance("sitting", threshold=0.8, max_distance=10).evaluate("kitten")

    assert result == AssertionResult(
        passed=False,
        score=0.7,
        message=(
            "Expected 'kitten' to be similar to 'sitting' "
            "(distance: 3, threshold: 0.8, max_accepted: 10)"
        ),
        context={"distance": 3},
    )


@pytest.mark.parametrize(
    ("distance", "max_distance", "threshold"),
    [(3, 10, 0.7), (9, 10, 0.1), (1, 3, 2 / 3), (25, 50, 0.5), (10, 50, 0.8)],
)
def test_string_distance_score_equal_to_threshold_passes(
    distance: int, max_distance: int, threshold: float
) -> None:
    reference = "a" * distance
    assertion = StringDistance(reference, threshold=threshold, max_distance=max_distance)

    result = assertion.evaluate("")

    assert result.passed is True
    assert result.score == pytest.approx(threshold)


def test_string_distance_just_below_threshold_fails() -> None:
    result = StringDistance("a" * 26, threshold=0.5, max_distance=50).evaluate("")

    assert result.passed is False
    assert result.score == pytest.approx(0.48)


def test_string_distance_equal_to_max_distance_scores_zero_and_fails_default_threshold() -> None:
    result = StringDistance("abcde", threshold=0.5, max_distance=5).evaluate("")

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message=(
            "Expected '' to be similar to 'abcde' (distance: 5, threshold: 0.5, max_accepted: 5)"
        ),
        context={"distance": 5},
    )


def test_string_distance_equal_to_max_distance_passes_zero_threshold() -> None:
    result = StringDistance("abcde", threshold=0.0, max_distance=5).evaluate("")

    assert result == AssertionResult(passed=True, score=0.0, context={"distance": 5})


def test_string_distance_over_max_fails_with_short_message() -> None:
    result = StringDistance("abcdef", threshold=0.0, max_distance=5).evaluate("")

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message="Expected '' to be similar to 'abcdef' (distance: 6, max_accepted: 5)",
        context={"distance": 6},
    )


def test_string_distance_max_zero_equal_strings_pass_with_score_one() -> None:
    result = StringDistance("same", threshold=1.0, max_distance=0).evaluate("same")

    assert result == AssertionResult(passed=True, score=1.0, context={"distance": 0})


def test_string_distance_max_zero_different_strings_fail() -> None:
    result = StringDistance("same", max_distance=0).evaluate("Same")

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message="Expected 'Same' to be similar to 'same' (distance: 1, max_accepted: 0)",
        context={"distance": 1},
    )


def test_string_distance_counts_code_points() -> None:
    # One emoji substituted for another is one edit, not four bytes.
    result = StringDistance("ok 👍", max_distance=4).evaluate("ok 👎")

    assert result.context == {"distance": 1}
    assert result.score == 0.75


def test_string_distance_is_case_sensitive() -> None:
    assert StringDistance("ABC", max_distance=3).evaluate("abc").context == {"distance": 3}


def test_string_distance_shortens_long_values_in_message() -> None:
    result = StringDistance("b" * 300, max_distance=5).evaluate("a" * 300)

    assert result.message == (
        f"Expected '{'a' * 200}…' to be similar to '{'b' * 200}…' (distance: 300, max_accepted: 5)"
    )


@pytest.mark.parametrize("threshold", [-0.1, 1.5, float("nan")])
def test_string_distance_rejects_threshold_outside_unit_interval(threshold: float) -> None:
    with pytest.raises(ValueError) as info:
        StringDistance("x", threshold=threshold)

    assert str(info.value) == (
        f"StringDistance: threshold must be between 0 and 1, got {threshold!r}"
    )


def test_string_distance_rejects_non_number_threshold() -> None:
    with pytest.raises(TypeError) as info:
        StringDistance("x", threshold="0.5")  # type: ignore[arg-type]

    assert str(info.value) == (
        "StringDistance: threshold must be a number between 0 and 1, got str ('0.5')"
    )


def test_string_distance_rejects_negative_max_distance() -> None:
    with pytest.raises(ValueError) as info:
        StringDistance("x", max_distance=-1)

    assert str(info.value) == "StringDistance: max_distance must be 0 or more, got -1"


def test_string_distance_rejects_float_max_distance() -> None:
    with pytest.raises(TypeError) as info:
        StringDistance("x", max_distance=2.5)  # type: ignore[arg-type]

    assert str(info.value) == "StringDistance: max_distance must be an int, got float (2.5)"


def test_string_distance_rejects_non_string_reference() -> None:
    with pytest.raises(TypeError) as info:
        StringDistance(None)  # type: ignore[arg-type]

    assert str(info.value) == "StringDistance: reference must be a string, got NoneType (None)"


def test_string_distance_missing_rapidfuzz_gives_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _distance._levenshtein.cache_clear()
    monkeypatch.setitem(sys.modules, "rapidfuzz", None)
    monkeypatch.setitem(sys.modules, "rapidfuzz.distance", None)
    try:
        with pytest.raises(MissingDependencyError) as info:
            StringDistance("x").evaluate("y")
    finally:
        _distance._levenshtein.cache_clear()

    assert str(info.value) == (
        "StringDistance needs the 'rapidfuzz' package: pip install rapidfuzz"
    )


def test_string_distance_imports_rapidfuzz_only_when_evaluated() -> None:
    code = (
        "import sys\n"
        "from agenteval.assertions import StringDistance\n"
        "a = StringDistance('abc')\n"
        "print('rapidfuzz' in sys.modules)\n"
        "a.evaluate('abd')\n"
        "print('rapidfuzz' in sys.modules)\n"
    )

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout

    assert out.split() == ["False", "True"]
