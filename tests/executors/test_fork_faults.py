"""Each fault a child can suffer stays with its own item and never hangs the run.

One CLI run (``--concurrency 16 --timeout 1``) over a dataset whose items say which fault
to inject; the tests below each check one aspect of that run.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from typing import Any

import pytest

FAULTS_EVALUATOR = """
import ctypes
import os
import resource
import signal
import socket
import sys
import time
from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains

FAULTS = [
    "ok-first", "exit3", "sigkill", "segfault", "hang", "ignore-sigterm", "socket-read",
    "c-code", "local-exception", "system-exit", "keyboard-interrupt", "ok-last",
]


class Faults(BaseEvaluator):
    def get_dataset(self):
        return [{"id": fault} for fault in FAULTS]

    def run(self, item):
        fault = item["id"]
        Path("pids").mkdir(exist_ok=True)
        Path("pids", fault).write_text(str(os.getpid()))
        if fault == "exit3":
            os._exit(3)
        if fault == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == "segfault":
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            ctypes.string_at(0)
        if fault == "hang":
            time.sleep(60)
        if fault == "ignore-sigterm":
            signal.signal(signal.SIGTERM, lambda signum, frame: None)
            time.sleep(60)
        if fault == "socket-read":
            server = socket.socket()
            server.bind(("127.0.0.1", 0))
            server.listen()
            client = socket.create_connection(server.getsockname())
            client.recv(1)  # nobody ever answers
        if fault == "c-code":
            # SIGTERM blocked, stuck in libc: only SIGKILL ends this
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            ctypes.CDLL(None).sleep(60)
        if fault == "local-exception":
            class LocalError(Exception):  # a class defined here cannot be pickled
                pass

            raise LocalError("cannot cross a process boundary as an object")
        if fault == "system-exit":
            sys.exit(4)
        if fault == "keyboard-interrupt":
            raise KeyboardInterrupt("raised by the item")
        return "ok"

    def evaluate(self, output, item):
        self.assert_that(StringContains("ok"), output)
