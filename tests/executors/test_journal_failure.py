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
