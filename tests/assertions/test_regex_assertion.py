from __future__ import annotations

import re

import pytest

from agenteval.assertions import AssertionResult, MatchesRegex


def test_matches_regex_passes_on_full_match() -> None:
    result = MatchesRegex(r"^\d{3}-\d{2}-\d{4}$").evaluate("123-45-6789")

    assert result == AssertionResult(passed=True, score=1.0)


def test_matches_regex_searches_anywhere() -> None:
    assert MatchesRegex(r"order #\d+").evaluate("See order #123 for details").passed


def test_matches_regex_fails_with_message() -> None:
    result = MatchesRegex(r"^\d{3}-\d{2}-\d{4}$").evaluate("12-345-6789")

    assert result == AssertionResult(
        passed=False,
        score=0.0,
        message=r"Expected '12-345-6789' to match pattern '^\d{3}-\d{2}-\d{4}$'",
    )


def test_matches_regex_is_case_sensitive_without_flags() -> None:
    assert not MatchesRegex("refund").evaluate("REFUND").passed


def test_matches_regex_applies_flags() -> None:
    assert MatchesRegex("refund", flags=re.IGNORECASE).evaluate("REFUND").passed
    assert MatchesRegex("^total", re.MULTILINE).evaluate("items\ntotal: 3").passed


def test_matches_regex_accepts_compiled_pattern() -> None:
    assertion = MatchesRegex(re.compile(r"\bok\b", re.I))

    assert assertion.evaluate("OK then").passed
    assert assertion.evaluate("token").message == r"Expected 'token' to match pattern '\bok\b'"


def test_matches_regex_empty_pattern_matches_everything() -> None:
    assert MatchesRegex("").evaluate("").passed


def test_matches_regex_shortens_long_actual() -> None:
    result = MatchesRegex("z").evaluate("a" * 300)

    assert result.message == f"Expected '{'a' * 200}…' to match pattern 'z'"


def test_matches_regex_invalid_pattern_raises_at_construction() -> None:
    with pytest.raises(ValueError) as info:
        MatchesRegex("(abc")

    assert str(info.value) == (
        "MatchesRegex: invalid regular expression '(abc': missing ), unterminated subpattern "
        "at position 0; fix the pattern (write it as a raw string, r'...', so backslashes "
        "reach the regex engine)"
    )
    assert isinstance(info.value.__cause__, re.error)


def test_matches_regex_flags_with_compiled_pattern_raise() -> None:
    with pytest.raises(ValueError) as info:
        MatchesRegex(re.compile("a"), flags=re.I)

    assert str(info.value) == (
        "MatchesRegex: cannot process flags argument with a compiled pattern (pattern 'a')"
    )


def test_matches_regex_rejects_flags_that_are_not_re_flags() -> None:
    with pytest.raises(TypeError) as info:
        MatchesRegex("a", flags="i")  # type: ignore[arg-type]

    assert str(info.value) == (
        "MatchesRegex: flags must be re flags, such as re.IGNORECASE or re.I | re.M, got str ('i')"
    )


def test_matches_regex_rejects_bytes_pattern() -> None:
    with pytest.raises(TypeError) as info:
        MatchesRegex(b"abc")  # type: ignore[arg-type]

    assert str(info.value) == (
        "MatchesRegex: pattern must be a str or a compiled str pattern, got bytes (b'abc')"
    )


def test_matches_regex_compiles_once_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    assertion = MatchesRegex(r"\d+")
    calls: list[object] = []
    monkeypatch.setattr(re, "compile", lambda *a, **k: calls.append(a))

    assertion.evaluate("123")
    assertion.evaluate("abc")

    assert calls == []


def test_matches_regex_equality_uses_configuration() -> None:
    assert MatchesRegex("a+") == MatchesRegex("a+")
    assert MatchesRegex("a+") != MatchesRegex("a+", re.I)
