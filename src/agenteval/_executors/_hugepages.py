"""Cheaper forks: back the parent's memory with huge pages.

``fork()`` copies the parent's page tables, one entry per 4 KiB page of private memory,
and each child's exit tears its copy down again. That is most of what a process per item
costs: about 4 ms per fork and exit for agenteval's own 38 MB parent on the machines we
measured, and about 14 ms more when ``set_up`` loaded 200 MB (``bench/README.md``). Backed
by 2 MiB pages, the same memory needs one entry per 2 MiB. Linux 6.1+ collapses memory
already in use into huge pages on request (``madvise(MADV_COLLAPSE)``), but that costs
about 4 ms per MB, so the fork executor asks only once a run has forked enough children
for the forks to have cost about that much already, and a slice at a time, so that its
supervision never stalls for long.

Nothing changes for the program: same memory, same contents. Only ranges that are nearly
all in use are collapsed (filling the rest of a huge page costs little memory), never
where the program asked for no huge pages, and not at all where the administrator turned
transparent huge pages off. Children running meanwhile keep their copy of what they
share, so until they exit that memory exists twice: nothing is collapsed when that could
take more than a quarter of the memory still available.
"""

from __future__ import annotations

import ctypes
import errno
import sys
from typing import Any

HUGE_PAGE = 2 * 1024 * 1024
_MADV_COLLAPSE = 25
_PASSES = 4
"""Attempts at a slice that Linux found busy."""
_MAX_SHARE = 0.25
"""Collapse at most this share of the memory still available (see ``step``)."""
_MIN_FILL = 0.75
"""Collapse a mapping only when this much of it is in use: the rest gets filled."""

_madvise: Any = None


def dense_ranges(smaps: str) -> list[tuple[int, int]]:
    """The huge-page-aligned parts of private anonymous mappings that are nearly all in
    use and not huge pages already, from the text of ``/proc/<pid>/smaps``."""
    ranges: list[tuple[int, int]] = []
    start = end = 0
    eligible = dense = False
    anonymous = 0
    for line in smaps.splitlines():
        head = line.split(None, 6)
        if not head:
            continue
        if "-" in head[0] and not head[0].endswith(":"):  # a mapping's header line
            low, high = (int(x, 16) for x in head[0].split("-"))
            perms, path = head[1], head[5] if len(head) > 5 else ""
            start = -(-low // HUGE_PAGE) * HUGE_PAGE
            end = high // HUGE_PAGE * HUGE_PAGE
            eligible = perms.startswith("rw") and perms[3] == "p" and path in ("", "[heap]")
            eligible = eligible and end - start >= HUGE_PAGE
            anonymous, dense = 0, False
        elif eligible and head[0] == "Anonymous:":
            anonymous = int(head[1]) * 1024
        elif eligible and head[0] == "AnonHugePages:":
            huge = int(head[1]) * 1024
            dense = anonymous >= _MIN_FILL * (end - start) and huge < end - start
        elif dense and head[0] == "VmFlags:" and "nh" not in line.split()[1:]:
            ranges.append((start, end))  # (nh: the program asked for no huge pages there)
            dense = False
    return ranges


class HeapCollapse:
    """Collapses this process's dense anonymous memory into huge pages, a slice per step."""

    def __init__(self) -> None:
        self.todo: list[tuple[int, int]] | None = None  # found on the first step
        self.busy: list[tuple[int, int]] = []  # slices Linux found busy: tried again later
        self.done = not sys.platform.startswith("linux") or _thp_disabled()
        self.collapsed = 0  # bytes
        self._passes = 1

    def step(self, budget: int = 16 * 1024 * 1024) -> None:
        """Collapse up to ``budget`` bytes; ``done`` once nothing is left or Linux refuses."""
        if self.done:
            return
        if self.todo is None:
            try:
                with open("/proc/self/smaps", encoding="ascii", errors="replace") as fh:
                    self.todo = dense_ranges(fh.read())[::-1]
            except OSError:
                self.todo = []
            # children alive meanwhile keep the pages they share: the collapsed memory
            # exists twice until they exit, so do not risk that on a tight machine
            if sum(end - start for start, end in self.todo) > _available() * _MAX_SHARE:
                self.todo = []
        madvise = _load_madvise()
        while budget > 0 and self.todo and madvise:
            start, end = self.todo.pop()
            stop = min(end, start + max(HUGE_PAGE, budget // HUGE_PAGE * HUGE_PAGE))
            if stop < end:
                self.todo.append((stop, end))
            budget -= stop - start
            if madvise(start, stop - start, _MADV_COLLAPSE) == 0:
                self.collapsed += stop - start
            elif ctypes.get_errno() == errno.EINVAL:  # a kernel without MADV_COLLAPSE
                self.todo, self.busy = [], []
            elif ctypes.get_errno() == errno.EAGAIN and self._passes < _PASSES:
                # some pages were in use at that moment (a child exiting, say): what did
                # collapse stays so, the rest is tried again after the others
                self.busy.append((start, stop))
            # else: unmapped meanwhile, or no huge page free (ENOMEM): skip it
            if not self.todo and self.busy:
                self.todo, self.busy = self.busy[::-1], []
                self._passes += 1
        self.done = not self.todo or not madvise


def _available() -> int:
    """Bytes of memory available for new allocations, per ``/proc/meminfo`` (0: unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _thp_disabled() -> bool:
    """Whether the administrator turned transparent huge pages off (then we do not ask)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled", encoding="ascii") as fh:
            return "[never]" in fh.read()
    except OSError:
        return True  # no THP in this kernel


def _load_madvise() -> Any:
    """libc's ``madvise``, looked up once; False where there is none."""
    global _madvise
    if _madvise is None:
        try:
            fn = ctypes.CDLL(None, use_errno=True).madvise
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            fn.restype = ctypes.c_int
            _madvise = fn
        except (OSError, AttributeError):
            _madvise = False
    return _madvise
