"""The public facades: every exported name imports and is documented; imports stay light."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

FACADES = [
    "agenteval",
    "agenteval.agents",
    "agenteval.assertions",
    "agenteval.conversation",
    "agenteval.datasets",
    "agenteval.judges",
    "agenteval.llm",
    "agenteval.outputs",
    "agenteval.testing",
    "agenteval.trajectory",
]


@pytest.mark.parametrize("name", FACADES)
def test_facade_all_is_sorted_and_documented(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported)
    undocumented = [
        n for n in exported if n != "__version__" and not (getattr(module, n).__doc__ or "").strip()
    ]
    assert undocumented == []


def test_import_agenteval_loads_no_heavy_package() -> None:
    code = (
        "import sys, agenteval, agenteval.assertions, agenteval.datasets, agenteval.outputs\n"
        "agenteval.BaseEvaluator, agenteval.run_evaluations\n"
        "heavy = sorted(m for m in ('anthropic', 'openai', 'numpy', 'rapidfuzz', 'httpx') if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_lazy_top_level_facade_names_match() -> None:
    import agenteval

    assert sorted(agenteval._WHERE) == agenteval.__all__
    for name in agenteval.__all__:
        assert getattr(agenteval, name) is not None


def test_version_is_a_string() -> None:
    import agenteval

    assert isinstance(agenteval.__version__, str) and agenteval.__version__.count(".") == 2


def test_unknown_attribute_raises_attribute_error() -> None:
    import agenteval

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        agenteval.nope  # noqa: B018
