"""``--executor async``: many ``async def run`` items in flight in one process."""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

MANY_EVALUATOR = """
import asyncio
import os

from agenteval import BaseEvaluator

IN_FLIGHT = []


class Many(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(200)]

    async def run(self, item):
        IN_FLIGHT.append(item["id"])
        seen = len(IN_FLIGHT)
        await asyncio.sleep(0.5)
        IN_FLIGHT.remove(item["id"])
        return {"in_flight": seen, "pid": os.getpid()}

    def evaluate(self, output, item):
        assert output["in_flight"] <= 100
"""

FAULTY_EVALUATOR = """
import asyncio

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class LocalError(Exception):
    pass


class Faulty(BaseEvaluator):
    def get_dataset(self):
        kinds = ("ok", "slow", "raises", "keyboard-interrupt", "generator-exit", "ok-2")
        return [{"id": kind} for kind in kinds]

    async def run(self, item):
        kind = item["id"]
        if kind == "slow":
            await asyncio.sleep(30)
        if kind == "raises":
            raise LocalError("async item broke")
        if kind == "keyboard-interrupt":
            raise KeyboardInterrupt("raised by the item")
        if kind == "generator-exit":  # (it hung the run: taken for the loop closing)
            raise GeneratorExit("raised by the item")
        await asyncio.sleep(0.05)
        return "ok"

    async def evaluate(self, output, item):
        await self.aassert_that(StringContains("ok"), output)
"""

INTERRUPT_EVALUATOR = """
import asyncio
from pathlib import Path

from agenteval import BaseEvaluator


class Interruptible(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"item-{n}"} for n in range(8)]

    async def run(self, item):
        Path("started").mkdir(exist_ok=True)
        Path("started", item["id"]).touch()
        if item["id"] != "item-0":  # (item-0 waits in evaluate: a judge, say)
            await asyncio.sleep(SLEEP)
        return "done"

    async def evaluate(self, output, item):
        if item["id"] == "item-0":
            await asyncio.sleep(SLEEP)
        assert output == "done"
"""

STUBBORN_EVALUATOR = """
import asyncio
import time
from pathlib import Path

from agenteval import BaseEvaluator


class Stubborn(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "swallows"}, {"id": "swallows-too"}, {"id": "blocks-in-finally"}]

    async def run(self, item):
        Path("started").mkdir(exist_ok=True)
        Path("started", item["id"]).touch()
        if item["id"] == "blocks-in-finally":
            try:
                await asyncio.sleep(30)
            finally:
                time.sleep(4)
        while True:  # catches every cancellation
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                pass

    def evaluate(self, output, item):
        pass
"""

SLOW_SET_UP_NEXT = """
import asyncio
import time
from pathlib import Path

from agenteval import BaseEvaluator


class First(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"a{n}"} for n in range(6)]

    async def run(self, item):
        await asyncio.sleep(0.2)
        return "ok"

    async def evaluate(self, output, item):
        pass


class Second(BaseEvaluator):
    def set_up(self):
        Path("setting-up").touch()
        time.sleep(30)

    def get_dataset(self):
        return [{"id": "b0"}]

    async def run(self, item):
        return "ok"

    async def evaluate(self, output, item):
        pass
"""

EXITS_IN_A_TASK = """
import asyncio
import os
import sys

from agenteval import BaseEvaluator


class ExitsInATask(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "os-exit"}, {"id": "sys-exit"}, {"id": "fine"}]

    async def run(self, item):
        async def worker():
            if item["id"] == "os-exit":
                os._exit(5)
            sys.exit(4)

        if item["id"] != "fine":
            asyncio.get_running_loop().create_task(worker())
        await asyncio.sleep(0.2)
        return "ok"

    async def evaluate(self, output, item):
        pass
"""

GIVEN_UP_BESIDE_A_PROCESS = """
import asyncio
import time

from agenteval import BaseEvaluator


class GivenUp(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "blocks"}, {"id": "quick"}, {"id": "child"}]

    async def run(self, item):
        if item["id"] == "blocks":
            await asyncio.sleep(0.2)
            time.sleep(5.5)  # holds the loop past --timeout and more: the loop is given up
            return "late"
        if item["id"] == "quick":
            await asyncio.sleep(0.5)
            return "rc=0"
        process = await asyncio.create_subprocess_exec("sleep", "2.2")
        return f"rc={await process.wait()}"

    def evaluate(self, output, item):
        assert item["id"] == "blocks" or output == "rc=0", output
"""

SYNC_EVALUATOR = """
from agenteval import BaseEvaluator


class Blocking(BaseEvaluator):
    def get_dataset(self):
        return [{"id": 1}]

    def run(self, item):
        return "sync"

    def evaluate(self, output, item):
        pass


class Fine(BaseEvaluator):
    def get_dataset(self):
        return [{"id": 1}]

    async def run(self, item):
        return "async"

    def evaluate(self, output, item):
        pass
"""


CANCELS_EVALUATOR = """
import asyncio

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Cancels(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"ok-{n}"} for n in range(8)] + [
            {"id": "cancels-in-run"},
            {"id": "cancels-in-evaluate"},
        ]

    async def run(self, item):
        if item["id"] == "cancels-in-run":
            raise asyncio.CancelledError()
        await asyncio.sleep(0.2)
        return "ok"

    async def evaluate(self, output, item):
        if item["id"] == "cancels-in-evaluate":
            raise asyncio.CancelledError("gave up")
        await self.aassert_that(StringContains("ok"), output)
"""

