"""What an async item starts ends with it (``--executor async``).

Under the fork executor, each item is a process leading a group of its own, and whatever it
starts joins that group, to be killed with it once the item is over. Async items share one
process. So while the async executor runs, ``subprocess.Popen`` (which ``subprocess.run``
and asyncio's subprocesses use) is a subclass that notes each process an item starts, in a
process group of its own unless the item chose one. Once the item is over (it finished,
timed out or was cancelled), the executor kills those groups. At the run's end it kills any
that tasks an item left behind started later.

Processes started outside an item (``set_up``, the run's own code) are left alone. So are
processes started by code that bound ``Popen`` before the run (``from subprocess import
Popen``), or that does not use it at all (``os.posix_spawn``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ._stalls import ITEM

_OWN_GROUP = sys.version_info >= (3, 11)
"""Whether ``Popen`` can start a process in a group of its own without ``setsid`` (which
would also take it off the terminal)."""


class Children:
    """The processes each item started, by item key, until they are ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # items start processes from threads too
        self._by_item: dict[int, list[tuple[subprocess.Popen[Any], bool]]] = {}

    @contextlib.contextmanager
    def tracking(self) -> Iterator[None]:
        """Note the processes items start while in the block; end every one left at its
        end."""
        original = subprocess.Popen
        subprocess.Popen = _tracked(original, self)  # type: ignore[misc,assignment]
        try:
            yield
        finally:
            subprocess.Popen = original  # type: ignore[misc]
            self.end_all()

    def end_all(self) -> bool:
        """Kill what every item started that still runs; whether there was any."""
        with self._lock:
            keys = list(self._by_item)
        for key in keys:
            self.end(key)
        return bool(keys)

    def note(self, key: int, proc: subprocess.Popen[Any], grouped: bool) -> None:
        with self._lock:
            self._by_item.setdefault(key, []).append((proc, grouped))

    def end(self, key: int) -> None:
        """Kill what the item started that still runs: the groups it leads, or the process
        alone where it joined another group."""
        with self._lock:
            procs = self._by_item.pop(key, [])
        for proc, grouped in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if grouped:
                    # even once it has ended: what it started in the background may not have
                    os.killpg(proc.pid, signal.SIGKILL)
                elif proc.returncode is None:  # not reaped yet: its pid is still its own
                    os.kill(proc.pid, signal.SIGKILL)


def _tracked(popen: type[subprocess.Popen[Any]], children: Children) -> type:
    class Same(type):
        """Every ``Popen`` is one of these: those made before the run (in ``set_up``), too."""

        def __instancecheck__(cls, instance: object) -> bool:
            return isinstance(instance, popen)

        def __subclasscheck__(cls, subclass: type) -> bool:
            return issubclass(subclass, popen)

    class Popen(popen, metaclass=Same):  # type: ignore[valid-type,misc]
        __doc__ = popen.__doc__

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            key = ITEM.get(None)
            grouped = False
            if key is not None:
                chosen = kwargs.get("process_group")
                grouped = bool(kwargs.get("start_new_session")) or chosen == 0
                if chosen is None and not grouped and _OWN_GROUP:
                    kwargs["process_group"] = 0
                    grouped = True
            super().__init__(*args, **kwargs)
            if key is not None:
                children.note(key, self, grouped)

    Popen.__qualname__ = Popen.__name__ = popen.__name__
    Popen.__module__ = popen.__module__
    return Popen
