"""A journal that cannot be written (a full disk) costs the run its resumability, never
its report or a clear verdict."""

from __future__ import annotations

from typing import Any

FULL_DISK_EVALUATOR = """
import resource
import signal

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class FullDisk(BaseEvaluator):
    def set_up(self):
        # files may not grow past 3 KiB from now on, as on a disk that fills up
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        self.limits = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (3072, self.limits[1]))

    def tear_down(self):
        resource.setrlimit(resource.RLIMIT_FSIZE, self.limits)

    def get_dataset(self):
        return [{"id": f"item-{n}", "text": "x" * 300} for n in range(20)]

    def run(self, item):
        return "answer " + item["text"]

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
"""


def test_a_journal_that_cannot_be_written_leaves_the_report_whole_and_exits_2(cli: Any) -> None:
    cli.write("full_disk.py", FULL_DISK_EVALUATOR)
    result = cli.run("full_disk.py", "--no-progress", "--output-json", "report.json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == ""
    (run_dir,) = cli.run_dirs()
    assert (
        f"notice: the journal could not be written (File too large: {run_dir.relative_to(cli.root)}"
        f"): the report is complete, but a resume would run again what it lacks"
    ) in result.stdout.splitlines()
    report = cli.json("report.json")
    assert cli.statuses(report) == {f"item-{n}": "passed" for n in range(20)}
    assert report["run"]["exit_code"] == 2
    journaled = (run_dir / "records.jsonl").read_text().splitlines()
    assert 0 < len(journaled) < 20


FULL_FROM_THE_START = """
import resource, signal

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
"""

SMALL = """
from agenteval import BaseEvaluator


class Small(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}]

    def run(self, item):
        return "ok"

    def evaluate(self, output, item):
        pass
"""


def test_a_manifest_that_cannot_be_written_is_one_line_and_leaves_no_run_behind(cli: Any) -> None:
    # it was an internal error, with a run folder holding a lock and a temporary file
    cli.write("small.py", SMALL)
    cli.write("full.py", FULL_FROM_THE_START)
    result = cli.run("small.py", "--no-progress", "--bootstrap", "full.py")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("agenteval: error: Could not write the manifest of run ")
    assert "File too large" in result.stderr and result.stderr.count("\n") == 1
    assert cli.run_dirs() == []


def test_records_that_cannot_be_read_are_one_line_on_resume(cli: Any) -> None:
    cli.write("small.py", SMALL)
    assert cli.run("small.py", "--no-progress").returncode == 0
    (run_dir,) = cli.run_dirs()
    (run_dir / "records.jsonl").unlink()
    (run_dir / "records.jsonl").mkdir()
    result = cli.run("small.py", "--no-progress", "--resume")
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"agenteval: error: Cannot read the records of run {run_dir.name!r}"
    ), result.stderr
    assert result.stderr.count("\n") == 1


FULL_BY_THE_NEXT_DATASET = """
import resource
import signal

from agenteval import BaseEvaluator
from agenteval.datasets import JsonDataset


class First(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}]

    def run(self, item):
        return "x"

    def evaluate(self, output, item):
        pass


class Second(BaseEvaluator):
    def set_up(self):  # the disk fills up before the dataset's fingerprint is recorded
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        self.limits = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, self.limits[1]))

    def tear_down(self):
        resource.setrlimit(resource.RLIMIT_FSIZE, self.limits)

    def get_dataset(self):
        return JsonDataset("cases.json")

    def run(self, item):
        return "x"

    def evaluate(self, output, item):
        pass
"""


def test_a_manifest_that_cannot_be_updated_mid_run_leaves_the_report_whole(cli: Any) -> None:
    # the run stopped at once: "Could not write the manifest", no report, no verdict
    cli.write("cases.json", '[{"id": "b"}]')
    cli.write("two.py", FULL_BY_THE_NEXT_DATASET)
    result = cli.run("two.py", "--no-progress", "--output-json", "report.json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == ""
    assert cli.statuses(cli.json("report.json")) == {"a": "passed", "b": "passed"}
    notices = [line for line in result.stdout.splitlines() if line.startswith("notice: ")]
    assert len(notices) == 1 and "the journal could not be written" in notices[0], notices
