"""The CLI end to end: exit codes, messages and files, in real subprocesses."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_support import CliResult

Cli = Callable[..., CliResult]
Write = Callable[[str, str], Path]

PASSING = """
    from agenteval import BaseEvaluator
    from agenteval.assertions import StringContains
    from agenteval.datasets import ArrayDataset

    class EchoEvaluator(BaseEvaluator):
        tags = ("smoke",)

        def get_dataset(self):
            return ArrayDataset([{"id": "a", "input": "refund please"}, {"input": "refund now"}])

        def run(self, item):
            return item["input"]

        def evaluate(self, output, item):
            self.assert_that(StringContains("refund"), output)
"""

FAILING = """
    from agenteval import BaseEvaluator
    from agenteval.assertions import StringContains
    from agenteval.datasets import ArrayDataset

    class FailingEvaluator(BaseEvaluator):
        def get_dataset(self):
            return ArrayDataset([{"input": "refund"}, {"input": "nothing here"}])

        def run(self, item):
            return item["input"]

        def evaluate(self, output, item):
            self.assert_that(StringContains("refund"), output)
"""


def test_cli_all_passed_exits_0(cli: Cli, write: Write) -> None:
    write("evaluators/echo.py", PASSING)
    result = cli("run", "evaluators/")
    assert result.code == 0, result
    assert "PASSED  EchoEvaluator  evaluators/echo.py" in result.lines
    assert result.lines[-1].startswith("PASSED: 2 items, 2 passed, 0 failed, 0 errors")
    assert result.lines[-1].endswith("exit 0")


def test_cli_default_path_is_evaluators(cli: Cli, write: Write) -> None:
    write("evaluators/echo.py", PASSING)
    assert cli("run").code == 0


def test_cli_assertion_failure_exits_1_with_call_site(cli: Cli, write: Write) -> None:
    write("evaluators/failing.py", FAILING)
    result = cli("run", "evaluators/")
    assert result.code == 1, result
    assert (
        "  FAIL     item 1 · StringContains · Expected 'nothing here' to contain 'refund' "
        "(score 0.00)  evaluators/failing.py:13"
    ) in result.lines


def test_cli_min_success_rate_accepts_partial_success(cli: Cli, write: Write) -> None:
    write("evaluators/failing.py", FAILING)
    assert cli("run", "--min-success-rate", "0.5").code == 0
    below = cli("run", "--min-success-rate", "0.51")
    assert below.code == 1
    assert "notice: FailingEvaluator's success rate 50.0% is below --min-success-rate 0.51" in (
        below.lines
    )  # (which evaluator held the run back: the last line's rate is the whole run's)


def test_cli_a_run_with_errors_says_how_to_retry_them(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write(
        "evaluators/flaky.py",
        """
        from pathlib import Path
        from agenteval import BaseEvaluator

        class Flaky(BaseEvaluator):
            def get_dataset(self):
                return [{"id": "a"}, {"id": "b"}]

            def run(self, item):
                if item["id"] == "b" and not Path("up").exists():
                    raise ConnectionError("provider down")
                return "x"

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run", "--no-progress")
    assert result.code == 2
    (hint,) = [line for line in result.lines if line.startswith("Retry what errored with: ")]
    (run_dir,) = (tmp_path / ".agenteval" / "runs").iterdir()
    assert (
        hint
        == f"Retry what errored with: agenteval run --no-progress --retry-errors {run_dir.name}"
    )
    (tmp_path / "up").touch()
    again = cli(*hint.removeprefix("Retry what errored with: agenteval ").split())
    assert again.code == 0, again


def test_cli_run_error_exits_2_and_keeps_earlier_assertions(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write(
        "evaluators/boom.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.assertions import StringContains
        from agenteval.datasets import ArrayDataset

        class BoomEvaluator(BaseEvaluator):
            def get_dataset(self):
                return ArrayDataset([{"input": "x"}])

            def run(self, item):
                return "partial"

            def evaluate(self, output, item):
                self.assert_that(StringContains("part"), output)
                raise RuntimeError("judge unavailable")
        """,
    )
    result = cli("run", "--output-json", "out.json")
    assert result.code == 2, result
    assert (
        "  ERROR    item 0 · evaluate · RuntimeError: judge unavailable  evaluators/boom.py:14"
    ) in result.lines
    item = json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["items"][0]
    assert item["status"] == "error"
    assert item["output"] == "partial"
    assert [a["name"] for a in item["assertions"]] == ["StringContains"]
    assert item["error"]["stage"] == "evaluate"
    assert "judge unavailable" in item["error"]["traceback"]


RECORDING_EVALUATOR = """
from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Ran(BaseEvaluator):
    def get_dataset(self):
        return [{"input": "x"}]

    def run(self, item):
        Path("ran").write_text("yes")
        return "x"

    def evaluate(self, output, item):
        self.assert_that(StringContains("x"), output)
"""


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        (
            "reports",
            "--output-json: reports is a folder: give a file's path, e.g. reports/results.json",
        ),
        ("notes.txt/out.json", "is a file, not a folder"),
        (  # the option took the evaluator's path as its value: it must not be overwritten
            "evaluators/ran.py",
            "--output-json: evaluators/ran.py exists and is not an agenteval report (an "
            "evaluator, dataset or config file taken as the option's value?): give the report "
            "a path of its own, or delete the file first",
        ),
        ("notes.txt", "notes.txt exists and is not an agenteval report"),
    ],
)
def test_cli_output_json_that_cannot_be_written_is_refused_before_the_run(
    cli: Cli, write: Write, tmp_path: Path, target: str, problem: str
) -> None:
    write("evaluators/ran.py", RECORDING_EVALUATOR)
    (tmp_path / "reports").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    result = cli("run", "--output-json", target)
    assert result.code == 2, result
    assert problem in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "ran").exists()  # refused before anything ran
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "evaluators/ran.py").read_text() == RECORDING_EVALUATOR.lstrip()


def test_cli_output_json_replaces_an_earlier_report_or_an_empty_file(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write("evaluators/ran.py", RECORDING_EVALUATOR)
    (tmp_path / "empty.json").touch()
    for target in ("empty.json", "out.json", "out.json"):
        result = cli("run", "--output-json", target)
        assert result.code == 0, result
    assert json.loads((tmp_path / "out.json").read_text())["schema_version"] == 1
    assert json.loads((tmp_path / "empty.json").read_text())["schema_version"] == 1


def test_cli_bad_dataset_exits_2_with_message(cli: Cli, write: Write) -> None:
    write("evaluators/datasets/cases.json", '[{"input": "a"},\n  {"input": }]\n')
    write(
        "evaluators/bad_data.py",
        """
        from pathlib import Path
        from agenteval import BaseEvaluator
        from agenteval.datasets import JsonDataset

        class BadDataEvaluator(BaseEvaluator):
            def get_dataset(self):
                return JsonDataset(Path(__file__).parent / "datasets" / "cases.json")

            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run")
    assert result.code == 2, result
    error_line = next(line for line in result.lines if "ERROR in get_dataset" in line)
    assert "cases.json" in error_line and "line 2" in error_line
    assert "Traceback" not in result.stdout


def test_cli_no_evaluators_exits_2(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "evaluators").mkdir()
    result = cli("run", "evaluators")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: No evaluators found in evaluators: define a BaseEvaluator subclass "
        "in a .py file (files starting with '_' are skipped)"
    )


def test_cli_missing_path_exits_2(cli: Cli) -> None:
    result = cli("run", "nowhere/")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: Path 'nowhere' does not exist: pass a file or folder of evaluators"
    )


def test_cli_syntax_error_names_file_and_line(cli: Cli, write: Write) -> None:
    write(
        "evaluators/broken.py",
        "from agenteval import BaseEvaluator\n\nclass X(BaseEvaluator:\n    pass\n",
    )
    result = cli("run")
    assert result.code == 2
    assert result.stderr.startswith("agenteval: error: evaluators/broken.py:3: SyntaxError:")
    assert "Traceback" not in result.stderr


def test_cli_import_error_names_file_and_line(cli: Cli, write: Write) -> None:
    write("evaluators/imports.py", "from agenteval import BaseEvaluator\nimport not_a_module_xyz\n")
    result = cli("run")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: Could not import evaluators/imports.py:2: ModuleNotFoundError: "
        "No module named 'not_a_module_xyz'"
    )


def test_cli_missing_method_fails_at_class_definition(cli: Cli, write: Write) -> None:
    write(
        "evaluators/incomplete.py",
        """
        from agenteval import BaseEvaluator

        class Incomplete(BaseEvaluator):
            def run(self, item):
                return item
        """,
    )
    result = cli("run")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: Could not import evaluators/incomplete.py:3: TypeError: Incomplete "
        "must implement get_dataset, evaluate (or set __abstract__ = True on it if it is a base class)"
    )


