"""The bundled examples in evaluators/: they pass, and they would catch a broken agent.

The README's first command is ``agenteval run evaluators/`` from the repo root; it must
pass offline. Passing is only worth something if the assertions can fail, so the example
evaluators are also run in-process against deliberately broken versions of the demo agent:
every assertion call site must fail under at least one of them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from agenteval import BaseEvaluator, RunSummary, run_evaluations
from cli_support import CliResult

AGENTEVAL = str(Path(sys.executable).parent / "agenteval")
ROOT = Path(__file__).resolve().parent.parent
EVALUATORS = ROOT / "evaluators"
DATASETS = EVALUATORS / "datasets"

# evaluator file -> (class, display name, dataset file)
EXAMPLES = {
    "support_answers_evaluator.py": (
        "SupportAnswersEvaluator",
        "Support desk answers",
        "support_answers.json",
    ),
    "order_lookup_evaluator.py": (
        "OrderLookupEvaluator",
        "Order lookup (JSON API)",
        "order_lookup.jsonl",
    ),
    "refund_policy_evaluator.py": ("RefundPolicyEvaluator", "Refund policy", "refund_policy.yaml"),
}

Cli = Callable[..., CliResult]


def _dataset_ids(name: str) -> list[str]:
    path = DATASETS / name
    if path.suffix == ".json":
        return [case["id"] for case in json.loads(path.read_text(encoding="utf-8"))]
    if path.suffix == ".jsonl":
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line)["id"] for line in lines if line.strip()]
    return [case["id"] for case in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]]


# -- the main command, as the README runs it ------------------------------------------------


@pytest.fixture(scope="module")
def main_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[CliResult, dict[str, Any]]:
    """``agenteval run evaluators/`` from the repo root, once, with its outputs in a temp dir."""
    tmp = tmp_path_factory.mktemp("main")
    config = tmp / "console_only.py"
    config.write_text(
        "from agenteval.outputs import ConsoleOutput\noutput = [ConsoleOutput]\n", encoding="utf-8"
    )
    report = tmp / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTEVAL_")}
    # offline: no API key, and any HTTP(S) request would go to a closed port
    env.update({"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "HTTPS_PROXY": "http://127.0.0.1:9"})
    proc = subprocess.run(
        [
            AGENTEVAL,
            "run",
            "evaluators/",
            "--config",
            str(config),
            "--runs-dir",
            str(tmp / "runs"),
            "--output-json",
            str(report),
            "--no-progress",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    result = CliResult(proc)
    document = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return result, document


def test_examples_main_command_passes_offline(
    main_run: tuple[CliResult, dict[str, Any]],
) -> None:
    result, document = main_run

    assert result.code == 0, result
    for file, (_, name, _) in EXAMPLES.items():
        assert f"PASSED  {name}  evaluators/{file}" in result.lines
    assert result.lines[-1].startswith("PASSED: ")
    assert result.lines[-1].endswith(" · exit 0")

    assert document["schema_version"] == 1
    assert document["run"]["exit_code"] == 0
    by_file = {ev["file"]: ev for ev in document["evaluators"]}
    for file, (cls, name, dataset) in EXAMPLES.items():
        ev = by_file[f"evaluators/{file}"]
        ids = _dataset_ids(dataset)
        assert (ev["name"], ev["id"], ev["status"]) == (
            name,
            f"evaluators/{file}::{cls}",
            "passed",
        )
        summary = ev["summary"]
        assert (summary["total"], summary["passed"], summary["failed"], summary["errored"]) == (
            len(ids),
            len(ids),
            0,
            0,
        )
        assert summary["assertions"]["failed"] == 0
        assert summary["soft_failures"] == 0
        assert [item["id"] for item in ev["items"]] == ids
        assert all(item["status"] == "passed" for item in ev["items"])
        assert ev["tags"] and "support" in ev["tags"]


def test_examples_readme_command_in_a_copy_writes_json_and_sqlite(cli: Cli, tmp_path: Path) -> None:
    # the repo's own evaluation.py, run where its relative output paths land in tmp_path
    shutil.copytree(
        EVALUATORS, tmp_path / "evaluators", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "evaluation.py", tmp_path / "evaluation.py")

    result = cli("run", "evaluators/", "--no-progress", cwd=tmp_path)

    assert result.code == 0, result
    document = json.loads((tmp_path / "evaluation-results.json").read_text(encoding="utf-8"))
    totals = document["run"]["totals"]
    with closing(sqlite3.connect(tmp_path / ".agenteval" / "results.sqlite")) as db:
        runs = db.execute("SELECT run_id, exit_code, total, passed FROM runs").fetchall()
        items = db.execute("SELECT COUNT(*) FROM items").fetchone()[0]
        evaluators = db.execute("SELECT name, status FROM evaluators").fetchall()
    assert runs == [(document["run"]["id"], 0, totals["total"], totals["passed"])]
    assert items == sum(len(ev["items"]) for ev in document["evaluators"])
    assert sorted(evaluators) == sorted((ev["name"], ev["status"]) for ev in document["evaluators"])


def test_examples_order_lookup_output_is_the_json_api_document(
    main_run: tuple[CliResult, dict[str, Any]],
) -> None:
    _, document = main_run
    (ev,) = [
        e for e in document["evaluators"] if e["file"] == "evaluators/order_lookup_evaluator.py"
    ]
    first = ev["items"][0]
    assert first["input"]["input"] == "Where is my order A1001?"
    assert json.loads(first["output"]) == {
        "intent": "tracking",
        "order_id": "A1001",
        "tools": ["lookup_order", "track_shipment"],
        "order": {
            "status": "shipped",
            "total": 49.9,
            "carrier": "UPS",
            "tracking": "1Z84F3920347719021",
            "eta": "2024-06-17",
            "delivered_on": None,
        },
        "answer": "Order A1001 shipped with UPS on 11 June 2024 and should arrive by "
        "17 June 2024. Your tracking number is 1Z84F3920347719021.",
    }
    assert [a["name"] for a in first["assertions"]] == [
        "IsValidJson",
        "ToolsUsed",
        "StringStartsWith",
        "StringContainsAll",
        "StringEndsWith",
        "StringLengthBetween",
        "MatchesRegex",
        "MatchesRegex",
        "StringContains",
        "MatchesRegex",
    ]
    assert [a["soft"] for a in first["assertions"]].count(True) == 1


# -- the config files at the repo root ------------------------------------------------------


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Run in tmp_path; undo what the runner and example imports add to sys.path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield


@pytest.fixture
def repo_on_path(isolated_imports: None) -> None:
    """What ``agenteval run`` does from the repo root: the working directory on sys.path."""
    sys.path.insert(0, str(ROOT))


def test_examples_evaluation_py_configures_console_json_and_sqlite(
    repo_on_path: None, tmp_path: Path
) -> None:
    from agenteval._config import load_config
    from agenteval.outputs import ConsoleOutput, JsonOutput

    config = load_config(ROOT / "evaluation.py")

    console, report, database = config.outputs
    assert type(console) is ConsoleOutput
    assert not console.verbose
    assert type(report) is JsonOutput
    assert report.path == Path("evaluation-results.json")
    assert (type(database).__module__, type(database).__name__) == (
        "evaluators._drivers",
        "SqliteOutput",
    )
    assert database.path == Path(".agenteval/results.sqlite")  # type: ignore[attr-defined]
    assert list(tmp_path.iterdir()) == []  # loading the config writes nothing


def test_examples_evaluation_py_example_loads_with_prices(
    repo_on_path: None, tmp_path: Path
) -> None:
    from agenteval._config import load_config
    from agenteval.llm._pricing import check_prices
    from agenteval.outputs import ConsoleOutput, JsonOutput

    config = load_config(ROOT / "evaluation.py.example")

    assert [type(d).__name__ for d in config.outputs] == [
        "ConsoleOutput",
        "JsonOutput",
        "SqliteOutput",
    ]
    assert isinstance(config.outputs[0], ConsoleOutput)
    assert isinstance(config.outputs[1], JsonOutput)
    assert check_prices(config.prices) == {
        "agent": {"input": 3.00, "output": 15.00},
        "claude-3-5-haiku-latest": {"input": 0.80, "output": 4.00},
        "openai:gpt-4o-mini": {"input": 0.15, "output": 0.60, "cache_read": 0.075},
    }
    assert list(tmp_path.iterdir()) == []


# -- the examples in-process, against healthy and broken agents ------------------------------


def _import(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def examples(isolated_imports: None, monkeypatch: pytest.MonkeyPatch) -> list[type[BaseEvaluator]]:
    """The example evaluator classes, imported as agenteval's discovery would."""
    sys.path.insert(0, str(EVALUATORS))
    for helper in ("_support_desk", "_checks", "_drivers"):  # fresh, from evaluators/
        monkeypatch.delitem(sys.modules, helper, raising=False)
    return [getattr(_import(EVALUATORS / file), cls) for file, (cls, _, _) in EXAMPLES.items()]


