"""String assertions: contains (one, all, any), starts/ends with, length between."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval._results import AssertionResult
from agenteval.assertions._base import Assertion, type_name
from agenteval.assertions._common import not_a_string, require_keywords, require_str, shorten


def _fold(text: str, case_sensitive: bool) -> str:
    # casefold, not lower: 'Straße' must contain 'STRASSE'.
    return text if case_sensitive else text.casefold()


def _folded(assertion: Any, keywords: tuple[str, ...]) -> tuple[str, ...]:
    """The keywords as an assertion with ``case_sensitive`` compares them (which must be a
    bool: ``case_sensitive="no"`` would be true)."""
    case_sensitive = assertion.case_sensitive
    if not isinstance(case_sensitive, bool):
        raise TypeError(
            f"{type(assertion).__name__}: case_sensitive must be True or False, got "
            f"{type_name(case_sensitive)} ({case_sensitive!r})"
        )
    return tuple(_fold(k, case_sensitive) for k in keywords)


@dataclass(frozen=True)
class StringContains(Assertion):
    """Passes when the output contains ``keyword``.

    Case-insensitive by default, using Unicode case folding (``'CAFÉ'`` contains
    ``'café'``, ``'Straße'`` contains ``'STRASSE'``); pass ``case_sensitive=True`` for an
    exact match. An empty keyword passes.

    Example::

        self.assert_that(StringContains("refund"), output)

    Failure message: ``Expected '{actual}' to contain '{keyword}'``.
    """

    keyword: str
    case_sensitive: bool = False
    _needle: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keyword = require_str(type(self).__name__, "keyword", self.keyword)
        object.__setattr__(self, "_needle", _folded(self, (keyword,))[0])

    def evaluate(self, actual: object) -> AssertionResult:
        """Check that ``actual`` contains the keyword."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        if self._needle in _fold(actual, self.case_sensitive):
            return AssertionResult.pass_()
        return AssertionResult(
            passed=False,
            score=0.0,
            message=f"Expected '{shorten(actual)}' to contain '{self.keyword}'",
        )


@dataclass(frozen=True)
class StringContainsAll(Assertion):
    """Passes when the output contains every one of ``keywords``.

    Use it for answers that must mention several facts. The score is the fraction of
    keywords found, so a partial answer still earns partial credit; an empty list passes.
    Case-insensitive by default, like :class:`StringContains`.

    Example::

        self.assert_that(StringContainsAll(["order", "refund", "5 days"]), output)

    Failure message: ``Expected '{actual}' to contain all keywords. Missing: {missing}``,
    the missing keywords comma-separated in list order (also in ``context["missing"]``).
    """

    keywords: Sequence[str]
    case_sensitive: bool = False
    _needles: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keywords = require_keywords(type(self).__name__, self.keywords)
        object.__setattr__(self, "keywords", keywords)
        object.__setattr__(self, "_needles", _folded(self, keywords))

    def evaluate(self, actual: object) -> AssertionResult:
        """Check that ``actual`` contains every keyword; score = fraction found."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        haystack = _fold(actual, self.case_sensitive)
        missing = [
            keyword
            for keyword, needle in zip(self.keywords, self._needles, strict=True)
            if needle not in haystack
        ]
        if not missing:
            return AssertionResult.pass_()
        total = len(self.keywords)
        return AssertionResult(
            passed=False,
            score=(total - len(missing)) / total,
            message=(
                f"Expected '{shorten(actual)}' to contain all keywords. "
                f"Missing: {', '.join(missing)}"
            ),
            context={"missing": missing},
        )


@dataclass(frozen=True)
class StringContainsAny(Assertion):
    """Passes when the output contains at least one of ``keywords``.

    Use it when several phrasings are acceptable. An empty list fails (nothing can be
    found). Case-insensitive by default, like :class:`StringContains`.

    Example::

        self.assert_that(StringContainsAny(["success", "completed"]), output)

    Failure message: ``Expected '{actual}' to contain any of: {keywords}``, comma-separated.
    """

    keywords: Sequence[str]
    case_sensitive: bool = False
    _needles: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keywords = require_keywords(type(self).__name__, self.keywords)
        object.__setattr__(self, "keywords", keywords)
        object.__setattr__(self, "_needles", _folded(self, keywords))

    def evaluate(self, actual: object) -> AssertionResult:
        """Check that ``actual`` contains at least one keyword."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        haystack = _fold(actual, self.case_sensitive)
        if any(needle in haystack for needle in self._needles):
            return AssertionResult.pass_()
        return AssertionResult(
            passed=False,
            score=0.0,
            message=(
                f"Expected '{shorten(actual)}' to contain any of: "
                f"{', '.join(self.keywords) or '(no keywords given, so none can be found)'}"
            ),
        )


