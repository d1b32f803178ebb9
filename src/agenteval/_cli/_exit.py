"""How the ``agenteval`` process ends: with the run's exit code, whatever was left behind.

Python waits for every thread that is not a daemon before it exits, and a sequential
run's items run in this process (a child of the fork executor takes its threads with it):
a client's background worker an item started would keep CI waiting for good. And an
error agenteval did not foresee must not exit 1, which says assertions failed.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from pathlib import Path
from typing import NoReturn

import typer

EXIT_WAIT = 2.0
"""Seconds the exit waits for threads the evaluators left running."""

_exiting = threading.Event()


def exit_with(code: int) -> NoReturn:
    """Exit with ``code``: as Python does, unless threads the evaluators left running keep
    it waiting more than ``EXIT_WAIT`` seconds."""
    if _threads_left():
        _exiting.clear()
        atexit.register(_exiting.set)  # Python waited for them, and runs the exit handlers
        threading.Thread(target=_exit_anyway, args=(code,), daemon=True).start()
    sys.exit(code)


def internal_error(exc: BaseException) -> int:
    """A bug of agenteval's (or an error it did not foresee): one line, the traceback kept
    in a file for the report, and exit 2 — never 1, which says assertions failed."""
    import tempfile
    import traceback

    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" at {Path(where[0].filename).name}:{where[0].lineno}" if where else ""
    kept = ""
    with contextlib.suppress(OSError):
        fd, path = tempfile.mkstemp(prefix="agenteval-error-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            traceback.print_exception(exc, file=fh)
        kept = f"; the traceback is in {path}"
    typer.echo(
        f"agenteval: internal error: {masked(f'{type(exc).__name__}: {exc}')}{at}{kept} — please report "
        f"it; the run's journal keeps every item that finished",
        err=True,
    )
    return 2


def masked(text: str) -> str:
    """``text`` with the secrets of the environment masked: what agenteval says on stderr of
    your code's failures (a config that raised) can quote them, as reports can."""
    from .._redact import Redactor

    return Redactor.from_environ()(text)


def _threads_left() -> list[str]:
    """The threads, not daemons, that Python waits for before it exits."""
    main = threading.main_thread()
    return [t.name for t in threading.enumerate() if not t.daemon and t is not main]


def _exit_anyway(code: int) -> None:
    """Exit with ``code`` if threads an item or a hook started have not ended by now, and
    Python's own exit has not begun. The verdict and the files are written: what such a
    thread still does is not worth holding CI for. Exit handlers run as usual."""
    if _exiting.wait(EXIT_WAIT):
        return
    left = _threads_left()
    if not left:  # they ended: the exit goes on as usual
        return
    shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
    sys.stderr.write(
        f"agenteval: not waiting for {len(left)} thread{'s' if len(left) != 1 else ''} "
        f"the evaluators left running ({shown}); exiting with {code}\n"
    )
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
