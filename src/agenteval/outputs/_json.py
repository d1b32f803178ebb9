"""``JsonOutput``: the whole run as one versioned JSON document."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import IO

from .._results import EvaluatorSummary, RunSummary
from ._base import OutputDriver, RunInfo

SCHEMA_VERSION = 1

_SUMMARY_KEYS = (
    "total",
    "passed",
    "failed",
    "errored",
    "cancelled",
    "success_rate",
    "assertions",
    "score",
    "duration_s",
    "soft_failures",
    "usage",
    "failures_by_assertion",
    "failures_by_site",
)


class JsonOutput(OutputDriver):
    """Writes ``evaluation-results.json`` (Neuron's ``JsonDriver``), atomically, at the end.

    The document is a public format, described in ``docs/outputs.md`` and the JSON
    Schema shipped as ``agenteval/outputs/results.schema.json``: ``schema_version``,
    ``run``, and ``evaluators`` — each with ``name``, ``file``, ``status``, ``summary``
    and every item. Items are streamed to the file, so large runs need no second copy in
    memory.
    """

    def __init__(self, path: str | Path = "evaluation-results.json") -> None:
        self.path = Path(path)
        self._target = self.path.absolute()  # where the run started, whatever items do
        self._streamed = False  # written into a stream once: a second document would garble it

    def on_stdout(self) -> bool:
        """Whether the report goes into this process's stdout (``/dev/stdout``, or the very
        file the shell sent stdout to)."""
        return _own_stream(self._target) is sys.stdout

    def discard_earlier(self) -> None:
        """Remove the report an earlier run left at the path, before this run starts: one
        that then stops short of reporting (an evaluator file that does not import, a bad
        option) must leave no report, never an earlier one to be read as its own. Streams
        (``/dev/stdout``, a pipe) are left alone."""
        if _kind(self._target) == "file" and _own_stream(self._target) is None:
            with contextlib.suppress(OSError):
                Path(os.path.realpath(self._target)).unlink()

    def start_run(self, run: RunInfo) -> None:
        """A new run (the driver may serve several): it writes a document of its own."""
        self._streamed = False

    def output(self, summary: EvaluatorSummary) -> None:
        """Nothing per evaluator: the document is written once the run's verdict is known."""

    def finish_run(self, run: RunSummary) -> None:
        """Write the document through a temporary file and a rename (to where a symlink
        points, if it is one). Into this process's stdout (``/dev/stdout``, or the file it
        was sent to) it goes after what the console wrote there, and into a device or a
        pipe straight, once: a rename would replace them."""
        stream = _own_stream(self._target)
        if stream is not None or _kind(self._target) == "special":
            if self._streamed:
                return
            self._streamed = True
            if stream is None:
                with _open_special(self._target) as fh:
                    write_document(run, fh)
                return
            stream.flush()
            write_document(run, stream)
            stream.write("\n")
            stream.flush()
            return
        target = Path(os.path.realpath(self._target))
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                write_document(run, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except OSError as exc:  # (found before the run, but the disk or the folder changed)
            kept = (
                f": the results are in {run.run_dir}, and resuming run {run.id} writes "
                f"the report again"
                if run.run_dir
                else ""
            )
            raise OSError(
                f"could not write {self.path}: {_problem_of(exc, target)}{kept}"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()


def unwritable(path: str | Path) -> str | None:
    """Why a report could not be written at ``path``, found before a run rather than after
    it; ``None`` when nothing stands in the way."""
    import tempfile

    kind = _kind(path)
    if kind == "folder":
        return f"{path} is a folder: give a file's path, e.g. {Path(path) / 'results.json'}"
    if kind == "special":
        return None  # /dev/stdout, a pipe: written straight into
    if kind == "file" and not _replaceable(path):
        return (
            f"{path} exists and is not an agenteval report (an evaluator, dataset or config "
            f"file taken as the option's value?): give the report a path of its own, or "
            f"delete the file first"
        )
    folder = _nearest(Path(os.path.realpath(path)).parent)
    if not folder.is_dir():
        return f"{path} cannot be written: {folder} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return f"{path} cannot be written: no new file can be made in {folder} ({exc.strerror})"
    return None


def _replaceable(path: str | Path) -> bool:
    """Whether the file at ``path`` may be replaced by a report: it is empty, or an earlier
    report (never an evaluator, a dataset, a config someone's typo pointed at)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return True  # (unreadable: whether it can be written is found below)
    return not head or head.startswith(b'{"schema_version"')


def _problem_of(exc: OSError, target: Path) -> str:
    """What stopped ``target`` being written, in words: a file where a folder must be, a
    full disk, a permission."""
    folder = _nearest(target.parent)
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    return exc.strerror or str(exc)


def _nearest(folder: Path) -> Path:
    """``folder``, or the nearest of its parents that exists."""
    while not folder.exists():
        folder = folder.parent
    return folder


def _kind(path: str | Path) -> str:
    """What is at ``path``, following symlinks: "missing", "file", "folder" or "special"
    (a device, a pipe, ``/dev/stdout``)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # nothing there yet (or a symlink to nothing: made where it points)
        return "missing"
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "special"


FIFO_WAIT = 10.0
"""Seconds the report waits for a process to read the named pipe it is sent into."""


def _open_special(path: Path) -> IO[str]:
    """A device, or a named pipe, opened to write the report into. A pipe nobody reads
    would block the end of the run for good: its reader gets ``FIFO_WAIT`` seconds to
    come, then the report is this driver's failure."""
    if not stat.S_ISFIFO(os.stat(path).st_mode):
        return open(path, "w", encoding="utf-8")
    import errno
    import time

    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: no reader yet
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
        if time.monotonic() >= deadline:
            raise OSError(f"no process read the named pipe {str(path)!r} within {FIFO_WAIT:g} s")
        time.sleep(0.05)
    os.set_blocking(fd, True)
    return open(fd, "w", encoding="utf-8")


def _own_stream(path: str | Path) -> IO[str] | None:
    """This process's stdout or stderr, when ``path`` is what it writes to (``/dev/stdout``,
    or the very file the shell sent it to): written through it, the report follows what
    the console printed there, where a file of its own would overwrite or replace it."""
    try:
        target = os.stat(path)
    except OSError:
        return None
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        with contextlib.suppress(OSError, ValueError):
            if os.path.samestat(target, os.fstat(fd)):
                return stream
    return None


def _run_header(run: RunSummary) -> dict[str, object]:
    return {
        "id": run.id,
        "started_at": run.started_at,
        "duration_s": run.duration_s,
        "agenteval_version": run.agenteval_version,
        "exit_code": run.exit_code,
        "interrupted": run.interrupted,
        "run_dir": run.run_dir,
        "totals": {
            "total": run.total,
            "passed": run.passed,
            "failed": run.failed,
            "errored": run.errored,
            "cancelled": run.cancelled,
            "success_rate": run.success_rate,
        },
        "usage": run.usage.model_dump(mode="json"),
        "cost": run.cost.model_dump(mode="json") | {"total": run.cost.total} if run.cost else None,
        "notices": run.notices,
        "driver_errors": run.driver_errors,
    }


def write_document(run: RunSummary, fh: IO[str]) -> None:
    """Stream the results document for ``run`` to ``fh``."""
    dumps = json.dumps
    header = dumps(_run_header(run))
    fh.write(f'{{"schema_version": {SCHEMA_VERSION}, "run": {header}, "evaluators": [')
    for i, ev in enumerate(run.evaluators):
        head = ev.model_dump(mode="json", include=set(_SUMMARY_KEYS))
        meta = {
            "name": ev.name,
            "id": ev.id,
            "file": ev.file,
            "description": ev.description,
            "tags": ev.tags,
            "status": ev.status,
            "error": ev.error.model_dump(mode="json") if ev.error else None,
            "skip_reason": ev.skip_reason,
            "complete": ev.complete,
            "summary": {k: head[k] for k in _SUMMARY_KEYS},
        }
        text = dumps(meta)
        fh.write(("," if i else "") + text[:-1] + ', "items": [')
        for j, item in enumerate(ev.item_json()):
            if j:
                fh.write(",")
            fh.write(item)
        fh.write("]}")
    fh.write("]}\n")


JsonDriver = JsonOutput
"""Alias with the name Neuron's config example uses."""