LOOP_HOOKS_EVALUATOR = """
import asyncio
from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


async def connect():
    await asyncio.sleep(0)
    return "connection"


async def disconnect():
    await asyncio.sleep(0)
    Path("closed").write_text("yes")


class LoopHooks(BaseEvaluator):
    def set_up(self):
        self.conn = asyncio.run(connect())

    def get_dataset(self):
        return [{"id": n} for n in range(3)]

    async def run(self, item):
        await asyncio.sleep(0.05)
        return f"answer over {self.conn}"

    def evaluate(self, output, item):
        self.assert_that(StringContains("connection"), output)

    def tear_down(self):
        asyncio.run(disconnect())
"""

WORKERS_EVALUATOR = """
import asyncio
import contextvars

from agenteval import BaseEvaluator

LEFT_BEHIND = contextvars.ContextVar("left_behind")


class Workers(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "slow"}] + [{"id": f"item-{n}"} for n in range(9)]

    async def run(self, item):
        seen = LEFT_BEHIND.get(None)
        LEFT_BEHIND.set(item["id"])  # never reset: the next item must not see it
        if item["id"] == "slow":
            await asyncio.sleep(30)
        await asyncio.sleep(0.01)
        return seen

    def evaluate(self, output, item):
        assert output is None, f"saw {output!r}, left by an earlier item"
"""


BLOCKING_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Blocking(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "blocks"}] + [{"id": f"waits-{n}"} for n in range(6)] + [{"id": "hangs"}]

    async def run(self, item):
        if item["id"] == "blocks":
            await asyncio.sleep(0.2)
            time.sleep(3)  # a sync client: it holds the event loop
            return "answer"
        if item["id"] == "hangs":
            await asyncio.sleep(60)
        await asyncio.sleep(0.4)
        return "answer"

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
"""

SWALLOWS_EVALUATOR = """
import asyncio

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Swallows(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "eats-once"}, {"id": "eats-twice"}, {"id": "eats-always"}, {"id": "fine"}]

    async def run(self, item):
        while item["id"] == "eats-always":
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                pass  # never gives up
        for _ in range({"eats-once": 1, "eats-twice": 2}.get(item["id"], 0)):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                await asyncio.sleep(0.1)  # clean up, then carry on as if nothing happened
        return "x"

    def evaluate(self, output, item):
        self.assert_that(StringContains("x"), output)
"""

IN_A_TASK_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator


async def sync_tool():
    await asyncio.sleep(0.1)
    time.sleep(3)  # blocking code in a task the item started
    return "answer"


class InATask(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "in-a-task"}, {"id": "waits"}]

    async def run(self, item):
        if item["id"] == "in-a-task":
            (answer,) = await asyncio.gather(sync_tool())
            return answer
        await asyncio.sleep(0.4)
        return "answer"

    def evaluate(self, output, item):
        pass
"""

CHUNKS_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator


def cpu(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Chunks(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "chunks"}, {"id": "waits-0"}, {"id": "waits-1"}]

    async def run(self, item):
        if item["id"] == "chunks":
            for _ in range(30):  # 9 s of CPU, in chunks of 0.3 s between awaits
                cpu(0.3)
                await asyncio.sleep(0)
            return "answer"
        for _ in range(4):  # 0.8 s of its own, held up by every chunk
            await asyncio.sleep(0.2)
        return "answer"

    def evaluate(self, output, item):
        pass
"""

IN_A_CALLBACK_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator


class InACallback(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "in-a-callback"}, {"id": "waits"}]

    async def run(self, item):
        if item["id"] == "in-a-callback":
            done = asyncio.get_running_loop().create_future()
            done.add_done_callback(lambda _: time.sleep(3))  # blocking code in a callback
            asyncio.get_running_loop().call_later(0.1, done.set_result, "answer")
            return await done
        await asyncio.sleep(0.8)
        return "answer"

    def evaluate(self, output, item):
        pass
"""


FOR_GOOD_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


def log(name, text):
    with open(name, "a") as fh:
        fh.write(text + "\\n")


class ForGood(BaseEvaluator):
    def get_dataset(self):
        return (
            [{"id": "sleeps"}, {"id": "waits-0"}, {"id": "waits-1"}, {"id": "spins"}]
            + [{"id": f"after-{n}"} for n in range(4)]
        )

    async def run(self, item):
        log("starts.log", item["id"])
        await asyncio.sleep(0.1)
        if item["id"] == "sleeps":
            time.sleep(600)  # blocking C code: nothing can free the loop's thread from it
        if item["id"] == "spins":
            try:
                while True:  # Python code that never awaits
                    pass
            except BaseException as exc:
                log("spins.log", type(exc).__name__)
                raise
        await asyncio.sleep(0.3)
        return "answer"

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
"""

TO_THREAD_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


def sync_client(seconds):
    time.sleep(seconds)  # a socket read without a timeout, say
    return "answer"


class ToThread(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "stuck", "seconds": 600}] + [
            {"id": f"quick-{n}", "seconds": 0.1} for n in range(3)
        ]

    async def run(self, item):
        if item["id"] == "quick-2":
            return await asyncio.get_running_loop().run_in_executor(None, sync_client, 0.1)
        return await asyncio.to_thread(sync_client, item["seconds"])

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
"""

STUCK_JUDGE_EVALUATOR = """
import asyncio

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class StuckJudge(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "stuck-judge"}, {"id": "stuck-agent"}]

    async def run(self, item):
        if item["id"] == "stuck-agent":
            await asyncio.sleep(30)
        return "the agent's answer"

    async def evaluate(self, output, item):
        await asyncio.sleep(30)  # a judge that never answers
        self.assert_that(StringContains("answer"), output)
"""

BUSY_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator


class Busy(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(150)]

    async def run(self, item):
        await asyncio.sleep(0.1)
        return "answer"

    def evaluate(self, output, item):
        end = time.perf_counter() + 0.005  # a little CPU per item: together, a busy loop
        while time.perf_counter() < end:
            pass
