"""Ctrl-C, SIGTERM and parent death against a real CLI process: in-flight items finish
within the grace period, the journal stays valid, and ``--resume`` completes the run."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
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
        time.sleep(1)
        return f"answer {item['n']}"

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
        if item["n"] % 3 == 2:
            self.assert_that(StringContains("refund"), output)
"""

ARGS = ("interrupt.py", "--no-progress", "--output-json")
VARIANTS = {  # name: (signal, expected exit code, sent to the CLI's whole process group)
    "sigint": (signal.SIGINT, 130, False),
    "sigterm": (signal.SIGTERM, 143, False),
    "ctrl-c-to-group": (signal.SIGINT, 130, True),  # Ctrl-C on a terminal
    "sigterm-to-group": (signal.SIGTERM, 143, True),  # `timeout`, `kill -TERM -PGID`
}


def wait_for_pids(cli: Any, count: int, timeout: float = 20) -> dict[str, int]:
    assert cli.wait_until(lambda: len(cli.pids_in(cli.root / "pids")) >= count, timeout)
    pids: dict[str, int] = cli.pids_in(cli.root / "pids")
    return pids


def starts(cli: Any) -> list[str]:
    return sorted((cli.root / "starts.log").read_text().splitlines())


def interrupt_then_resume(cli: Any, signum: int, to_group: bool) -> dict[str, Any]:
    cli.write("interrupt.py", INTERRUPT_EVALUATOR)
    started = time.monotonic()
    proc = cli.start(*ARGS, "first.json", "-c", "4")
    wait_for_pids(cli, 4)
    (os.killpg if to_group else os.kill)(proc.pid, signum)
    first = cli.finish(proc, started)
    (run_dir,) = cli.run_dirs()
    records, started_items = cli.records(run_dir), starts(cli)
    second = cli.run(*ARGS, "final.json", "-c", "4", "--resume")
    return {
        "cli": cli,
        "run_dir": run_dir,
        "first": first,
        "first_records": records,
        "first_starts": started_items,
        "second": second,
    }


@pytest.fixture(scope="module")
def interrupted(cli_factory: Any) -> dict[str, Any]:
    """Every variant, and the uninterrupted baseline, run side by side (they mostly sleep)."""
    baseline = cli_factory("baseline")
    baseline.write("interrupt.py", INTERRUPT_EVALUATOR)
    with ThreadPoolExecutor(len(VARIANTS)) as pool:
        futures = {
            name: pool.submit(interrupt_then_resume, cli_factory(name), signum, to_group)
            for name, (signum, _, to_group) in VARIANTS.items()
        }
        result = baseline.run(*ARGS, "report.json", "-c", "8")
    assert result.returncode == 1, result.stdout + result.stderr
    return {"baseline": baseline.json("report.json"), "variants": futures}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_interrupt_finishes_in_flight_items_and_says_how_to_resume(
    interrupted: dict[str, Any], variant: str
) -> None:
    got = interrupted["variants"][variant].result()
    signum, code, _ = VARIANTS[variant]
    name = signal.Signals(signum).name
    first, cli = got["first"], got["cli"]
    assert first.returncode == code, first.stdout + first.stderr
    # every item that started was given the grace period and finished normally
    records = got["first_records"]
    assert sorted(r["id"] for r in records) == got["first_starts"]
    assert 4 <= len(records) < 8
    assert {r["status"] for r in records} <= {"passed", "failed"}
    assert f"Interrupted by {name}: finished items are saved." in first.stdout
    # the hint is the command that was run, with --resume RUN_ID added
    (hint,) = [line for line in first.stdout.splitlines() if line.startswith("Resume with: ")]
    assert hint == (
        "Resume with: agenteval run interrupt.py --no-progress --output-json first.json -c 4 "
        f"--resume {got['run_dir'].name}"
    )
    report = cli.json("first.json")
    assert (report["run"]["interrupted"], report["run"]["exit_code"]) == (name, code)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_interrupt_resume_runs_only_the_rest_and_equals_uninterrupted_run(
    interrupted: dict[str, Any], variant: str
) -> None:
    got = interrupted["variants"][variant].result()
    second, cli, baseline = got["second"], got["cli"], interrupted["baseline"]
    assert second.returncode == baseline["run"]["exit_code"], second.stdout + second.stderr
    assert "· resumed" in second.stdout
    assert starts(cli) == sorted(f"item-{n}" for n in range(8))  # nothing ran twice
    assert cli.comparable(cli.json("final.json")) == cli.comparable(baseline)
    assert len(cli.records(got["run_dir"])) == 8


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
    """Start a run and wait until both quick items are journalled and 4 slow ones run."""
    cli.write("slow.py", SLOW_EVALUATOR)
    started = time.monotonic()
    proc = cli.start("slow.py", "-c", "4", "--no-progress", "--output-json", "report.json", *args)
    assert cli.wait_until(lambda: len(cli.records()) == 2 if cli.run_dirs() else False, 20)
    pids = wait_for_pids(cli, 6)
    return proc, started, pids


