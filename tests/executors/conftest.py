"""Shared helpers for the end-to-end executor tests: a real ``agenteval`` CLI in a subprocess.

The ``cli`` fixture here overrides the one in ``tests/conftest.py`` for this folder: these
tests also need to start the CLI in the background, signal it and read its journal.

Every CLI started here carries a unique marker in its environment, which its forked
children inherit, so a test can prove that no process of its run is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

AGENTEVAL = Path(sys.executable).parent / "agenteval"
MARKER_VAR = "AGENTEVAL_TEST_MARKER"

# A tiny exact-match assertion, pasted into the evaluator files these tests write.
EQUALS = """
from agenteval.assertions import Assertion, AssertionResult


class Equals(Assertion):
    def __init__(self, expected):
        self.expected = expected

    def evaluate(self, actual):
        if actual == self.expected:
            return AssertionResult.pass_()
        return AssertionResult.fail(0.0, f"expected {self.expected!r}, got {actual!r}")
"""


@dataclass
class Result:
    """A finished CLI invocation."""

    returncode: int
    stdout: str
    stderr: str
    elapsed: float


@dataclass(eq=False)
class Cli:
    """Runs ``agenteval`` in ``root`` (the test's tmp_path) and reads what it wrote."""

    root: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    started: list[subprocess.Popen[str]] = field(default_factory=list)

    # -- files -----------------------------------------------------------------------------
    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    def json(self, name: str) -> Any:
        return json.loads((self.root / name).read_text(encoding="utf-8"))

    # -- processes -------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTEVAL_")}
        env.pop("PYTHONUNBUFFERED", None)  # children see block-buffered stdout, as in real use
        env[MARKER_VAR] = self.marker
        env["COLUMNS"] = "200"
        return env

    def start(
        self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [str(AGENTEVAL), "run", *args],
            cwd=cwd or self.root,
            env={**self.env(), **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # signals aimed at pytest never reach the CLI
        )
        self.started.append(proc)
        return proc

    def finish(self, proc: subprocess.Popen[str], started: float, timeout: float = 60) -> Result:
        stdout, stderr = proc.communicate(timeout=timeout)
        return Result(proc.returncode, stdout, stderr, time.monotonic() - started)

    def run(
        self,
        *args: str,
        timeout: float = 60,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Result:
        started = time.monotonic()
        return self.finish(self.start(*args, cwd=cwd, env=env), started, timeout)

    def own_processes(self) -> list[psutil.Process]:
        """Live processes (not zombies) carrying this test's marker: CLIs and their children."""
        found = []
        for proc in psutil.process_iter(["pid", "status"]):
            if proc.info["status"] == psutil.STATUS_ZOMBIE or proc.pid == os.getpid():
                continue
            try:
                if proc.environ().get(MARKER_VAR) == self.marker:
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def cleanup(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        for proc in self.own_processes():
            # only processes this test started carry its marker
            proc.kill()

    # -- journal ---------------------------------------------------------------------------
    def run_dirs(self, runs_dir: str = ".agenteval/runs") -> list[Path]:
        base = self.root / runs_dir
        return sorted(p for p in base.iterdir() if p.is_dir()) if base.exists() else []

    def records(self, run_dir: Path | None = None) -> list[dict[str, Any]]:
        """Every line of records.jsonl parsed (fails the test on a line that does not parse)."""
        if run_dir is None:
            (run_dir,) = self.run_dirs()
        path = run_dir / "records.jsonl"
        if not path.exists():
            return []
        text = path.read_text(encoding="utf-8")
        assert text == "" or text.endswith("\n"), "records.jsonl ends with a torn line"
        return [json.loads(line) for line in text.splitlines()]


def alive(pid: int) -> bool:
    """True while ``pid`` is a running process (a zombie counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def pids_in(folder: Path) -> dict[str, int]:
    """``{file name: pid}`` of the pid files items wrote into ``folder``."""
    if not folder.exists():
        return {}
    out = {}
    for path in folder.iterdir():
        text = path.read_text()
        if text.strip():
            out[path.name] = int(text.split()[0])
    return out


def items_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every item of a JSON report, over all evaluators, in report order."""
    return [item for ev in report["evaluators"] for item in ev["items"]]


def statuses(report: dict[str, Any]) -> dict[str, str]:
    """``{item id: status}`` of a JSON report."""
    return {str(item["id"]): item["status"] for item in items_of(report)}


_TIMING_KEYS = frozenset({"duration_s"})


def without_timings(value: Any) -> Any:
    """A report with every duration removed, for comparing two runs."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in _TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """What must match between equivalent runs: evaluators and totals, minus timings."""
    return {
        "exit_code": report["run"]["exit_code"],
        "totals": report["run"]["totals"],
        "evaluators": without_timings(report["evaluators"]),
    }


for _helper in (alive, wait_until, pids_in, items_of, statuses, comparable):
    # test modules cannot import from conftest reliably, so the helpers ride on the fixture
    setattr(Cli, _helper.__name__, staticmethod(_helper))
Cli.EQUALS = EQUALS  # type: ignore[attr-defined]
Cli.AGENTEVAL = AGENTEVAL  # type: ignore[attr-defined]


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    """A CLI runner rooted in ``tmp_path``; kills whatever a failing test left running."""
    runner = Cli(tmp_path)
    yield runner
    runner.cleanup()


@pytest.fixture(scope="session")
def cli_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Cli]]:
    """Makes CLI runners for module-scoped fixtures (one shared run, many assertions)."""
    made: list[Cli] = []

    def make(name: str) -> Cli:
        runner = Cli(tmp_path_factory.mktemp(name))
        made.append(runner)
        return runner

    yield make
    for runner in made:
        runner.cleanup()
