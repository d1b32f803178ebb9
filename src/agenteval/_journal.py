"""The durable journal of a run: ``.agenteval/runs/<run-id>/``.

``manifest.json`` is written first (version, command line, fingerprints of evaluator files,
datasets and config — never secret values) and rewritten atomically when a dataset is
fingerprinted. ``records.jsonl`` gets one line per item as it reaches a terminal status,
appended with a single ``write`` so a killed run leaves at most a torn last line, which
readers skip.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ._errors import JournalError
from ._results import ItemResult

MANIFEST_SCHEMA = 1
"""Version of the manifest.json layout."""
DEFAULT_RUNS_DIR = Path(".agenteval") / "runs"


def new_run_id() -> str:
    """A sortable, unique run id: UTC timestamp plus random suffix."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def fingerprint(path: str | Path) -> str | None:
    """SHA-256 of a file's content, or None when it cannot be read."""
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:  # (written, it was renamed)
        with contextlib.suppress(OSError):
            tmp.unlink()


class Journal:
    """Writer for one run folder."""

    def __init__(self, run_dir: Path, manifest: dict[str, Any]) -> None:
        self.dir = run_dir
        self._root = run_dir.absolute()  # an item's code may change the working directory
        self.manifest = manifest
        self._fd: int | None = None
        self._size = 0
        self._lock: int | None = None

    @property
    def records_path(self) -> Path:
        """The records file, ``records.jsonl``."""
        return self._root / "records.jsonl"

    @classmethod
    def create(cls, runs_dir: Path, run_id: str, manifest: dict[str, Any]) -> Journal:
        """Make the run folder and write the manifest first."""
        run_dir = runs_dir / run_id
        try:
            run_dir.mkdir(parents=True, exist_ok=False)
        except OSError as exc:
            fix = ""
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                fix = f"; make {str(runs_dir)!r} writable, or keep runs elsewhere with --runs-dir"
            elif exc.errno != errno.EEXIST:
                fix = "; keep runs elsewhere with --runs-dir"
            raise JournalError(
                f"Could not create run folder {str(run_dir)!r}: {exc.strerror or exc}{fix}"
            ) from None
        journal = cls(run_dir, manifest)
        try:
            journal._take_lock()
            journal.save_manifest()
        except BaseException:  # a full disk, a Ctrl-C: leave no run without its manifest
            journal.close()
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        return journal

    @classmethod
    def reopen(cls, run_dir: Path) -> Journal:
        """Continue writing an existing run folder (``--resume``, ``--retry-errors``);
        refused while another process still runs it."""
        journal = cls(run_dir, read_manifest(run_dir))
        journal._take_lock()
        return journal

    def _take_lock(self) -> None:
        """Hold the run's lock until ``close``: one process runs a run at a time. The
        system lets it go when the process ends, however it ends; a POSIX lock, so the
        processes it forks do not hold it."""
        try:
            import fcntl
        except ImportError:  # Windows: no lock
            return
        try:
            fd = os.open(self._root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:  # a folder we may not write: the journal will say so
            return
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):  # no locks here (NFS, say)
                os.close(fd)
                return
            holder = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            raise JournalError(
                f"Run {self.dir.name!r} is still running (process {holder or '?'}): wait for "
                f"it to end, or start a new run"
            ) from None
        self._lock = fd
        with contextlib.suppress(OSError):  # (who holds it, for the message above)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())

    def save_manifest(self) -> None:
        """Rewrite the manifest atomically."""
        text = json.dumps(self.manifest, indent=2) + "\n"
        try:
            atomic_write(self._root / "manifest.json", text)
        except OSError as exc:
            raise JournalError(
                f"Could not write the manifest of run {self.dir.name!r} in "
                f"{str(self.dir.parent)!r}: {exc.strerror or exc} (a full disk? --runs-dir "
                f"puts runs elsewhere)"
            ) from None

    def append(self, record_json: str) -> tuple[int, int]:
        """Append one terminal record (its JSON); see :meth:`append_many`."""
        return self.append_many([record_json])[0]

    def append_many(self, records_json: Sequence[str]) -> list[tuple[int, int]]:
        """Append terminal records (their JSON), one line each, in one ``write``, so lines
        never interleave and records that finished together cost one system call.

        Returns where each record sits in the file (offset, length without the newline), so
        that readers can find it again without keeping it in memory.
        """
        if self._fd is None:
            self._fd = self._open_records()
            self._size = os.fstat(self._fd).st_size
        places: list[tuple[int, int]] = []
        chunks: list[bytes] = []
        offset = self._size
        for text in records_json:
            encoded = (text + "\n").encode()
            places.append((offset, len(encoded) - 1))
            chunks.append(encoded)
            offset += len(encoded)
        data = memoryview(b"".join(chunks))
        while data:  # a regular file takes it in one write; loop in case it does not
            data = data[os.write(self._fd, data) :]
        self._size = offset
        return places

    def _open_records(self) -> int:
        """Open records.jsonl for appending, ending a torn last line left by a killed run.

        Without the newline, the first record appended on resume would be glued to the
        torn fragment, and readers would skip both.
        """
        path = self.records_path
        torn = False
        try:
            with open(path, "rb") as fh:
                if fh.seek(0, os.SEEK_END):
                    fh.seek(-1, os.SEEK_END)
                    torn = fh.read(1) != b"\n"
        except FileNotFoundError:
            pass
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        fd = os.open(path, flags, 0o644)
        if torn:
            os.write(fd, b"\n")
        return fd

    def close(self) -> None:
        """Close the records file, and let the run's lock go."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest of a run folder, or a JournalError naming what is wrong."""
    path = run_dir / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JournalError(f"No run at {str(run_dir)!r}: manifest.json is missing") from None
    except (OSError, ValueError) as exc:
        raise JournalError(f"Could not read {str(path)!r}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("run_id"), str):
        raise JournalError(f"{str(path)!r} is not a run manifest (damaged?): start a new run")
    return data


def read_records_at(run_dir: Path) -> Iterator[tuple[ItemResult, int, int]]:
    """Every record of a run, in the order written, with its offset and length in the file.

    A torn last line (a write that never completed) or a corrupt line is skipped.
    """
    path = run_dir / "records.jsonl"
    if not path.exists():
        return
    offset = 0
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise JournalError(
            f"Cannot read the records of run {run_dir.name!r} ({str(path)!r}): "
            f"{exc.strerror or exc}"
        ) from None
    with fh:
        for raw in fh:
            start, offset = offset, offset + len(raw)
            if not raw.endswith(b"\n"):
                break
            try:
                yield ItemResult.model_validate_json(raw), start, len(raw) - 1
            except ValueError:
                continue


def read_records(run_dir: Path) -> Iterator[ItemResult]:
    """Every record of a run, in the order written (see :func:`read_records_at`)."""
    for record, _, _ in read_records_at(run_dir):
        yield record


Located = tuple[ItemResult, int, int]
"""A record with its offset and length in ``records.jsonl``."""


def latest_records_at(run_dir: Path) -> dict[tuple[str, str, int], Located]:
    """The last record written for each (evaluator, item id, repeat), with its place."""
    return {r.key: (r, offset, length) for r, offset, length in read_records_at(run_dir)}


def latest_records(run_dir: Path) -> dict[tuple[str, str, int], ItemResult]:
    """The last record written for each (evaluator, item id, repeat)."""
    return {key: located[0] for key, located in latest_records_at(run_dir).items()}


def find_run(runs_dir: Path, run_id: str | None, evaluators: set[str] | None = None) -> Path:
    """The folder of ``run_id`` (a run's id, or the path of its folder), or when ``run_id``
    is None of the latest run — the latest that ran any of ``evaluators`` (ids), if one
    did: a run of other evaluators since is not the one to resume."""
    if run_id:
        run_dir = runs_dir / run_id
        if not is_run_dir(run_dir) and is_run_dir(run_id):
            return Path(run_id)
        for folder in (run_dir, Path(run_id)):
            if _is_dir(folder) and not is_run_dir(folder) and _is_file(folder / "lock"):
                raise JournalError(  # a run folder (it has a lock) without its manifest
                    f"Run folder {str(folder)!r} has no manifest.json (removed, or never "
                    f"written): it cannot be resumed; start a new run"
                )
        if not is_run_dir(run_dir):
            raise JournalError(
                f"No run {run_id!r} in {str(runs_dir)!r}: list runs with `ls {runs_dir}`"
            )
        return run_dir
    # (a folder not named as agenteval names runs, a copy kept as a baseline, say, is
    # resumed only when named)
    found = runs_dir.glob("*") if runs_dir.exists() else ()
    runs = sorted((p for p in found if _RUN_ID.match(p.name) and is_run_dir(p)), key=_started)
    if not runs:
        raise JournalError(f"No previous run in {str(runs_dir)!r} to resume")
    runs.reverse()
    if evaluators:
        ran = {run_dir: _evaluators_of(run_dir) for run_dir in runs}
        # the latest that ran every one of them, else the latest that ran any (a run
        # of some of them since, with -k, is not the one to resume)
        for enough in (evaluators.issubset, evaluators.intersection):
            for run_dir in runs:
                listed = ran[run_dir]
                if listed is None:  # it may be the one: say so, never skip it
                    raise JournalError(
                        f"The manifest of run {run_dir.name!r} cannot be read or is damaged, "
                        f"so it is not known whether it is the one to resume: name the run "
                        f"(--resume RUN_ID), or remove that folder"
                    )
                if enough(listed):
                    return run_dir
    return runs[0]


_RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}$")


def _evaluators_of(run_dir: Path) -> set[str] | None:
    """The ids of the evaluators a run's manifest lists; None when it cannot be read."""
    try:
        listed = read_manifest(run_dir).get("evaluators")
    except JournalError:
        return None
    return set(listed) if isinstance(listed, dict) else None


def is_run_dir(path: str | Path) -> bool:
    """Whether ``path`` is a run's folder (it holds a manifest)."""
    return _is_file(Path(path) / "manifest.json")


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False for a path the system refuses (a name too long)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _started(run_dir: Path) -> tuple[str, int, str]:
    """Sort key of runs by start: ids begin with the second they started; within one
    second, the manifest written first (its random suffix says nothing about order)."""
    try:
        written = (run_dir / "manifest.json").stat().st_mtime_ns
    except OSError:
        written = 0
    return (run_dir.name[:15], written, run_dir.name)