"""

# item id -> (status, error type, words the error message must contain)
EXPECTED: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "exit3": ("crashed", "ChildExited", ("exited with code 3",)),
    "sigkill": ("crashed", "ChildKilled", ("killed by SIGKILL", "ran out of memory")),
    "segfault": ("crashed", "ChildKilled", ("killed by SIGSEGV",)),
    "hang": ("timeout", "Timeout", ("exceeded --timeout 1s", "SIGTERM")),
    "ignore-sigterm": ("timeout", "Timeout", ("exceeded --timeout 1s", "SIGKILL")),
    "socket-read": ("timeout", "Timeout", ("exceeded --timeout 1s",)),
    "c-code": ("timeout", "Timeout", ("exceeded --timeout 1s", "SIGKILL")),
    "local-exception": (
        "error",
        "Faults.run.<locals>.LocalError",
        ("cannot cross a process boundary as an object",),
    ),
    "system-exit": ("error", "SystemExit", ("4",)),
    "keyboard-interrupt": ("error", "KeyboardInterrupt", ("raised by the item",)),
}
ALL_IDS = ["ok-first", *EXPECTED, "ok-last"]


@pytest.fixture(scope="module")
def fault_run(cli_factory: Any) -> dict[str, Any]:
    cli = cli_factory("faults")
    cli.write("faults.py", FAULTS_EVALUATOR)
    result = cli.run(
        "faults.py", "-c", "16", "--timeout", "1", "--no-progress", "--output-json", "report.json"
    )
    # checked right after the run: nothing of it may still be alive
    leftovers = [p.pid for p in cli.own_processes()]
    return {
        "cli": cli,
        "result": result,
        "report": cli.json("report.json"),
        "leftovers": leftovers,
    }


@pytest.mark.parametrize("fault", list(EXPECTED))
def test_fork_fault_marks_only_its_item(fault_run: dict[str, Any], fault: str) -> None:
    status, error_type, words = EXPECTED[fault]
    (item,) = [i for i in fault_run["cli"].items_of(fault_run["report"]) if i["id"] == fault]
    assert (item["status"], item["error"]["type"]) == (status, error_type)
    for word in words:
        assert word in item["error"]["message"]


def test_fork_faults_leave_every_other_item_passed(fault_run: dict[str, Any]) -> None:
    got = fault_run["cli"].statuses(fault_run["report"])
    assert got == {"ok-first": "passed", "ok-last": "passed"} | {
        fault: expected[0] for fault, expected in EXPECTED.items()
    }


def test_fork_faults_exit_2_within_bound(fault_run: dict[str, Any]) -> None:
    result = fault_run["result"]
    assert result.returncode == 2, result.stderr
    # 1 s timeout + 2 s SIGTERM→SIGKILL grace, everything in parallel; generous for noisy CI
    assert result.elapsed < 20


def test_fork_crashes_detected_quickly(fault_run: dict[str, Any]) -> None:
    items = {i["id"]: i for i in fault_run["cli"].items_of(fault_run["report"])}
    for fault in ("exit3", "sigkill", "segfault"):
        assert items[fault]["duration_s"] < 5


def test_fork_faults_results_keep_dataset_order(fault_run: dict[str, Any]) -> None:
    items = fault_run["cli"].items_of(fault_run["report"])
    assert [i["id"] for i in items] == ALL_IDS
    assert [i["index"] for i in items] == list(range(len(ALL_IDS)))


def test_fork_faults_leave_no_process_behind(fault_run: dict[str, Any]) -> None:
    cli = fault_run["cli"]
    pids = cli.pids_in(cli.root / "pids")
    assert sorted(pids) == sorted(ALL_IDS)
    assert [name for name, pid in pids.items() if cli.alive(pid)] == []
    assert fault_run["leftovers"] == []


def test_fork_faults_journal_has_one_line_per_item(fault_run: dict[str, Any]) -> None:
    cli = fault_run["cli"]
    records = cli.records()
    assert sorted(r["id"] for r in records) == sorted(ALL_IDS)
    by_id = {r["id"]: r["status"] for r in records}
    assert by_id == cli.statuses(fault_run["report"])


def test_fork_faults_console_names_each_fault(fault_run: dict[str, Any]) -> None:
    out = fault_run["result"].stdout
    assert (
        "  CRASHED  item 'sigkill' · executor · ChildKilled: the item's process was killed by "
        "SIGKILL (SIGKILL often means the system ran out of memory)"
    ) in out
    assert (
        "  TIMEOUT  item 'c-code' · executor · Timeout: item exceeded --timeout 1s and was "
        "stopped with SIGKILL"
    ) in out
    assert "ERROR: 12 items, 2 passed, 0 failed, 10 errors" in out


def test_fork_a_timed_out_item_says_where_it_was_stuck(fault_run: dict[str, Any]) -> None:
    # it said only that it had run out of time: where a hung call hung is what CI needs
    items = {i["id"]: i for i in fault_run["cli"].items_of(fault_run["report"])}
    hang, socket_read = items["hang"]["error"], items["socket-read"]["error"]
    written = FAULTS_EVALUATOR.lstrip().splitlines()
    sleep = written.index("            time.sleep(60)") + 1
    recv = written.index("            client.recv(1)  # nobody ever answers") + 1
    assert (hang["file"], hang["line"]) == ("faults.py", sleep)
    assert (socket_read["file"], socket_read["line"]) == ("faults.py", recv)
    assert hang["traceback"].startswith("Current thread ")
    assert f"faults.py:{sleep}" in fault_run["result"].stdout


THREADS_EVALUATOR = """
import threading
import time

from agenteval import BaseEvaluator


class Threads(BaseEvaluator):
    def set_up(self):
        self.stop = threading.Event()
        self.worker = threading.Thread(target=self.stop.wait, daemon=True)
        self.worker.start()

    def get_dataset(self):
        return [{"id": n} for n in range(4)]

    def run(self, item):
        # threads started inside the child are fine
        done = []
        t = threading.Thread(target=lambda: done.append(item["id"]))
        t.start()
        t.join()
        return done

    def evaluate(self, output, item):
        assert output == [item["id"]]

    def tear_down(self):
        self.stop.set()
