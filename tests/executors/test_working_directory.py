"""The working directory under every executor: each evaluator's ``set_up`` starts in the
run's folder; its ``get_dataset``, its items and its ``tear_down`` run in the folder that
``set_up`` left, whatever an item before moved to; the run's files land in the run's folder."""

from __future__ import annotations

import os
from typing import Any

import pytest

MOVING_SET_UP = """
import os
import tempfile

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


def here():
    return os.path.basename(os.getcwd())


def logged(line):
    with open(os.environ["HOOK_LOG"], "a") as fh:
        fh.write(line + "\\n")


class Sandboxed(BaseEvaluator):
    def set_up(self):
        logged("Sandboxed set_up " + here())
        os.makedirs("sandbox", exist_ok=True)
        os.chdir("sandbox")  # the agent works in a folder of its own

    def get_dataset(self):
        return [{"id": f"s{n}", "listed_in": here()} for n in range(4)]

    {prefix}def run(self, item):
        where = here()  # before anything else (under async, before any await)
        if item["id"] == "s0":
            os.chdir(tempfile.mkdtemp())  # an item moving on: the next ones do not follow
        return item["listed_in"] + " " + where

    def evaluate(self, output, item):
        self.assert_that(StringContains("sandbox sandbox"), output)

    def tear_down(self):
        logged("Sandboxed tear_down " + here())


class Staying(BaseEvaluator):
    def set_up(self):
        self.started_in = here()
        logged("Staying set_up " + here())

    def get_dataset(self):
        return [{"id": f"t{n}"} for n in range(4)]

    {prefix}def run(self, item):
        return self.started_in + " " + here()

    def evaluate(self, output, item):
        self.assert_that(StringContains(os.environ["RUN_FOLDER"] + " " + os.environ["RUN_FOLDER"]), output)

    def tear_down(self):
        logged("Staying tear_down " + here())
"""

RUNS = {
    "inline": ("--executor", "inline"),
    "fork": ("--executor", "fork", "-c", "4"),
    "fork-workers": ("--executor", "fork", "-c", "2", "--isolation", "worker"),
    "async": ("--executor", "async", "-c", "4"),
}


@pytest.mark.parametrize("executor", list(RUNS))
def test_items_and_hooks_run_where_their_set_up_left_them(cli: Any, executor: str) -> None:
    source = MOVING_SET_UP.replace("{prefix}", "async " if executor == "async" else "")
    cli.write("evals/moving.py", source)
    log = cli.root / "hooks.log"
    env = {"HOOK_LOG": str(log), "RUN_FOLDER": cli.root.name}
    args = ("evals/moving.py", *RUNS[executor], "--no-progress", "--output-json", "report.json")
    # async items share the process's working directory with each other and with the
    # hooks the parent runs meanwhile (another evaluator's set_up moving it): one at a time
    selections = (("-k", "Sandboxed"), ("-k", "Staying")) if executor == "async" else ((),)
    outputs = {}
    for selection in selections:
        result = cli.run(*args, *selection, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        report = cli.json("report.json")  # in the run's folder, not the sandbox
        outputs |= {str(i["id"]): i["output"] for i in cli.items_of(report)}
    assert outputs == {
        **{f"s{n}": "sandbox sandbox" for n in range(4)},
        **{f"t{n}": f"{cli.root.name} {cli.root.name}" for n in range(4)},
    }
    # the journal is in the run's folder too
    assert sum(len(cli.records(run)) for run in cli.run_dirs()) == 8
    hooks = log.read_text().splitlines()
    assert sorted(hooks) == sorted(
        [
            f"Sandboxed set_up {cli.root.name}",
            "Sandboxed tear_down sandbox",
            f"Staying set_up {cli.root.name}",  # not in the sandbox the set_up before left
            f"Staying tear_down {cli.root.name}",
        ]
    )
    assert not (cli.root / "sandbox" / "report.json").exists()
    assert os.listdir(cli.root / "sandbox") == []