@pytest.fixture
def desk(examples: list[type[BaseEvaluator]]) -> ModuleType:
    """The demo agent's module, as the example evaluators imported it."""
    return sys.modules["_support_desk"]


def _run(classes: list[type[BaseEvaluator]]) -> RunSummary:
    return run_evaluations(classes, outputs=[], journal=False, cache=False)


def _sites(run: RunSummary, *, failed: bool) -> set[str]:
    """``file:line`` of every assertion call (or only of those that failed)."""
    return {
        f"{Path(a.file or '').name}:{a.line}"
        for ev in run.evaluators
        for item in ev.items
        for a in item.assertions
        if not failed or not a.passed
    }


def _failed_items(run: RunSummary) -> dict[str, list[str | int]]:
    return {
        ev.name: [item.id for item in ev.items if item.status != "passed"]
        for ev in run.evaluators
        if ev.failed or ev.errored
    }


def test_examples_pass_in_process_with_every_assertion_passing(
    examples: list[type[BaseEvaluator]],
) -> None:
    run = _run(examples)

    assert run.exit_code == 0
    assert [(ev.name, ev.total, ev.passed) for ev in run.evaluators] == [
        ("Order lookup (JSON API)", 7, 7),
        ("Refund policy", 11, 11),
        ("Support desk answers", 12, 12),
    ]
    assert all(ev.assertions.failed == 0 for ev in run.evaluators)
    assert len(_sites(run, failed=False)) >= 20