def slow_pids(pids: dict[str, int]) -> list[int]:
    slow = [pid for name, pid in pids.items() if name.startswith("slow")]
    assert len(slow) == 4
    return slow


def second_signal(cli: Any, signum: int) -> dict[str, Any]:
    proc, started, pids = start_slow_run(cli)
    os.kill(proc.pid, signum)
    time.sleep(0.3)
    os.kill(proc.pid, signum)
    result = cli.finish(proc, started)
    gone = cli.wait_until(lambda: not any(cli.alive(pid) for pid in slow_pids(pids)), 2)
    return {"cli": cli, "result": result, "children_gone": gone}


def grace_expiry(cli: Any) -> dict[str, Any]:
    proc, started, pids = start_slow_run(cli, "--grace", "0.5")
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    gone = cli.wait_until(lambda: not any(cli.alive(pid) for pid in slow_pids(pids)), 2)
    report, records, leftovers = cli.json("report.json"), cli.records(), cli.own_processes()
    cli.write("slow.py", SLOW_EVALUATOR.replace("time.sleep(30)", "pass"))
    resumed = cli.run(
        "slow.py", "-c", "4", "--no-progress", "--output-json", "final.json", "--resume", "--force"
    )
    return {
        "cli": cli,
        "result": result,
        "children_gone": gone,
        "leftovers": leftovers,
        "report": report,
        "records": records,
        "resumed": resumed,
    }


def parent_death(cli: Any) -> dict[str, Any]:
    proc, _, pids = start_slow_run(cli)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    gone = cli.wait_until(lambda: not any(cli.alive(pid) for pid in slow_pids(pids)), 2)
    return {"cli": cli, "children_gone": gone}


@pytest.fixture(scope="module")
def slow_runs(cli_factory: Any) -> dict[str, Any]:
    """The scenarios on the slow evaluator, side by side (their items only sleep)."""
    scenarios: dict[str, Any] = {
        "second-sigint": (second_signal, signal.SIGINT),
        "second-sigterm": (second_signal, signal.SIGTERM),
        "grace-expiry": (grace_expiry,),
        "parent-death": (parent_death,),
    }
    with ThreadPoolExecutor(len(scenarios)) as pool:
        return {
            name: pool.submit(fn, cli_factory(name), *args)
            for name, (fn, *args) in scenarios.items()
        }


GRACE_EXPECTED = {"quick-0": "passed", "quick-1": "passed"} | {
    f"slow-{n}": "cancelled" for n in range(4)
}


@pytest.mark.parametrize(
    ("scenario", "code", "name"),
    [("second-sigint", 130, "SIGINT"), ("second-sigterm", 143, "SIGTERM")],
)
def test_interrupt_second_signal_stops_at_once(
    slow_runs: dict[str, Any], scenario: str, code: int, name: str
) -> None:
    got = slow_runs[scenario].result()
    result, cli = got["result"], got["cli"]
    assert result.returncode == code, result.stdout + result.stderr
    assert result.elapsed < 8  # far less than the 10 s default grace plus 30 s items
    # the items the second signal cut off are recorded, so that --resume runs them again
    assert {r["id"]: r["status"] for r in cli.records()} == GRACE_EXPECTED
    assert got["children_gone"]
    assert cli.own_processes() == []
    report = cli.json("report.json")
    assert report["run"]["interrupted"] == name
    assert cli.statuses(report) == GRACE_EXPECTED


def test_interrupt_grace_expiry_kills_in_flight_items(slow_runs: dict[str, Any]) -> None:
    got = slow_runs["grace-expiry"].result()
    result = got["result"]
    assert result.returncode == 130, result.stdout + result.stderr
    assert result.elapsed < 8
    assert got["children_gone"]
    assert got["leftovers"] == []
    assert got["report"]["run"]["exit_code"] == 130