@pytest.mark.parametrize(
    ("hook", "error"),
    [
        (
            "async def set_up(self):",
            "Hooks.set_up is async def, and would never run: it runs once, outside any item's "
            "event loop; make it a plain def (open async clients in run, on first use)",
        ),
        (
            "def setUp(self):",
            "Hooks.setUp would never be called: agenteval calls set_up (rename it)",
        ),
    ],
)
def test_cli_a_hook_that_would_never_run_fails_at_class_definition(
    cli: Cli, write: Write, hook: str, error: str
) -> None:
    # the run passed, exit 0, with the set_up that raised never called
    write(
        "evaluators/hooks.py",
        f"""
        from agenteval import BaseEvaluator

        class Hooks(BaseEvaluator):
            {hook}
                raise RuntimeError("no agent today")

            def get_dataset(self):
                return [{{"id": "a"}}]

            def run(self, item):
                return "x"

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run")
    assert result.code == 2
    assert result.stderr.strip() == (
        f"agenteval: error: Could not import evaluators/hooks.py:3: TypeError: {error}"
    )


def test_cli_k_and_tag_select_evaluators(cli: Cli, write: Write) -> None:
    write("evaluators/echo.py", PASSING)
    write("evaluators/failing.py", FAILING)
    assert cli("run", "-k", "echo").code == 0
    assert cli("run", "--tag", "smoke").code == 0
    assert cli("run", "-k", "failing.py::Failing").code == 1
    result = cli("run", "-k", "zzz")
    assert result.code == 2 and "matches -k 'zzz'" in result.stderr
    assert cli("run", "--tag", "SMOKE").code == 0  # (as -k: regardless of case)
    result = cli("run", "--tag", "nightly")
    assert result.stderr == (
        "agenteval: error: No evaluator in evaluators matches --tag 'nightly' (their tags: smoke)\n"
    )


def test_cli_path_and_class_as_reports_name_them_runs_that_evaluator(
    cli: Cli, write: Write
) -> None:
    write("evaluators/both.py", PASSING + FAILING)  # (reports name them both.py::Class)
    assert cli("run", "evaluators/both.py::EchoEvaluator").code == 0  # (the other left out)
    assert cli("run", "evaluators/both.py::FailingEvaluator").code == 1
    wrong = cli("run", "evaluators/both.py::Echo")
    assert wrong.stderr == (
        "agenteval: error: evaluators/both.py has no evaluator class 'Echo' (its evaluators: "
        "EchoEvaluator, FailingEvaluator)\n"
    )
    folder = cli("run", "evaluators::Echo")
    assert folder.stderr == (
        "agenteval: error: 'evaluators::Echo': '::Echo' picks a class of a file, and "
        "'evaluators' is a folder: use -k 'Echo'\n"
    )


def test_cli_set_up_failure_reports_stage_and_others_still_run(cli: Cli, write: Write) -> None:
    write("evaluators/echo.py", PASSING)
    write(
        "evaluators/setup_fails.py",
        """
        from agenteval import BaseEvaluator

        class SetUpFails(BaseEvaluator):
            def set_up(self):
                raise ConnectionError("database down")

            def get_dataset(self):
                return [{"input": 1}]

            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run")
    assert result.code == 2
    # the line in the user's code, as for an item's error
    assert "  ERROR in set_up: ConnectionError: database down  evaluators/setup_fails.py:5" in (
        result.lines
    )
    assert "PASSED  EchoEvaluator  evaluators/echo.py" in result.lines


def test_cli_an_evaluate_that_is_not_a_function_still_runs(cli: Cli, write: Write) -> None:
    # agenteval reads evaluate's code object ahead of the items (the file its assertions
    # are recorded with): an object without one, even one that raises on any attribute,
    # must not fail the run
    write(
        "evaluators/delegating.py",
        """
        from agenteval import BaseEvaluator

        class Quiet:
            def __getattr__(self, name):
                raise KeyError(name)

            def __call__(self, output, item):
                pass

        class Delegating(BaseEvaluator):
            evaluate = Quiet()

            def get_dataset(self):
                return [{"id": 1}, {"id": 2}]

            def run(self, item):
                return "foo"
        """,
    )
    for concurrency in ("1", "2"):
        result = cli("run", "-c", concurrency)
        assert result.code == 0, result
        assert "PASSED  Delegating  evaluators/delegating.py" in result.lines


def test_cli_an_invalid_assertion_result_points_at_the_users_line(cli: Cli, write: Write) -> None:
    # pydantic rejects the result inside its own code: the site shown is the user's
    write(
        "evaluators/nan_score.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.assertions import Assertion, AssertionResult

        class Scored(Assertion):
            def evaluate(self, actual):
                return AssertionResult(passed=True, score=float("nan"))

        class NanScore(BaseEvaluator):
            def get_dataset(self):
                return [{"id": 1}]

            def run(self, item):
                return "x"

            def evaluate(self, output, item):
                self.assert_that(Scored(), output)
        """,
    )
    result = cli("run")
    assert result.code == 2, result
    (line,) = [line for line in result.lines if line.startswith("  ERROR    item 1")]
    assert "score must be a number in [0, 1], got NaN" in line
    assert line.endswith("  evaluators/nan_score.py:6")


def test_cli_assertion_mistakes_are_one_clear_line_each(cli: Cli, write: Write) -> None:
    write(
        "evaluators/mistakes.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.assertions import Assertion, AssertionResult, StringContains

        class TooHigh(Assertion):
            def evaluate(self, actual):
                return AssertionResult.fail(5.0, "bad")

        class Mistakes(BaseEvaluator):
            def get_dataset(self):
                return [{"id": k} for k in ("score", "text", "class")]

            def run(self, item):
                return "refund"

            def evaluate(self, output, item):
                if item["id"] == "score":
                    self.assert_that(TooHigh(), output)
                elif item["id"] == "text":
                    self.assert_that("refund", output)
                else:
                    self.assert_that(StringContains, output)
        """,
    )
    result = cli("run")
    assert result.code == 2, result
    errors = [line for line in result.lines if line.startswith("  ERROR    item")]
    assert errors == [
        "  ERROR    item 'score' · evaluate · pydantic.ValidationError: AssertionResult: score: "
        "Input should be less than or equal to 1 (got 5.0)  evaluators/mistakes.py:6",
        "  ERROR    item 'text' · evaluate · TypeError: assert_that() takes an assertion, like "
        "StringContains('refund'), and its actual value; got str 'refund' as the assertion  "
        "evaluators/mistakes.py:19",
        "  ERROR    item 'class' · evaluate · TypeError: assert_that() takes an assertion, and "
        "StringContains is its class: build one, e.g. StringContains(...)  "
        "evaluators/mistakes.py:21",
    ]


UNRECORDED = """
import asyncio

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Unrecorded(BaseEvaluator):
    def get_dataset(self):
        return [
            {"id": k} for k in ("result", "bool", "returned", "none", "gathered", "unawaited")
        ]

    def run(self, item):
        return "no"

    async def evaluate(self, output, item):
        if item["id"] == "result":
            return StringContains("refund").evaluate(output)
        if item["id"] == "bool":
            return "refund" in output
        if item["id"] == "returned":  # recorded, then returned: fine
            return self.assert_that(StringContains("no"), output)
        if item["id"] == "none":  # or none
            return await asyncio.gather()
        if item["id"] == "gathered":  # so are several
            return await asyncio.gather(
                self.aassert_that(StringContains("n"), output),
                self.aassert_that(StringContains("o"), output),
            )
        self.aassert_that(StringContains("refund"), output)
"""


@pytest.mark.parametrize("how", [(), ("-c", "2")])
def test_cli_a_check_evaluate_does_not_record_is_an_error(
    cli: Cli, write: Write, how: tuple[str, ...]
) -> None:
    # each of these passed with "assertions 0/0" and exit 0: the failing check was lost
    write("evaluators/unrecorded.py", UNRECORDED)
    result = cli("run", *how)
    assert result.code == 2, result
    errors = [line for line in result.lines if line.startswith("  ERROR    item")]
    assert errors == [
        "  ERROR    item 'result' · evaluate · EvaluationError: evaluate() returned an "
        "AssertionResult (failed: Expected 'no' to contain 'refund'), which records nothing: "
        "check with self.assert_that(assertion, output) (evaluate returns nothing)",
        "  ERROR    item 'bool' · evaluate · EvaluationError: evaluate() returned bool False, "
        "which records nothing: check with self.assert_that(assertion, output) (evaluate "
        "returns nothing)",
        "  ERROR    item 'unawaited' · evaluate · EvaluationError: evaluate() called "
        "aassert_that() (line 30) without awaiting it, so nothing was checked: write "
        "`await self.aassert_that(...)`",
    ]
    assert "3 passed, 0 failed, 3 errors" in result.stdout
    assert "never awaited" not in result.stderr  # (closed: no RuntimeWarning)


ODD_OUTPUTS = """
from dataclasses import dataclass, field

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


@dataclass
class Reply:
    text: str
    latency_ms: float = field(init=False)  # set later, or never


class Traced:
    text = "hello"

    def to_trajectory(self):
        raise RuntimeError("no trace today")


class Odd(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "set"}, {"id": "unset"}, {"id": "traced"}]

    async def run(self, item):
        if item["id"] == "traced":
            return Traced()
        reply = Reply(text="hello")
        if item["id"] == "set":
            reply.latency_ms = 1.0
        return reply

    def evaluate(self, output, item):
        self.assert_that(StringContains("hello"), output.text)
"""


@pytest.mark.parametrize("how", [(), ("-c", "2"), ("--executor", "async", "-c", "2")])
def test_cli_an_output_that_cannot_be_converted_costs_nothing(
    cli: Cli, write: Write, tmp_path: Path, how: tuple[str, ...]
) -> None:
    write("evaluators/odd.py", ODD_OUTPUTS)
    result = cli("run", *how, "--output-json", "out.json")
    assert result.code == 0, result
    items = {
        i["id"]: i
        for i in json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["items"]
    }
    assert {k: i["status"] for k, i in items.items()} == dict.fromkeys(
        ("set", "unset", "traced"), "passed"
    )
    assert items["set"]["output"] == {"text": "hello", "latency_ms": 1.0}
    # named by its file, not by the name discovery imported it under
    assert items["unset"]["output"]["unserializable"] == "odd.Reply"
    assert items["traced"]["output"]["unserializable"] == "odd.Traced"


def test_cli_skip_evaluator_does_not_fail_the_run(cli: Cli, write: Write) -> None:
    write("evaluators/echo.py", PASSING)
    write(
        "evaluators/skipped.py",
        """
        from agenteval import BaseEvaluator, SkipEvaluator

        class NeedsJudge(BaseEvaluator):
            def set_up(self):
                raise SkipEvaluator("no judge model configured")

            def get_dataset(self):
                return []

            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run")
    assert result.code == 0, result
    assert "  skipped: no judge model configured" in result.lines
    assert "1 evaluator skipped" in result.lines[-1]
    # with no item run at all, there is no success rate to speak of (not 0%)
    alone = cli("run", "evaluators/skipped.py")
    assert alone.code == 0, alone
    assert alone.lines[-1].startswith(
        "PASSED: 0 items, 0 passed, 0 failed, 0 errors, 1 evaluator skipped · success rate - · "
    )


def test_cli_duplicate_ids_are_a_dataset_error(cli: Cli, write: Write) -> None:
    write(
        "evaluators/dupes.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.datasets import ArrayDataset

        class Dupes(BaseEvaluator):
            def get_dataset(self):
                return ArrayDataset([{"id": "x"}, {"id": "y"}, {"id": "x"}])

            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run")
    assert result.code == 2
    assert (
        "  ERROR in get_dataset: DatasetError: <array> item #2: duplicate item id 'x': ids must be unique within a dataset"
        in result.lines
    )


def test_cli_ids_that_are_one_once_written_are_a_dataset_error(cli: Cli, write: Write) -> None:
    # ids from file names that are not valid UTF-8 shared one journal record: a resume gave
    # one item the other's result, a failure turned into a pass
    write(
        "evaluators/names.py",
        """
        from agenteval import BaseEvaluator

        class Names(BaseEvaluator):
            def get_dataset(self):
                return [{"id": "c\\udcfe"}, {"id": "c\\udcff"}]

            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run")
    assert result.code == 2
    assert (
        "  ERROR in get_dataset: DatasetError: item #1: ids 'c\\udcfe' and 'c\\udcff' are one "
        "once written (what is not valid text, such as a lone surrogate from a file name, is "
        "written as U+FFFD): give items ids of valid text" in result.lines
    )


def test_cli_a_dataset_of_yours_whose_describe_or_source_raises_loses_nothing(
    cli: Cli, write: Write
) -> None:
    write(
        "evaluators/own.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.datasets import Dataset

        class Rows(Dataset):
            @property
            def source(self):
                raise OSError("no source")

            def __iter__(self):
                yield from [{"id": "a"}, {"id": "a"}]

            def describe(self, index):
                return ["row 2"][index]  # IndexError for the duplicate

        class Own(BaseEvaluator):
            def get_dataset(self):
                return Rows()

            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass

        class Other(BaseEvaluator):
            def get_dataset(self):
                return [{"id": "b"}]

            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run", "--output-json", "report.json")  # (was an internal error, no report)
    assert result.code == 2, result
    assert (
        "  ERROR in get_dataset: DatasetError: item #1: duplicate item id 'a': ids must be "
        "unique within a dataset" in result.lines
    )
    assert "PASSED  Other  evaluators/own.py" in result.lines


def test_cli_version_and_help(cli: Cli) -> None:
    import agenteval

    assert cli("--version").stdout.strip() == f"agenteval {agenteval.__version__}"
    for command in ([], ["run"], ["make:evaluator"], ["cache"], ["cache", "clear"]):
        result = cli(*command, "--help")
        assert result.code == 0 and "Usage: agenteval" in result.stdout


def test_cli_config_errors_exit_2(cli: Cli, write: Write, tmp_path: Path) -> None:
    write("evaluators/echo.py", PASSING)
    result = cli("run", "--config", "missing.py")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: Config file 'missing.py' does not exist: check the --config path"
    )
    write("evaluation.py", "raise ValueError('bad setting')\n")
    result = cli("run")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: Config file 'evaluation.py':1 raised ValueError: bad setting"
    )
    write("evaluation.py", "import os\nraise KeyboardInterrupt\n")  # no message: no ': '
    result = cli("run")
    assert (result.code, result.stderr.strip()) == (
        2,
        "agenteval: error: Config file 'evaluation.py':2 raised KeyboardInterrupt",
    )
    write("evaluation.py", "output = ['console']\n")
    result = cli("run")
    assert result.stderr.strip() == (
        "agenteval: error: evaluation.py: output[0] is 'console' (str): use an OutputDriver "
        "class or instance, e.g. ConsoleOutput or JsonOutput(path='results.json')"
    )


def test_cli_a_driver_that_changes_its_results_changes_no_verdict(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write(
        "evaluators/broken.py",
        """
        from agenteval import BaseEvaluator

        class Broken(BaseEvaluator):
            def set_up(self):
                raise RuntimeError("db down")

            def get_dataset(self):
                return [{"input": "x"}]

            def run(self, item):
                return "x"

            def evaluate(self, output, item):
                pass
        """,
    )
    write(
        "evaluation.py",
        """
        from agenteval.outputs import ConsoleOutput, JsonOutput, OutputDriver

        class Whitewash(OutputDriver):
            def output(self, summary):
                summary.error = None

            def finish_run(self, run):
                run.exit_code = 0
                run.evaluators.clear()

        output = [Whitewash, ConsoleOutput, JsonOutput("report.json")]
        """,
    )
    result = cli("run")
    assert result.code == 2, result  # (was 0: PASSED)
    assert "  ERROR in set_up: RuntimeError: db down  evaluators/broken.py:5" in result.lines
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["run"]["exit_code"] == 2
    assert report["evaluators"][0]["error"]["message"] == "db down"


def test_cli_a_device_as_config_and_an_empty_report_path_are_named_as_such(
    cli: Cli, write: Write
) -> None:
    write("evaluators/echo.py", PASSING)
    result = cli("run", "--config", "/dev/null")  # (was: "does not exist")
    assert (result.code, result.stderr) == (
        2,
        "agenteval: error: Config file '/dev/null' is not a regular file (a device or a "
        "pipe): give --config a Python file\n",
    )
    result = cli("run", "--output-json", "")  # (was: ". is a folder")
    assert (result.code, result.stderr) == (
        2,
        "agenteval: error: --output-json got an empty path: give a file, or leave it out\n",
    )


DRIVERS = "from agenteval.outputs import JsonOutput, OutputDriver\n"


@pytest.mark.parametrize(
    ("option", "source", "error"),
    [
        ("--config", None, "Config file 'conf' is a folder: give --config a Python file"),
        ("--bootstrap", None, "Bootstrap file 'conf' is a folder: give --bootstrap a Python file"),
        (
            "--bootstrap",
            "import os\nos._exit(0)\n",
            "Bootstrap file 'conf.py':2 called os._exit(0): it must not end the process; raise "
            "an exception to report a problem",
        ),
        ("--config", "x = 1\0\n", "SyntaxError: source code string cannot contain null bytes"),
        (
            "--config",
            DRIVERS + "outputs = [JsonOutput('r.json')]\n",
            "conf.py: 'outputs' is not a setting: did you mean 'output'? (a config file sets "
            "'output' and 'prices'; give a helper of yours a leading '_')",
        ),
        ("--config", "Prices = {}\n", "'Prices' is not a setting: did you mean 'prices'?"),
        ("--config", DRIVERS + "ouptut = [JsonOutput('r.json')]\n", "did you mean 'output'?"),
        ("--config", "pricse = {}\n", "'pricse' is not a setting: did you mean 'prices'?"),
        ("--config", "prices = []\n", "conf.py: prices must be a dict of model name -> "),
        ("--config", "prices = {1: {}}\n", "conf.py: prices[1]: a model's name must be text"),
        (
            "--config",
            DRIVERS + "class Quiet(OutputDriver):\n    pass\noutput = [Quiet]\n",
            "conf.py: output[0]: Quiet does not implement output(summary), which every driver must",
        ),
        (
            "--config",
            DRIVERS + "class Boom(OutputDriver):\n    def __init__(self):\n"
            "        raise RuntimeError('cannot connect')\noutput = [Boom]\n",
            "conf.py: output[0]: Boom() raised RuntimeError: cannot connect\n",  # no hint
        ),
        (  # found before the run, as --output-json's, not after it
            "--config",
            DRIVERS + "output = [JsonOutput('conf.py/r.json')]\n",
            "conf.py: output[0]: JsonOutput: conf.py/r.json cannot be written: ",
        ),
        (
            "--config",
            DRIVERS + "output = [JsonOutput('evaluators')]\n",
            "conf.py: output[0]: JsonOutput: evaluators is a folder: give a file's path",
        ),
        (
            "--config",
            "from agenteval.outputs import ConsoleOutput\noutput = [ConsoleOutput(stream='x.log')]\n",
            "ConsoleOutput(stream=...) must be an open text file, got 'x.log'",
        ),
        (
            "--config",
            "from agenteval.outputs import ConsoleOutput\noutput = [ConsoleOutput(verbose='no')]\n",
            "ConsoleOutput(verbose=...) must be True or False, got 'no'",
        ),
        (  # a ':' for the '=': the annotation alone sets nothing
            "--config",
            DRIVERS + "output: [JsonOutput('r.json')]\n",
            "conf.py: 'output' is annotated but never assigned (a ':' where '=' was meant?): "
            "write output = ...\n",
        ),
        (
            "--config",
            "prices: {'m': {'input': 1}}\n",
            "conf.py: 'prices' is annotated but never assigned",
        ),
        (  # a run that would print nothing at all
            "--config",
            "output = []\n",
            "conf.py: 'output' is an empty list, so the run would report nothing",
        ),
    ],
)
def test_cli_config_and_bootstrap_mistakes_are_one_line_before_the_run(
    cli: Cli, write: Write, tmp_path: Path, option: str, source: str | None, error: str
) -> None:
    write("evaluators/ran.py", RECORDING_EVALUATOR)
    if source is None:
        (tmp_path / "conf").mkdir()
    else:
        (tmp_path / "conf.py").write_text(source, encoding="utf-8")
    result = cli("run", option, "conf" if source is None else "conf.py")
    assert result.code == 2, result
    assert error in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "ran").exists()


def test_cli_config_and_bootstrap_import_modules_next_to_them(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write("evaluators/echo.py", PASSING)
    write("conf/_paths.py", "REPORT = 'from-conf.json'\n")
    write("conf/boot.py", "import _paths\n")
    write(
        "conf/evaluation.py",
        "from _paths import REPORT\nfrom agenteval.outputs import JsonOutput\n"
        "output = [JsonOutput(REPORT)]\n",
    )
    result = cli("run", "--config", "conf/evaluation.py", "--bootstrap", "conf/boot.py")
    assert result.code == 0, result
    assert (tmp_path / "from-conf.json").exists()


def test_cli_a_run_that_stops_before_reporting_leaves_no_earlier_report(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    # the green report of the run before stayed, to be read as this run's by a CI step
    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        "from agenteval.outputs import JsonOutput\noutput = [JsonOutput('conf.json')]\n",
    )
    assert cli("run", "--output-json", "out.json").code == 0
    assert (tmp_path / "out.json").exists() and (tmp_path / "conf.json").exists()
    write("evaluators/broken.py", "from agenteval import BaseEvaluator\ndef broken(:\n")
    result = cli("run", "--output-json", "out.json")
    assert result.code == 2 and "SyntaxError" in result.stderr
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "conf.json").exists()
    (tmp_path / "evaluators" / "broken.py").unlink()
    assert cli("run", "--output-json", "out.json").code == 0
    bad = cli("run", "--output-json", "out.json", "--min-success-rate", "1.5")
    assert bad.code == 2 and not (tmp_path / "out.json").exists()


def test_cli_output_json_dash_is_refused_not_written_as_a_file(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write("evaluators/echo.py", PASSING)
    result = cli("run", "--output-json", "-")
    assert result.code == 2
    assert "--output-json needs a file path, got '-'" in result.stderr
    assert not (tmp_path / "-").exists()
    # the JSON report alone on stdout: no console driver, the report into /dev/stdout
    write("evaluation.py", "output = []\n")
    alone = cli("run", "--output-json", "/dev/stdout")
    assert alone.code == 0, alone
    assert json.loads(alone.stdout)["run"]["totals"]["passed"] == 2


def test_cli_json_on_stdout_stays_a_document_when_evaluators_print(cli: Cli, write: Write) -> None:
    write(
        "evaluators/chatty.py",
        """
        from agenteval import BaseEvaluator

        class Chatty(BaseEvaluator):
            def set_up(self):
                print("setting up")

            def get_dataset(self):
                return [{"id": "a"}, {"id": "b"}]

            def run(self, item):
                print("agent log line")
                return "x"

            def evaluate(self, output, item):
                pass
        """,
    )
    write("evaluation.py", "output = []\n")
    for extra in ([], ["-c", "2"]):
        result = cli("run", "--output-json", "/dev/stdout", *extra)
        assert result.code == 0, result
        assert json.loads(result.stdout)["run"]["totals"]["passed"] == 2  # (was: prints first)
        assert "setting up" in result.stderr


def test_cli_config_helpers_named_like_a_setting_are_fine(cli: Cli, write: Write) -> None:
    write("evaluators/ran.py", RECORDING_EVALUATOR)
    write(
        "evaluation.py",
        """
        from agenteval.outputs import ConsoleOutput, JsonOutput
        outputs = [JsonOutput("r.json")]  # a helper: output is set as well
        output = [ConsoleOutput(), *outputs]
        def price(model):
            return 0
        prices = None  # no price table
        """,
    )
    assert cli("run").code == 0
    write(
        "evaluation.py",
        """
        OUTPUT_DIR = "reports"  # names near a setting's, holding what it never would
        output_dir = "reports"
        PRICE = 3
        my_prices = {}
        prices_table = {"m": True}
        outputter = []
        """,
    )
    assert cli("run").code == 0


def test_cli_config_outputs_are_used(cli: Cli, write: Write, tmp_path: Path) -> None:
    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        """
        from agenteval.outputs import ConsoleDriver, JsonDriver
        output = [ConsoleDriver, JsonDriver(path="reports/results.json")]
        """,
    )
    result = cli("run")
    assert result.code == 0
    doc = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert doc["run"]["exit_code"] == 0
    assert doc["evaluators"][0]["summary"]["passed"] == 2


def test_cli_bootstrap_runs_first_and_errors_are_clear(cli: Cli, write: Write) -> None:
    write(
        "evaluators/env.py",
        """
        import os
        from agenteval import BaseEvaluator

        class EnvEvaluator(BaseEvaluator):
            def get_dataset(self):
                return [{"input": os.environ["FROM_BOOTSTRAP"]}]

            def run(self, item):
                return item["input"]

            def evaluate(self, output, item):
                assert output == "yes"
        """,
    )
    write("boot.py", "import os\nos.environ['FROM_BOOTSTRAP'] = 'yes'\n")
    assert cli("run", "--bootstrap", "boot.py").code == 0
    write("exits.py", "import sys\nsys.exit(0)\n")
    result = cli("run", "--bootstrap", "exits.py")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: Bootstrap file 'exits.py' called sys.exit(0): it must not exit; "
        "raise an exception to report a problem"
    )
    result = cli("run", "--bootstrap", "nope.py")
    assert result.code == 2 and "Bootstrap file 'nope.py' does not exist" in result.stderr


