"""An item that changes the working directory loses nothing: not the journal, not the
reports, and the items after it start where the run did."""

from __future__ import annotations

from typing import Any

import pytest

CHDIR_EVALUATOR = """
import os
import tempfile

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


def where():
    try:
        return os.path.basename(os.getcwd())
    except OSError:
        return "a folder removed"


class Chdir(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "before"}, {"id": "moves"}, {"id": "removes"}, {"id": "after"}]

    {prefix}def run(self, item):
        if item["id"] == "moves":
            os.chdir(tempfile.mkdtemp())  # an agent working in a scratch folder
        if item["id"] == "removes":
            scratch = tempfile.mkdtemp()
            os.chdir(scratch)
            os.rmdir(scratch)  # and cleaning it up
        return item["id"] + " in " + where()

    def evaluate(self, output, item):
        self.assert_that(StringContains(item["id"]), output)
"""


@pytest.mark.parametrize("executor", ["inline", "async"])
def test_an_item_changing_the_working_directory_loses_no_file(cli: Any, executor: str) -> None:
    prefix = "async " if executor == "async" else ""
    cli.write("chdir.py", CHDIR_EVALUATOR.replace("{prefix}", prefix))
    result = cli.run(
        "chdir.py", "--executor", executor, "--no-progress", "--output-json", "report.json"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == dict.fromkeys(["before", "moves", "removes", "after"], "passed")
    assert [r["id"] for r in cli.records()] == ["before", "moves", "removes", "after"]
    if executor == "inline":  # one item at a time: each starts where the run did
        outputs = {i["id"]: i["output"] for i in cli.items_of(report)}
        assert outputs["after"] == f"after in {cli.root.name}"
