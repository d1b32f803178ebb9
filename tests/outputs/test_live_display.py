"""The progress bars on a real terminal (a pty): what items print shows above them, every
bar is erased as tall as it was drawn, and nothing of the bars reaches a file or a pipe."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

import pytest

AGENTEVAL = str(Path(sys.executable).parent / "agenteval")

PRINTS = """
    import time
    from agenteval import BaseEvaluator

    class Prints{n}(BaseEvaluator):
        def get_dataset(self):
            return [{{"id": i}} for i in range({items})]

        def run(self, item):
            for line in range({lines}):
                print(f"e{n} item {{item['id']}} line {{line}}")
            time.sleep(0.01)
            return "ok"

        def evaluate(self, output, item):
            pass
"""


def write_evaluators(root: Path, count: int, items: int = 3, lines: int = 50) -> None:
    (root / "evals").mkdir()
    for n in range(count):
        source = textwrap.dedent(PRINTS.format(n=n, items=items, lines=lines))
        (root / "evals" / f"e{n:03d}_eval.py").write_text(source)


def write_evaluator(root: Path, name: str, source: str) -> None:
    """``evals/NAME.py`` under ``root``, holding ``source`` (dedented)."""
    (root / "evals").mkdir()
    (root / "evals" / f"{name}.py").write_text(textwrap.dedent(source))


NARROWED = "\n<the terminal was narrowed here>\n"


def run_on_a_terminal(
    root: Path,
    *args: str,
    columns: int = 80,
    linger: float = 0,
    narrow_to: int | None = None,
    **extra_env: str,
) -> tuple[int, str]:
    """Run the CLI with a pty as its terminal (80x30); its exit code and raw output.
    ``narrow_to``: the terminal's own size instead of ``COLUMNS``, narrowed to that many
    columns once the bars have been up a while (``NARROWED`` marks where, in the output)."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child execs the CLI
        os.chdir(root)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTEVAL_", "FORCE"))}
        env.update(TERM="xterm-256color", **extra_env)
        if narrow_to is None:
            env.update(COLUMNS=str(columns), LINES="30")
        else:  # (set here: the parent could come after the CLI asked for its size)
            env.pop("COLUMNS", None)
            env.pop("LINES", None)
            _resize(1, columns)
        if linger:  # a shell keeps the terminal after agenteval exits, as a user's does
            script = f'"$0" run "$@"; code=$?; sleep {linger}; exit $code'
            os.execve("/bin/sh", ["sh", "-c", script, AGENTEVAL, *args], env)
        os.execve(AGENTEVAL, [AGENTEVAL, "run", *args], env)
    raw, started, narrowed = bytearray(), time.monotonic(), False
    while True:
        bars_up_a_while = "━".encode() in raw and time.monotonic() - started > 0.5
        if narrow_to is not None and not narrowed and bars_up_a_while:
            _resize(fd, narrow_to)
            os.kill(pid, signal.SIGWINCH)
            raw += NARROWED.encode()
            narrowed = True
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, "the run did not end within 60 s"
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        raw += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), raw.decode("utf-8", "replace")


def _resize(fd: int, columns: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))


def test_what_items_print_shows_above_the_bars(tmp_path: Path) -> None:
    write_evaluators(tmp_path, 4)
    code, raw = run_on_a_terminal(tmp_path, "evals", "--runs-dir", "runs")
    assert code == 0, raw
    assert "━" in raw  # the bars were drawn
    # (an erased line ends there: what follows starts afresh)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw.replace("\x1b[2K", "\n")).replace("\r", "")
    # every line every item printed, once, in each item's order
    for n in range(4):
        for item in range(3):
            lines = [f"e{n} item {item} line {line}" for line in range(50)]
            found = [line for line in text.split("\n") if line in lines]
            assert found == lines, (n, item)
    assert text.rstrip().split("\n")[-1].startswith("PASSED: 12 items, 12 passed")


LONG_NAME = """
    import time
    from agenteval import BaseEvaluator

    class Long(BaseEvaluator):
        name = "A display name long enough to fill a whole terminal line by itself " * 2

        def get_dataset(self):
            return [{"id": i} for i in range(4)]

        def run(self, item):
            time.sleep(0.3)
            return "ok"

        def evaluate(self, output, item):
            pass
"""


