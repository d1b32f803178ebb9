"""Ctrl-C, SIGTERM and parent death against a real CLI process: in-flight items finish
within the grace period, the journal stays valid, and ``--resume`` completes the run."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

INTERRUPT_EVALUATOR = """
import os
import time
from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Interruptible(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"item-{n}", "n": n} for n in range(8)]

    def run(self, item):
        fd = os.open("starts.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, (item["id"] + "\\n").encode())
        os.close(fd)
        Path("pids").mkdir(exist_ok=True)
        Path("pids", item["id"]).write_text(str(os.getpid()))
        time.sleep(0.6)
        return f"answer {item['n']}"

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
        if item["n"] % 3 == 2:
            self.assert_that(StringContains("refund"), output)
"""

ARGS = ("interrupt.py", "--no-progress", "--output-json")


@pytest.fixture(scope="module")
def baseline(cli_factory: Any) -> dict[str, Any]:
    """The uninterrupted run every interrupted-then-resumed run must equal."""
    cli = cli_factory("baseline")
    cli.write("interrupt.py", INTERRUPT_EVALUATOR)
    result = cli.run(*ARGS, "report.json", "-c", "8")
    assert result.returncode == 1, result.stdout + result.stderr
    return cli.json("report.json")


def wait_for_pids(cli: Any, count: int, timeout: float = 15) -> dict[str, int]:
    assert cli.wait_until(lambda: len(cli.pids_in(cli.root / "pids")) >= count, timeout)
    return cli.pids_in(cli.root / "pids")


def starts(cli: Any) -> list[str]:
    return sorted((cli.root / "starts.log").read_text().splitlines())


@pytest.mark.parametrize(
    ("signum", "code", "to_group"),
    [
        (signal.SIGINT, 130, False),
        (signal.SIGTERM, 143, False),
        (signal.SIGINT, 130, True),  # Ctrl-C on a terminal: the whole process group
        (signal.SIGTERM, 143, True),  # `timeout`, `kill -TERM -PGID`: the whole group
    ],
    ids=["sigint", "sigterm", "ctrl-c-to-group", "sigterm-to-group"],
)
def test_interrupt_finishes_in_flight_items_then_resume_completes(
    cli: Any, baseline: dict[str, Any], signum: int, code: int, to_group: bool
) -> None:
    cli.write("interrupt.py", INTERRUPT_EVALUATOR)
    started = time.monotonic()
    proc = cli.start(*ARGS, "first.json", "-c", "4")
    wait_for_pids(cli, 4)
    (os.killpg if to_group else os.kill)(proc.pid, signum)
    first = cli.finish(proc, started)
    name = signal.Signals(signum).name
    assert first.returncode == code, first.stdout + first.stderr
    (run_dir,) = cli.run_dirs()
    # every item that started was given the grace period and finished normally
    records = cli.records(run_dir)
    assert sorted(r["id"] for r in records) == starts(cli)
    assert 4 <= len(records) < 8
    assert {r["status"] for r in records} <= {"passed", "failed"}
    assert f"Interrupted by {name}: finished items are saved." in first.stdout
    assert f"Resume with: agenteval run ... --resume {run_dir.name}" in first.stdout
    assert cli.json("first.json")["run"]["interrupted"] == name

    second = cli.run(*ARGS, "final.json", "-c", "4", "--resume")
    assert second.returncode == baseline["run"]["exit_code"], second.stdout + second.stderr
    assert "· resumed" in second.stdout
    assert starts(cli) == sorted(f"item-{n}" for n in range(8))  # nothing ran twice
    assert cli.comparable(cli.json("final.json")) == cli.comparable(baseline)
    assert len(cli.records(run_dir)) == 8


SLOW_EVALUATOR = """
import os
import time
from pathlib import Path

from agenteval import BaseEvaluator


class Slow(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "quick-0"}, {"id": "quick-1"}] + [{"id": f"slow-{n}"} for n in range(4)]

    def run(self, item):
        Path("pids").mkdir(exist_ok=True)
        Path("pids", item["id"]).write_text(str(os.getpid()))
        if item["id"].startswith("slow"):
            time.sleep(30)
        return "done"

    def evaluate(self, output, item):
        assert output == "done"
"""


def start_slow_run(cli: Any, *args: str) -> tuple[Any, float, dict[str, int]]:
    cli.write("slow.py", SLOW_EVALUATOR)
    started = time.monotonic()
    proc = cli.start("slow.py", "-c", "4", "--no-progress", "--output-json", "report.json", *args)
    assert cli.wait_until(lambda: len(cli.records()) == 2 if cli.run_dirs() else False, 15)
    pids = wait_for_pids(cli, 6)
    return proc, started, pids


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_second_signal_stops_at_once(cli: Any, signum: int, code: int) -> None:
    proc, started, pids = start_slow_run(cli)
    os.kill(proc.pid, signum)
    time.sleep(0.3)
    os.kill(proc.pid, signum)
    result = cli.finish(proc, started)
    assert result.returncode == code, result.stdout + result.stderr
    assert result.elapsed < 8  # far less than the 10 s default grace plus 30 s items
    assert sorted(r["id"] for r in cli.records()) == ["quick-0", "quick-1"]
    slow = [pid for name, pid in pids.items() if name.startswith("slow")]
    assert cli.wait_until(lambda: not any(cli.alive(pid) for pid in slow), 2)
    assert cli.own_processes() == []
    assert cli.json("report.json")["run"]["interrupted"] == signal.Signals(signum).name


def test_interrupt_grace_expiry_kills_in_flight_items(cli: Any) -> None:
    proc, started, pids = start_slow_run(cli, "--grace", "0.5")
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    assert result.returncode == 130, result.stdout + result.stderr
    assert result.elapsed < 8
    assert cli.wait_until(lambda: not any(cli.alive(pid) for pid in pids.values()), 2)
    assert cli.own_processes() == []
    assert cli.json("report.json")["run"]["exit_code"] == 130


def test_interrupt_grace_expiry_cancels_in_flight_items_and_resume_reruns_them(
    cli: Any,
) -> None:
    proc, started, _ = start_slow_run(cli, "--grace", "0.5")
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    assert result.returncode == 130
    expected = {"quick-0": "passed", "quick-1": "passed"} | {
        f"slow-{n}": "cancelled" for n in range(4)
    }
    assert cli.statuses(cli.json("report.json")) == expected
    assert {r["id"]: r["status"] for r in cli.records()} == expected
    (record,) = [r for r in cli.records() if r["id"] == "slow-0"]
    assert record["error"]["message"] == (
        "the run was interrupted and the item did not finish within the grace period"
    )
    assert "4 cancelled" in result.stdout

    cli.write("slow.py", SLOW_EVALUATOR.replace("time.sleep(30)", "pass"))
    result = cli.run("slow.py", "-c", "4", "--no-progress", "--output-json", "final.json",
                     "--resume", "--force")  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert cli.statuses(cli.json("final.json")) == dict.fromkeys(expected, "passed")


def test_interrupt_parent_death_takes_children_down(cli: Any) -> None:
    proc, started, pids = start_slow_run(cli)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    slow = [pid for name, pid in pids.items() if name.startswith("slow")]
    assert len(slow) == 4
    assert cli.wait_until(lambda: not any(cli.alive(pid) for pid in slow), 2)
    assert cli.own_processes() == []
    # the journal written so far is still valid
    assert sorted(r["id"] for r in cli.records()) == ["quick-0", "quick-1"]
