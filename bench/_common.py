"""Helpers shared by the benchmark scripts: running a whole process, its competitor env, tables.

Nothing here is part of agenteval; the scripts in this folder are run by hand
(``python bench/throughput.py``), never by the test suite.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
WORKLOADS = BENCH / "workloads"
PYDANTIC_ENV = BENCH / ".env-pydantic-evals"


@dataclass(frozen=True)
class Measured:
    """One whole process: wall-clock seconds, peak RSS, CPU time and what it printed.

    ``cpu_s`` / ``sys_s`` are user+system and system CPU seconds of the process and of
    every descendant it waited for (forked item processes included); ``faults`` counts
    their page faults the same way (minor ones: a page copied on write, say).
    """

    wall_s: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str
    cpu_s: float = 0.0
    sys_s: float = 0.0
    faults: int = 0

    def json_line(self) -> dict[str, Any]:
        """The last stdout line that parses as a JSON object (a workload's own timings)."""
        for line in reversed(self.stdout.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    return value
        raise RuntimeError(f"no JSON line in the workload's stdout:\n{self.stdout[-2000:]}")


# Runs in a fresh, tiny interpreter that spawns the measured command. Linux carries a
# process's RSS high-water mark across exec, so a child spawned straight from this (possibly
# large) benchmark process would start with *our* peak RSS; spawned from the launcher it
# starts with the launcher's few MB, below any Python program's own footprint.
_LAUNCHER = """
import json, os, sys, time
out = sys.argv[1]
start = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(out, "w") as fh:
    json.dump({"wall": wall, "maxrss": usage.ru_maxrss, "cpu": usage.ru_utime + usage.ru_stime,
               "sys": usage.ru_stime, "faults": usage.ru_minflt,
               "code": os.waitstatus_to_exitcode(status)}, fh)
"""


def measure(
    cmd: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> Measured:
    """Run ``cmd`` to completion and return its wall time and peak RSS.

    A small launcher process spawns ``cmd`` and reads its peak RSS with ``os.wait4`` on
    that very child, so the figure is the command's own high-water mark (the kernel folds
    in descendants it reaped, such as forked item processes), unaffected by earlier
    measurements or by the size of this process. Wall time spans spawn to exit: the
    command's start-up is included, the launcher's is not.
    """
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.setdefault("NO_COLOR", "1")
    # The unmeasured first run must leave bytecode cached, as an installed package has it
    # (pip compiles at install): with this set, an editable install of agenteval would
    # compile its own modules in every measured process, and the compiler's garbage
    # would stay in every forked parent's heap.
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory(prefix="agenteval-bench-m-") as tmp,
    ):
        result_file = Path(tmp) / "result.json"
        launcher = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(result_file), *cmd],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
        if launcher.returncode != 0 or not result_file.exists():
            raise RuntimeError(f"could not launch {' '.join(cmd)}:\n{stderr[-3000:]}")
        info = json.loads(result_file.read_text(encoding="utf-8"))
    # Linux reports ru_maxrss in KiB, macOS in bytes.
    rss = info["maxrss"] / (1024 * 1024 if sys.platform == "darwin" else 1024)
    result = Measured(
        float(info["wall"]),
        rss,
        int(info["code"]),
        stdout,
        stderr,
        float(info["cpu"]),
        float(info["sys"]),
        int(info["faults"]),
    )
    if check and result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited with {result.returncode}\n"
            f"--- stdout ---\n{stdout[-3000:]}\n--- stderr ---\n{stderr[-3000:]}"
        )
    return result


def agenteval_cli() -> str:
    """The ``agenteval`` script next to this interpreter, else the one on PATH."""
    here = Path(sys.executable).parent / "agenteval"
    if here.exists():
        return str(here)
    found = shutil.which("agenteval")
    if found is None:
        sys.exit("agenteval is not installed: run `pip install -e .` in the project's venv first")
    return found


def env_python(env: Path) -> Path:
    """The interpreter of a virtualenv."""
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_pydantic_evals(create: bool = True) -> Path | None:
    """The python of ``bench/.env-pydantic-evals``, created with pydantic-evals if missing.

    The competitor is installed only there (the folder is gitignored), never into the
    project's own environment. Returns None when the env is missing and ``create`` is off.
    """
    python = env_python(PYDANTIC_ENV)
    if python.exists() and all(_has_module(python, m) for m in ("pydantic_evals", "openai")):
        return python
    if not create:
        return None
    print(
        f"setting up {PYDANTIC_ENV.relative_to(BENCH.parent)} with pydantic-evals ...", flush=True
    )
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PYDANTIC_ENV)], check=True)
    subprocess.run(
        # the openai extra: parallel.py (e) grades with LLMJudge over pydantic-ai's OpenAI model
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "pydantic-evals",
            "pydantic-ai-slim[openai]",
        ],
        check=True,
    )
    return python


def _has_module(python: Path, module: str) -> bool:
    probe = subprocess.run(
        [
            str(python),
            "-c",
            f"import importlib.util, sys; sys.exit(not importlib.util.find_spec({module!r}))",
        ],
        capture_output=True,
    )
    return probe.returncode == 0


def package_version(python: Path | str, dist: str) -> str:
    """The installed version of ``dist`` as seen by ``python`` ('?' if unknown)."""
    probe = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
        capture_output=True,
        text=True,
    )
    return probe.stdout.strip() or "?"


def machine() -> str:
    """A one-line description of where the figures were measured."""
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}"
    )


def median(values: Sequence[float]) -> float:
    """The median (the figure the tables report; the machine is noisy)."""
    return statistics.median(values)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain fixed-width table, first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers], *[[_cell(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        parts = [
            row[i].ljust(widths[i]) if i == 0 else row[i].rjust(widths[i]) for i in range(len(row))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.3f}" if value < 1 else f"{value:.2f}"
    return str(value)


def verdict(ok: bool) -> str:
    """``met`` / ``NOT met``."""
    return "met" if ok else "NOT met"