def _silent(self: Any, question: str) -> Any:
    return sys.modules["_support_desk"].Reply("", "handoff")


def _unparseable(self: Any, question: str) -> str:
    return "Sorry, our API is down."


def _rambling(ask: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Any, question: str) -> Any:
        reply = ask(self, question)
        filler = " Thank you for contacting us, we really appreciate your business" * 4
        return type(reply)(reply.text + filler + "!", reply.intent, reply.tools, reply.order_id)

    return wrapper


def _break(desk: ModuleType, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Install one regression of the demo agent."""
    if how == "silent":  # answers nothing, calls no tool
        monkeypatch.setattr(desk.SupportDesk, "ask", _silent)
    elif how == "unparseable-json":  # the JSON API returns an error text
        monkeypatch.setattr(desk.SupportDesk, "ask_json", _unparseable)
    elif how == "rambling":  # right answer, buried in filler
        monkeypatch.setattr(desk.SupportDesk, "ask", _rambling(desk.SupportDesk.ask))
    elif how == "empty-order-table":  # the order database is unreachable
        monkeypatch.setattr(desk, "ORDERS", {})
    elif how == "14-day-window":  # someone shortened the return window
        monkeypatch.setattr(desk, "RETURN_WINDOW_DAYS", 14)
    elif how == "no-refund-routing":  # refund questions no longer reach the refund route
        monkeypatch.setattr(desk, "_REFUND", re.compile(r"(?!)"))
    elif how == "no-tracking-tool":  # shipments answered without asking the carrier
        monkeypatch.setattr(
            desk.SupportDesk,
            "track_shipment",
            lambda self, order: {"carrier": order.carrier, "tracking": None, "eta": None},
        )
    else:  # pragma: no cover
        raise AssertionError(how)


BREAKAGES = [
    "silent",
    "unparseable-json",
    "rambling",
    "empty-order-table",
    "14-day-window",
    "no-refund-routing",
    "no-tracking-tool",
]


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        (
            "empty-order-table",
            {
                "Support desk answers": [
                    "track-shipped-order",
                    "track-delivered-order",
                    "track-unshipped-order",
                    "order-contents",
                    "cancel-unshipped-order",
                    "cancel-shipped-order",
                ],
                "Order lookup (JSON API)": [
                    "A1001-in-transit",
                    "A1002-delivered",
                    "A1003-processing",
                    "A1004-lowercase-id",
                    "A1005-contents",
                    "A1006-cancelled",
                ],
                "Refund policy": [
                    "eligible-delivered-order",
                    "outside-return-window",
                    "final-sale-order",
                    "order-not-shipped-yet",
                    "order-in-transit",
                    "already-refunded",
                ],
            },
        ),
        (
            "14-day-window",
            {
                "Refund policy": [
                    "eligible-delivered-order",
                    "outside-return-window",
                    "order-in-transit",
                    "general-policy",
                    "opened-electronics",
                ]
            },
        ),
        (
            "no-tracking-tool",
            {
                "Order lookup (JSON API)": [
                    "A1001-in-transit",
                    "A1002-delivered",
                    "A1004-lowercase-id",
                ],
                "Support desk answers": ["track-shipped-order", "track-delivered-order"],
            },
        ),
    ],
)
def test_examples_fail_the_items_a_regression_breaks(
    examples: list[type[BaseEvaluator]],
    desk: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    expected: dict[str, list[str]],
) -> None:
    _break(desk, monkeypatch, how)

    run = _run(examples)

    assert run.exit_code == 1
    assert _failed_items(run) == expected


def test_examples_silent_agent_fails_every_item(
    examples: list[type[BaseEvaluator]], desk: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    _break(desk, monkeypatch, "silent")

    run = _run(examples)

    assert run.exit_code == 1
    assert [(ev.name, ev.failed, ev.total) for ev in run.evaluators] == [
        ("Order lookup (JSON API)", 7, 7),
        ("Refund policy", 11, 11),
        ("Support desk answers", 12, 12),
    ]


def test_examples_every_assertion_site_fails_under_some_regression(
    examples: list[type[BaseEvaluator]], desk: ModuleType
) -> None:
    sites = _sites(_run(examples), failed=False)
    failed: set[str] = set()
    for how in BREAKAGES:
        with pytest.MonkeyPatch.context() as patch:
            _break(desk, patch, how)
            failed |= _sites(_run(examples), failed=True)

    assert sorted(sites - failed) == []


# -- the example SQLite driver ----------------------------------------------------------------


def test_examples_sqlite_output_writes_one_row_per_run_evaluator_and_item(
    examples: list[type[BaseEvaluator]], tmp_path: Path
) -> None:
    from _drivers import SqliteOutput

    from agenteval.assertions import StringContains
    from agenteval.datasets import ArrayDataset

    class Tickets(BaseEvaluator):
        def get_dataset(self) -> ArrayDataset:
            return ArrayDataset(
                [{"id": "ok", "input": "refund"}, {"id": "bad", "input": "nope"}, {"input": None}]
            )

        def run(self, item: dict[str, Any]) -> str:
            return item["input"].upper()

        def evaluate(self, output: str, item: dict[str, Any]) -> None:
            self.assert_that(StringContains("refund"), output)
            self.assert_that(StringContains("zzz"), output, soft=True)

    path = tmp_path / "db" / "results.sqlite"
    run = run_evaluations([Tickets], outputs=[SqliteOutput(path)], journal=False, cache=False)

    with closing(sqlite3.connect(path)) as db:
        runs = db.execute("SELECT run_id, exit_code, total, passed, failed, errored FROM runs")
        assert runs.fetchall() == [(run.id, 2, 3, 1, 1, 1)]
        evaluators = db.execute("SELECT name, status, total, passed, success_rate FROM evaluators")
        assert evaluators.fetchall() == [("Tickets", "error", 3, 1, 1 / 3)]
        items = db.execute(
            "SELECT item_id, item_index, status, score, failures FROM items ORDER BY item_index"
        ).fetchall()
    assert items == [
        ("ok", 0, "passed", 0.5, ""),
        ("bad", 1, "failed", 0.0, "StringContains: Expected 'NOPE' to contain 'refund'"),
        ("2", 2, "error", None, "run: AttributeError: 'NoneType' object has no attribute 'upper'"),
    ]


def test_examples_sqlite_output_takes_a_database_made_when_scores_were_never_null(
    examples: list[type[BaseEvaluator]], tmp_path: Path
) -> None:
    from _drivers import SCHEMA, SqliteOutput

    path = tmp_path / "results.sqlite"
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript(SCHEMA.replace("average_score REAL,", "average_score REAL NOT NULL,"))
        db.execute(
            "INSERT INTO evaluators VALUES ('old', 'E', 'E', 'passed', 1, 1, 0, 0, 1.0, 1.0, 0.1)"
        )

    class NoAssertions(BaseEvaluator):
        def get_dataset(self) -> list[dict[str, Any]]:
            return [{"id": "a"}]

        def run(self, item: dict[str, Any]) -> str:
            return "ok"

        def evaluate(self, output: str, item: dict[str, Any]) -> None:
            pass

    run = run_evaluations([NoAssertions], outputs=[SqliteOutput(path)], journal=False)
    assert run.exit_code == 0 and not run.driver_errors
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT run_id, average_score FROM evaluators ORDER BY run_id")
        assert rows.fetchall() == [(run.id, None), ("old", 1.0)]


# -- the getting-started tutorial ------------------------------------------------------------

GETTING_STARTED = ROOT / "docs" / "getting-started.md"
_FILE_BLOCK = re.compile(r"<!-- file: (\S+) -->\n```\w*\n(.*?)^```", re.S | re.M)
_OUTPUT_BLOCK = re.compile(r"<!-- output: (\w+) -->\n```console\n\$ (.*?)\n(.*?)^```", re.S | re.M)


def _normalise(text: str) -> list[str]:
    text = re.sub(r"run \d{8}-\d{6}-[0-9a-f]{6}", "run <id>", text)
    return re.sub(r"\b\d+\.\d+s\b", "<t>s", text).splitlines()


def test_examples_getting_started_tutorial_prints_what_the_page_shows(
    cli: Cli, tmp_path: Path
) -> None:
    page = GETTING_STARTED.read_text(encoding="utf-8")
    files = _FILE_BLOCK.findall(page)
    outputs = {name: (command, shown) for name, command, shown in _OUTPUT_BLOCK.findall(page)}
    assert [path for path, _ in files] == [
        "evaluators/datasets/shipping_rates_evaluator.json",
        "evaluators/shipping_rates_evaluator.py",
    ]
    for path, body in files:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body, encoding="utf-8")
    shutil.copy(EVALUATORS / "_support_desk.py", tmp_path / "evaluators")

    command, shown = outputs["passing"]
    result = cli(*command.split()[1:], "--no-progress")
    assert result.code == 0, result
    assert _normalise(result.stdout) == _normalise(shown)

    dataset = tmp_path / files[0][0]
    text = dataset.read_text(encoding="utf-8")
    assert '"reference": "$12.00"' in text
    dataset.write_text(text.replace('"reference": "$12.00"', '"reference": "$10.00"'), "utf-8")
    command, shown = outputs["failing"]
    result = cli(*command.split()[1:], "--no-progress")
    assert result.code == 1, result
    assert _normalise(result.stdout) == _normalise(shown)


# -- printed output shown in the docs pages of this area --------------------------------------

_BLOCK = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


@pytest.mark.parametrize("page", ["evaluators.md", "outputs.md", "configuration.md"])
def test_examples_docs_pages_print_what_they_show(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ```python block's printed output equals the ```text block right after it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = ROOT / "docs" / page
    namespace: dict[str, object] = {"__name__": "__docs__"}
    printed: str | None = None
    checked = 0
    for lang, body in _BLOCK.findall(path.read_text(encoding="utf-8")):
        if lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(body, str(path), "exec"), namespace)
            printed = out.getvalue()
        elif lang == "text" and printed is not None:
            assert printed == body
            printed = None
            checked += 1
    assert checked >= 2