def test_interrupt_grace_expiry_records_in_flight_items_cancelled(
    slow_runs: dict[str, Any],
) -> None:
    got = slow_runs["grace-expiry"].result()
    assert got["cli"].statuses(got["report"]) == GRACE_EXPECTED
    assert {r["id"]: r["status"] for r in got["records"]} == GRACE_EXPECTED
    (record,) = [r for r in got["records"] if r["id"] == "slow-0"]
    assert record["error"]["message"] == (
        "the run was interrupted and the item did not finish within the grace period"
    )
    assert "4 cancelled" in got["result"].stdout
    # every item had started, but not all finished: the evaluator's verdict is unknown
    (evaluator,) = got["report"]["evaluators"]
    assert (evaluator["status"], evaluator["complete"]) == ("interrupted", False)


def test_interrupt_resume_reruns_cancelled_items(slow_runs: dict[str, Any]) -> None:
    got = slow_runs["grace-expiry"].result()
    resumed, cli = got["resumed"], got["cli"]
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert cli.statuses(cli.json("final.json")) == dict.fromkeys(GRACE_EXPECTED, "passed")


def test_interrupt_parent_death_takes_children_down(slow_runs: dict[str, Any]) -> None:
    got = slow_runs["parent-death"].result()
    cli = got["cli"]
    assert got["children_gone"]
    assert cli.own_processes() == []
    # the journal written so far is still valid
    assert sorted(r["id"] for r in cli.records()) == ["quick-0", "quick-1"]


TEAR_DOWN_EVALUATOR = """
import os
import time
from pathlib import Path

from agenteval import BaseEvaluator


class Quick(BaseEvaluator):
    def set_up(self):
        Path("lifecycle.log").open("a").write(f"set_up {type(self).__name__}\\n")

    def tear_down(self):
        Path("lifecycle.log").open("a").write(f"tear_down {type(self).__name__}\\n")

    def get_dataset(self):
        return [{"id": n} for n in range(2)]

    def run(self, item):
        Path("pids").mkdir(exist_ok=True)
        Path("pids", f"{type(self).__name__}-{item['id']}").write_text(str(os.getpid()))
        time.sleep(0.8)
        return "ok"

    def evaluate(self, output, item):
        pass


class NeverStarted(Quick):
    pass
"""


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_interrupt_tears_down_what_was_set_up_and_keeps_finished_evaluators_complete(
    cli: Any, concurrency: str
) -> None:
    # a SIGINT while Quick's items run: they finish within the grace period, Quick is torn
    # down and reported complete; NeverStarted was never set up, so it is neither
    cli.write("lifecycle.py", TEAR_DOWN_EVALUATOR)
    started = time.monotonic()
    proc = cli.start(
        "lifecycle.py", "--no-progress", "--output-json", "out.json", "-c", concurrency
    )
    wait_for_pids(cli, 2 if concurrency == "2" else 1)
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    assert result.returncode == 130, result.stdout + result.stderr
    log = (cli.root / "lifecycle.log").read_text().splitlines()
    assert log == ["set_up Quick", "tear_down Quick"]
    quick, never = cli.json("out.json")["evaluators"]
    if concurrency == "2":  # both items were in flight and finished
        assert [i["status"] for i in quick["items"]] == ["passed", "passed"]
        assert quick["complete"] is True
    assert never["complete"] is False and never["items"] == []


SPAWNER_EVALUATOR = """
import subprocess
import time
from pathlib import Path

from agenteval import BaseEvaluator


class Spawner(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(2)]

    def run(self, item):
        server = subprocess.Popen(["sleep", "300"])  # what an item may start and leave
        Path("pids").mkdir(exist_ok=True)
        Path("pids", f"spawned-{item['id']}").write_text(str(server.pid))
        time.sleep(30)
        return "done"

    def evaluate(self, output, item):
        pass
"""


@pytest.mark.parametrize("isolation", ["item", "worker"])
def test_killing_agenteval_outright_takes_down_what_items_started(cli: Any, isolation: str) -> None:
    # SIGKILL (the OOM killer, a CI runner's hard kill): no handler runs in agenteval;
    # the item processes die with it (PR_SET_PDEATHSIG), and the sweeper kills the rest
    # of their process groups, so nothing an item started keeps running unparented
    cli.write("spawner.py", SPAWNER_EVALUATOR)
    proc = cli.start("spawner.py", "-c", "2", "--isolation", isolation, "--no-progress")
    spawned = list(wait_for_pids(cli, 2).values())
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert cli.wait_until(lambda: not any(cli.alive(pid) for pid in spawned), 10)
    assert cli.wait_until(lambda: cli.own_processes() == [], 10)


QUICK_EVALUATOR = """
from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Quick(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}, {"id": "b"}]

    def run(self, item):
        return "answer"

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
"""

