"""A Ctrl-C before the run handles signals itself (while the CLI, the config and the
evaluator files load), told apart from a ``KeyboardInterrupt`` that code raises: the
first ends the command as interrupted (130), the second is that file's error."""

from __future__ import annotations

import signal
from types import FrameType

_seen = False


def watch() -> None:
    """Note each SIGINT from now on, still raising ``KeyboardInterrupt`` as Python does
    (unless SIGINT is ignored or handled already: a job in the background, an embedder)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_sigint)


def seen() -> bool:
    """Whether a SIGINT arrived since :func:`watch`."""
    return _seen


def on_sigint(_signum: int, _frame: FrameType | None) -> None:
    """The handler :func:`watch` installs: Python's own, noted."""
    global _seen
    _seen = True
    raise KeyboardInterrupt