@dataclass(frozen=True)
class StringStartsWith(Assertion):
    """Passes when the output starts with ``prefix`` (case-sensitive; an empty prefix passes).

    Example::

        self.assert_that(StringStartsWith("Hello"), output)

    Failure message: ``Expected response to start with '{prefix}'``.
    """

    prefix: str

    def __post_init__(self) -> None:
        require_str(type(self).__name__, "prefix", self.prefix)

    def evaluate(self, actual: object) -> AssertionResult:
        """Check that ``actual`` starts with the prefix."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        if actual.startswith(self.prefix):
            return AssertionResult.pass_()
        return AssertionResult(
            passed=False,
            score=0.0,
            message=f"Expected response to start with '{self.prefix}'",
        )


@dataclass(frozen=True)
class StringEndsWith(Assertion):
    """Passes when the output ends with ``suffix`` (case-sensitive; an empty suffix passes).

    Example::

        self.assert_that(StringEndsWith("!"), output)

    Failure message: ``Expected response to end with '{suffix}'``.
    """

    suffix: str

    def __post_init__(self) -> None:
        require_str(type(self).__name__, "suffix", self.suffix)

    def evaluate(self, actual: object) -> AssertionResult:
        """Check that ``actual`` ends with the suffix."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        if actual.endswith(self.suffix):
            return AssertionResult.pass_()
        return AssertionResult(
            passed=False,
            score=0.0,
            message=f"Expected response to end with '{self.suffix}'",
        )


def _require_length(owner: str, argument: str, value: object) -> int:
    # bool is an int subclass, but StringLengthBetween(True, 5) is certainly a mistake.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{owner}: {argument} must be an int, got {type_name(value)} ({value!r})")
    if value < 0:
        raise ValueError(f"{owner}: {argument} must be 0 or more, got {value!r}")
    return value


@dataclass(frozen=True)
class StringLengthBetween(Assertion):
    """Passes when the output's length is between ``min_length`` and ``max_length``, inclusive.

    Length is counted in Unicode code points (``len(str)``): an emoji such as ``'👍'`` is 1,
    a letter followed by a combining accent is 2. ``min_length > max_length`` raises a
    ``ValueError`` when the assertion is built.

    Example::

        self.assert_that(StringLengthBetween(10, 280), output)

    Failure message: ``Expected string length to be between {min} and {max}, got {len}``.
    """

    min_length: int
    max_length: int

    def __post_init__(self) -> None:
        owner = type(self).__name__
        low = _require_length(owner, "min_length", self.min_length)
        high = _require_length(owner, "max_length", self.max_length)
        if low > high:
            raise ValueError(
                f"{owner}: min_length ({low!r}) is greater than max_length ({high!r}); "
                f"pass min_length <= max_length"
            )

    def evaluate(self, actual: object) -> AssertionResult:
        """Check the length of ``actual`` against the bounds."""
        if not isinstance(actual, str):
            return not_a_string(actual)
        length = len(actual)
        if self.min_length <= length <= self.max_length:
            return AssertionResult.pass_()
        return AssertionResult(
            passed=False,
            score=0.0,
            message=(
                f"Expected string length to be between {self.min_length} and "
                f"{self.max_length}, got {length}"
            ),
            context={"length": length},
        )