SLOW_DRIVER_CONFIG = """
import time
from pathlib import Path

from agenteval.outputs import ConsoleOutput, OutputDriver


class Uploader(OutputDriver):  # sends the results somewhere, slowly
    def output(self, summary):
        pass

    def finish_run(self, run):
        Path("uploading").touch()
        time.sleep(60)


output = [Uploader(), ConsoleOutput(progress=False)]
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_drivers_finish_cuts_them_short_and_keeps_the_reports(
    cli: Any, signum: int, code: int
) -> None:
    # every item is done; a user driver's finish_run is slow: the signal stops it, and the
    # JSON report and the console are still written, saying the run was interrupted
    cli.write("quick.py", QUICK_EVALUATOR)
    cli.write("evaluation.py", SLOW_DRIVER_CONFIG)
    started = time.monotonic()
    proc = cli.start("quick.py", "--output-json", "report.json")
    assert cli.wait_until(lambda: (cli.root / "uploading").exists(), 20)
    os.kill(proc.pid, signum)
    result = cli.finish(proc, started)
    assert result.returncode == code, result.stdout + result.stderr
    assert result.elapsed < 30
    name = signal.Signals(signum).name
    lines = result.stdout.splitlines()
    assert (
        f"notice: {name} came while the output drivers finished: the drivers of yours still "
        f"finishing were stopped; agenteval's report files are complete"
    ) in lines
    assert lines[-1].startswith("INTERRUPTED: 2 items, 2 passed, 0 failed, 0 errors")
    run = cli.json("report.json")["run"]
    assert (run["interrupted"], run["exit_code"], run["totals"]["passed"]) == (name, code, 2)


LEAVES_A_THREAD = """
import threading, time
from agenteval import BaseEvaluator


class LeavesAThread(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}]

    def run(self, item):
        threading.Thread(target=time.sleep, args=(5,)).start()  # a client's worker, say
        return "ok"

    def evaluate(self, output, item):
        pass
"""


def test_a_signal_once_the_run_is_over_keeps_its_exit_code(cli: Any) -> None:
    # the verdict is out and the files written; the exit waits for a thread an item left:
    # a Ctrl-C now killed agenteval by SIGINT (or showed a traceback) instead of exit 0
    cli.write("leaves.py", LEAVES_A_THREAD)
    started = time.monotonic()
    proc = cli.start("leaves.py", "--no-progress")
    assert proc.stdout is not None
    while not (line := proc.stdout.readline()).startswith("PASSED:"):
        assert line, "the run ended without its verdict"
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "KeyboardInterrupt" not in result.stderr


WATCHDOG = """
import os, threading, time
from agenteval import BaseEvaluator


class Watched(BaseEvaluator):
    def set_up(self):
        threading.Timer(0.5, os._exit, (7,)).start()  # a watchdog ending the whole process

    def get_dataset(self):
        return [{"id": "a"}, {"id": "b"}]

    def run(self, item):
        time.sleep(5)
        return "ok"

    def evaluate(self, output, item):
        pass
"""


@pytest.mark.parametrize("how", [(), ("-c", "2")])
def test_os_exit_from_a_thread_of_its_own_ends_the_process_as_it_means_to(
    cli: Any, how: tuple[str, ...]
) -> None:
    # only the code agenteval runs (items, hooks, drivers) has os._exit turned into an error
    cli.write("watched.py", WATCHDOG)
    result = cli.run("watched.py", "--no-progress", *how)
    assert result.returncode == 7, result.stdout + result.stderr
    assert result.elapsed < 4


SLOW_SET_UP_EVALUATOR = """
import time
from pathlib import Path

from agenteval import BaseEvaluator


class First(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(2)]

    def run(self, item):
        return "ok"

    def evaluate(self, output, item):
        pass


class SlowSetUp(BaseEvaluator):
    def set_up(self):
        Path("setting-up").touch()
        time.sleep(30)

    def get_dataset(self):
        return [{"id": n} for n in range(2)]

    def run(self, item):
        Path("ran").touch()
        return "ok"

    def evaluate(self, output, item):
        pass