"""


def test_fork_warns_once_about_threads_in_parent(cli: Any) -> None:
    cli.write("threads.py", THREADS_EVALUATOR)
    started = time.monotonic()
    result = cli.run("threads.py", "-c", "2", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    assert time.monotonic() - started < 20
    notice = (
        "notice: 1 other thread(s) were running in the parent when items were forked; fork "
        "with threads can deadlock — start threads and clients in run(), or use --concurrency 1"
    )
    assert result.stdout.count(notice) == 1


SUBPROCESS_EVALUATOR = """
import os
import subprocess
import sys
import time
from pathlib import Path

from agenteval import BaseEvaluator


class Spawner(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "hangs"}, {"id": "leaves-one-behind"}, {"id": "ok"}]

    def run(self, item):
        # an agent CLI run as a subprocess, say: it must not outlive its item
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        Path("pids").mkdir(exist_ok=True)
        Path("pids", item["id"]).write_text(str(helper.pid))
        if item["id"] == "hangs":
            helper.wait()
        if item["id"] == "ok":
            helper.kill()
            helper.wait()
        return "done"

    def evaluate(self, output, item):
        assert output == "done"
"""


def test_fork_item_subprocesses_do_not_outlive_their_item(cli: Any) -> None:
    cli.write("spawner.py", SUBPROCESS_EVALUATOR)
    result = cli.run(
        "spawner.py", "-c", "3", "--timeout", "1", "--no-progress", "--output-json", "report.json"
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert cli.statuses(cli.json("report.json")) == {
        "hangs": "timeout",
        "leaves-one-behind": "passed",
        "ok": "passed",
    }
    helpers = cli.pids_in(cli.root / "pids")
    assert len(helpers) == 3
    assert cli.wait_until(lambda: not any(cli.alive(pid) for pid in helpers.values()), 2)
    assert cli.own_processes() == []


SIGCHLD_EVALUATOR = """
import os
import signal

from agenteval import BaseEvaluator


class ReapsEverything(BaseEvaluator):
    def set_up(self):
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel

    def get_dataset(self):
        return [{"id": "ok-1"}, {"id": "exits"}, {"id": "ok-2"}]

    def run(self, item):
        if item["id"] == "exits":
            os._exit(9)
        return "done"

    def evaluate(self, output, item):
        assert output == "done"
"""


def test_fork_survives_a_parent_that_ignores_sigchld(cli: Any) -> None:
    cli.write("reaps.py", SIGCHLD_EVALUATOR)
    result = cli.run("reaps.py", "-c", "2", "--no-progress", "--output-json", "report.json")
    assert result.returncode == 2, result.stdout + result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == {"ok-1": "passed", "exits": "crashed", "ok-2": "passed"}
    (exits,) = [i for i in cli.items_of(report) if i["id"] == "exits"]
    assert exits["error"]["message"] == (
        "the item's process exited before reporting a result (its exit status was "
        "collected elsewhere: is SIGCHLD ignored?)"
    )


def run_on_terminal(cli: Any, *args: str) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdout/stderr (rich shows its live progress)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(cli.AGENTEVAL), "run", *args],
        cwd=cli.root,
        env=cli.env(),
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    chunks = []
    try:
        while select.select([master], [], [], 30)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other side was closed
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
        code = proc.wait(timeout=30)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_fork_progress_bar_on_a_terminal_is_not_a_thread_warning(cli: Any) -> None:
    cli.write(
        "threads.py", THREADS_EVALUATOR.replace("        self.worker.start()\n", "        pass\n")
    )
    code, out = run_on_terminal(cli, "threads.py", "-c", "2")
    assert code == 0, out
    assert "\x1b[" in out  # the live display was drawn
    assert "PASSED: 4 items, 4 passed" in out
    assert "thread(s) were running" not in out


PRINTER_EVALUATOR = """
from agenteval import BaseEvaluator


class Printer(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(120)]

    def run(self, item):
        for line in range(20):
            print("hello from", item["id"], line)
        return "ok"

    def evaluate(self, output, item):
        pass
