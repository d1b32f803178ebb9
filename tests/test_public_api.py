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


def test_a_scripted_model_loads_no_provider_adapter_server_or_pytest() -> None:
    # what the bundled examples import: each forked item would copy what it loads
    code = (
        "import sys\n"
        "from agenteval.testing import ScriptedModel\n"
        "watched = ('pytest', 'agenteval.testing._fake_provider', 'agenteval.llm._anthropic',"
        " 'agenteval.llm._openai', 'asyncio', 'sqlite3')\n"
        "print(','.join(m for m in watched if m in sys.modules))"
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


def test_a_returned_message_list_counts_as_a_trajectory_without_importing_one(
    cli: Callable[..., CliResult], write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    # the trajectory models load lazily: an evaluator that imports none of them still gets
    # its returned conversation recorded as a trajectory, with the agent's token usage
    write(
        "evaluators/chat_eval.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.assertions import StringContains

        class ChatRecord:
            def __init__(self, messages):
                self.messages = messages

        HISTORY = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello there",
             "usage": {"input_tokens": 120, "output_tokens": 30}},
        ]

        class Chat(BaseEvaluator):
            def get_dataset(self):
                return [{"id": "list"}, {"id": "record"}, {"id": "plain"}]

            def run(self, item):
                if item["id"] == "plain":
                    return [{"name": "not a message"}]
                return HISTORY if item["id"] == "list" else ChatRecord(HISTORY)

            def evaluate(self, output, item):
                self.assert_that(StringContains("e"), "hello")
        """,
    )
    result = cli("run", "evaluators", "--output-json", "report.json", "--no-progress")
    assert result.code == 0, result
    items = json.loads((tmp_path / "report.json").read_text())["evaluators"][0]["items"]
    for item in items[:2]:
        assert [m["content"] for m in item["output"]["history"]] == ["hi", "hello there"]
        assert item["usage"]["agent"]["input_tokens"] == 120
    assert items[2]["output"] == [{"name": "not a message"}]


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


def _echo_class() -> type:
    from agenteval import BaseEvaluator

    class Echo(BaseEvaluator):
        def get_dataset(self):  # type: ignore[no-untyped-def]
            return [{"id": "a"}]

        def run(self, item):  # type: ignore[no-untyped-def]
            return "x"

        def evaluate(self, output, item):  # type: ignore[no-untyped-def]
            pass

    return Echo


def test_run_evaluations_takes_one_path_class_or_driver_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agenteval import run_evaluations

    monkeypatch.chdir(tmp_path)
    from agenteval.outputs import JsonOutput

    echo = _echo_class()
    # a class alone was "not iterable", outputs=[JsonOutput] failed in every hook
    summary = run_evaluations(echo, outputs=JsonOutput, journal=False)
    assert (summary.exit_code, summary.driver_errors) == (0, [])
    assert json.loads(Path("evaluation-results.json").read_text())["run"]["exit_code"] == 0


@pytest.mark.parametrize(
    ("call", "error"),
    [
        # (it ran in the parent, without the timeout asked for)
        (
            {"executor": "forks"},
            "--executor must be one of auto, inline, fork, async, got 'forks'",
        ),
        (
            {"paths": "instance"},
            "run_evaluations: pass the class Echo, not an instance of it: agenteval builds it "
            "(with no arguments)",
        ),
        (
            {"paths": "alone"},
            "run_evaluations: pass the class Echo, not an instance of it: agenteval builds it "
            "(with no arguments)",
        ),
        (
            {"outputs": ["console"]},
            "run_evaluations: outputs[0] is 'console' (str): use an OutputDriver class or "
            "instance, e.g. ConsoleOutput or JsonOutput(path='results.json')",
        ),
    ],
)
def test_run_evaluations_misuse_is_one_clear_error(
    call: dict[str, object], error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agenteval import AgentEvalError, run_evaluations

    monkeypatch.chdir(tmp_path)
    echo = _echo_class()
    how = call.pop("paths", None)
    paths = [echo()] if how == "instance" else echo() if how == "alone" else [echo]
    with pytest.raises(AgentEvalError) as info:
        run_evaluations(paths, journal=False, **call)  # type: ignore[arg-type]
    assert str(info.value) == error
