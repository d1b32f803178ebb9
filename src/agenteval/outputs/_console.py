"""``ConsoleOutput``: live progress while running, then a report and a one-line verdict."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from functools import partial
from pathlib import Path
from typing import IO, Any

from .._journal import DEFAULT_RUNS_DIR, is_run_dir
from .._redact import to_devnull
from .._results import ErrorInfo, EvaluatorSummary, ItemResult, RunSummary
from ._base import OutputDriver, RunInfo
from ._text import one_line as _one_line
from ._text import printable, safe


def _pct(rate: float) -> str:
    # never rounded up to 100.0% (1,999 of 2,000) nor down to 0.0% (1 of 2,000)
    shown = f"{rate * 100:.1f}"
    if shown == "100.0" and rate < 1:
        shown = "99.9"
    elif shown == "0.0" and rate > 0:
        shown = "0.1"
    return f"{shown}%"


def _secs(value: float) -> str:
    return f"{value:.3f}s" if value < 10 else f"{value:.1f}s"


class ConsoleOutput(OutputDriver):
    """The terminal report (Neuron's ``ConsoleDriver``): the default driver.

    While running it shows a live progress bar per evaluator (done/total, passed, failed,
    errors, elapsed, ETA) on a terminal, or nothing until each evaluator finishes when
    piped. Each evaluator then gets its counts, success rate, average score, times and
    every failure and error with item id, assertion, message and ``file:line``;
    ``verbose=True`` lists every item. The run ends with a one-line verdict. Text from
    agent outputs is neutralised (control characters and escape sequences are shown
    escaped).
    """

    def __init__(
        self, verbose: bool = False, progress: bool = True, stream: IO[str] | None = None
    ) -> None:
        for flag, value in (("verbose", verbose), ("progress", progress)):
            if not isinstance(value, bool):
                raise TypeError(f"ConsoleOutput({flag}=...) must be True or False, got {value!r}")
        if stream is not None and not callable(getattr(stream, "write", None)):
            raise TypeError(
                f"ConsoleOutput(stream=...) must be an open text file, got {stream!r} (for a "
                f"file, pass open(path, 'w'))"
            )
        self.verbose = verbose
        self.progress = progress
        self.stream = stream
        self._console: Any = None
        self._tasks: dict[str, Any] = {}
        self._counts: dict[str, list[int]] = {}
        self._argv: list[str] = []
        self._retrying = False
        self._parallel = False
        self._gone = False  # whoever read the console has gone away
        self._live_display: Any = None  # draws the bars, and what is printed above them
        self._name_column: Any = None  # the bars' name column, cut to what the rest leaves
        self._widest_total = 0

    # -- plumbing ------------------------------------------------------------------------
    @property
    def console(self) -> Any:
        """The rich console (built on first use; rich is imported lazily)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream or sys.stdout, highlight=False, soft_wrap=True)
        return self._console

    def _line(self, text: str, style: str | None = None) -> None:
        if self._gone:
            return
        if (self.stream or sys.stdout) is None:  # started with stdout closed (``>&-``)
            self._gone = True
            return
        text = printable(_row(text), self.stream or sys.stdout)  # (every line: names too)
        try:
            if self._plain():
                stream = self.stream or sys.stdout
                stream.write(text + "\n")
                stream.flush()
                return
            from rich.text import Text

            self.console.print(Text(text, style=style or ""))
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        """The reader of the console went away (``agenteval run ... | head``): print no
        more, as other command-line tools do. The run goes on and its exit code stays its
        own; what is still buffered goes to /dev/null, so that Python does not complain
        when it flushes stdout at exit."""
        self._gone = True
        to_devnull(self.stream or sys.stdout)

    def _plain(self) -> bool:
        """Whether lines go out as they are, without rich: the stream is no terminal and
        nothing asks for colours anyway. That spares a piped run (CI) importing rich."""
        if self._console is not None:
            return False
        return not (
            self._tty()
            or os.environ.get("FORCE_COLOR")
            or os.environ.get("TTY_COMPATIBLE") == "1"
            or "IPython" in sys.modules  # rich renders notebooks its own way
        )

    def _live(self) -> bool:
        """Whether to draw the bars: on a terminal only (``FORCE_COLOR`` makes rich take
        any stream for one, and a CI log would fill with bars)."""
        return self.progress and self._tty() and not self._plain() and self.console.is_terminal

    def _tty(self) -> bool:
        stream = self.stream or sys.stdout
        try:
            return bool(stream.isatty())
        except (AttributeError, ValueError):  # closed, or no stream at all (``>&-``)
            return False

    # -- hooks ---------------------------------------------------------------------------
    def run_interrupted(self, signal_name: str, grace: float) -> None:
        """Say what happens now, so that nobody presses Ctrl-C again in the dark."""
        self._print(
            (
                f"{signal_name}: no new items start; running items get {grace:g}s to finish. "
                f"Send it again to stop at once.",
                "yellow",
            )
        )

    def start_run(self, run: RunInfo) -> None:
        """Print the run header and start the progress display."""
        self._argv = list(run.argv)
        SHOWN_DRIVER_ERRORS.clear()  # (a run's own, not an earlier one's in this process)
        self._retrying = run.retrying
        self._parallel = run.executor != "inline" and run.concurrency > 1
        mode = (
            "sequential"
            if run.executor == "inline"
            else f"concurrency {run.concurrency} ({run.executor}"
            f"{', worker isolation' if run.isolation == 'worker' else ''})"
        )
        resumed = " · retrying errors" if run.retrying else " · resumed" if run.resumed else ""
        self._line(
            f"agenteval · run {run.id} · {len(run.evaluators)} evaluator"
            f"{'s' if len(run.evaluators) != 1 else ''} · {mode}{resumed}",
            "bold",
        )
        if self._live():
            from rich.progress import Progress

            self._name_column, columns = _bar_columns(self.console.width)

            bars = Progress(
                *columns,
                console=self.console,
                transient=True,
                auto_refresh=False,  # drawn by LiveDisplay's thread, and only by it
                redirect_stdout=False,
                redirect_stderr=False,
            )
            from ._live import LiveDisplay

            self._live_display = LiveDisplay(bars, self._reader_gone, self._fit_bars)

    def evaluator_started(self, evaluator: str, name: str, total: int | None) -> None:
        """Add a progress bar for the evaluator."""
        self._counts[evaluator] = [0, 0, 0]
        if self._live_display is not None:
            self._live_display.later(partial(self._add_bar, evaluator, _one_line(name), total))

    def item_finished(self, result: ItemResult) -> None:
        """Advance the evaluator's progress bar."""
        counts = self._counts.get(result.evaluator)
        if self._live_display is None or counts is None:
            return
        if result.status != "cancelled":  # (not an error: the report counts it apart)
            counts[{"passed": 0, "failed": 1}.get(result.status, 2)] += 1
        self._live_display.later(partial(self._advance_bar, result.evaluator, *counts))

    def output(self, summary: EvaluatorSummary) -> None:
        """Print one evaluator's report."""
        if self._live_display is not None:
            self._live_display.later(partial(self._remove_bar, summary.id))
        self._print(*self.render(summary))

    # the bars change in the live display's thread (see ``_live``)
    def _add_bar(self, evaluator: str, name: str, total: int | None) -> None:
        self._widest_total = max(self._widest_total, total or 0)
        self._name_column.max_width = _name_width(self.console.width, len(str(self._widest_total)))
        self._tasks[evaluator] = self._live_display.progress.add_task(
            name, total=total, passed=0, failed=0, errors=0, errors_s="s"
        )

    def _fit_bars(self, width: int) -> None:
        """The terminal's width changed: the columns the new one leaves room for."""
        self._name_column, columns = _bar_columns(width)
        self._name_column.max_width = _name_width(width, len(str(self._widest_total)))
        self._live_display.progress.columns = tuple(columns)

    def _advance_bar(self, evaluator: str, passed: int, failed: int, errors: int) -> None:
        task = self._tasks.get(evaluator)
        if task is not None:
            self._live_display.progress.update(
                task,
                advance=1,
                passed=passed,
                failed=failed,
                errors=errors,
                errors_s="" if errors == 1 else "s",  # (1 error, as the report says)
            )

    def _remove_bar(self, evaluator: str) -> None:
        task = self._tasks.pop(evaluator, None)
        if task is not None:
            self._live_display.progress.remove_task(task)

    def _print(self, *lines: tuple[str, str | None]) -> None:
        """Lines above the bars, with their next draw; or as they are, without bars."""
        if self._live_display is None:
            for text, style in lines:
                self._line(text, style)
            return
        from rich.text import Text

        file = self.console.file
        self._live_display.show(
            Text("\n").join(Text(printable(_row(t), file), style=s or "") for t, s in lines)
        )

    def finish_run(self, run: RunSummary) -> None:
        """Stop the progress display and print the verdict."""
        self.stop_live()
        for text, style in self.render_verdict(run):
            self._line(text, style)
        if run.driver_errors and not self._gone:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                where = os.fstat((self.stream or sys.stdout).fileno())
                SHOWN_DRIVER_ERRORS.append((where, frozenset(run.driver_errors)))

    def stop_live(self) -> None:
        """Take the progress bars away, should they be up (the runner calls it when a run
        ends without ``finish_run``: stopped at once)."""
        if self._live_display is not None:
            display = self._live_display
            display.stop()  # (the changes it makes last still use it)
            self._live_display = None
            if display.failed is not None:
                self._line(
                    f"error: the progress display failed ({type(display.failed).__name__}: "
                    f"{display.failed}): part of the report above may be missing; the JSON "
                    f"report and the run's records are complete",
                    "red",
                )

    def _resume_command(self, run_id: str, again: str | None = None) -> str:
        """The command line that was run, with ``--resume RUN_ID`` instead of any resume
        (``--retry-errors RUN_ID`` for a retry: a resume would keep the errors it has not
        retried yet), or with ``again`` (the option to use) instead."""
        again = again or ("--retry-errors" if self._retrying else "--resume")
        argv = self._argv
        if not argv or not argv[0].endswith("agenteval"):
            return f"agenteval run ... {again} {run_id}"
        kept: list[str] = []
        target = run_id  # the run's folder instead, if it was given by its path
        skip = False
        for arg in argv[1:]:
            given = (
                arg.partition("=")[2] if arg.startswith(("--resume=", "--retry-errors=")) else None
            )
            if skip:  # the value of --resume, unless it is an option or one of the paths
                skip = False
                if not arg.startswith("-") and (is_run_dir(arg) or not Path(arg).exists()):
                    given = arg
            if given is not None:
                if is_run_dir(given) and Path(given).name == run_id:
                    target = given  # (a folder outside the runs folder: its path, below)
                continue
            if arg in ("--resume", "--retry-errors"):
                skip = True
                continue
            kept.append(arg)
        if target != run_id and Path(target).resolve().parent == _runs_dir(kept).resolve():
            target = run_id  # in the runs folder: its id says it
        # (after a `--`, all is paths)
        end = kept.index("--") if "--" in kept else len(kept)
        words = [*kept[:end], again, target, *kept[end:]]
        return " ".join(["agenteval", *(shlex.quote(a) for a in words)])

    # -- rendering (pure: lists of (line, style)) ------------------------------------------
    def render(self, s: EvaluatorSummary) -> list[tuple[str, str | None]]:
        """The report lines of one evaluator."""
        lines: list[tuple[str, str | None]] = [("", None)]
        style = {
            "passed": "bold green",
            "failed": "bold red",
            "error": "bold yellow",
            "skipped": "bold cyan",
            "interrupted": "bold yellow",
        }[s.status]
        lines.append((f"{s.status.upper():<7} {_one_line(s.name)}  {_one_line(s.file)}", style))
        if s.skip_reason is not None and not s.total:
            lines.append((f"  skipped: {_one_line(s.skip_reason)}", "cyan"))
            return lines
        if s.skip_reason is not None:  # a resumed run's records of it stand
            lines.append(
                (
                    f"  skipped this time ({_one_line(s.skip_reason)}): its items below are "
                    f"those the run had recorded",
                    "cyan",
                )
            )
        if s.error is not None:
            site = f"  {s.error.file}:{s.error.line}" if s.error.file else ""
            lines.append((f"  ERROR in {s.error.stage}: {_error_text(s.error)}{site}", "yellow"))
            if self.verbose and s.error.traceback:
                lines.extend(
                    (f"    {safe(t)}", "dim") for t in s.error.traceback.rstrip().splitlines()
                )
        if s.error is not None and s.total == 0:
            return lines  # nothing ran: the error line says it all
        if not s.complete:
            lines.append(("  interrupted: not every item of this evaluator ran", "yellow"))
        counts = f"{s.passed} passed, {s.failed} failed, {_count(s.errored, 'error')}"
        if s.cancelled:
            counts += f", {s.cancelled} cancelled"
        lines.append(
            (
                f"  {_items(s.total)}: {counts} · success rate {_rate(s.success_rate, s.total)} · "
                f"avg score {'-' if s.score.average is None else f'{s.score.average:.2f}'} · "
                f"assertions {s.assertions.passed}/{s.assertions.total}",
                None,
            )
        )
        lines.append(
            (
                f"  time: {_secs(s.duration_s.total)} total, {_secs(s.duration_s.average)} avg per item",
                "dim",
            )
        )
        u = s.usage
        if u.agent or u.judge or u.judge_calls:
            lines.append((f"  tokens: {_usage_text(u)}", "dim"))
        if self.verbose:
            for item in s.items:
                lines.extend(self._item_lines(item))
            return lines
        # failures and errors first: items that passed with soft failures only fill the rest
        hard = [i for i in s.notable_items if i.status != "passed"]
        soft = [i for i in s.notable_items if i.status == "passed"]
        shown = {id(i) for i in (hard + soft)[:NOTABLE_LIMIT]}
        for item in s.notable_items:
            if id(item) in shown:
                lines.extend(self._item_lines(item))
        more_hard = len(hard) - min(len(hard), NOTABLE_LIMIT)
        more_soft = len(soft) - min(len(soft), NOTABLE_LIMIT - len(hard) + more_hard)
        if more_hard or more_soft:
            kinds = {"with failures or errors": more_hard, "with soft failures only": more_soft}
            more = (
                f"{more_hard + more_soft} more {'item' if more_hard + more_soft == 1 else 'items'}"
            )
            if more_hard and more_soft:
                more += ": " + ", ".join(f"{n} {kind}" for kind, n in kinds.items())
            else:
                more += " " + next(kind for kind, n in kinds.items() if n)
            lines.append(
                (
                    f"  … and {more} (-v lists every item; the JSON report has them all)",
                    None,
                )
            )
            if s.failures_by_assertion:
                top = ", ".join(f"{g.key} ×{g.count}" for g in s.failures_by_assertion[:5])
                lines.append((f"  failures by assertion: {safe(top)}", None))
        return lines

    def _item_lines(self, item: ItemResult) -> list[tuple[str, str | None]]:
        lines: list[tuple[str, str | None]] = []
        label = f"item {safe(repr(item.id), _ID_LIMIT)}"
        if item.repeat:
            label += f" (repeat {item.repeat})"
        if self.verbose and item.error is None:
            score = "-" if item.score is None else f"{item.score:.2f}"
            lines.append(
                (
                    f"  {_tag(item.status)}{label} · score {score} · {_secs(item.duration_s)}",
                    None,
                )
            )
        if item.error is not None:
            e = item.error
            site = f"  {e.file}:{e.line}" if e.file else ""
            lines.append(
                (
                    f"  {_tag(item.status)}{label} · {e.stage} · {_error_text(e)}{site}",
                    "yellow",
                )
            )
            if self.verbose and e.traceback:
                lines.extend((f"      {safe(t)}", "dim") for t in e.traceback.rstrip().splitlines())
        for a in item.assertions:
            site = f"  {a.file}:{a.line}" if a.file else ""
            if not a.passed:
                tag = "SOFT" if a.soft else "FAIL"
                lines.append(
                    (
                        f"  {_tag(tag)}{label} · {a.name} · {_one_line(a.message)} (score {a.score:.2f}){site}",
                        "magenta" if a.soft else "red",
                    )
                )
            elif self.verbose:
                lines.append((f"      ok  {a.name} (score {a.score:.2f})", "dim"))
        u = item.usage
        if self.verbose and (u.agent or u.judge or u.judge_calls):
            lines.append((f"      tokens: {_usage_text(u)}", "dim"))
        if self.verbose and (item.stdout or item.stderr):
            for stream, text in (("stdout", item.stdout), ("stderr", item.stderr)):
                if text:
                    lines.append((f"      {stream}: {_one_line(text)}", "dim"))
        return lines

    def render_verdict(self, run: RunSummary) -> list[tuple[str, str | None]]:
        """The closing lines: totals, where the run is kept, and the verdict."""
        lines: list[tuple[str, str | None]] = [("", None)]
        lines.extend((f"notice: {safe(n)}", "yellow") for n in run.notices)
        lines.extend(
            (f"error: output driver failed: {_one_line(e)}", "red") for e in run.driver_errors
        )
        skipped = sum(1 for e in run.evaluators if e.status == "skipped")
        parts = [f"{run.passed} passed", f"{run.failed} failed", _count(run.errored, "error")]
        if run.cancelled:
            parts.append(f"{run.cancelled} cancelled")
        broken = sum(1 for e in run.evaluators if e.error is not None)
        if broken:
            parts.append(f"{broken} evaluator{'s' if broken != 1 else ''} errored")
        if skipped:
            parts.append(f"{skipped} evaluator{'s' if skipped != 1 else ''} skipped")
        word = {0: "PASSED", 1: "FAILED", 2: "ERROR"}.get(run.exit_code, "INTERRUPTED")
        style = {0: "bold green", 1: "bold red", 2: "bold yellow"}.get(run.exit_code, "bold yellow")
        if run.interrupted:
            lines.append((f"Interrupted by {run.interrupted}: finished items are saved.", "yellow"))
            if run.run_dir:
                lines.append((f"Resume with: {self._resume_command(run.id)}", "yellow"))
        elif (run.errored or broken) and run.run_dir:  # (a flaky provider: just those again)
            retry = self._resume_command(run.id, "--retry-errors")
            lines.append((f"Retry what errored with: {retry}", "yellow"))
        if self._parallel and any(  # (said where it shows: an average above total ÷ items)
            e.total > 1 and e.duration_s.average * e.total > e.duration_s.total
            for e in run.evaluators
        ):
            lines.append(
                (
                    "time: items ran in parallel, so an average time per item can exceed "
                    "total ÷ items",
                    "dim",
                )
            )
        u = run.usage
        if u.agent or u.judge or u.judge_calls:
            lines.append((f"tokens: {_usage_text(u)}", "dim"))
        if run.cost is not None and (
            run.cost.agent is not None or run.cost.judge is not None or run.cost.unpriced_models
        ):
            priced = run.cost.agent is not None or run.cost.judge is not None
            parts_ = [f"${run.cost.total:.4f}"] if priced else []
            if run.cost.agent is not None:
                parts_.append(f"agent ${run.cost.agent:.4f}")
            if run.cost.judge is not None:
                parts_.append(f"judge ${run.cost.judge:.4f}")
            if run.cost.unpriced_models:
                parts_.append(f"no price for {', '.join(run.cost.unpriced_models)}")
            lines.append((f"cost: {' · '.join(parts_)}", "dim"))
        lines.append(
            (
                f"{word}: {_items(run.total)}, {', '.join(parts)} · success rate "
                f"{_rate(run.success_rate, run.total)} · {_secs(run.duration_s)} · "
                f"exit {run.exit_code}",
                style,
            )
        )
        return lines


