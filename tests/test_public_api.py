"""The public facades: every exported name imports and is documented; imports stay light."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_support import CliResult

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


def test_a_run_of_text_checks_loads_no_model_layer(
    cli: Callable[..., CliResult], write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    # The fork executor copies the parent's memory map for every item: what a run does not
    # need (asyncio and the logging and ssl it brings, SQLite, the model layer, the
    # trajectory models) must stay unloaded, or every item pays for it.
    write(
        "evaluators/text_eval.py",
        """
        import json, sys
        from agenteval import BaseEvaluator
        from agenteval.assertions import StringContains

        class Text(BaseEvaluator):
            def get_dataset(self):
                return [{"q": "hello"}, {"q": "hello world"}]

            def run(self, item):
                return item["q"]

            def evaluate(self, output, item):
                self.assert_that(StringContains("hello"), output)

            def tear_down(self):  # in the parent, after every item ran
                watched = ["asyncio", "logging", "ssl", "sqlite3", "agenteval.llm",
                           "agenteval.trajectory"]
                with open("loaded.json", "w") as fh:
                    json.dump([m for m in watched if m in sys.modules], fh)
        """,
    )
    result = cli("run", "evaluators", "-c", "2", "--no-progress")
    assert result.code == 0, result
    assert json.loads((tmp_path / "loaded.json").read_text()) == []


def test_trajectory_assertions_load_on_first_use() -> None:
    code = (
        "import sys\n"
        "import agenteval.assertions as a\n"
        "before = 'agenteval.trajectory' in sys.modules\n"
        "from agenteval.assertions import Mode, ToolWasCalled\n"
        "print(before, ToolWasCalled.__module__, Mode.STRICT.name, 'MaxSteps' in dir(a))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "agenteval.assertions._trajectory", "STRICT", "True"]


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
