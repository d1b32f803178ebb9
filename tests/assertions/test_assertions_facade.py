from __future__ import annotations

import subprocess
import sys

import agenteval.assertions as facade
from agenteval._results import AssertionResult

OWN_NAMES = {
    "Assertion",
    "AssertionResult",
    "IsValidJson",
    "MatchesRegex",
    "StringContains",
    "StringContainsAll",
    "StringContainsAny",
    "StringDistance",
    "StringEndsWith",
    "StringLengthBetween",
    "StringStartsWith",
}


def test_assertions_facade_exports_sorted_all() -> None:
    assert facade.__all__ == sorted(facade.__all__)
    assert set(facade.__all__) >= OWN_NAMES


def test_assertions_facade_names_import_and_have_docstrings() -> None:
    for name in facade.__all__:
        obj = getattr(facade, name)
        assert obj.__doc__, name


def test_assertions_facade_reexports_the_result_model() -> None:
    assert facade.AssertionResult is AssertionResult


def test_assertions_facade_import_is_light() -> None:
    code = (
        "import sys\n"
        "import agenteval.assertions\n"
        "print(sorted(m for m in ('rapidfuzz', 'numpy', 'httpx', 'openai', 'anthropic')"
        " if m in sys.modules))\n"
    )

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout

    assert out.strip() == "[]"
