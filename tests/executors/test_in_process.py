"""In-process executors (sequential, async): what an item does to the process costs the
run nothing. A changed working directory loses neither the journal nor the reports, and
the items after it start where the run did; ``os._exit`` is the item's crash."""

from __future__ import annotations

import time
from pathlib import Path
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


def run_in(cli: Any, executor: str, name: str, source: str, *args: str) -> Any:
    """Write the evaluator (``async def run`` for the async executor) and run it."""
    cli.write(name, source.replace("{prefix}", "async " if executor == "async" else ""))
    return cli.run(
        name, "--executor", executor, "--no-progress", "--output-json", "report.json", *args
    )


@pytest.mark.parametrize("executor", ["inline", "async"])
def test_an_item_changing_the_working_directory_loses_no_file(cli: Any, executor: str) -> None:
    result = run_in(cli, executor, "chdir.py", CHDIR_EVALUATOR)
    assert result.returncode == 0, result.stdout + result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == dict.fromkeys(["before", "moves", "removes", "after"], "passed")
    assert [r["id"] for r in cli.records()] == ["before", "moves", "removes", "after"]
    if executor == "inline":  # one item at a time: each starts where the run did
        outputs = {i["id"]: i["output"] for i in cli.items_of(report)}
        assert outputs["after"] == f"after in {cli.root.name}"


EXITS_EVALUATOR = """
import multiprocessing
import os

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


def child():
    os._exit(5)  # in a process the item forked: it ends that process, as always


class Exits(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "exits-0"}, {"id": "exits-3"}, {"id": "forks"}]

    {prefix}def run(self, item):
        if item["id"] == "forks":
            process = multiprocessing.get_context("fork").Process(target=child)
            process.start()
            process.join()
            return f"child exited {process.exitcode}"
        os._exit(int(item["id"][-1]))  # a tool that hard-exits

    def evaluate(self, output, item):
        self.assert_that(StringContains("exited 5"), output)
"""


@pytest.mark.parametrize("executor", ["inline", "async"])
def test_an_item_calling_os_exit_is_crashed_and_the_run_reaches_its_verdict(
    cli: Any, executor: str
) -> None:
    result = run_in(cli, executor, "exits.py", EXITS_EVALUATOR)
    assert result.returncode == 2, result.stdout + result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == {"exits-0": "crashed", "exits-3": "crashed", "forks": "passed"}
    errors = {i["id"]: i["error"] for i in cli.items_of(report) if i["error"]}
    assert errors["exits-3"]["type"] == "ProcessExit"
    assert errors["exits-3"]["message"].startswith(
        "os._exit(3) was called, which would have ended the whole run"
    )
    assert errors["exits-3"]["line"] == 22  # the os._exit call


FORKS_BACK_EVALUATOR = """
import os
import time

from agenteval import BaseEvaluator


class ForksBack(BaseEvaluator):
    def get_dataset(self):
        return [{"id": name} for name in ("before", "forks", "after")]

    def run(self, item):
        with open("ran.log", "a") as log:
            log.write(item["id"] + "\\n")
        if item["id"] == "forks" and os.fork() == 0:
            time.sleep(0.2)  # forked without exec: returns into agenteval's code
            return "from the forked copy"
        return "ok"

    def evaluate(self, output, item):
        assert output == "ok"
"""


def test_an_item_that_forks_without_exec_runs_the_rest_of_the_run_once(cli: Any) -> None:
    # the copy went on to the next items and wrote the reports a second time
    result = run_in(cli, "inline", "forks.py", FORKS_BACK_EVALUATOR)
    assert result.returncode == 0, result.stdout + result.stderr
    time.sleep(0.5)  # the copy's time to do what it would
    assert (cli.root / "ran.log").read_text().split() == ["before", "forks", "after"]
    assert cli.statuses(cli.json("report.json")) == dict.fromkeys(
        ["before", "forks", "after"], "passed"
    )
    assert len(cli.records()) == 3


ASYNC_FORKS_BACK_EVALUATOR = """
import asyncio
import os

from agenteval import BaseEvaluator


def log(line):
    with open("ran.log", "a") as f:
        f.write(line + "\\n")


class ForksBack(BaseEvaluator):
    def get_dataset(self):
        return [{"id": name} for name in ("before", "awaits", "returns", "after")]

    async def run(self, item):
        name = item["id"]
        log("start " + name)
        if name in ("awaits", "returns") and os.fork() == 0:  # without exec
            if name == "awaits":
                await asyncio.sleep(0.2)  # gives the loop back: the others' turn would come
                log("the copy went on")
            return "from the forked copy"
        await asyncio.sleep(0.5)
        log("end " + name)
        return "ok"

    def evaluate(self, output, item):
        assert output == "ok"
"""


def test_an_async_item_that_forks_without_exec_runs_no_other_item_twice(cli: Any) -> None:
    # the copy went on running the items in flight with it, and never ended
    result = run_in(cli, "async", "forks.py", ASYNC_FORKS_BACK_EVALUATOR, "-c", "4")
    assert result.returncode == 0, result.stdout + result.stderr
    time.sleep(1)  # the copies' time to do what they would
    names = ("before", "awaits", "returns", "after")
    assert sorted((cli.root / "ran.log").read_text().splitlines()) == sorted(
        [f"start {n}" for n in names] + [f"end {n}" for n in names]
    )
    assert cli.statuses(cli.json("report.json")) == dict.fromkeys(names, "passed")