def _rate(rate: float, items: int) -> str:
    """A success rate, or ``-`` when no item ran (nothing passed, nothing failed)."""
    return _pct(rate) if items else "-"


def _error_text(error: ErrorInfo) -> str:
    message = _one_line(error.message, keep_end=True)
    return f"{error.type}: {message}" if message else error.type


SHOWN_DRIVER_ERRORS: list[tuple[os.stat_result, frozenset[str]]] = []
"""Driver failures a console's verdict listed, and the file it wrote to: the CLI does not
repeat them on stderr when stderr is that same file (a terminal, ``> log 2>&1``)."""


def shown_on(fd: int) -> frozenset[str]:
    """The driver failures a console listed on the file ``fd`` is."""
    try:
        here = os.fstat(fd)
    except OSError:
        return frozenset()
    return frozenset().union(
        *(errors for where, errors in SHOWN_DRIVER_ERRORS if os.path.samestat(where, here))
    )


NOTABLE_LIMIT = 25
"""Items with failures or errors an evaluator's report lists (without ``-v``)."""
_ID_LIMIT = 60


# the widths of terminal from which the bars have counts in words, a bar, the elapsed time
_WORDS_FROM, _BAR_FROM, _ELAPSED_FROM = 100, 60, 50


def _name_width(width: int, digits: int) -> int:
    """How wide the bars' name column may be on a terminal ``width`` wide, when totals
    have up to ``digits`` digits: what the other columns of ``_bar_columns`` leave."""
    rest = 2 * digits + 1 + 8  # done/total, the ETA (and a space after each column)
    rest += 3 * digits + (24 if width >= _WORDS_FROM else 6)  # the counts
    rest += 8 if width >= _ELAPSED_FROM else 0
    rest += 7 if width >= _BAR_FROM else 0  # the bar, at its narrowest
    return max(4, min(32, width - rest - 1))