"""


HELD_UP_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator


class HeldUp(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "blocker"}, {"id": "victim"}, {"id": "thread-victim"}]

    async def run(self, item):
        if item["id"] == "blocker":
            await asyncio.sleep(0.05)
            time.sleep(1.0)  # holds the loop for 1 s, well within its --timeout
            return "done"
        if item["id"] == "thread-victim":  # (its wake-up comes from another thread)
            await asyncio.to_thread(time.sleep, 0.1)
        else:
            await asyncio.sleep(0.1)  # due at 0.1 s, run at 1.05 s: held up, not slow
        await asyncio.sleep(1.5)  # 1.6 s of its own in all, under its 2 s --timeout
        return "done"

    def evaluate(self, output, item):
        pass
"""


def held_up(cli: Any) -> dict[str, Any]:
    return run_async(cli, "held_up.py", HELD_UP_EVALUATOR, "-c", "3", "--timeout", "2")


STARTS_PROCESSES_EVALUATOR = """
import asyncio
import subprocess
from pathlib import Path

import psutil

from agenteval import BaseEvaluator

PIDS = Path("pids")
LEFT = []


def started(name, pid):
    PIDS.mkdir(exist_ok=True)
    (PIDS / name).write_text(str(pid))


def gone(name):
    try:
        return psutil.Process(int((PIDS / name).read_text())).status() == psutil.STATUS_ZOMBIE
    except (FileNotFoundError, ValueError):
        return False
    except psutil.NoSuchProcess:
        return True


async def start_later():
    await asyncio.sleep(0.2)
    started("after-its-item", subprocess.Popen(["sleep", "120"]).pid)
    await asyncio.sleep(120)


class Starts(BaseEvaluator):
    def get_dataset(self):
        kinds = ("waits-on-it", "in-a-thread", "leaves-it", "grandchild", "leaves-a-task")
        return [{"id": kind} for kind in kinds] + [{"id": "watches"}]

    async def run(self, item):
        kind = item["id"]
        if kind == "waits-on-it":
            proc = await asyncio.create_subprocess_exec("sleep", "120")
            started(kind, proc.pid)
            await proc.wait()
        elif kind == "in-a-thread":
            def wait():
                proc = subprocess.Popen(["sleep", "120"])
                started(kind, proc.pid)
                proc.wait()
            await asyncio.to_thread(wait)
        elif kind == "leaves-it":
            started(kind, subprocess.Popen(["sleep", "120"]).pid)
        elif kind == "grandchild":
            # the shell exits at once; the sleep it left in the background is its group's
            shell = "sleep 120 >/dev/null 2>&1 & echo $!"
            out = subprocess.run(["sh", "-c", shell], capture_output=True, text=True)
            started(kind, int(out.stdout))
        elif kind == "leaves-a-task":
            LEFT.append(asyncio.get_running_loop().create_task(start_later()))
        elif kind == "watches":  # what the items that ended left is gone while the run goes on
            for _ in range(150):
                if gone("leaves-it") and gone("grandchild"):
                    break
                await asyncio.sleep(0.01)
            else:
                return "still running"
        return "done"

    def evaluate(self, output, item):
        assert output == "done"
"""


LEAVES_EVALUATOR = """
import asyncio
import threading
import time
from pathlib import Path

from agenteval import BaseEvaluator

LEFT = []


def flush(n):
    time.sleep(0.5)
    Path(f"flushed-{n}").write_text(str(threading.current_thread().daemon))


class Leaves(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(2)]

    async def run(self, item):
        threading.Thread(target=flush, args=(item["id"],)).start()  # a telemetry flush
        if item["id"] == 0:
            async def heartbeat():
                try:
                    await asyncio.sleep(60)
                finally:
                    time.sleep(60)  # a blocking call on the way out
            LEFT.append(asyncio.create_task(heartbeat()))
        return "done"

    def evaluate(self, output, item):
        pass
"""


POLLERS_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator


class Pollers(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "polls"}]

    async def run(self, item):
        started = time.monotonic()

        async def poll():
            while time.monotonic() - started < 30:
                await asyncio.sleep(0.01)

        await asyncio.gather(*(poll() for _ in range(20)))
        return "done"

    def evaluate(self, output, item):
        pass
"""


def pollers(cli: Any) -> dict[str, Any]:
    return run_async(cli, "pollers.py", POLLERS_EVALUATOR, "-c", "2", "--timeout", "1")


BURSTS_EVALUATOR = """
import asyncio
import time

from agenteval import BaseEvaluator


class Bursts(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"bursts-{n}"} for n in range(5)] + [{"id": "steady"}]

    async def run(self, item):
        if item["id"] == "steady":
            for _ in range(40):  # 1.6 s of its own
                await asyncio.sleep(0.04)
            return "done"
        await asyncio.sleep(0.01)
        for _ in range(10):  # 1.5 s of its own, in bursts of 0.15 s that hold the loop
            time.sleep(0.15)
            await asyncio.sleep(0)
        return "done"

    def evaluate(self, output, item):
        pass