"""


@pytest.mark.parametrize("isolation", ["item", "worker"])
def test_items_that_print_under_the_live_display_keep_their_own_clean_output(
    cli: Any, isolation: str
) -> None:
    # the live display replaces sys.stdout with a proxy guarded by a lock its refresh
    # thread takes: a child that inherited it printed into the display (and could
    # deadlock on the lock); children write to their own capture instead
    cli.write("printer.py", PRINTER_EVALUATOR)
    args = ("printer.py", "-c", "4", "--isolation", isolation, "--output-json", "report.json")
    started = time.monotonic()
    code, out = run_on_terminal(cli, *args, "--timeout", "20")
    assert code == 0, out
    assert time.monotonic() - started < 25
    items = cli.items_of(cli.json("report.json"))
    assert [i["status"] for i in items] == ["passed"] * 120
    for item in items:
        assert item["stdout"] == "".join(f"hello from {item['id']} {n}\n" for n in range(20))


STOPS_IN_EVALUATE = """
import os
import time

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Judged(BaseEvaluator):
    def get_dataset(self):
        ids = ["hangs", "exits", "fine", "agent hangs", "half an emoji"]
        return [{"id": name} for name in ids]

    def run(self, item):
        if item["id"] == "agent hangs":
            time.sleep(60)
        if item["id"] == "half an emoji":
            return "the agent's answer: \\ud83d"  # a lone surrogate UTF-8 cannot hold
        return f"the agent's answer for {item['id']}"

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
        if item["id"] == "hangs":
            time.sleep(60)  # a judge that never answers
        if item["id"] in ("exits", "half an emoji"):
            os._exit(3)
"""


@pytest.mark.parametrize("isolation", ["item", "worker"])
def test_an_item_stopped_in_evaluate_keeps_its_output(cli: Any, isolation: str) -> None:
    # the agent's answer is known once run returned: a judge that hangs or a crash in
    # evaluate must not lose it (nor hide that the agent was not the one stuck)
    cli.write("judged.py", STOPS_IN_EVALUATE)
    args = ("-c", "4", "--timeout", "1", "--isolation", isolation, "--output-json", "r.json")
    result = cli.run("judged.py", "--no-progress", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    items = {i["id"]: i for i in cli.items_of(cli.json("r.json"))}
    summary = {
        name: (i["status"], i["output"], i["error"] and i["error"]["stage"])
        for name, i in items.items()
    }
    assert summary == {
        "hangs": ("timeout", "the agent's answer for hangs", "evaluate"),
        "exits": ("crashed", "the agent's answer for exits", "evaluate"),
        "fine": ("passed", "the agent's answer for fine", None),
        "agent hangs": ("timeout", None, "executor"),
        "half an emoji": ("crashed", "the agent's answer: \ufffd", "evaluate"),
    }


CLOSES_FDS_EVALUATOR = """
import os

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


KEPT = []


class ClosesFds(BaseEvaluator):
    def get_dataset(self):
        return [{"id": name} for name in ("before", "closes", "reopens", "after")]

    def run(self, item):
        if item["id"] in ("closes", "reopens"):
            os.closerange(3, 4096)  # takes agenteval's pipe to the parent with it
        if item["id"] == "reopens":  # and a file of its own gets agenteval's numbers
            KEPT.extend(open("kept", "a") for _ in range(64))
            KEPT[0].write("mine\\n")
            KEPT[0].flush()
        return "ok"

    def evaluate(self, output, item):
        self.assert_that(StringContains("ok"), output)
"""


def test_a_child_whose_harness_fails_says_so_in_its_record(cli: Any) -> None:
    cli.write("closes.py", CLOSES_FDS_EVALUATOR)
    args = ("--executor", "fork", "-c", "2", "--no-progress", "--output-json", "r.json")
    result = cli.run("closes.py", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    items = {i["id"]: i for i in cli.items_of(cli.json("r.json"))}
    assert {name: i["status"] for name, i in items.items()} == {
        "before": "passed",
        "closes": "crashed",
        "reopens": "crashed",
        "after": "passed",
    }
    for name, cause in (("closes", "Bad file descriptor"), ("reopens", "reused")):
        item = items[name]
        assert "code 71" in item["error"]["message"]
        assert "agenteval's own part of it failed" in item["error"]["message"]
        assert "failed outside the item's code" in item["stderr"]
        assert cause in item["stderr"]
    # agenteval neither wrote into the file that took its descriptors' numbers nor emptied it
    assert (cli.root / "kept").read_text() == "mine\n"