@pytest.mark.parametrize("columns", [40, 80, 120])
def test_a_long_name_is_cut_short_and_the_counts_and_eta_always_show(
    tmp_path: Path, columns: int
) -> None:
    write_evaluator(tmp_path, "long_eval", LONG_NAME)
    code, raw = run_on_a_terminal(tmp_path, "evals", "--runs-dir", "runs", columns=columns)
    assert code == 0, raw
    erased = raw.replace("\x1b[2K", "\n").replace("\r", "\n")
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", erased)
    bars = [line for line in plain.split("\n") if line.startswith("A display")]
    assert bars, raw
    for line in bars:
        assert len(line) <= columns, line
        assert re.search(r"… +([━╸╺]+ )?[0-4]/4 ", line), line  # the name cut short, done/total
        assert re.search(r"-:--:--|0:00:0\d$", line), line  # the ETA
    counts = "0 passed 0 failed 0 errors" if columns >= 100 else "0✓ 0✗ 0!"
    assert any(counts in line for line in bars), bars


def test_every_bar_is_erased_as_tall_as_it_was_drawn(tmp_path: Path) -> None:
    # many short evaluators side by side: bars come and go all the time
    write_evaluators(tmp_path, 120, items=1, lines=1)
    code, raw = run_on_a_terminal(tmp_path, "evals", "-c", "8", "--runs-dir", "runs")
    assert code == 0, raw
    # rich's bars drawn from two threads (its refresh thread, and add_task in another)
    # are erased by a stale height, and stay on the screen
    erase = re.compile(r"\r\x1b\[2K((?:\x1b\[1A\x1b\[2K)*)")
    drawn_before = None
    for match in erase.finditer(raw):
        before = raw[: match.start()].rsplit("\x1b[2K", 1)[-1].split("\r\n")
        bars = 0
        for line in reversed(before):
            if "━" not in line:
                break
            bars += 1
        if bars:
            assert match.group(1).count("\x1b[1A") + 1 == bars, (drawn_before, bars)
        drawn_before = bars
    assert "PASSED: 120 items, 120 passed" in raw


PAST_SYS_STDOUT = """
    import logging, os, subprocess, sys, time
    from agenteval import BaseEvaluator

    logging.basicConfig(level=logging.INFO, format="%(message)s")  # holds the real stderr
    log = logging.getLogger("agent")

    class Fd(BaseEvaluator):
        def get_dataset(self):
            return [{"id": i} for i in range(4)]

        def run(self, item):
            time.sleep(0.25)
            log.info("logged %s", item["id"])
            os.write(1, f"os.write {item['id']}\\n".encode())
            os.write(2, f"os.write to stderr {item['id']}\\n".encode())
            subprocess.run(["echo", f"subprocess {item['id']}"], check=True)
            print(f"printed {item['id']}")
            return "ok"

        def evaluate(self, output, item):
            pass
"""


def test_what_bypasses_sys_stdout_shows_above_the_bars_too(tmp_path: Path) -> None:
    # a subprocess, os.write, a logging handler made at import: none goes through
    # sys.stdout, and each would be glued to the bar line, then erased with it
    write_evaluator(tmp_path, "fd_eval", PAST_SYS_STDOUT)
    code, raw = run_on_a_terminal(tmp_path, "evals", "--runs-dir", "runs")
    assert code == 0, raw
    assert "━" in raw
    for n in range(4):
        for text in ("logged", "os.write", "os.write to stderr", "subprocess", "printed"):
            line = f"{text} {n}\r\n"
            assert raw.count(line) == 1, (line, raw)
            before = raw[: raw.index(line)]
            assert before.endswith(("\x1b[2K", "\r\n")), (line, before[-120:])
        # in the order written, whichever way each reached the terminal
        order = [raw.index(f"{text} {n}\r\n") for text in ("os.write", "subprocess", "printed")]
        assert order == sorted(order), raw
    assert "PASSED: 4 items, 4 passed" in raw


OUTLIVES = """
    import subprocess
    from agenteval import BaseEvaluator

    class Outlives(BaseEvaluator):
        def get_dataset(self):
            return [{"id": 0}]

        def run(self, item):
            script = "sleep 1; echo late; echo $? > late.rc"
            subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL)
            return "ok"

        def evaluate(self, output, item):
            pass
"""


def test_a_program_that_outlives_the_bars_still_writes_to_the_terminal(tmp_path: Path) -> None:
    # its stdout is the display's pipe: closed with the run, it would die of SIGPIPE
    write_evaluator(tmp_path, "outlives_eval", OUTLIVES)
    code, raw = run_on_a_terminal(tmp_path, "evals", "--runs-dir", "runs", linger=3)
    assert code == 0, raw
    assert raw.endswith("late\r\n")  # after the verdict, once agenteval has exited
    assert (tmp_path / "late.rc").read_text() == "0\n"