SPAWNS = """
import multiprocessing

from agenteval import BaseEvaluator


def square(x):
    return x * x


class Spawns(BaseEvaluator):
    def get_dataset(self):
        return [{"id": method} for method in ("spawn", "forkserver")]

    def run(self, item):
        with multiprocessing.get_context(item["id"]).Pool(2) as pool:
            return pool.map(square, [1, 2, 3])

    def evaluate(self, output, item):
        assert output == [1, 4, 9]
"""


@pytest.mark.parametrize("extra", [(), ("-c", "2")])
def test_a_pool_that_spawns_gets_the_evaluator_files_functions(
    cli: Any, extra: tuple[str, ...]
) -> None:
    # a spawned process could not import the evaluator file's module by its name, so
    # its pool workers died over and over: the item hung for good (or until --timeout)
    cli.write("spawns.py", SPAWNS)
    result = cli.run("spawns.py", "--no-progress", *extra, "--output-json", "report.json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert cli.statuses(cli.json("report.json")) == {"spawn": "passed", "forkserver": "passed"}


CONTEXT_VARIABLES = """
import contextvars

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains

TRACE = contextvars.ContextVar("TRACE", default="unset")


class Traces(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}, {"id": "b"}]

    {prefix}def run(self, item):
        seen = TRACE.get()  # nothing the item before set
        TRACE.set("trace-" + item["id"])
        return seen

    {prefix}def evaluate(self, output, item):
        self.assert_that(StringContains("unset"), output)
        self.assert_that(StringContains("trace-" + item["id"]), TRACE.get())
"""


@pytest.mark.parametrize("executor", ["inline", "async", "fork"])
def test_a_context_variable_set_in_run_is_seen_by_evaluate_alone(cli: Any, executor: str) -> None:
    # an async run's variable was lost before evaluate (sequential, fork), and a sync
    # item's leaked into the next item (sequential), unlike under --executor async
    result = run_in(cli, executor, "traces.py", CONTEXT_VARIABLES)
    assert result.returncode == 0, result.stdout + result.stderr
    if executor != "async":  # (sync methods too)
        sync = run_in(cli, "inline", "traces_sync.py", CONTEXT_VARIABLES.replace("Traces", "Sync"))
        assert sync.returncode == 0, sync.stdout + sync.stderr


def test_run_evaluations_of_an_async_evaluator_from_inside_an_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a notebook cell, asyncio.run(main()), an async test: "Cannot run the event loop while
    # another loop is running", for every item
    import asyncio

    from agenteval import BaseEvaluator, run_evaluations

    monkeypatch.chdir(tmp_path)

    class Awaits(BaseEvaluator):
        def get_dataset(self) -> list[dict[str, int]]:
            return [{"id": 0}, {"id": 1}]

        async def run(self, item: dict[str, int]) -> str:
            await asyncio.sleep(0)
            return "ok"

        async def evaluate(self, output: str, item: dict[str, int]) -> None:
            assert output == "ok"

    async def main() -> int:
        return run_evaluations([Awaits], outputs=[], journal=False).exit_code

    assert asyncio.run(main()) == 0


def test_run_evaluations_in_two_threads_at_once_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # they shared the process's signal handlers, os._exit guard and Popen: a metaclass
    # TypeError, an item's "event loop is already running", os._exit left patched
    import threading

    from agenteval import BaseEvaluator, UsageError, run_evaluations

    monkeypatch.chdir(tmp_path)
    started, release = threading.Event(), threading.Event()

    class Waits(BaseEvaluator):
        def get_dataset(self) -> list[dict[str, int]]:
            return [{"id": 0}]

        def run(self, item: dict[str, int]) -> str:
            started.set()
            release.wait(10)
            return "ok"

        def evaluate(self, output: str, item: dict[str, int]) -> None:
            pass

    codes: list[int] = []
    first = threading.Thread(
        target=lambda: codes.append(run_evaluations([Waits], outputs=[], journal=False).exit_code)
    )
    first.start()
    try:
        assert started.wait(10)
        with pytest.raises(UsageError) as refused:
            run_evaluations([Waits], outputs=[], journal=False)
    finally:
        release.set()
        first.join(10)
    assert str(refused.value) == (
        "run_evaluations is already running in another thread of this process: run them "
        "one after another, or each in a process of its own"
    )
    assert codes == [0]
    assert run_evaluations([Waits], outputs=[], journal=False).exit_code == 0  # (then free)


NESTS_A_RUN = """
from agenteval import BaseEvaluator, run_evaluations


class Inner(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "i"}]

    def run(self, item):
        return "x"

    def evaluate(self, output, item):
        pass


class Outer(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "o"}]

    {prefix}def run(self, item):
        return run_evaluations([Inner], outputs=[], journal=False).exit_code

    def evaluate(self, output, item):
        assert output == 0, output
"""


@pytest.mark.parametrize("executor", ["inline", "async"])
def test_a_run_nested_in_an_item_is_no_second_run(cli: Any, executor: str) -> None:
    # under async the item runs in another thread: it was refused as a run of a second thread
    cli.write("nests.py", NESTS_A_RUN.replace("{prefix}", "async " if executor == "async" else ""))
    result = cli.run("nests.py::Outer", "--executor", executor, "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