def test_cli_driver_failure_exits_2_and_keeps_other_outputs(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        """
        from agenteval.outputs import ConsoleOutput, JsonOutput, OutputDriver

        class Broken(OutputDriver):
            def output(self, summary):
                raise OSError("disk full")

        output = [Broken(), ConsoleOutput, JsonOutput("out.json")]
        """,
    )
    result = cli("run")
    assert result.code == 2
    assert (
        "agenteval: output driver failed: Broken.output() raised OSError: disk full"
        in result.stderr
    )
    assert (
        json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["summary"]["passed"] == 2
    )
    assert "PASSED  EchoEvaluator  evaluators/echo.py" in result.lines


def test_cli_a_driver_failing_at_the_end_is_in_the_json_reports_verdict(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    # the JSON report's exit code is the run's, also when a driver listed after it fails
    # in finish_run: the user's drivers finish before the report files
    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        """
        from agenteval.outputs import ConsoleOutput, JsonOutput, OutputDriver

        class Upload(OutputDriver):
            def output(self, summary):
                pass

            def finish_run(self, run):
                raise ConnectionError("dashboard down\\nretry later")

        output = [JsonOutput("out.json"), Upload(), ConsoleOutput]
        """,
    )
    result = cli("run", "--output-json", "extra.json")
    assert result.code == 2, result
    failure = "Upload.finish_run() raised ConnectionError: dashboard down"
    for name in ("out.json", "extra.json"):
        run = json.loads((tmp_path / name).read_text())["run"]
        assert run["exit_code"] == 2, name
        assert run["driver_errors"] == [f"{failure}\nretry later"], name
    # one line each: in the log on stderr, and in the console report, above its verdict
    one_line = f"output driver failed: {failure} ⏎ retry later"
    assert result.stderr.splitlines() == [f"agenteval: {one_line}"]
    assert result.lines[-2:-1] == [f"error: {one_line}"]
    assert result.lines[-1].endswith("exit 2")