CRASHES = """
    import ctypes
    from agenteval import BaseEvaluator

    class Crashes(BaseEvaluator):
        def get_dataset(self):
            return [{"id": 0}, {"id": 1}]

        def run(self, item):
            if item["id"]:
                ctypes.string_at(0)
            return "ok"

        def evaluate(self, output, item):
            pass
"""


def test_a_forked_items_crash_dump_is_in_its_record_not_over_the_bars(tmp_path: Path) -> None:
    write_evaluator(tmp_path, "crashes_eval", CRASHES)
    args = ("evals", "-c", "2", "--runs-dir", "runs", "--output-json", "out.json")
    code, raw = run_on_a_terminal(tmp_path, *args, PYTHONFAULTHANDLER="1")
    assert code == 2, raw
    assert "Fatal Python error" not in raw
    items = json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["items"]
    assert items[1]["status"] == "crashed"
    assert items[1]["stderr"].startswith("Fatal Python error: Segmentation fault")


HANDLERS_FROM_SET_UP = """
    import logging
    import sys
    from agenteval import BaseEvaluator

    class Logs(BaseEvaluator):
        def set_up(self):
            self.log = logging.getLogger("agent")
            self.log.handlers[:] = [logging.StreamHandler()]  # (on sys.stderr as it is now)
            self.log.setLevel(logging.INFO)
            self.out = sys.stdout

        def get_dataset(self):
            return [{"id": f"l{i}"} for i in range(3)]

        def run(self, item):
            self.log.info("agent log for %s", item["id"])
            print("print via saved stdout", item["id"], file=self.out)
            return "ok"

        def evaluate(self, output, item):
            pass
"""


@pytest.mark.parametrize("isolation", ["item", "worker"])
def test_a_forked_item_writing_through_streams_kept_in_set_up_is_captured(
    tmp_path: Path, isolation: str
) -> None:
    # in the child they were the display's stand-ins, whose lines no thread drew: lost
    write_evaluator(tmp_path, "logs_eval", HANDLERS_FROM_SET_UP)
    args = ("evals", "-c", "2", "--isolation", isolation, "--runs-dir", "runs")
    code, raw = run_on_a_terminal(tmp_path, *args, "--output-json", "out.json")
    assert code == 0, raw
    items = json.loads((tmp_path / "out.json").read_text())["evaluators"][0]["items"]
    assert [(i["stdout"], i["stderr"]) for i in items] == [
        (f"print via saved stdout l{n}\n", f"agent log for l{n}\n") for n in range(3)
    ]


def run_piped(root: Path, command: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``agenteval COMMAND`` through the shell (its redirections), stderr captured."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTEVAL_")}
    return subprocess.run(
        f"{AGENTEVAL} {command}",
        shell=True,
        cwd=root,
        env={**environ, **env},
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )


def test_the_bars_never_reach_a_file_even_with_force_color(tmp_path: Path) -> None:
    write_evaluators(tmp_path, 2)
    # many CI systems set FORCE_COLOR: colours, but no live display
    proc = run_piped(tmp_path, "run evals --runs-dir runs > log.txt", FORCE_COLOR="1")
    assert proc.returncode == 0, proc.stderr
    logged = (tmp_path / "log.txt").read_text()
    assert "\x1b[" in logged  # coloured
    assert "━" not in logged and "\x1b[?25l" not in logged  # no bars, no hidden cursor


def test_a_run_with_stdout_closed_keeps_its_exit_code(tmp_path: Path) -> None:
    write_evaluators(tmp_path, 1)
    proc = run_piped(tmp_path, "run evals --runs-dir runs >&-")
    assert proc.returncode == 0, proc.stderr
    assert "driver failed" not in proc.stderr


HANGS_UP = """
    import os, subprocess, time
    from agenteval import BaseEvaluator

    class Talks(BaseEvaluator):
        def get_dataset(self):
            return [{"id": i} for i in range(12)]

        def run(self, item):
            print(f"item {item['id']} starts")
            for _ in range(300):  # 1.2 MB past sys.stderr: more than the display's pipe holds
                os.write(2, b"past sys.stderr " * 256)
            subprocess.run(["sh", "-c", "for i in $(seq 200); do echo sub $i; done"])
            time.sleep(0.1)
            return "ok"

        def evaluate(self, output, item):
            pass
"""