def _bar_columns(width: int) -> tuple[Any, list[Any]]:
    """The progress bar's name column and all its columns for a terminal ``width``
    wide: the name is cut short with … so that the counts and times fit (its width
    follows the totals, see ``_name_width``); a narrow terminal gets shorter counts
    (``12✓ 3✗ 0!``: passed, failed, errors), then no bar, then no elapsed time."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.table import Column

    def fixed() -> Column:
        return Column(no_wrap=True)

    counts = (
        "[green]{task.fields[passed]} passed[/] [red]{task.fields[failed]} failed[/] "
        "[yellow]{task.fields[errors]} error{task.fields[errors_s]}[/]"
        if width >= _WORDS_FROM
        else "[green]{task.fields[passed]}✓[/] [red]{task.fields[failed]}✗[/] "
        "[yellow]{task.fields[errors]}![/]"
    )
    name = Column(no_wrap=True, overflow="ellipsis", max_width=_name_width(width, 1))
    columns: list[Any] = [TextColumn("{task.description}", markup=False, table_column=name)]
    if width >= _BAR_FROM:
        columns.append(BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=6)))
    columns += [MofNCompleteColumn(table_column=fixed()), TextColumn(counts, table_column=fixed())]
    if width >= _ELAPSED_FROM:
        columns.append(TimeElapsedColumn(table_column=fixed()))
    columns.append(TimeRemainingColumn(table_column=fixed()))
    return name, columns


def _runs_dir(argv: list[str]) -> Path:
    """The runs folder a command line names (``--runs-dir``), or the default."""
    found = str(DEFAULT_RUNS_DIR)
    for arg, nxt in zip(argv, [*argv[1:], ""], strict=True):
        if arg == "--runs-dir":
            found = nxt
        elif arg.startswith("--runs-dir="):
            found = arg.partition("=")[2]
    return Path(found)


def _tag(status: str) -> str:
    """A status column: at least one space after the word, even for CANCELLED."""
    return f"{status.upper():<8} "


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one}" if n == 1 else f"{n} {many or one + 's'}"


def _items(n: int) -> str:
    return _count(n, "item")


def _row(text: str) -> str:
    """A line of the report, made safe: a line break in it (an assertion's name, say) is
    shown, never a line of its own that could pass for one of the report's."""
    return safe(text.replace("\n", " ⏎ "))


def _usage_text(u: Any) -> str:
    parts = []
    if u.agent or not u.judge_calls:  # (a run that only judged spent no agent tokens)
        parts.append(f"agent {u.agent.input_tokens:,} in / {u.agent.output_tokens:,} out")
    if u.judge_calls:
        parts.append(
            f"judge {u.judge.input_tokens:,} in / {u.judge.output_tokens:,} out "
            f"({_count(u.judge_calls, 'call')}, {u.cached_calls} cached)"
        )
    if u.retries:
        parts.append(_count(u.retries, "retry", "retries"))
    return " · ".join(parts)


ConsoleDriver = ConsoleOutput
"""Alias with the name Neuron's config example uses."""