def test_cli_each_driver_of_yours_finishing_is_told_of_the_failures_before_it(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        """
        from pathlib import Path
        from agenteval.outputs import OutputDriver

        class Log(OutputDriver):
            def __init__(self, name):
                self.name = name

            def output(self, summary):
                pass

            def finish_run(self, run):
                with open("finished.log", "a") as log:
                    log.write(f"{self.name} {run.exit_code} {len(run.driver_errors)}\\n")

        class Fails(OutputDriver):
            def output(self, summary):
                pass

            def finish_run(self, run):
                raise ConnectionError("dashboard down")

        output = [Log("first"), Fails(), Log("after")]
        """,
    )
    result = cli("run")
    assert result.code == 2, result
    assert (tmp_path / "finished.log").read_text().splitlines() == ["first 0 0", "after 2 1"]


@pytest.mark.parametrize(("signal_name", "code"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_cli_a_signal_while_the_json_report_is_written_is_in_its_verdict(
    cli: Cli, write: Write, tmp_path: Path, signal_name: str, code: int
) -> None:
    write("evaluators/echo.py", PASSING)
    write(
        "boot.py",
        f"""
        import os, signal
        from agenteval.outputs import _json

        written = _json.write_document

        def interrupted_while_writing(run, fh):
            if not os.environ.get("SIGNALLED"):
                os.environ["SIGNALLED"] = "1"
                os.kill(os.getpid(), signal.{signal_name})  # as CI cancelling the job
            written(run, fh)

        _json.write_document = interrupted_while_writing
        """,
    )
    result = cli("run", "--bootstrap", "boot.py", "--output-json", "out.json")
    assert result.code == code, result
    run = json.loads((tmp_path / "out.json").read_text())["run"]
    assert (run["exit_code"], run["interrupted"]) == (code, signal_name)
    notice = (
        f"{signal_name} came while agenteval's report files were written: they were written "
        "again, with the run interrupted (one sent into a pipe or device keeps the first)"
    )
    assert notice in run["notices"] and notice in result.stdout.replace("\n", " ")
    assert result.lines[-1].endswith(f"exit {code}")


@pytest.mark.parametrize(("signal_name", "code"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_cli_a_signal_while_the_drivers_start_interrupts_the_run_before_any_item(
    cli: Cli, write: Write, tmp_path: Path, signal_name: str, code: int
) -> None:
    write("evaluators/ran.py", RECORDING_EVALUATOR)
    write(
        "evaluation.py",
        f"""
        import os, signal
        from agenteval.outputs import ConsoleOutput, OutputDriver

        class Dashboard(OutputDriver):
            def start_run(self, run):
                os.kill(os.getpid(), signal.{signal_name})  # while it connects, say

            def output(self, summary):
                pass

        output = [Dashboard(), ConsoleOutput]
        """,
    )
    result = cli("run", "--output-json", "out.json")
    assert result.code == code, result
    assert not (tmp_path / "ran").exists()
    run = json.loads((tmp_path / "out.json").read_text())["run"]
    assert (run["exit_code"], run["interrupted"]) == (code, signal_name)
    assert "Resume with: agenteval run --output-json out.json --resume " in result.stdout


def test_cli_a_verdict_that_let_something_pass_says_what(cli: Cli, write: Write) -> None:
    write(
        "evaluators/mixed.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.assertions import StringContains

        class Mixed(BaseEvaluator):
            def get_dataset(self):
                return [{"id": i} for i in range(4)]

            def run(self, item):
                if item["id"] == 3:
                    raise ValueError("flaky tool")
                return "ok" if item["id"] else "no"

            def evaluate(self, output, item):
                self.assert_that(StringContains("ok"), output)

        class Empty(BaseEvaluator):
            def get_dataset(self):
                return []  # a filter that matched nothing, say

            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass
        """,
    )
    result = cli("run", "--min-success-rate", "0.5", "--max-errors", "1")
    assert result.code == 0, result
    assert [line for line in result.lines if line.startswith("notice: ")] == [
        "notice: Empty has no items (its dataset is empty): nothing of it was evaluated",
        "notice: 1 item failed, and the run passed all the same: every evaluator's success "
        "rate reached --min-success-rate 0.5",
        "notice: 1 item errored, timed out or crashed, within --max-errors 1",
    ]


def test_cli_output_json_to_stdout_sent_to_a_file_keeps_the_console_report(
    write: Write, tmp_path: Path
) -> None:
    import subprocess

    from cli_support import AGENTEVAL

    write("evaluators/echo.py", PASSING)
    out = tmp_path / "out.txt"
    with out.open("w") as fh:  # as `agenteval run --output-json /dev/stdout > out.txt`
        code = subprocess.run(
            [AGENTEVAL, "run", "--output-json", "/dev/stdout"], cwd=tmp_path, stdout=fh
        ).returncode
    assert code == 0
    text = out.read_text()
    assert text.startswith("agenteval · run ") and "PASSED  " in text
    document = next(line for line in text.splitlines() if line.startswith("{"))
    assert json.loads(document)["run"]["exit_code"] == 0
    assert text.rstrip().splitlines()[-1].startswith("PASSED: ")


def test_make_evaluator_writes_a_passing_evaluator(cli: Cli, tmp_path: Path) -> None:
    result = cli("make:evaluator", "App\\Evaluators\\RefundEvaluator")
    assert result.code == 0, result
    assert (tmp_path / "evaluators" / "refund_evaluator.py").exists()
    assert (tmp_path / "evaluators" / "datasets" / "refund_evaluator.json").exists()
    run = cli("run", "evaluators/")
    assert run.code == 0, run
    assert "PASSED  RefundEvaluator  evaluators/refund_evaluator.py" in run.lines
    again = cli("make:evaluator", "app.evaluators.RefundEvaluator")
    assert again.code == 2
    assert again.stderr.strip() == (
        "agenteval: error: evaluators/refund_evaluator.py already exists: choose another name "
        "or remove the file"
    )


def test_make_evaluator_hint_runs_when_pasted_into_a_shell(cli: Cli, tmp_path: Path) -> None:
    import shlex

    result = cli("make:evaluator", "Refund", "--dir", "my evals/it's")
    assert result.code == 0, result
    hint = result.lines[-1].removeprefix("Run it with: ")
    assert shlex.split(hint) == ["agenteval", "run", "my evals/it's/refund.py"]
    run = cli(*shlex.split(hint)[1:])
    assert run.code == 0, run


def test_cache_clear_of_a_folder_that_does_not_exist_says_so(cli: Cli) -> None:
    result = cli("cache", "clear", "--dir", "nowhere")
    assert result.code == 2, result
    assert result.stderr.strip() == (
        "agenteval: error: No folder 'nowhere': check --dir (nothing was removed)"
    )
    default = cli("cache", "clear")  # no cache in the default folder yet: nothing to remove
    assert (default.code, default.stdout.strip()) == (0, "Removed 0 cached responses")


def test_make_evaluator_keeps_letters_of_any_script(cli: Cli, tmp_path: Path) -> None:
    result = cli("make:evaluator", "ПроверкаОтвета")
    assert result.code == 0, result
    assert (tmp_path / "evaluators" / "проверка_ответа.py").exists()
    assert (tmp_path / "evaluators" / "datasets" / "проверка_ответа.json").exists()
    run = cli("run", "evaluators/")
    assert run.code == 0, run
    assert "PASSED  ПроверкаОтвета  evaluators/проверка_ответа.py" in run.lines


def test_make_evaluator_rejects_bad_names(cli: Cli) -> None:
    for name in ("123-bad", "None", "True"):  # (keywords: the file was a SyntaxError)
        result = cli("make:evaluator", name)
        assert result.code == 2
        assert result.stderr == (
            f"agenteval: error: {name!r} is not a valid class name: use something like "
            "RefundEvaluator\n"
        )
    named = cli("make:evaluator", "RefundEvaluator.py", "--dir", "by-file")  # (was class Py)
    assert named.code == 0 and named.lines[0].startswith("Created by-file/refund_evaluator.py")
    result = cli("make:evaluator", "path")  # the class hid the template's import of it
    assert result.stderr == (
        "agenteval: error: 'Path' is a name the evaluator template imports: use something "
        "like PathEvaluator\n"
    )


def test_cli_secrets_are_redacted_from_reports(cli: Cli, write: Write, tmp_path: Path) -> None:
    write(
        "evaluators/leaky.py",
        """
        import os
        from agenteval import BaseEvaluator
        from agenteval.assertions import StringContains

        class Leaky(BaseEvaluator):
            def get_dataset(self):
                return [{"input": "x"}]

            def run(self, item):
                return "key is " + os.environ["MY_API_KEY"]

            def evaluate(self, output, item):
                self.assert_that(StringContains("nope"), output)
        """,
    )
    secret = "sk-test-1234567890abcdef"
    result = cli("run", "--output-json", "out.json", env={"MY_API_KEY": secret})
    assert result.code == 1
    assert secret not in result.stdout
    assert "[REDACTED]" in result.stdout
    assert secret not in (tmp_path / "out.json").read_text()
    records = next((tmp_path / ".agenteval" / "runs").glob("*/records.jsonl")).read_text()
    assert secret not in records


def test_cli_the_password_of_a_url_in_the_environment_is_redacted(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    # only values of variables named like a key were: a DATABASE_URL's password leaked into
    # the log, the report and the journal
    write(
        "evaluators/db.py",
        """
        import os
        from agenteval import BaseEvaluator

        class Db(BaseEvaluator):
            def get_dataset(self):
                return [{"id": "a"}]

            def run(self, item):
                raise ConnectionError("cannot reach " + os.environ["DATABASE_URL"])

            def evaluate(self, output, item):
                pass
        """,
    )
    url = "postgres://app:hunter2hunter2@db:5432/app"
    result = cli("run", "--output-json", "out.json", env={"DATABASE_URL": url})
    assert result.code == 2
    assert "ConnectionError: cannot reach postgres://app:[REDACTED]@db:5432/app" in result.stdout
    kept = (tmp_path / "out.json").read_text() + result.stdout + result.stderr
    kept += next((tmp_path / ".agenteval" / "runs").glob("*/records.jsonl")).read_text()
    assert "hunter2hunter2" not in kept


def test_cli_secrets_in_what_an_evaluator_says_of_itself_are_redacted(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    write(
        "evaluators/named.py",
        """
        import os
        from agenteval import BaseEvaluator, SkipEvaluator

        KEY = os.environ["MY_API_KEY"]

        class Named(BaseEvaluator):
            name = "Eval " + KEY
            description = "uses " + KEY
            tags = ("t-" + KEY,)

            def get_dataset(self):
                return [{"input": "x"}]

            def run(self, item):
                return "x"

            def evaluate(self, output, item):
                pass

        class Skipped(BaseEvaluator):
            def set_up(self):
                raise SkipEvaluator("no access with " + KEY)

            def get_dataset(self):
                return []

            def run(self, item):
                return ""

            def evaluate(self, output, item):
                pass
        """,
    )
    secret = "sk-test-1234567890abcdef"
    result = cli("run", "--output-json", "out.json", env={"MY_API_KEY": secret})
    assert result.code == 0, result
    report = json.loads((tmp_path / "out.json").read_text())  # (the console's was masked)
    named, skipped = report["evaluators"]
    assert (named["name"], named["description"], named["tags"]) == (
        "Eval [REDACTED]",
        "uses [REDACTED]",
        ["t-[REDACTED]"],
    )
    assert skipped["skip_reason"] == "no access with [REDACTED]"
    assert secret not in (tmp_path / "out.json").read_text() + result.stdout


def test_cli_secrets_in_the_one_line_errors_of_your_files_are_redacted(
    cli: Cli, write: Write
) -> None:
    secret = "sk-test-1234567890abcdef"
    write(
        "boot.py", 'import os\nraise ValueError("cannot log in with " + os.environ["MY_API_KEY"])\n'
    )
    for option in ("--bootstrap", "--config"):
        result = cli("run", option, "boot.py", env={"MY_API_KEY": secret})
        assert result.code == 2, result
        assert result.stderr.endswith(":2 raised ValueError: cannot log in with [REDACTED]\n")
    write(
        "evaluators/broken.py",
        "from agenteval import BaseEvaluator\nimport os\nraise RuntimeError(os.environ['MY_API_KEY'])\n",
    )
    result = cli("run", env={"MY_API_KEY": secret})
    assert result.stderr == (
        "agenteval: error: Could not import evaluators/broken.py:3: RuntimeError: [REDACTED]\n"
    )


SURROGATE = """
    from agenteval import BaseEvaluator
    from agenteval.assertions import StringContains
    from agenteval.datasets import JsonDataset

    class Surrogates(BaseEvaluator):
        def get_dataset(self):
            return JsonDataset("cases.json")

        def run(self, item):
            return "fine " + item["input"]

        def evaluate(self, output, item):
            self.assert_that(StringContains("fine"), output)
"""


def test_cli_lone_surrogates_never_lose_a_record(cli: Cli, write: Write, tmp_path: Path) -> None:
    write("cases.json", '[{"id": "s", "input": "broken \\ud83d emoji"}]')
    write("evaluators/surrogates.py", SURROGATE)
    for extra in ([], ["-c", "2"]):
        result = cli("run", *extra, "--output-json", "out.json")
        assert result.code == 0, result
        (item,) = json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["items"]
        assert item["status"] == "passed"
        assert item["output"] == "fine broken \ufffd emoji"
        assert item["assertions"][0]["passed"] is True


@pytest.mark.parametrize("hook", ["start_run", "item_finished", "finish_run"])
@pytest.mark.parametrize("executor", [[], ["-c", "2"]])
def test_cli_driver_that_calls_os_exit_is_a_driver_failure(
    cli: Cli, write: Write, tmp_path: Path, hook: str, executor: list[str]
) -> None:
    # not the end of agenteval with the driver's exit code, and no report
    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        f"""
        import os
        from agenteval.outputs import ConsoleOutput, JsonOutput, OutputDriver

        class Exits(OutputDriver):
            def {hook}(self, *args):
                os._exit(7)

            def output(self, summary):
                pass

        output = [Exits(), ConsoleOutput, JsonOutput("out.json")]
        """,
    )
    result = cli("run", *executor)
    assert result.code == 2, result
    failure = f"Exits.{hook}() called os._exit(7): a driver must not end the process"
    assert f"agenteval: output driver failed: {failure}" in result.stderr
    assert result.lines[-1].startswith("ERROR: 2 items, 2 passed")
    summary = json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["summary"]
    assert summary["passed"] == 2


@pytest.mark.parametrize(
    ("raised", "shown"),
    [
        ("SystemExit(3)", "SystemExit: 3"),
        ("GeneratorExit('closed')", "GeneratorExit: closed"),  # (a BaseException too)
        ("BaseException('base')", "BaseException: base"),
    ],
)
def test_cli_driver_that_exits_is_a_driver_failure(
    cli: Cli, write: Write, tmp_path: Path, raised: str, shown: str
) -> None:
    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        f"""
        import sys
        from agenteval.outputs import JsonOutput, OutputDriver

        class Exits(OutputDriver):
            def output(self, summary):
                raise {raised}

        output = [Exits(), JsonOutput("out.json")]
        """,
    )
    result = cli("run")
    assert result.code == 2
    assert f"agenteval: output driver failed: Exits.output() raised {shown}" in result.stderr
    assert "Traceback" not in result.stderr
    assert (
        json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["summary"]["passed"] == 2
    )


def _dataset_evaluator(dataset_expr: str) -> str:
    return f"""
    from pathlib import Path
    from agenteval import BaseEvaluator

    class Data(BaseEvaluator):
        def get_dataset(self):
            return {dataset_expr}

        def run(self, item):
            Path("ran").write_text("an item ran")
            return "x"

        def evaluate(self, output, item):
            pass
    """


def test_cli_dataset_items_are_checked_before_any_runs(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    cases = {
        '{"a": {"input": 1}}': "Data.get_dataset() returned a dict: return a list of dicts or "
        "a Dataset, e.g. ArrayDataset([...]) or JsonDataset(path)",
        "None": "Data.get_dataset() returned None (is a return missing?): return a list of dicts",
        "42": "Data.get_dataset() returned an int: return a list of dicts or a Dataset, e.g. "
        "ArrayDataset([...]) or JsonDataset(path)",
        '[{"input": 1}, "oops"]': "DatasetError: item #1 is a str ('oops'): dataset items must "
        "be dicts, e.g. {'input': ...}",
        '[{"id": "a"}, {"id": "b"}, {"id": "a"}]': "item #2: duplicate item id 'a': ids must be "
        "unique within a dataset",
        '[{"id": 1}, {}]': "item #1: id 1 is both an item's 'id' and another item's index "
        "(items without an 'id' are numbered by position): give every item an 'id', or none",
        "__import__('asyncio').sleep(0)": "Data.get_dataset() returned a coroutine: return a "
        "list of dicts (get_dataset is not awaited: run async code in it with asyncio.run)",
        '[{"id": 10**5000}]': "item #0 has an 'id' of more digits than Python writes out: "
        "use a string",
    }
    for expr, message in cases.items():
        write("evaluators/data.py", _dataset_evaluator(expr))
        result = cli("run")
        assert result.code == 2, result
        (line,) = [x for x in result.lines if x.startswith("  ERROR in get_dataset: ")]
        assert message in line and line.endswith(
            "JsonDataset(path)" if expr in ("None", "42") else message
        ), (expr, line)
        assert not (tmp_path / "ran").exists(), expr
        assert "Warning" not in result.stderr, (expr, result.stderr)  # (a coroutine left)


def test_cli_an_evaluator_that_needs_arguments_says_how_to_fix_it(cli: Cli, write: Write) -> None:
    needs = "        def __init__(self, model):\n            pass\n\n        def get_dataset"
    write("evaluators/data.py", _dataset_evaluator("[]").replace("        def get_dataset", needs))
    result = cli("run")
    assert result.code == 2, result
    assert (
        "  ERROR in set_up: DiscoveryError: Data() missing a required argument: 'model': "
        "agenteval builds evaluators without arguments — give them defaults, or build what "
        "they need in set_up"
    ) in result.lines


def test_make_evaluator_unwritable_dir_is_one_line(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    result = cli("make:evaluator", "Foo", "--dir", "afile")
    assert result.code == 2
    assert result.stderr.startswith("agenteval: error: Could not write into 'afile': ")
    assert "Traceback" not in result.stderr


def test_resume_with_a_damaged_manifest_is_one_line(cli: Cli, write: Write, tmp_path: Path) -> None:
    write("evaluators/echo.py", PASSING)
    write(".agenteval/runs/20260101-000000-aaaaaa/manifest.json", '{"evaluators": []}')
    result = cli("run", "--resume")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: The manifest of run '20260101-000000-aaaaaa' cannot be read or is "
        "damaged, so it is not known whether it is the one to resume: name the run (--resume "
        "RUN_ID), or remove that folder"
    )
    named = cli("run", "--resume", "20260101-000000-aaaaaa")
    assert named.code == 2
    assert "is not a run manifest (damaged?): start a new run" in named.stderr


def test_cli_bad_option_values_are_one_line(cli: Cli) -> None:
    result = cli("run", "-c", "0", "evaluators/")
    assert result.code == 2
    assert result.stderr.strip() == (
        "agenteval: error: Invalid value for '--concurrency' / '-c': Input should be greater "
        "than or equal to 1 (see `agenteval run --help`)"
    )
    unknown = cli("run", "--nope")
    assert unknown.code == 2
    assert unknown.stderr.startswith("agenteval: error: No such option: --nope")
    assert len(unknown.stderr.strip().splitlines()) == 1
    bare = cli()
    assert bare.code == 0 and bare.stdout.startswith("Usage: agenteval")


MANY_FAILURES = """
    from agenteval import BaseEvaluator
    from agenteval.assertions import StringContains

    class Many(BaseEvaluator):
        def get_dataset(self):
            items = [{"id": f"case-{n:03d}", "input": "no"} for n in range(60)]
            return [{"id": "x" * 500, "input": "no"}, *items, {"id": "ok", "input": "yes"}]

        def run(self, item):
            if item["id"] == "case-059":
                raise ValueError("broken item")
            return item["input"]

        def evaluate(self, output, item):
            self.assert_that(StringContains("yes"), output)
"""


def test_cli_report_of_many_failures_lists_the_first_ones_and_says_how_many_more(
    cli: Cli, write: Write
) -> None:
    write("evaluators/many.py", MANY_FAILURES)
    result = cli("run", "-c", "2")
    assert result.code == 2
    listed = [line for line in result.lines if line.startswith(("  FAIL ", "  ERROR "))]
    assert len(listed) == 25 and "case-023" in listed[-1]
    assert max(len(line) for line in result.lines) < 250  # the 500-character id is cut short
    assert f"item '{'x' * 58}…" in listed[0]
    assert (
        "  … and 36 more items with failures or errors (-v lists every item; the JSON report has them all)"
        in result.lines
    )
    assert "  failures by assertion: StringContains ×60" in result.lines
    verbose = cli("run", "-v")
    assert sum(line.startswith(("  FAIL ", "  ERROR ")) for line in verbose.lines) == 61


def test_cli_report_lists_failures_before_items_with_soft_failures_only(
    cli: Cli, write: Write
) -> None:
    write(
        "evaluators/soft.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.assertions import StringContains

        class Mixed(BaseEvaluator):
            def get_dataset(self):
                return [{"id": f"i{n}"} for n in range(30)]

            def run(self, item):
                return "x"

            def evaluate(self, output, item):
                self.assert_that(StringContains("y"), output, soft=True)
                if item["id"] in ("i3", "i29"):
                    self.assert_that(StringContains("z"), output)
        """,
    )
    result = cli("run")
    assert result.code == 1
    # the last item's failure was cut off behind 25 soft-only items, and the soft-only items
    # left out were counted as "failures or errors"
    assert [line.split(" · ")[0] for line in result.lines if line.startswith("  FAIL ")] == [
        "  FAIL     item 'i3'",
        "  FAIL     item 'i29'",
    ]
    assert sum(line.startswith("  SOFT ") for line in result.lines) == 25
    assert (
        "  … and 5 more items with soft failures only (-v lists every item; the JSON report "
        "has them all)" in result.lines
    )


def test_cli_the_note_on_parallel_averages_comes_once_where_an_average_exceeds_its_share(
    cli: Cli, write: Write
) -> None:
    write(
        "evaluators/sleepy.py",
        """
        import time
        from agenteval import BaseEvaluator

        class Sleepy(BaseEvaluator):
            def get_dataset(self):
                return [{"id": n} for n in range(4)]

            def run(self, item):
                time.sleep(0.3)
                return "ok"

            def evaluate(self, output, item):
                pass

        class AlsoSleepy(Sleepy):
            pass
        """,
    )
    note = "time: items ran in parallel, so an average time per item can exceed total ÷ items"
    parallel = cli("run", "-c", "4")
    assert parallel.code == 0, parallel
    assert [line for line in parallel.lines if "ran in parallel" in line] == [note]
    sequential = cli("run")
    assert not any("ran in parallel" in line for line in sequential.lines)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tag", "--no-progress"], "--tag needs a value, got the option --no-progress"),
        (["--retry-errors", "-v"], "--retry-errors needs a value, got the option -v"),
        (["-k", "--output-json=x.json"], "-k needs a value, got the option --output-json=x.json"),
        (["-c", "2", "--timeout", "--help"], "--timeout needs a value, got the option --help"),
        (["-vk", "--no-progress"], "-k needs a value, got the option --no-progress"),
        (["-vc", "--tag", "x"], "-c needs a value, got the option --tag"),
    ],
)
def test_cli_an_option_given_another_option_as_its_value_is_refused(
    cli: Cli, write: Write, args: list[str], message: str
) -> None:
    write("evaluators/echo.py", PASSING)
    result = cli("run", *args)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr == f"agenteval: error: {message} (see `agenteval run --help`)\n"


def test_cli_an_empty_runs_dir_is_refused(cli: Cli, write: Write, tmp_path: Path) -> None:
    write("evaluators/echo.py", PASSING)
    result = cli("run", "--runs-dir", "")
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr == (
        "agenteval: error: --runs-dir got an empty path: give a folder, or leave it out\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evaluators"]


@pytest.mark.parametrize(
    "args", [["--resume="], ["--resume", ""], ["--retry-errors", ""], ["--resume", " "]]
)
def test_cli_an_empty_run_id_is_refused_not_a_fresh_run(
    cli: Cli, write: Write, tmp_path: Path, args: list[str]
) -> None:
    # an empty CI variable: `--resume=$RUN_ID`
    write("evaluators/echo.py", PASSING)
    result = cli("run", *args)
    assert result.code == 2 and result.stdout == ""
    assert "got an empty run id: give a run id, or leave it out" in result.stderr
    assert not (tmp_path / ".agenteval" / "runs").exists()


def test_cli_option_values_that_look_like_options_but_are_not_ones_are_kept(
    cli: Cli, write: Write
) -> None:
    write("evaluators/echo.py", PASSING)
    result = cli("run", "-k", "-echo-", "--no-progress")  # (a name may start with a dash)
    assert result.code == 2
    assert "No evaluator in evaluators matches -k '-echo-'" in result.stderr
    clustered = cli("run", "-vkfoo", "--no-progress")  # -k's value is the cluster's rest
    assert clustered.code == 2
    assert "No evaluator in evaluators matches -k 'foo'" in clustered.stderr
    after_dashes = cli("run", "--no-progress", "--", "--tag", "--verbose")  # paths only
    assert after_dashes.code == 2
    assert "'--tag' does not exist" in after_dashes.stderr, after_dashes


def test_cli_piped_into_a_reader_that_stops_early_is_quiet(write: Write, tmp_path: Path) -> None:
    # `agenteval run ... | head -1`: the console's reader goes away; the run still finishes
    # and writes its files, with its own exit code and no driver failure
    import os
    import subprocess
    import sys

    write(
        "evaluators/many_eval.py",
        """
        from agenteval import BaseEvaluator

        class Many(BaseEvaluator):
            def get_dataset(self):
                return [{"id": n} for n in range(50)]

            def run(self, item):
                print("the agent's log of item", item["id"], "x" * 200)  # (into the pipe too)
                return item["id"]

            def evaluate(self, output, item):
                pass
        """,
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTEVAL_")}
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "agenteval"), "run", "evaluators", "-v"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0, stderr
    assert first.startswith(b"agenteval \xc2\xb7 run ")
    assert stderr == ""
    assert list((tmp_path / ".agenteval" / "runs").glob("*/records.jsonl"))


def test_cli_header_names_worker_isolation_and_an_unused_concurrency(
    cli: Cli, write: Write
) -> None:
    write(
        "evaluators/one_eval.py",
        """
        from agenteval import BaseEvaluator

        class One(BaseEvaluator):
            def get_dataset(self):
                return [{"id": 1}]

            def run(self, item):
                return "ok"

            def evaluate(self, output, item):
                pass
        """,
    )
    workers = cli("run", "evaluators", "-c", "2", "--isolation", "worker")
    assert workers.code == 0, workers
    assert workers.lines[0].endswith("· 1 evaluator · concurrency 2 (fork, worker isolation)")
    inline = cli("run", "evaluators", "-c", "2", "--executor", "inline")
    assert inline.code == 0, inline
    assert inline.lines[0].endswith("· 1 evaluator · sequential")
    assert "notice: --executor inline runs one item at a time: -c 2 was not used" in inline.lines


def test_cli_resume_of_some_evaluators_names_the_others(cli: Cli, write: Write) -> None:
    write("evaluators/echo.py", PASSING)
    write("evaluators/other.py", PASSING.replace("EchoEvaluator", "OtherEvaluator"))
    first = cli("run")
    assert first.code == 0, first
    resumed = cli("run", "evaluators/echo.py", "--resume")
    assert resumed.code == 0, resumed
    (notice,) = [line for line in resumed.lines if line.startswith("notice: ")]
    assert notice.startswith("notice: only the selected evaluators are resumed; run ")
    assert notice.endswith(
        " also holds evaluators/other.py::OtherEvaluator: what did not finish there needs a "
        "resume that selects them"
    )


def test_cli_an_internal_error_is_one_line_exit_2_with_the_traceback_kept(
    cli: Cli, write: Write
) -> None:
    write("evaluators/echo.py", PASSING)
    # agenteval failing in its own code, as a bug would
    write(
        "boot.py",
        "import agenteval._runner as r\n"
        "def broken(*args, **kwargs):\n"
        "    raise LookupError('no such thing')\n"
        "r._exit_code = broken\n",
    )
    result = cli("run", "--bootstrap", "boot.py", "--no-progress")
    assert result.code == 2  # never 1: that says assertions failed
    (line,) = result.stderr.splitlines()
    prefix = (
        "agenteval: internal error: LookupError: no such thing at boot.py:3; the traceback is in "
    )
    assert line.startswith(prefix), line
    path, rest = line[len(prefix) :].split(" — ")
    assert rest == "please report it; the run's journal keeps every item that finished"
    assert "in broken" in Path(path).read_text()
    Path(path).unlink()


ODD_NAMES = """
from agenteval import BaseEvaluator
from agenteval.assertions import Assertion, AssertionResult


class Named(Assertion):
    name = "Ctx\\x1b[2Jname"  # (built from a dataset value, say)

    def evaluate(self, actual):
        return AssertionResult.fail(0.0, "日本語 · no")


class OddNames(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}]

    def run(self, item):
        return "x"

    def evaluate(self, output, item):
        self.assert_that(Named(), output)


class BrokenSetUp(BaseEvaluator):
    def set_up(self):
        raise ValueError("agent replied x\\ud800y")

    def get_dataset(self):
        return [{"id": "a"}]

    def run(self, item):
        return "x"

    def evaluate(self, output, item):
        pass
"""


def test_cli_report_lines_fit_the_stream_and_escape_every_control(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    # an ASCII or cp1252 stdout made the console driver fail (exit 2, lines lost), an
    # escape in an assertion's name cleared the screen, a surrogate in an evaluator's
    # error made the JSON report invalid
    write("evaluators/odd.py", ODD_NAMES)
    result = cli("run", "--output-json", "r.json", env={"PYTHONIOENCODING": "ascii"})
    assert result.code == 2, result
    assert "output driver failed" not in result.stdout + result.stderr
    assert "\x1b" not in result.stdout
    assert (
        "  FAIL     item 'a' ? Ctx\\x1b\\x5b\\x32\\x4aname ? ??? ? no (score 0.00)" in result.stdout
    )
    assert "ERROR in set_up: ValueError: agent replied x?y" in result.stdout
    error = json.loads((tmp_path / "r.json").read_text())["evaluators"][1]["error"]
    assert error["message"] == "agent replied x\ufffdy"
    assert error["traceback"].endswith("ValueError: agent replied x\ufffdy\n")


PRINTS_A_SECRET = """
import os, sys
from agenteval import BaseEvaluator


class PrintsSecret(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}]

    async def run(self, item):
        print("token is", os.environ["MY_SERVICE_TOKEN"])
        print("and again", os.environ["MY_SERVICE_TOKEN"], file=sys.stderr)
        sys.stdout.writelines(["lines ", os.environ["MY_SERVICE_TOKEN"], "\\n"])
        return "x"

    def evaluate(self, output, item):
        pass
"""


@pytest.mark.parametrize("how", [(), ("--executor", "async", "-c", "2")])
def test_cli_what_items_print_in_process_is_redacted(
    cli: Cli, write: Write, how: tuple[str, ...]
) -> None:
    # records were redacted, but a sequential or async item's prints reached the console whole
    write("evaluators/secret.py", PRINTS_A_SECRET)
    result = cli("run", *how, env={"MY_SERVICE_TOKEN": "tok-abcdef123456"})
    assert result.code == 0, result
    assert "tok-abcdef123456" not in result.stdout + result.stderr
    assert "token is [REDACTED]" in result.stdout
    assert "and again [REDACTED]" in result.stderr
    assert "lines [REDACTED]" in result.stdout


LEAVES_TASKS = """
import asyncio
from pathlib import Path
from agenteval import BaseEvaluator

LEFT = []


class LeavesTasks(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(2)]

    async def run(self, item):
        async def flush_later():
            try:
                await asyncio.sleep(30)
            finally:
                Path(f"flushed-{item['id']}").write_text("yes")

        LEFT.append(asyncio.create_task(flush_later()))
        return "x"

    def evaluate(self, output, item):
        pass
"""


def test_cli_tasks_a_sequential_item_left_are_cancelled_not_destroyed(
    cli: Cli, write: Write, tmp_path: Path
) -> None:
    # "Task was destroyed but it is pending!", and their finally never ran
    write("evaluators/leaves.py", LEAVES_TASKS)
    result = cli("run")
    assert result.code == 0, result
    assert "destroyed" not in result.stderr
    assert sorted(p.name for p in tmp_path.glob("flushed-*")) == ["flushed-0", "flushed-1"]


def test_cli_two_consoles_on_standard_output_are_refused(cli: Cli, write: Write) -> None:
    # their live displays fought: a stale bar stayed, a report or the verdict was lost
    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        "from agenteval.outputs import ConsoleOutput\n"
        "output = [ConsoleOutput, ConsoleOutput(verbose=True)]\n",
    )
    result = cli("run")
    assert (result.code, result.stderr) == (
        2,
        "agenteval: error: evaluation.py: 2 ConsoleOutputs write to standard output: keep one "
        "(with verbose=True for the longer report), or give the others a stream=...\n",
    )


def test_cli_a_driver_failure_is_shown_once_where_stdout_and_stderr_meet(
    write: Write, tmp_path: Path
) -> None:
    # the console's verdict listed it, then the stderr line said it again on the same screen
    import subprocess

    from cli_support import AGENTEVAL

    write("evaluators/echo.py", PASSING)
    write(
        "evaluation.py",
        """
        from agenteval.outputs import ConsoleOutput, OutputDriver

        class Broken(OutputDriver):
            def output(self, summary):
                raise OSError("disk full")

        output = [ConsoleOutput, Broken]
        """,
    )
    both = subprocess.run(
        [AGENTEVAL, "run"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert both.returncode == 2
    assert both.stdout.count("output driver failed: Broken.output() raised OSError") == 1
    apart = subprocess.run([AGENTEVAL, "run"], cwd=tmp_path, capture_output=True, text=True)
    assert "error: output driver failed" in apart.stdout
    assert apart.stderr.startswith("agenteval: output driver failed")  # (for a log of stderr)


def test_cli_an_option_missing_its_value_at_the_end_points_at_the_command_help(
    cli: Cli,
) -> None:
    result = cli("run", "evaluators", "--executor")
    assert result.code == 2
    assert result.stderr == (
        "agenteval: error: Option '--executor' requires an argument. (see `agenteval run --help`)\n"
    )
