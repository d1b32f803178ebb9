"""Discovery: which files are imported, which classes are collected, in which order."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agenteval import BaseEvaluator, DiscoveryError
from agenteval._discovery import discover, select
from cli_support import CliResult

Write = Callable[[str, str], Path]

EVAL = """
from agenteval import BaseEvaluator

class {name}(BaseEvaluator):
    tags = {tags!r}

    def get_dataset(self):
        return []

    def run(self, item):
        return item

    def evaluate(self, output, item):
        pass
"""


def _evaluator(name: str, tags: tuple[str, ...] = ()) -> str:
    return EVAL.format(name=name, tags=tags)


def test_discover_collects_classes_in_file_then_line_order(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        "evals/b.py",
        _evaluator("Second")
        + _evaluator("Third").replace("from agenteval import BaseEvaluator", ""),
    )
    write("evals/a.py", _evaluator("First"))
    specs = discover(["evals"])
    assert [s.cls.__name__ for s in specs] == ["First", "Second", "Third"]
    assert [s.id for s in specs] == ["evals/a.py::First", "evals/b.py::Second", "evals/b.py::Third"]


def test_discover_skips_private_hidden_cache_and_venv(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write("evals/keep.py", _evaluator("Kept"))
    write("evals/_helper.py", _evaluator("Private"))
    write("evals/.hidden/x.py", _evaluator("Hidden"))
    write("evals/__pycache__/x.py", _evaluator("Cached"))
    write("evals/env/pyvenv.cfg", "home = /usr\n")
    write("evals/env/lib/x.py", _evaluator("InVenv"))
    write(
        "evals/plain.py", "raise RuntimeError('never imported: does not mention the base class')\n"
    )
    assert [s.cls.__name__ for s in discover(["evals"])] == ["Kept"]


def test_discover_ignores_imported_and_abstract_classes(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        "evals/base_and_child.py",
        """
        from agenteval import BaseEvaluator

        class SharedBase(BaseEvaluator):
            __abstract__ = True

            def get_dataset(self):
                return [{"x": 1}]

        class Child(SharedBase):
            def run(self, item):
                return item

            def evaluate(self, output, item):
                pass
        """,
    )
    write(
        "evals/reuses.py",
        "from base_and_child import Child\nfrom agenteval import BaseEvaluator\n",
    )
    specs = discover(["evals"])
    assert [s.id for s in specs] == ["evals/base_and_child.py::Child"]


def test_discover_finds_evaluators_built_on_a_base_class_in_a_helper_file(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        "evals/_bases.py",
        """
        import agenteval

        class SupportBase(agenteval.BaseEvaluator):
            __abstract__ = True

            def get_dataset(self):
                return [{"x": 1}]

            def run(self, item):
                return item

        class JudgedBase(
            SupportBase,
        ):
            __abstract__ = True

            def evaluate(self, output, item):
                pass
        """,
    )
    write(
        "evals/refunds.py",
        "from _bases import JudgedBase\n\nclass Refunds(JudgedBase):\n    pass\n",
    )
    write(  # the base under a name of its own
        "evals/returns.py",
        "from _bases import JudgedBase as JB\n\nclass Returns(JB):\n    pass\n",
    )
    write("evals/notes.py", "raise RuntimeError('never imported: no evaluator class named')\n")
    write(
        "evals/report.py",
        "# prints what JudgedBase found: mentions it, defines nothing derived from it\n"
        "raise SystemExit('never imported')\n",
    )
    write("evals/SupportBase_notes.txt", "not Python")
    os.mkfifo(tmp_path / "evals" / "_scratch.py")  # a helper is only read, and not this one
    assert [s.id for s in discover(["evals"])] == [
        "evals/refunds.py::Refunds",
        "evals/returns.py::Returns",
    ]


def test_discover_lets_evaluators_import_siblings(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write("evals/_agent.py", "def answer():\n    return 42\n")
    write("evals/uses_sibling.py", "from _agent import answer\n" + _evaluator("UsesSibling"))
    assert [s.cls.__name__ for s in discover(["evals"])] == ["UsesSibling"]


def test_discover_accepts_classes(tmp_path: Path) -> None:
    class Inline(BaseEvaluator):
        def get_dataset(self) -> list[dict[str, int]]:
            return []

        def run(self, item: object) -> object:
            return item

        def evaluate(self, output: object, item: object) -> None:
            pass

    (spec,) = discover([Inline], root=tmp_path)
    assert spec.cls is Inline and spec.name == "Inline"


def test_select_by_pattern_and_tags(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write("evals/one.py", _evaluator("RefundEval", ("smoke",)))
    write("evals/two.py", _evaluator("ShippingEval", ("slow",)))
    specs = discover(["evals"])
    assert [s.name for s in select(specs, "refund")] == ["RefundEval"]
    assert [s.name for s in select(specs, "two.py::")] == ["ShippingEval"]
    assert [s.name for s in select(specs, tags=["slow", "nope"])] == ["ShippingEval"]
    assert select(specs, "zzz") == []


def test_discover_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError, match=r"^Path 'missing' does not exist"):
        discover(["missing"], root=tmp_path)


def test_missing_methods_fail_at_class_definition() -> None:
    with pytest.raises(TypeError, match=r"^Lacking must implement run, evaluate "):

        class Lacking(BaseEvaluator):
            def get_dataset(self) -> list[object]:
                return []


@pytest.mark.parametrize(
    ("attribute", "value", "message"),
    [
        ("tags", None, "Bad.tags must be a string, or a list or set of strings, got None"),
        ("tags", ["a", 1], "Bad.tags must be a string, or a list or set of strings, got ['a', 1]"),
        ("name", 123, "Bad.name must be a string, got int"),
        ("description", ["x"], "Bad.description must be a string, got list"),
    ],
)
def test_wrong_report_attributes_fail_at_class_definition(
    cli: Callable[..., CliResult], write: Write, attribute: str, value: object, message: str
) -> None:
    # not once every item has run, with no report
    source = _evaluator("Bad").replace("    tags = ()", f"    {attribute} = {value!r}")
    write("evals/bad.py", source)
    result = cli("run", "evals", "--no-progress")
    assert result.code == 2
    assert (
        result.stderr
        == f"agenteval: error: Could not import evals/bad.py:3: TypeError: {message}\n"
    )


def test_discover_refuses_a_pipe_named_like_an_evaluator(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "stream.py")  # reading it would wait for a writer forever
    with pytest.raises(DiscoveryError, match="not a regular file"):
        discover([tmp_path])


CHECKS_HELPER = """
from _support import VALUE
from agenteval import BaseEvaluator
from agenteval.assertions import StringStartsWith