def test_a_terminal_that_hangs_up_mid_run_loses_nothing_and_blocks_no_writer(
    tmp_path: Path,
) -> None:
    # the window closes, SIGHUP ignored (nohup, a CI agent): every write to the terminal
    # now fails with EIO; the items that print, the display's pipes and the report must
    # neither block nor be lost
    import signal
    import time

    write_evaluator(tmp_path, "talks_eval", HANGS_UP)
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child execs the CLI
        os.chdir(tmp_path)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # kept across exec
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTEVAL_", "FORCE"))}
        env.update(TERM="xterm-256color", COLUMNS="80", LINES="30")
        args = ["evals", "--runs-dir", "runs", "--output-json", "out.json"]
        os.execve(AGENTEVAL, [AGENTEVAL, "run", *args], env)
    raw = bytearray()
    while "━".encode() not in raw:  # the bars are up: hang up
        ready, _, _ = select.select([fd], [], [], 30)
        assert ready, raw[-2000:]
        raw += os.read(fd, 65536)
    os.close(fd)
    deadline = time.monotonic() + 30
    try:
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
            assert time.monotonic() < deadline, "the run blocked after the terminal hung up"
            time.sleep(0.1)
    except AssertionError:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    assert os.waitstatus_to_exitcode(done[1]) == 0
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["run"]["totals"]["passed"] == 12
    assert not report["run"]["driver_errors"]
    (journal,) = (tmp_path / "runs").glob("*/records.jsonl")
    records = journal.read_text().splitlines()
    assert len(records) == 12


ODD_TEXT = """
    import logging, sys
    from agenteval import BaseEvaluator
    from agenteval.assertions import StringContains

    class OddText(BaseEvaluator):
        def set_up(self):
            logging.basicConfig(level=logging.INFO, format="%(message)s")  # holds sys.stderr

        def get_dataset(self):
            return [{"id": "surrogate"}, {"id": "bytes"}]

        def run(self, item):
            if item["id"] == "bytes":
                try:
                    sys.stdout.write(b"raw\\n")
                except TypeError:
                    return "caught"
                return "written"
            return "x\\ud800y"  # (as json.loads('"\\\\ud800"') makes)

        def evaluate(self, output, item):
            self.assert_that(StringContains("caught"), output)

        def tear_down(self):
            import atexit
            atexit.register(logging.info, "logged after the run")
"""


def test_text_the_terminal_cannot_take_loses_nothing_of_the_report(tmp_path: Path) -> None:
    # a lone surrogate ended the display for good (taken for a terminal gone): no report
    # after it, no verdict, the cursor hidden; bytes written to sys.stdout killed its thread
    write_evaluator(tmp_path, "odd_eval", ODD_TEXT)
    code, raw = run_on_a_terminal(tmp_path, "evals", "--runs-dir", "runs")
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", raw)
    assert code == 1, raw
    assert "FAIL     item 'surrogate' · StringContains · Expected 'x�y' to contain" in text
    assert "FAILED: 2 items, 1 passed, 1 failed" in text
    assert "display failed" not in text
    assert raw.rstrip().endswith("logged after the run")  # the handler made meanwhile
    assert raw.rfind("\x1b[?25h") > raw.rfind("\x1b[?25l")  # the cursor shown again


SLOW_LONG_NAME = """
    import time
    from agenteval import BaseEvaluator

    class AFairlyLongEvaluatorName(BaseEvaluator):
        def get_dataset(self):
            return [{"id": i} for i in range(40)]

        def run(self, item):
            time.sleep(0.05)
            return "ok"

        def evaluate(self, output, item):
            pass
"""


def test_the_bars_fit_a_terminal_made_narrower_mid_run(tmp_path: Path) -> None:
    # the columns were chosen once: at 50 columns the counts and times fell off the bar
    write_evaluator(tmp_path, "long_eval", SLOW_LONG_NAME)
    code, raw = run_on_a_terminal(
        tmp_path, "evals", "--runs-dir", "runs", columns=120, narrow_to=50
    )
    assert code == 0 and NARROWED in raw, raw
    late = raw.split(NARROWED)[1]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", late.replace("\x1b[2K", "\n").replace("\r", "\n"))
    bars = [line for line in plain.split("\n") if line.startswith("AFairly")][2:]  # (redrawn)
    assert bars, late
    for line in bars:
        assert len(line) <= 50, line
        assert re.search(r" \d+/40 \d+✓ \d+✗ \d+! ", line), line
