"""The live display: progress bars on a terminal, with what is printed above them.

Everything the console shows while the bars are up goes through one thread, which draws
every ``EVERY`` seconds: it makes the changes to the bars handed to ``later``, prints what
in-process items printed (``HeldLines``) and the reports handed to ``show``, then draws
the bars. Drawn from several threads, rich's live display leaves stale bars on the
screen (a thread places the cursor from a height another has since changed, and rich's
``add_task`` draws at once); drawn once per print, each line redraws every bar, so an
item that prints a lot would run many times slower on a terminal than piped, and its
duration would say so.

Items that run in agenteval's process (sequential and async runs) print to
``sys.stdout`` and ``sys.stderr``, which ``HeldLines`` stand in for meanwhile; a forked
child's output is captured instead. What reaches the terminal's file descriptors another
way (a subprocess, ``os.write(1, ...)``, a logging handler made at import time, holding the
real ``sys.stderr``) goes into a pipe meanwhile (``TerminalFds``), and is shown above the
bars too.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import IO, Any

from .._executors._base import LIVE_THREAD
from ._text import printable

EVERY = 0.1
"""Seconds between two draws."""


_MADE: weakref.WeakSet[HeldLines] = weakref.WeakSet()
"""Every stand-in made in this process (a forked child may inherit some in use)."""


def pass_through(streams: Mapping[int, IO[str] | None]) -> None:
    """In a forked child, where no thread draws the display: every stand-in made so far
    writes straight to the stream ``streams`` gives for its descriptor."""
    for held in list(_MADE):
        held.passing = True
        with contextlib.suppress(Exception):  # (its stream closed, say: it keeps its own)
            if (stream := streams.get(held.proxied.fileno())) is not None:
                held.proxied = stream


class HeldLines:
    """A stand-in for ``sys.stdout`` or ``sys.stderr`` that keeps what is written until
    the display takes it; ``proxied`` is the stream it stands in for."""

    def __init__(self, proxied: IO[str]) -> None:
        self.proxied = proxied
        try:  # (asked now: the descriptor may point into a pipe meanwhile, see TerminalFds)
            self._tty = bool(proxied.isatty())
        except (AttributeError, OSError, ValueError):
            self._tty = False
        self._held: list[str] = []
        self._lock = threading.Lock()
        self.before_write: Callable[[], None] | None = None  # (TerminalFds.drain)
        self.passing = False  # the display stopped: straight to the stream (a logging
        # handler made meanwhile still holds this stand-in)
        _MADE.add(self)

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # as a text stream would: the item's own error
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.passing:
            return self.proxied.write(text)
        if self.before_write is not None:  # what came by the descriptor came first
            self.before_write()
        self.append(text)
        return len(text)

    def append(self, text: str) -> None:
        with self._lock:
            self._held.append(text)

    def flush(self) -> None:
        """Nothing: the lines go out with the next draw (or the stream's own, once passing)."""
        if self.passing:
            self.proxied.flush()

    def isatty(self) -> bool:
        return self._tty

    def fileno(self) -> int:
        return self.proxied.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, buffer, ...
        return getattr(self.proxied, name)

    def take(self, *, everything: bool = False) -> str:
        """The whole lines written since (``everything``: a last one without its newline,
        too), without their last newline."""
        with self._lock:
            text, rest = "".join(self._held), ""
            if not everything:
                text, _, rest = text.rpartition("\n")
            elif text.endswith("\n"):
                text = text[:-1]
            self._held = [rest] if rest else []
        return text


class TerminalFds:
    """While the bars are up, file descriptors 1 and 2, where they are the terminal the
    bars are drawn on, point into pipes instead; ``drain`` hands what arrived to the
    ``HeldLines`` of that stream, and the console draws on a copy of the terminal's
    descriptor. ``restore`` puts everything back."""

    def __init__(self, console: Any, held: dict[int, HeldLines]) -> None:
        self._console = console
        self._file = console.file
        self._pipes: dict[int, tuple[int, int, Any]] = {}  # fd -> (saved fd, read end, decoder)
        self._held = held
        self._lock = threading.Lock()
        self._faulthandler = False
        try:
            terminal = os.fstat(self._file.fileno())
        except (AttributeError, OSError, ValueError):
            return
        for fd in held:
            with contextlib.suppress(OSError):
                if os.isatty(fd) and os.path.samestat(os.fstat(fd), terminal):
                    self._redirect(fd)
                    held[fd].before_write = self.drain
        self._faulthandler = 2 in self._pipes and _faulthandler_to(self._pipes[2][0])
        if 1 in self._pipes or 2 in self._pipes:
            saved = self._pipes.get(self._file.fileno(), (None,))[0]
            if saved is not None:
                # (it does not own the descriptor, which restore closes)
                self._console.file = open(  # noqa: SIM115
                    saved,
                    "w",
                    encoding=getattr(self._file, "encoding", None) or "utf-8",
                    errors="replace",
                    closefd=False,
                )

    def _redirect(self, fd: int) -> None:
        saved = os.dup(fd)
        try:
            read, write = os.pipe()
        except OSError:
            os.close(saved)
            raise
        os.set_blocking(read, False)
        with contextlib.suppress(AttributeError, OSError):  # Linux: room for a burst
            import fcntl

            fcntl.fcntl(read, fcntl.F_SETPIPE_SZ, 1 << 20)
        try:
            os.dup2(write, fd)
        except OSError:
            for end in (saved, read):
                os.close(end)
            raise
        finally:
            os.close(write)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pipes[fd] = (saved, read, decoder)

    def drain(self) -> None:
        """Hand what was written to the descriptors since to their ``HeldLines`` (called
        before each draw, and before each write to those, to keep the order)."""
        with self._lock:
            for fd, (_, read, decoder) in self._pipes.items():
                while True:
                    try:
                        chunk = os.read(read, 1 << 16)
                    except OSError:  # (BlockingIOError: nothing more now)
                        break
                    if not chunk:
                        break
                    self._held[fd].append(decoder.decode(chunk))

    def sync_size(self) -> None:
        """Follow the terminal's size: rich, which asks descriptors 0-2 (pipes now, but
        for stdin), would otherwise fall back to 80 columns (``COLUMNS`` and ``LINES``,
        which rich reads first, still win)."""
        if self._console.file is self._file or os.environ.get("COLUMNS", "").isdigit():
            return
        with contextlib.suppress(OSError, ValueError):
            size = os.get_terminal_size(self._console.file.fileno())
            if size.columns > 0 and size.lines > 0:
                self._console.size = size

    def restore(self) -> None:
        """Point the descriptors at the terminal again, and take what is left. What a
        program an item started writes later (it still holds a pipe) is copied to the
        terminal by a process of its own, until the program closes its end: closed, the
        pipe would kill the program with SIGPIPE."""
        for held in self._held.values():
            held.before_write = None
        if self._console.file is not self._file:
            with contextlib.suppress(OSError, ValueError):
                self._console.file.flush()
            self._console.file = self._file
        for fd, (saved, _, _) in self._pipes.items():
            with contextlib.suppress(OSError):
                os.dup2(saved, fd)
        if self._faulthandler:
            _faulthandler_to(2)
        self.drain()
        for saved, read, _ in self._pipes.values():
            with contextlib.suppress(OSError):
                if _still_written(read, saved):
                    _copy_until_closed(read, saved)
            for end in (saved, read):
                with contextlib.suppress(OSError):
                    os.close(end)
        self._pipes.clear()


def _still_written(read: int, write: int) -> bool:
    """Whether a process other than this one still holds the pipe's write end (this
    one's descriptors point elsewhere now, and what was written is drained; what came
    since goes to ``write``)."""
    try:
        late = os.read(read, 1 << 16)
    except BlockingIOError:
        return True
    if late:
        os.write(write, late)
    return late != b""


def _copy_until_closed(read: int, write: int) -> None:
    """Copy what arrives on ``read`` to ``write``, from a grandchild process that lasts
    until every writer has closed its end (and this process may have exited)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - in the child: only system calls, then _exit
        try:
            if os.fork() == 0:
                os.setsid()  # (no SIGHUP when the terminal's session leader exits)
                os.set_blocking(read, True)
                while chunk := os.read(read, 1 << 16):
                    os.write(write, chunk)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _faulthandler_to(fd: int) -> bool:
    """Point an enabled faulthandler (``PYTHONFAULTHANDLER``) at ``fd``: a crash of the
    process must reach the terminal, not a pipe nobody reads any more."""
    import faulthandler

    if not faulthandler.is_enabled():
        return False
    faulthandler.enable(file=fd)
    return True


class LiveDisplay:
    """Draws ``progress`` (a rich ``Progress`` made with ``auto_refresh=False``) and what
    is shown above it, from a thread of its own, until ``stop``. ``on_gone`` is called
    should the terminal's reader go away (a broken pipe)."""

    def __init__(
        self,
        progress: Any,
        on_gone: Callable[[], None],
        on_resize: Callable[[int], None] | None = None,
    ) -> None:
        self.progress = progress
        self._on_gone = on_gone
        self._on_resize = on_resize  # told the new width, in this thread, before a draw
        self._width = progress.console.width
        self._shown: list[Any] = []
        self._changes: list[Callable[[], object]] = []
        self._lock = threading.Lock()
        self._gone = False
        self._failed: Exception | None = None  # the first draw that failed, but for the terminal
        self._streams = {
            name: HeldLines(stream)
            for name in ("stdout", "stderr")
            if (stream := getattr(sys, name)) is not None
        }
        progress.start()
        for name, held in self._streams.items():
            setattr(sys, name, held)
        self._fds = TerminalFds(
            progress.console,
            {
                fd: self._streams[name]
                for fd, name in ((1, "stdout"), (2, "stderr"))
                if name in self._streams
            },
        )
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=LIVE_THREAD, daemon=True)
        self._thread.start()

    def show(self, renderable: Any) -> None:
        """Print ``renderable`` above the bars, with the next draw."""
        with self._lock:
            self._shown.append(renderable)

    def later(self, change: Callable[[], object]) -> None:
        """Make ``change`` to the bars (``add_task``, ``update``, ...) in the display's
        thread, before its next draw, in the order given."""
        with self._lock:
            self._changes.append(change)

    def _run(self) -> None:
        while not self._stopped.wait(EVERY):
            self._draw()

    def _draw(self, *, everything: bool = False) -> None:
        from rich.text import Text

        self._fds.drain()  # (also once the terminal is gone: a full pipe would block writers)
        printed = [held.take(everything=everything) for held in self._streams.values()]
        if self._gone:
            return
        self._fds.sync_size()
        with self._lock:
            shown, self._shown = self._shown, []
            changes, self._changes = self._changes, []
        console = self.progress.console
        try:
            if self._on_resize is not None and console.width != self._width:
                self._width = console.width
                self._on_resize(self._width)
            for change in changes:
                change()
            for text in printed:
                if text:
                    console.print(Text.from_ansi(printable(text, console.file)))
            for renderable in shown:
                console.print(renderable)
            self.progress.refresh()
        except OSError:  # a broken pipe, or EIO: the terminal has gone
            self._gone = True
            with contextlib.suppress(Exception):
                self._on_gone()
        except Exception as exc:  # rich failed on something: what follows is still drawn
            self._failed = self._failed or exc

    @property
    def failed(self) -> Exception | None:
        """The first error drawing met, but for the terminal going away."""
        return self._failed

    def stop(self) -> None:
        """Draw what is left, take the bars away, and put the streams back (unless code
        replaced them meanwhile)."""
        self._stopped.set()
        self._thread.join()
        try:
            self._fds.restore()
            self._draw(everything=True)
        finally:
            for name, held in self._streams.items():
                held.passing = True
                if getattr(sys, name) is held:
                    setattr(sys, name, held.proxied)
        if not self._gone:
            try:
                self.progress.stop()
            except OSError:
                self._on_gone()
