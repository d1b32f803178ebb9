"""Per-item state, reached through a context variable.

``assert_that`` and the judges find the item they belong to here, not on the evaluator,
so many items of one evaluator can be in flight at once in the async executor.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._results import AssertionRecord
from ._usage import ZERO_USAGE, Usage


@dataclass
class ItemContext:
    """What an item accumulates while it runs: assertion records and token usage."""

    assertions: list[AssertionRecord] = field(default_factory=list)
    agent_usage: Usage = ZERO_USAGE
    judge_usage: Usage = ZERO_USAGE
    judge_calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    agent_calls_usage: Usage = ZERO_USAGE
    """What the agents agenteval runs (``ToolAgent``) spent in model calls so far: the
    item's agent usage when ``run`` returns no trajectory that carries usage — it raised,
    timed out, or returned the answer's text."""

    recorded: list[object] = field(default_factory=list)
    """The results ``assert_that`` recorded: ``evaluate`` may return them."""
    unawaited: list[Any] = field(default_factory=list)
    """The ``aassert_that`` coroutines made for this item, to find one never awaited."""

    judge_by_model: dict[str, Usage] = field(default_factory=dict)
    spent: Callable[[ItemContext], None] | None = None
    """Told after each call accounted, so that an item stopped before its record (a
    timeout, a crash) still reports what it spent."""

    def add_judge_call(self, usage: Usage, *, cached: bool, retries: int, model: str = "") -> None:
        """Account one judge, simulator or embedding call to this item.

        A cached call costs nothing; ``model`` (the configured model's ``name``, such as
        ``"anthropic:claude-3-5-haiku-latest"``) lets a price table turn judge usage into
        cost. A call that failed for good is accounted with empty usage and its retries.
        """
        self.judge_calls += 1
        self.retries += retries
        if cached:
            self.cached_calls += 1
        elif usage:
            self.judge_usage = self.judge_usage + usage
            self.judge_by_model[model] = self.judge_by_model.get(model, ZERO_USAGE) + usage
        if self.spent is not None:
            self.spent(self)

    def add_agent_call(self, usage: Usage, retries: int) -> None:
        """Account one model call of an agent agenteval runs (``ToolAgent``)."""
        self.retries += retries
        self.agent_calls_usage = self.agent_calls_usage + usage
        if self.spent is not None:
            self.spent(self)

    def spent_by_agent(self, carried: Usage = ZERO_USAGE) -> Usage:
        """The item's agent usage: what ``report_usage`` added plus the usage the output's
        trajectory ``carried``; when neither says anything, what the agent calls were seen
        to spend (``report_usage`` of a ToolAgent's usage would count it twice)."""
        if carried:
            return self.agent_usage + carried if self.agent_usage else carried
        return self.agent_usage or self.agent_calls_usage  # (ZERO_USAGE itself: nothing)

    def add_agent_usage(self, usage: Usage) -> None:
        """Account the agent's own usage (``report_usage``) to this item."""
        self.agent_usage = self.agent_usage + usage
        if self.spent is not None:
            self.spent(self)


_current: contextvars.ContextVar[ItemContext | None] = contextvars.ContextVar(
    "agenteval_item", default=None
)


def current_item() -> ItemContext | None:
    """The item being evaluated in this thread or task, if any."""
    return _current.get()


def enter_item(
    spent: Callable[[ItemContext], None] | None = None,
) -> tuple[ItemContext, contextvars.Token[ItemContext | None]]:
    """Start collecting for a new item; pass the token to :func:`exit_item`."""
    ctx = ItemContext(spent=spent)
    return ctx, _current.set(ctx)


def exit_item(token: contextvars.Token[ItemContext | None]) -> None:
    """Stop collecting for the item started with :func:`enter_item`."""
    _current.reset(token)