"""


def bursts(cli: Any) -> dict[str, Any]:
    return run_async(cli, "bursts.py", BURSTS_EVALUATOR, "-c", "6", "--timeout", "2")


def leaves(cli: Any) -> dict[str, Any]:
    return run_async(cli, "leaves.py", LEAVES_EVALUATOR, "-c", "2")


def starts_processes(cli: Any) -> dict[str, Any]:
    return run_async(cli, "starts.py", STARTS_PROCESSES_EVALUATOR, "-c", "6", "--timeout", "2")


def run_async(cli: Any, name: str, source: str, *args: str) -> dict[str, Any]:
    """Write the evaluator file and run it with ``--executor async`` and a JSON report."""
    cli.write(name, source)
    started = time.monotonic()
    result = cli.run(
        name, "--executor", "async", "--no-progress", "--output-json", "report.json", *args
    )
    return {"cli": cli, "result": result, "elapsed": time.monotonic() - started}


def workers(cli: Any) -> dict[str, Any]:
    return run_async(cli, "workers.py", WORKERS_EVALUATOR, "-c", "1", "--timeout", "0.5")


def many(cli: Any) -> dict[str, Any]:
    return run_async(cli, "many.py", MANY_EVALUATOR, "-c", "100")


def faulty(cli: Any) -> dict[str, Any]:
    return run_async(cli, "faulty.py", FAULTY_EVALUATOR, "-c", "10", "--timeout", "0.5")


def interrupted(cli: Any, sleep: float, *args: str) -> dict[str, Any]:
    cli.write("interrupt.py", INTERRUPT_EVALUATOR.replace("SLEEP", repr(sleep)))
    started = time.monotonic()
    proc = cli.start(
        "interrupt.py",
        "--executor",
        "async",
        "-c",
        "4",
        "--no-progress",
        "--output-json",
        "report.json",
        *args,
    )
    folder = cli.root / "started"
    assert cli.wait_until(lambda: folder.exists() and len(list(folder.iterdir())) >= 4, 20)
    os.kill(proc.pid, signal.SIGINT)
    result = cli.finish(proc, started)
    return {"cli": cli, "result": result, "started": sorted(p.name for p in folder.iterdir())}


def stubborn(cli: Any) -> dict[str, Any]:
    cli.write("stubborn.py", STUBBORN_EVALUATOR)
    started = time.monotonic()
    proc = cli.start(
        "stubborn.py", "--executor", "async", "-c", "3", "--no-progress", "--grace", "0.5"
    )
    folder = cli.root / "started"
    assert cli.wait_until(lambda: folder.exists() and len(list(folder.iterdir())) == 3, 20)
    os.kill(proc.pid, signal.SIGINT)
    return {"cli": cli, "result": cli.finish(proc, started)}


def stopped_in_set_up(cli: Any) -> dict[str, Any]:
    cli.write("two.py", SLOW_SET_UP_NEXT)
    started = time.monotonic()
    proc = cli.start("two.py", "--executor", "async", "-c", "3", "--no-progress")
    assert cli.wait_until(lambda: (cli.root / "setting-up").exists(), 20)
    time.sleep(1)  # First's items are all done by now
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGINT)  # stop at once, inside Second's set_up
    return {"cli": cli, "result": cli.finish(proc, started)}


def exits_in_a_task(cli: Any) -> dict[str, Any]:
    return run_async(cli, "exits.py", EXITS_IN_A_TASK, "-c", "3")


def interrupted_in_set_up(cli: Any) -> dict[str, Any]:
    cli.write("two.py", SLOW_SET_UP_NEXT)
    started = time.monotonic()
    proc = cli.start("two.py", "--executor", "async", "-c", "8", "--no-progress", "--grace", "1")
    assert cli.wait_until(lambda: (cli.root / "setting-up").exists(), 20)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGINT)  # once: First's items get the grace period
    return {"cli": cli, "result": cli.finish(proc, started)}


def given_up_beside_a_process(cli: Any) -> dict[str, Any]:
    return run_async(cli, "given_up.py", GIVEN_UP_BESIDE_A_PROCESS, "-c", "2", "--timeout", "2.5")


def cancels(cli: Any, *args: str) -> dict[str, Any]:
    return run_async(cli, "cancels.py", CANCELS_EVALUATOR, "-c", "20", *args)


def blocking(cli: Any) -> dict[str, Any]:
    return run_async(cli, "blocking.py", BLOCKING_EVALUATOR, "-c", "10", "--timeout", "2")


def chunks(cli: Any) -> dict[str, Any]:
    return run_async(cli, "chunks.py", CHUNKS_EVALUATOR, "-c", "3", "--timeout", "1")


def in_a_callback(cli: Any) -> dict[str, Any]:
    return run_async(cli, "in_a_callback.py", IN_A_CALLBACK_EVALUATOR, "-c", "2", "--timeout", "1")


def for_good(cli: Any) -> dict[str, Any]:
    return run_async(cli, "for_good.py", FOR_GOOD_EVALUATOR, "-c", "3", "--timeout", "1")


def to_thread(cli: Any) -> dict[str, Any]:
    return run_async(cli, "to_thread.py", TO_THREAD_EVALUATOR, "-c", "4", "--timeout", "1")


def stuck_judge(cli: Any) -> dict[str, Any]:
    return run_async(cli, "stuck.py", STUCK_JUDGE_EVALUATOR, "-c", "2", "--timeout", "1")


def swallows(cli: Any) -> dict[str, Any]:
    return run_async(cli, "swallows.py", SWALLOWS_EVALUATOR, "-c", "1", "--timeout", "0.5")


def in_a_task(cli: Any) -> dict[str, Any]:
    return run_async(cli, "in_a_task.py", IN_A_TASK_EVALUATOR, "-c", "2", "--timeout", "1")


def busy(cli: Any) -> dict[str, Any]:
    return run_async(cli, "busy.py", BUSY_EVALUATOR, "-c", "150", "--timeout", "20")


def loop_hooks(cli: Any) -> dict[str, Any]:
    return run_async(cli, "hooks.py", LOOP_HOOKS_EVALUATOR, "-c", "3")


def sync(cli: Any) -> dict[str, Any]:
    cli.write("sync.py", SYNC_EVALUATOR)
    return {"cli": cli, "result": cli.run("sync.py", "--executor", "async", "--no-progress")}


@pytest.fixture(scope="module")
def async_runs(cli_factory: Any) -> dict[str, Any]:
    scenarios: dict[str, Any] = {
        "many": (many,),
        "faulty": (faulty,),
        "interrupted": (interrupted, 1.0),
        "grace-expiry": (interrupted, 30.0, "--grace", "0.5"),
        "stubborn": (stubborn,),
        "stopped-in-set-up": (stopped_in_set_up,),
        "interrupted-in-set-up": (interrupted_in_set_up,),
        "exits-in-a-task": (exits_in_a_task,),
        "given-up-beside-a-process": (given_up_beside_a_process,),
        "sync": (sync,),
        "cancels": (cancels,),
        "cancels-with-timeout": (cancels, "--timeout", "10"),
        "loop-hooks": (loop_hooks,),
        "workers": (workers,),
        "blocking": (blocking,),
        "for-good": (for_good,),
        "to-thread": (to_thread,),
        "stuck-judge": (stuck_judge,),
        "busy": (busy,),
        "held-up": (held_up,),
        "leaves": (leaves,),
        "starts-processes": (starts_processes,),
        "pollers": (pollers,),
        "bursts": (bursts,),
        "swallows": (swallows,),
        "in-a-task": (in_a_task,),
        "chunks": (chunks,),
        "in-a-callback": (in_a_callback,),
    }
    with ThreadPoolExecutor(len(scenarios)) as pool:
        return {
            name: pool.submit(fn, cli_factory(name), *args)
            for name, (fn, *args) in scenarios.items()
        }


def test_async_runs_many_items_concurrently_in_one_process(async_runs: dict[str, Any]) -> None:
    got = async_runs["many"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    report = cli.json("report.json")
    items = cli.items_of(report)
    assert len(items) == 200
    assert {i["output"]["pid"] for i in items} == {result_pid(cli)}
    assert max(i["output"]["in_flight"] for i in items) == 100
    # 200 items of 0.5 s, 100 at a time: two rounds, about 1 s (bounds for a noisy box)
    assert 0.95 < report["run"]["duration_s"] < 4


def result_pid(cli: Any) -> int:
    """The CLI's pid: async items run in the CLI process itself."""
    (proc,) = cli.started
    return int(proc.pid)