"""


def test_a_signal_while_the_next_evaluator_sets_up_is_heard_at_once(cli: Any) -> None:
    # with slots free after First's items, SlowSetUp is set up while First's children run:
    # the signal must not wait (blocked) until its set_up returns, nor its items start after
    cli.write("slow.py", SLOW_SET_UP_EVALUATOR)
    proc = cli.start("slow.py", "-c", "4", "--grace", "1", "--no-progress")
    assert cli.wait_until(lambda: (cli.root / "setting-up").exists(), 20)
    started = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    assert result.returncode == 130, result.stdout + result.stderr
    assert result.elapsed < 15, result.elapsed  # the grace period and backstop, not set_up
    assert not (cli.root / "ran").exists()
    assert "INTERRUPTED SlowSetUp" in result.stdout


def test_items_cut_off_when_the_grace_period_runs_out_in_a_set_up_say_so(cli: Any) -> None:
    # First's item runs on while the parent sits in SlowSetUp's set_up: when the grace
    # period (and its backstop) runs out, the item is cancelled for that, not "a second
    # interrupt", which never came
    cli.write("slow.py", SLOW_SET_UP_EVALUATOR.replace('return "ok"', "time.sleep(30)", 1))
    proc = cli.start(
        "slow.py", "-c", "4", "--grace", "1", "--no-progress", "--output-json", "out.json"
    )
    assert cli.wait_until(lambda: (cli.root / "setting-up").exists(), 20)
    started = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    assert result.returncode == 130, result.stdout + result.stderr
    assert result.elapsed < 15, result.elapsed
    message = "the run was interrupted and the item did not finish within the grace period"
    records = cli.records()
    assert [(r["status"], r["error"]["message"]) for r in records] == [("cancelled", message)] * 2


SLOW_TO_IMPORT = """
import os
import time
from pathlib import Path

Path("importing").write_text("yes")
time.sleep(30)  # an evaluator file that loads a model, say

from agenteval import BaseEvaluator  # noqa: E402


class Late(BaseEvaluator):
    def get_dataset(self):
        return [{"id": 1}]

    def run(self, item):
        return "x"

    def evaluate(self, output, item):
        pass
"""


def test_ctrl_c_while_evaluator_files_load_is_an_interrupt_not_their_error(cli: Any) -> None:
    cli.write("late.py", SLOW_TO_IMPORT)
    started = time.monotonic()
    proc = cli.start("late.py")
    assert cli.wait_until(lambda: (cli.root / "importing").exists(), 20)
    proc.send_signal(signal.SIGINT)
    result = cli.finish(proc, started)
    assert result.returncode == 130, result
    assert result.stderr == "agenteval: error: interrupted\n"
    assert result.elapsed < 20


PASSES = """
from agenteval import BaseEvaluator


class Passes(BaseEvaluator):
    def get_dataset(self):
        return [{"id": 1}, {"id": 2}]

    def run(self, item):
        return "x"

    def evaluate(self, output, item):
        pass
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("delay", [0.0, 0.01])
def test_a_signal_right_after_the_verdict_keeps_its_exit_code(
    cli: Any, sig: signal.Signals, delay: float
) -> None:
    # it was "interrupted" (130) after "exit 0", or a death by the signal
    cli.write("passes.py", PASSES)
    for _ in range(3):
        proc = cli.start("passes.py", "-c", "2", "--no-progress")
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("PASSED: "):
                time.sleep(delay)
                proc.send_signal(sig)
                break
        _, stderr = proc.communicate(timeout=30)
        assert (proc.returncode, stderr) == (0, "")


def test_an_evaluator_file_that_raises_keyboardinterrupt_is_its_error(cli: Any) -> None:
    cli.write("raises.py", "raise KeyboardInterrupt('from the file')\n")
    result = cli.run("raises.py")
    assert result.returncode == 2, result
    assert result.stderr == (
        "agenteval: error: Could not import raises.py:1: KeyboardInterrupt: from the file\n"
    )


HANGS_AT_EXIT = """
import time

from agenteval import BaseEvaluator


class _Client:
    def __del__(self):  # a client flushing to a server that is gone, at the interpreter's exit
        while True:
            time.sleep(1)


_client = _Client()


class Passes(BaseEvaluator):
    def get_dataset(self):
        return [{"id": 1}]

    def run(self, item):
        return "x"

    def evaluate(self, output, item):
        pass
"""


def test_an_exit_that_hangs_after_the_verdict_still_ends_and_says_where(cli: Any) -> None:
    # late signals are ignored once the verdict is printed, so that it stays the exit code:
    # that must not make a hang in Python's own exit unstoppable
    cli.write("hangs_at_exit.py", HANGS_AT_EXIT)
    started = time.monotonic()
    proc = cli.start("hangs_at_exit.py", "--no-progress")
    result = cli.finish(proc, started, timeout=60)
    assert "PASSED: 1 item" in result.stdout
    assert result.returncode != 0  # (ended from outside its own code: never a clean 0)
    assert "Timeout (0:00:10)!" in result.stderr and "__del__" in result.stderr
