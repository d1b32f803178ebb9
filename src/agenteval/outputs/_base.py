"""``OutputDriver``: the base class of every report destination, built-in or yours."""

from __future__ import annotations

from dataclasses import dataclass, field

from .._results import EvaluatorSummary, ItemResult, RunSummary


@dataclass(frozen=True)
class RunInfo:
    """What is known when a run starts."""

    id: str
    started_at: str
    evaluators: list[str]
    concurrency: int = 1
    executor: str = "inline"
    isolation: str = "item"
    """``worker`` when ``--isolation worker`` let a process run several items."""
    run_dir: str | None = None
    resumed: bool = False
    retrying: bool = False
    """``--retry-errors``: a resumed run that runs again what errored, timed out or crashed."""
    argv: list[str] = field(default_factory=list)


class OutputDriver:
    """Receives results as the run goes; subclass it to send them anywhere.

    ``output`` is called once per evaluator when it finishes (Neuron's contract). The other
    hooks do nothing unless overridden. All are called in the parent process, one at a
    time. A driver that raises loses nothing else: the failure is reported and the run's
    exit code becomes 2. Example::

        class CountFailures(OutputDriver):
            def __init__(self) -> None:
                self.failed = 0

            def output(self, summary: EvaluatorSummary) -> None:
                self.failed += summary.failed
    """

    def start_run(self, run: RunInfo) -> None:
        """Called once before the first evaluator starts."""

    def evaluator_started(self, evaluator: str, name: str, total: int | None) -> None:
        """Called when an evaluator's items start: its id (``path::Class``), display name
        and item count (``None`` when the dataset cannot tell)."""

    def item_finished(self, result: ItemResult) -> None:
        """Called as each item reaches a terminal status, in completion order."""

    def run_interrupted(self, signal_name: str, grace: float) -> None:
        """Called at the first Ctrl-C / SIGTERM: in-flight items get ``grace`` seconds."""

    def output(self, summary: EvaluatorSummary) -> None:
        """Called once per evaluator with its complete summary, in discovery order."""
        raise NotImplementedError(f"{type(self).__name__} must implement output(summary)")

    def finish_run(self, run: RunSummary) -> None:
        """Called once at the end, with the whole run and its exit code."""