def test_async_timeout_marks_only_the_slow_item(async_runs: dict[str, Any]) -> None:
    got = async_runs["faulty"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.elapsed < 15
    report = cli.json("report.json")
    assert cli.statuses(report) == {
        "ok": "passed",
        "slow": "timeout",
        "raises": "error",
        "keyboard-interrupt": "error",
        "generator-exit": "error",
        "ok-2": "passed",
    }
    errors = {i["id"]: i["error"] for i in cli.items_of(report) if i["error"]}
    assert errors["slow"]["message"] == "item exceeded --timeout 0.5s and was cancelled"
    assert (errors["raises"]["type"], errors["raises"]["message"]) == (
        "LocalError",
        "async item broke",
    )
    assert errors["keyboard-interrupt"]["type"] == "KeyboardInterrupt"
    assert errors["generator-exit"]["type"] == "GeneratorExit"
    assert len(cli.records()) == 6


def test_async_interrupt_lets_in_flight_items_finish(async_runs: dict[str, Any]) -> None:
    got = async_runs["interrupted"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 130, result.stdout + result.stderr
    records = cli.records()
    assert sorted(r["id"] for r in records) == got["started"]
    assert {r["status"] for r in records} == {"passed"}
    assert 4 <= len(records) < 8


def test_async_grace_expiry_cancels_in_flight_items(async_runs: dict[str, Any]) -> None:
    got = async_runs["grace-expiry"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 130, result.stdout + result.stderr
    assert result.elapsed < 10
    assert cli.statuses(cli.json("report.json")) == {f"item-{n}": "cancelled" for n in range(4)}
    assert {r["id"]: r["status"] for r in cli.records()} == {
        f"item-{n}": "cancelled" for n in range(4)
    }
    # cut off in evaluate, it keeps what run returned, its stage and how long it ran
    (first,) = [i for i in cli.items_of(cli.json("report.json")) if i["id"] == "item-0"]
    assert (first["output"], first["error"]["stage"]) == ("done", "evaluate")
    assert first["duration_s"] > 0.5  # (it was the grace period, whatever the item ran)


def test_async_grace_expiry_with_items_that_catch_their_cancellation(
    async_runs: dict[str, Any],
) -> None:
    got = async_runs["stubborn"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 130, result.stdout + result.stderr
    assert result.elapsed < 10
    assert {r["id"]: r["status"] for r in cli.records()} == {
        "swallows": "cancelled",
        "swallows-too": "cancelled",
        "blocks-in-finally": "cancelled",
    }
    # items that catch every cancellation are dropped quietly; the one that blocks the loop
    # is named for the time the run really waited (was: always 5 s, a thread's traceback
    # and "Task was destroyed but it is pending")
    assert result.stderr == "", result.stderr
    assert (
        "notice: the event loop was still busy 1 s after the items in flight were cancelled "
        "(blocking code in an item or a task it left): the run ended without it"
    ) in result.stdout


def test_async_a_stop_at_once_in_the_next_set_up_keeps_what_finished(
    async_runs: dict[str, Any],
) -> None:
    # the records read off the loop last, held until the next evaluator's set_up returned,
    # were lost with it: resume ran them (and paid for them) again
    got = async_runs["stopped-in-set-up"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 130, result.stdout + result.stderr
    assert {r["id"]: r["status"] for r in cli.records()} == {f"a{n}": "passed" for n in range(6)}


def test_async_a_task_of_an_item_that_ends_the_process_is_that_items_fault(
    async_runs: dict[str, Any],
) -> None:
    # it was swallowed: the items passed, with pages of tracebacks (fork: crashed, error)
    got = async_runs["exits-in-a-task"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == ""
    report = cli.json("report.json")
    assert cli.statuses(report) == {"os-exit": "crashed", "sys-exit": "error", "fine": "passed"}
    errors = {i["id"]: i["error"] for i in cli.items_of(report) if i["error"]}
    assert (errors["sys-exit"]["type"], errors["sys-exit"]["message"]) == ("SystemExit", "4")


def test_async_items_pulled_before_the_next_set_up_start_before_it(
    async_runs: dict[str, Any],
) -> None:
    # they waited, queued, for the next evaluator's set_up to return, and an interrupt
    # meanwhile dropped them unstarted: "First interrupted, 0 items"
    got = async_runs["interrupted-in-set-up"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 130, result.stdout + result.stderr
    assert {r["id"]: r["status"] for r in cli.records()} == {f"a{n}": "passed" for n in range(6)}
    assert "PASSED  First  two.py" in result.stdout


def test_async_a_loop_given_up_kills_nothing_of_the_items_run_again(
    async_runs: dict[str, Any],
) -> None:
    # once free again, the old loop's shutdown killed every item's processes, those of the
    # items now on the fresh loop too: "rc=-9"
    got = async_runs["given-up-beside-a-process"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert cli.statuses(cli.json("report.json")) == {
        "blocks": "timeout",
        "quick": "passed",
        "child": "passed",
    }


def test_async_items_sharing_a_loop_held_in_turns_are_not_timed_out(
    async_runs: dict[str, Any],
) -> None:
    # each has 1.5-1.6 s of its own under a 2 s --timeout, and waits for the others' bursts:
    # one was "timeout: it blocked the event loop for 1.6 s", charged with others' time
    got = async_runs["bursts"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(cli.statuses(cli.json("report.json")).values()) == {"passed"}


def test_async_an_item_kept_busy_by_its_own_tasks_times_out_on_time(
    async_runs: dict[str, Any],
) -> None:
    # its tasks waiting behind one another were taken for being held up: it ran for 30 s
    got = async_runs["pollers"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert cli.statuses(cli.json("report.json")) == {"polls": "timeout"}
    assert got["elapsed"] < 10


def test_async_what_items_leave_behind_neither_dies_unseen_nor_holds_the_end(
    async_runs: dict[str, Any],
) -> None:
    # their threads were daemons (the loop's thread is one) and died at exit unwritten; a
    # task blocking in its finally held the end of the run for its whole 60 s
    got = async_runs["leaves"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert got["elapsed"] < 30
    assert [(cli.root / f"flushed-{n}").read_text() for n in range(2)] == ["False", "False"]
    assert (
        "notice: the event loop was still busy 5 s after the last item (blocking code in a "
        "task an item left running): the run ended without it"
    ) in result.stdout


def test_async_the_processes_an_item_starts_end_with_it(async_runs: dict[str, Any]) -> None:
    # they outlived the run, and held its piped stdout open: `agenteval run ... | cat`
    # waited for them
    got = async_runs["starts-processes"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert got["elapsed"] < 30
    assert cli.statuses(cli.json("report.json")) == {
        "waits-on-it": "timeout",
        "in-a-thread": "timeout",
        "leaves-it": "passed",
        "grandchild": "passed",
        "leaves-a-task": "passed",
        "watches": "passed",
    }
    pids = cli.pids_in(cli.root / "pids")
    assert sorted(pids) == [
        "after-its-item",
        "grandchild",
        "in-a-thread",
        "leaves-it",
        "waits-on-it",
    ]
    assert cli.wait_until(lambda: not any(cli.alive(pid) for pid in pids.values()), 5)


def test_async_executor_refuses_sync_evaluators(async_runs: dict[str, Any]) -> None:
    result = async_runs["sync"].result()["result"]
    assert result.returncode == 2
    assert result.stderr == (
        "agenteval: error: --executor async needs `async def run`; not async: Blocking "
        "(use --executor fork for sync evaluators)\n"
    )
    assert result.stdout == ""


@pytest.mark.parametrize("scenario", ["cancels", "cancels-with-timeout"])
def test_async_cancelled_error_from_user_code_is_an_error_of_that_item(
    async_runs: dict[str, Any], scenario: str
) -> None:
    got = async_runs[scenario].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == {f"ok-{n}": "passed" for n in range(8)} | {
        "cancels-in-run": "error",
        "cancels-in-evaluate": "error",
    }
    errors = {i["id"]: i["error"] for i in cli.items_of(report) if i["error"]}
    in_run, in_evaluate = errors["cancels-in-run"], errors["cancels-in-evaluate"]
    # (the public name, under every executor: was "CancelledError" here alone)
    assert (in_run["stage"], in_run["type"], in_run["message"]) == (
        "run",
        "asyncio.CancelledError",
        "",
    )
    assert (in_evaluate["stage"], in_evaluate["type"], in_evaluate["message"]) == (
        "evaluate",
        "asyncio.CancelledError",
        "gave up",
    )
    assert "raise asyncio.CancelledError()" in in_run["traceback"]
    assert 'raise asyncio.CancelledError("gave up")' in in_evaluate["traceback"]
    assert {r["id"]: r["status"] for r in cli.records()} == cli.statuses(report)


def test_async_set_up_and_tear_down_may_call_asyncio_run(async_runs: dict[str, Any]) -> None:
    got = async_runs["loop-hooks"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    (evaluator,) = cli.json("report.json")["evaluators"]
    assert (evaluator["status"], evaluator["error"]) == ("passed", None)
    assert cli.statuses(cli.json("report.json")) == dict.fromkeys(["0", "1", "2"], "passed")
    assert (cli.root / "closed").read_text() == "yes"


def test_async_items_on_one_worker_stay_apart(async_runs: dict[str, Any]) -> None:
    """At ``-c 1`` one worker runs every item in turn: a context variable an item leaves
    set is not seen by the next, and the items after a timed-out one still run."""
    got = async_runs["workers"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert cli.statuses(cli.json("report.json")) == {"slow": "timeout"} | {
        f"item-{n}": "passed" for n in range(9)
    }


def test_async_an_item_blocking_the_loop_times_out_not_the_items_it_held_up(
    async_runs: dict[str, Any],
) -> None:
    # "blocks" holds the loop for 3 s in time.sleep, past its 2 s --timeout; the items
    # waiting meanwhile could not run, and that time is not counted against them
    got = async_runs["blocking"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == {"blocks": "timeout", "hangs": "timeout"} | {
        f"waits-{n}": "passed" for n in range(6)
    }
    items = {i["id"]: i for i in cli.items_of(report)}
    errors = {name: i["error"]["message"] for name, i in items.items() if i["error"]}
    assert errors["blocks"].startswith("item exceeded --timeout 2s: it blocked the event loop")
    assert errors["hangs"] == "item exceeded --timeout 2s and was cancelled"
    # "hangs" awaits what never comes: it is given back what "blocks" held the loop for (a
    # reply might have come meanwhile), but no more than its timeout again
    assert 3.0 < items["hangs"]["duration_s"] < 6.5
    (notice,) = [line for line in result.stdout.splitlines() if line.startswith("notice: ")]
    assert notice.startswith(
        "notice: item 'blocks' of blocking.py::Blocking blocked the event loop"
    )
    assert "--executor fork" in notice


def test_async_an_item_held_up_before_its_deadline_gets_that_time_back(
    async_runs: dict[str, Any],
) -> None:
    # it was given the time back only if ready at the very moment of its deadline: held
    # up early, then waiting on its next sleep, it timed out at 2 s with 1.6 s of its own
    got = async_runs["held-up"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert cli.statuses(cli.json("report.json")) == dict.fromkeys(
        ("blocker", "victim", "thread-victim"), "passed"
    )


def test_async_an_item_blocking_the_loop_for_good_is_a_timeout_and_the_run_goes_on(
    async_runs: dict[str, Any],
) -> None:
    # "sleeps" and then "spins" hold the loop past --timeout 1 s plus a 2 s grace: each
    # time the loop is given up, and the items in flight with the blocker run again on a
    # fresh one
    got = async_runs["for-good"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.elapsed < 20
    report = cli.json("report.json")
    assert cli.statuses(report) == {"sleeps": "timeout", "spins": "timeout"} | {
        name: "passed" for name in ("waits-0", "waits-1", *(f"after-{n}" for n in range(4)))
    }
    errors = {i["id"]: i["error"]["message"] for i in cli.items_of(report) if i["error"]}
    for name in ("sleeps", "spins"):
        assert re.fullmatch(
            r"item exceeded --timeout 1s: it blocked the event loop for \d+\.\d s and did "
            r"not give it back",
            errors[name],
        ), errors[name]
    notices = [line for line in result.stdout.splitlines() if line.startswith("notice: ")]
    assert [re.sub(r"\(\d+\.\d s", "(N s", n) for n in notices] == [
        f"notice: item {name!r} of for_good.py::ForGood blocked the event loop for good "
        f"(N s, past its --timeout 1s): the 2 items in flight with it ran again on a "
        f"fresh event loop — use --executor fork for items that may block"
        for name in ("sleeps", "spins")
    ]
    starts = Counter((cli.root / "starts.log").read_text().split())
    assert starts == {"sleeps": 1, "spins": 1, "waits-0": 3, "waits-1": 3} | {
        f"after-{n}": 1 for n in range(4)
    }
    # the loop spinning in Python code was freed; one record per item, none from a loop
    # given up
    assert (cli.root / "spins.log").read_text() == "_Abandoned\n"
    assert sorted(r["id"] for r in cli.records()) == sorted(starts)


def test_async_a_call_left_running_in_a_thread_does_not_hold_the_run(
    async_runs: dict[str, Any],
) -> None:
    # "stuck" times out while its asyncio.to_thread call sleeps on: the run still ends
    # (a second at most for the thread), and the process exits
    got = async_runs["to-thread"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.elapsed < 15
    assert cli.statuses(cli.json("report.json")) == {"stuck": "timeout"} | {
        f"quick-{n}": "passed" for n in range(3)
    }
    assert cli.json("report.json")["run"]["duration_s"] < 5


def test_async_a_timeout_in_evaluate_keeps_the_output_and_says_where(
    async_runs: dict[str, Any],
) -> None:
    # as a child's record does: a stuck judge is told from a stuck agent
    got = async_runs["stuck-judge"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    items = {i["id"]: i for i in cli.items_of(cli.json("report.json"))}
    judge, agent = items["stuck-judge"], items["stuck-agent"]
    assert (judge["status"], judge["output"], judge["error"]["stage"]) == (
        "timeout",
        "the agent's answer",
        "evaluate",
    )
    assert (agent["status"], agent["output"], agent["error"]["stage"]) == (
        "timeout",
        None,
        "executor",
    )


def test_async_a_busy_loop_blames_no_item(async_runs: dict[str, Any]) -> None:
    # 150 items that each run 5 ms of code in one go keep the loop busy for a while, but
    # no one item holds it: none is charged for it
    got = async_runs["busy"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(cli.statuses(cli.json("report.json")).values()) == {"passed"}
    assert "notice: item " not in result.stdout


def test_async_an_item_that_catches_its_timeout_is_still_a_timeout(
    async_runs: dict[str, Any],
) -> None:
    # a cancellation caught and ignored does not make an item that ran too long pass; it
    # is cancelled again a while later (as a child ignoring SIGTERM gets SIGKILL)
    got = async_runs["swallows"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == {
        "eats-once": "timeout",
        "eats-twice": "timeout",
        "eats-always": "timeout",
        "fine": "passed",
    }
    items = {i["id"]: i for i in cli.items_of(report)}
    for name in ("eats-once", "eats-twice"):
        assert items[name]["error"]["message"] == (
            "item exceeded --timeout 0.5s: it caught the cancellation and went on"
        )
        assert items[name]["output"] == "x"
    assert items["eats-twice"]["duration_s"] > 2  # the second cancellation came later
    # one that catches every cancellation is left to run unrecorded, and holds nothing up:
    # "fine" runs after it (-c 1), and the run ends
    assert items["eats-always"]["error"]["message"] == (
        "item exceeded --timeout 0.5s: it caught every cancellation and went on, and was "
        "left running unrecorded"
    )
    assert 4 < items["eats-always"]["duration_s"] < 6
    assert got["elapsed"] < 30


def test_async_blocking_code_in_a_task_of_the_item_is_charged_to_it(
    async_runs: dict[str, Any],
) -> None:
    got = async_runs["in-a-task"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert cli.statuses(cli.json("report.json")) == {"in-a-task": "timeout", "waits": "passed"}
    notices = [line for line in result.stdout.splitlines() if line.startswith("notice: ")]
    assert [n.split(" blocked the event loop")[0] for n in notices] == [
        "notice: item 'in-a-task' of in_a_task.py::InATask"
    ]


def test_async_an_item_computing_in_chunks_between_awaits_times_out_on_time(
    async_runs: dict[str, Any],
) -> None:
    # each chunk of CPU held the loop, and the main thread's samples caught only part of
    # each: the rest was taken for other items' time and given back to "chunks" itself, so
    # it ran on until the loop was given up at twice its --timeout, and "waits-*" with it
    got = async_runs["chunks"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == {"chunks": "timeout", "waits-0": "passed", "waits-1": "passed"}
    (chunks,) = (i for i in cli.items_of(report) if i["id"] == "chunks")
    assert chunks["error"]["message"] == "item exceeded --timeout 1s and was cancelled"
    assert chunks["duration_s"] < 2.5
    assert "for good" not in result.stdout
    notices = [line for line in result.stdout.splitlines() if line.startswith("notice: ")]
    assert [n.split(" blocked the event loop")[0] for n in notices] == [
        "notice: item 'chunks' of chunks.py::Chunks"
    ]


def test_async_blocking_code_in_a_callback_of_the_item_is_charged_to_it(
    async_runs: dict[str, Any],
) -> None:
    # a done-callback is no task: nobody was charged, and the 3 s it held the loop were
    # given back to every item, its own included (it passed)
    got = async_runs["in-a-callback"].result()
    cli, result = got["cli"], got["result"]
    assert result.returncode == 2, result.stdout + result.stderr
    report = cli.json("report.json")
    assert cli.statuses(report) == {"in-a-callback": "timeout", "waits": "passed"}
    notices = [line for line in result.stdout.splitlines() if line.startswith("notice: ")]
    assert [n.split(" blocked the event loop")[0] for n in notices] == [
        "notice: item 'in-a-callback' of in_a_callback.py::InACallback"
    ]


IN_AN_EXECUTOR_EVALUATOR = """
import asyncio

from agenteval import BaseEvaluator
from agenteval.agents import ToolAgent
from agenteval.testing import ScriptedModel


class InAnExecutor(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "to-thread"}, {"id": "in-executor"}]

    async def run(self, item):
        agent = ToolAgent(ScriptedModel([{"text": "hi", "usage": {"input_tokens": 7}}]))
        if item["id"] == "to-thread":
            await asyncio.to_thread(agent.chat, "hello")
        else:
            await asyncio.get_running_loop().run_in_executor(None, agent.chat, "hello")
        return "done"  # (not the agent: its calls are known only as they are made)

    def evaluate(self, output, item):
        pass
"""


def test_async_model_calls_in_run_in_executor_count_for_the_item(cli: Any) -> None:
    # run_in_executor(None, ...) ran its call outside the item's context: its usage was lost
    got = run_async(cli, "in_executor.py", IN_AN_EXECUTOR_EVALUATOR, "-c", "2")
    assert got["result"].returncode == 0, got["result"].stdout + got["result"].stderr
    items = cli.items_of(cli.json("report.json"))
    assert {i["id"]: i["usage"]["agent"]["input_tokens"] for i in items} == {
        "to-thread": 7,
        "in-executor": 7,
    }


LEFT_SUBPROCESS = """
import asyncio
import time

from agenteval import BaseEvaluator, run_evaluations


class LeftProcess(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "starts"}, {"id": "waits"}]

    async def run(self, item):
        if item["id"] == "starts":

            async def later():
                await asyncio.sleep(0.1)
                process = await asyncio.create_subprocess_exec("sleep", "60")
                await process.wait()

            asyncio.get_running_loop().create_task(later())
        else:
            await asyncio.sleep(0.5)
        return "ok"

    async def evaluate(self, output, item):
        pass


summary = run_evaluations([LeftProcess], executor="async", concurrency=2, outputs=[], journal=False)
print(summary.exit_code)
time.sleep(0.5)  # (a script going on after the run: the news of the killed process comes)
"""


def test_async_a_process_a_left_task_started_is_ended_while_the_loop_can_hear_it(
    tmp_path: Any,
) -> None:
    # it was killed after the loop closed: "Loop ... that handles pid ... is closed"
    import subprocess
    import sys

    (tmp_path / "left.py").write_text(LEFT_SUBPROCESS)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "left.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "0\n", "")
