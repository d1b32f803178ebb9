"""Cheaper forks: back the parent's memory with huge pages.

``fork()`` copies the parent's page tables, one entry per 4 KiB page of private memory,
and each child's exit tears its copy down again. That is most of what a process per item
costs: about 4 ms per fork and exit for agenteval's own 38 MB parent on the machines we
measured, and about 13 ms more when ``set_up`` loaded 200 MB (``bench/README.md``). Backed
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
take more than a quarter of the memory still available (to the machine, or under the
memory limit of the process's cgroup).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import sys
from typing import Any

HUGE_PAGE = 2 * 1024 * 1024
_MADV_COLLAPSE = 25
_PASSES = 4
"""Attempts at a huge page that Linux found busy."""
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
        self.busy: list[tuple[int, int]] = []  # huge pages Linux found busy: tried again later
        self.done = not _supported()
        self.collapsed = 0  # bytes
        self._passes = 1

    def step(self, budget: int = 16 * 1024 * 1024) -> None:
        """Collapse up to ``budget`` bytes, a huge page per call; ``done`` once nothing is
        left to try."""
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
            # one huge page per call: a failure then says which one failed
            start, end = self.todo.pop()
            if start + HUGE_PAGE < end:
                self.todo.append((start + HUGE_PAGE, end))
            budget -= HUGE_PAGE
            if madvise(start, HUGE_PAGE, _MADV_COLLAPSE) == 0:
                self.collapsed += HUGE_PAGE
            elif ctypes.get_errno() == errno.EAGAIN and self._passes < _PASSES:
                # some of its pages were in use at that moment (a child exiting, say):
                # tried again after the others
                self.busy.append((start, start + HUGE_PAGE))
            # else: not collapsible (EINVAL: too little of it in use, say), unmapped
            # meanwhile, or no huge page free (ENOMEM): left as it is
            if not self.todo and self.busy:
                self.todo, self.busy = self.busy[::-1], []
                self._passes += 1
        self.done = not self.todo or not madvise


def _available() -> int:
    """Bytes this process may still allocate: what the machine has available, or less
    when its memory cgroup (a container's limit) allows less. 0 where Linux cannot tell."""
    available = 0
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
        with open("/proc/self/cgroup", encoding="ascii") as fh:
            groups = [line.rstrip("\n").split(":", 2) for line in fh]
    except (OSError, ValueError, IndexError):
        return available
    for _, controllers, path in groups:
        if controllers == "":  # cgroup v2
            files = (f"/sys/fs/cgroup{path}/memory.max", f"/sys/fs/cgroup{path}/memory.current")
        elif "memory" in controllers.split(","):  # cgroup v1
            base = f"/sys/fs/cgroup/memory{path}"
            files = (f"{base}/memory.limit_in_bytes", f"{base}/memory.usage_in_bytes")
        else:
            continue
        try:
            limit, used = (_read_int(name) for name in files)
        except (OSError, ValueError):
            continue  # no limit ("max"), or not mounted where we look
        available = min(available, max(0, limit - used))
    return available


def _read_int(path: str) -> int:
    with open(path, encoding="ascii") as fh:
        return int(fh.read())


def _supported() -> bool:
    """Linux 6.1 or later (MADV_COLLAPSE), with transparent huge pages not turned off by
    the administrator (then we do not ask)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        major, minor = (int(part) for part in platform.release().split(".")[:2])
        with open("/sys/kernel/mm/transparent_hugepage/enabled", encoding="ascii") as fh:
            return (major, minor) >= (6, 1) and "[never]" not in fh.read()
    except (OSError, ValueError):
        return False  # an odd release string, or no THP in this kernel


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
