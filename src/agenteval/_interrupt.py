"""The command's own signal handling outside the run's.

Before the run handles signals itself (while the CLI, the config and the evaluator files
load), a Ctrl-C is told apart from a ``KeyboardInterrupt`` that code raises: the first ends
the command as interrupted (130), the second is that file's error. Once the run's verdict
is final (:func:`settle`), a late Ctrl-C or SIGTERM ends the process at once with that
verdict's exit code: never a death by signal, nor an "interrupted" after "exit 0".
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType

_seen = False
_settled: int | None = None
_exit = os._exit  # (the real one: while the run's hooks run, agenteval guards os._exit)


def watch() -> None:
    """Note each SIGINT from now on, still raising ``KeyboardInterrupt`` as Python does,
    and let SIGTERM end the process as it would (unless either is ignored or handled
    already: a job in the background, an embedder)."""
    global _settled
    _settled = None
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_sigint)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, on_sigterm)


def seen() -> bool:
    """Whether a SIGINT arrived since :func:`watch`."""
    return _seen


def settle(code: int) -> None:
    """The exit code is final (the run is reported): from now on, a signal the handlers of
    :func:`watch` receive ends the process at once with ``code``."""
    global _settled
    _settled = code


def on_sigint(_signum: int, _frame: FrameType | None) -> None:
    """The handler :func:`watch` installs: Python's own, noted."""
    global _seen
    if _settled is not None:
        _leave(_settled)
    _seen = True
    raise KeyboardInterrupt


def on_sigterm(signum: int, _frame: FrameType | None) -> None:
    """The SIGTERM handler :func:`watch` installs: the default action, as if there were none."""
    if _settled is not None:
        _leave(_settled)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


_HANG_LIMIT = 10.0
"""Seconds the last of the exit (Python tearing its modules down) may take once signals are
ignored for it, before the process ends anyway."""


def ignore_late() -> None:
    """Ignore SIGINT and SIGTERM once the exit code is final, for the rest of the exit
    (registered with ``atexit`` first, so run last): Python's finalization puts the default
    handlers back, and a signal while it tears modules down would kill the process by
    signal, losing the code. Should that teardown hang (a finalizer that blocks), the
    process ends after ``_HANG_LIMIT`` seconds all the same, with where it hung on stderr:
    ignoring signals must not make it unstoppable."""
    if _settled is None:
        return
    import faulthandler

    with contextlib.suppress(ValueError):  # (not the main thread: os._exit comes next)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        faulthandler.dump_traceback_later(_HANG_LIMIT, exit=True)


def _leave(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _exit(code)