class {name}(BaseEvaluator):
    def get_dataset(self):
        return [{{"id": 0}}]

    def run(self, item):
        return VALUE

    def evaluate(self, output, item):
        self.assert_that(StringStartsWith("{value}"), output)
"""


def test_each_folder_imports_its_own_helper_of_a_shared_name(
    cli: Callable[..., CliResult], write: Write
) -> None:
    # evaluators/refunds/_support.py and evaluators/shipping/_support.py: each file gets its own
    for folder in ("refunds", "shipping"):
        write(f"evals/{folder}/_support.py", f"VALUE = {folder!r}\n")
        write(f"evals/{folder}/check.py", CHECKS_HELPER.format(name=folder.title(), value=folder))
    for args in ((), ("-c", "2")):
        result = cli("run", "evals", "--no-progress", *args)
        assert result.code == 0, result.stdout


def test_an_evaluator_file_named_like_a_module_it_would_hide_is_refused(
    cli: Callable[..., CliResult], write: Write
) -> None:
    # agenteval imports yaml (and the provider SDKs) when a dataset or a model needs them
    write("evals/yaml.py", _evaluator("Yaml"))
    result = cli("run", "evals", "--no-progress")
    assert result.code == 2
    assert result.stderr.startswith("agenteval: error: evals/yaml.py has the name of the module")
    assert "rename it (e.g. yaml_eval.py)" in result.stderr
    assert result.stderr.count("\n") == 1


def test_folders_named_env_are_searched_unless_they_are_environments(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write("evals/env/checks.py", _evaluator("Environment"))  # a topic, not a virtualenv
    write("evals/build/checks.py", _evaluator("BuildOutput"))  # skipped: a build's copy
    write("evals/conda/conda-meta/history", "")  # a conda environment has no pyvenv.cfg
    write("evals/conda/lib/site.py", _evaluator("InConda"))
    assert [s.id for s in discover(["evals"])] == ["evals/env/checks.py::Environment"]


def test_tags_given_as_a_set_are_kept_in_order() -> None:
    class Tagged(BaseEvaluator):
        tags = {"smoke", "refunds"}  # type: ignore[assignment]

        def get_dataset(self) -> list[object]:
            return []

        def run(self, item: object) -> object:
            return item

        def evaluate(self, output: object, item: object) -> None:
            pass

    assert Tagged.tags == ("refunds", "smoke")


def test_a_utf16_evaluator_file_in_a_folder_is_an_error_not_skipped(
    cli: Callable[..., CliResult], write: Write, tmp_path: Path
) -> None:
    # what Windows Notepad's "Unicode" and PowerShell 5's `>` save
    write("evals/a.py", _evaluator("Kept"))
    (tmp_path / "evals/b.py").write_bytes(_evaluator("Wide").encode("utf-16"))
    for path in ("evals", "evals/b.py"):
        result = cli("run", path)
        assert result.code == 2, result.stdout
        assert result.stderr == (
            "agenteval: error: evals/b.py is saved as UTF-16, which Python cannot import: "
            "save it as UTF-8\n"
        )


def test_an_evaluator_class_defined_twice_in_a_file_is_an_error(
    cli: Callable[..., CliResult], write: Write
) -> None:
    body = _evaluator("Copied")
    write("evals/a.py", body + body.replace("from agenteval import BaseEvaluator", ""))
    result = cli("run", "evals")
    assert result.code == 2, result.stdout
    assert result.stderr == (
        "agenteval: error: evals/a.py:17: class Copied is defined 2 times (lines 3 and 17): "
        "each replaces the one before, whose items would never run — rename all but one\n"
    )


def test_a_class_defined_again_only_when_a_condition_holds_is_not_refused(
    cli: Callable[..., CliResult], write: Write
) -> None:
    body = _evaluator("Maybe")
    write("evals/a.py", body + "if False:\n" + body.replace("\n", "\n    "))
    assert cli("run", "evals").code == 0


def test_an_empty_path_is_a_usage_error_not_the_working_directory(
    cli: Callable[..., CliResult], write: Write
) -> None:
    write("evals/a.py", _evaluator("Kept"))
    result = cli("run", "")
    assert result.code == 2
    assert result.stderr == (
        "agenteval: error: An empty PATH was given (an unset shell variable?): pass a file "
        "or folder of evaluators\n"
    )
