"""Results: what an assertion returns, what an item and an evaluator produce.

These models are the record format: an item's :class:`ItemResult` is built where the item
ran (possibly a forked child or a remote worker), sent as plain JSON, appended to the run
journal and read back by output drivers. Keep every field JSON-safe.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from ._usage import ZERO_USAGE, Usage

ItemStatus = Literal["passed", "failed", "error", "timeout", "crashed", "cancelled"]
"""Terminal status of one item run."""

EvaluatorStatus = Literal["passed", "failed", "error", "skipped", "interrupted"]
"""Overall status of an evaluator."""

Stage = Literal["set_up", "get_dataset", "run", "evaluate", "tear_down", "executor"]
"""Where an error happened."""

ERROR_STATUSES: frozenset[str] = frozenset({"error", "timeout", "crashed"})


class AssertionResult(BaseModel):
    """The verdict of one assertion on one value.

    Assertions return it; they never raise for a value that merely fails::

        AssertionResult.pass_()                       # passed, score 1.0
        AssertionResult.fail(0.2, "too far from reference")
    """

    model_config = ConfigDict(frozen=True)

    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    message: str = ""
    context: dict[str, Any] = Field(default_factory=dict)

    @field_validator("score", mode="before")
    @classmethod
    def _finite(cls, value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            raise ValueError("score must be a number in [0, 1], got NaN")
        return value

    @classmethod
    def pass_(
        cls, score: float = 1.0, message: str = "", context: dict[str, Any] | None = None
    ) -> AssertionResult:
        """A passing result (``pass`` is a keyword in Python, hence the underscore)."""
        if score == 1.0 and not message and not context and cls is AssertionResult:
            return PASSED  # frozen, so one shared instance serves the common case
        return cls(passed=True, score=score, message=message, context=context or {})

    @classmethod
    def fail(
        cls, score: float = 0.0, message: str = "", context: dict[str, Any] | None = None
    ) -> AssertionResult:
        """A failing result with a message saying what was expected."""
        return cls(passed=False, score=score, message=message, context=context or {})


PASSED = AssertionResult(passed=True, score=1.0)
"""What ``AssertionResult.pass_()`` returns: records of it are shared by call site."""


class AssertionRecord(BaseModel):
    """An :class:`AssertionResult` as recorded for an item, with where it was asserted.

    Frozen: a plain pass is recorded once per call site and shared by every item that
    passed there.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    soft: bool = False
    score: float
    message: str = ""
    context: dict[str, Any] = Field(default_factory=dict)
    file: str | None = None
    line: int | None = None


class ErrorInfo(BaseModel):
    """An exception raised by user code, kept as plain data."""

    stage: Stage
    type: str
    message: str
    traceback: str = ""
    file: str | None = None
    line: int | None = None


class ItemUsage(BaseModel):
    """Tokens an item spent, split into the agent under test and the judges grading it.

    Frozen, like :class:`~agenteval.trajectory.Usage`: items that spent nothing share one instance.
    """

    model_config = ConfigDict(frozen=True)

    agent: Usage = Field(default_factory=Usage)
    judge: Usage = Field(default_factory=Usage)
    judge_calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    judge_by_model: dict[str, Usage] = Field(default_factory=dict)


NO_ITEM_USAGE = ItemUsage()
"""No tokens, no calls: the usage of most items, shared."""


class ItemResult(BaseModel):
    """Everything known about one run of one dataset item.

    ``status`` is ``passed`` when nothing raised and no gate assertion failed; ``failed``
    when a gate assertion failed; ``error`` when user code raised; ``timeout``, ``crashed``
    and ``cancelled`` come from the parallel executor.
    """

    evaluator: str = ""
    id: str | int
    index: int
    repeat: int = 0
    status: ItemStatus
    score: float | None = None
    duration_s: float = 0.0
    input: Any = None
    output: Any = None
    truncated: bool = False
    original_size: int | None = None
    assertions: list[AssertionRecord] = Field(default_factory=list)
    error: ErrorInfo | None = None
    stdout: str = ""
    stderr: str = ""
    usage: ItemUsage = Field(default_factory=ItemUsage)

    @property
    def key(self) -> tuple[str, str, int]:
        """Identity of this record in a run: evaluator, item id and repeat index."""
        return (self.evaluator, str(self.id), self.repeat)

    @property
    def soft_failures(self) -> list[AssertionRecord]:
        """Soft assertions that failed (they lower the score but do not fail the item)."""
        return [a for a in self.assertions if a.soft and not a.passed]


def item_status(assertions: Sequence[AssertionRecord], error: ErrorInfo | None) -> ItemStatus:
    """The outcome rule: errors first, then any failed gate assertion."""
    if error is not None:
        return "error"
    if any(not a.passed and not a.soft for a in assertions):
        return "failed"
    return "passed"


def mean_score(assertions: Sequence[AssertionRecord]) -> float | None:
    """Item score: mean of its assertion scores, ``None`` when it has none."""
    if not assertions:
        return None
    return sum(a.score for a in assertions) / len(assertions)


class AssertionStats(BaseModel):
    """Assertion counts over an evaluator or a run."""

    total: int = 0
    passed: int = 0
    failed: int = 0
    success_rate: float = 0.0


class ScoreStats(BaseModel):
    """Average, minimum and maximum over all assertion scores (``None`` when there are none,
    as an item with no assertions has no score)."""

    average: float | None = None
    min: float | None = None
    max: float | None = None


class DurationStats(BaseModel):
    """Wall-clock total and the mean duration of one item (run + evaluate)."""

    total: float = 0.0
    average: float = 0.0


class FailureGroup(BaseModel):
    """Failed assertions grouped by assertion name or by call site."""

    key: str
    count: int
    items: list[str | int]


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


class _Spans:
    """Records kept on disk: where each sits in a records file, sorted by dataset order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index = array("q")
        self.repeat = array("q")
        self.offset = array("q")
        self.length = array("q")

    def add(self, index: int, repeat: int, offset: int, length: int) -> None:
        self.index.append(index)
        self.repeat.append(repeat)
        self.offset.append(offset)
        self.length.append(length)

    def sorted(self) -> _Spans:
        order = sorted(range(len(self.index)), key=lambda i: (self.index[i], self.repeat[i]))
        out = _Spans(self.path)
        for name in ("index", "repeat", "offset", "length"):
            column = getattr(self, name)
            setattr(out, name, array("q", (column[i] for i in order)))
        return out

    def __len__(self) -> int:
        return len(self.index)

    def read(self) -> Iterator[tuple[int, int, str]]:
        with open(self.path, "rb") as fh:
            for i in range(len(self.index)):
                fh.seek(self.offset[i])
                yield self.index[i], self.repeat[i], fh.read(self.length[i]).decode()


class EvaluatorSummary(BaseModel):
    """The results of one evaluator, with the figures Neuron reports.

    Errors count in the denominator of ``success_rate`` and are reported separately.
    ``duration_s.total`` is real wall-clock time; ``duration_s.average`` is the mean item
    duration, which under parallel execution can exceed ``total / count``.

    ``items`` holds every :class:`ItemResult` in dataset order. Records are not kept as
    models: in a journaled run only their place in ``records.jsonl`` is kept, otherwise
    their compact JSON, and they are read back when ``items`` is read — so a run of a
    million items does not hold a million models in memory. Read it once and keep the list
    if you need it several times. ``notable_items`` (failures, errors, soft failures) is
    kept as models.
    """

    name: str
    file: str = ""
    id: str = ""
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    status: EvaluatorStatus = "passed"
    error: ErrorInfo | None = None
    skip_reason: str | None = None
    total: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    cancelled: int = 0
    success_rate: float = 0.0
    assertions: AssertionStats = Field(default_factory=AssertionStats)
    score: ScoreStats = Field(default_factory=ScoreStats)
    duration_s: DurationStats = Field(default_factory=DurationStats)
    failures_by_assertion: list[FailureGroup] = Field(default_factory=list)
    failures_by_site: list[FailureGroup] = Field(default_factory=list)
    soft_failures: int = 0
    usage: ItemUsage = Field(default_factory=ItemUsage)
    notable_items: list[ItemResult] = Field(default_factory=list)
    complete: bool = True
    _records: list[tuple[int, int, ItemResult | str]] = PrivateAttr(default_factory=list)
    _spans: _Spans | None = PrivateAttr(default=None)

    @property
    def items(self) -> list[ItemResult]:
        """Every item result, in dataset order (materialised on each access)."""
        return [ItemResult.model_validate_json(text) for text in self.item_json()]

    def item_json(self) -> Iterator[str]:
        """Every item as its JSON text, in dataset order (what reports and journals store)."""
        kept = (
            (i, r, v if isinstance(v, str) else v.model_dump_json()) for i, r, v in self._records
        )
        if self._spans is None:
            for _, _, text in kept:
                yield text
            return
        for _, _, text in heapq.merge(kept, self._spans.read(), key=lambda t: (t[0], t[1])):
            yield text

    @classmethod
    def build(
        cls,
        *,
        name: str,
        items: Iterable[ItemResult],
        wall_time: float,
        file: str = "",
        id: str = "",
        description: str = "",
        tags: Sequence[str] = (),
        error: ErrorInfo | None = None,
        skip_reason: str | None = None,
    ) -> EvaluatorSummary:
        """Compute every figure from the item results."""
        builder = SummaryBuilder()
        for item in items:
            builder.add(item)
        return builder.finish(
            name=name,
            wall_time=wall_time,
            file=file,
            id=id,
            description=description,
            tags=tags,
            error=error,
            skip_reason=skip_reason,
        )


def _add_exactly(partials: list[float], x: float) -> None:
    """Add ``x`` to the exact sum held as non-overlapping ``partials`` (Shewchuk's
    algorithm, as ``math.fsum`` uses): the total is then the same whatever the order the
    items completed in, so a resumed run reports what an uninterrupted one does."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]


class SummaryBuilder:
    """Accumulates an evaluator's figures one item at a time, in any order.

    The runner feeds it each record as it completes, with where the journal stored it
    (``at``) or its JSON text (``raw``), so nothing but that is retained per item.
    """

    def __init__(self, store: Path | None = None) -> None:
        self._spans = _Spans(store) if store is not None else None
        self._records: list[tuple[int, int, ItemResult | str]] = []
        self._notable: list[ItemResult] = []
        self._counts = {"passed": 0, "failed": 0, "error": 0, "cancelled": 0}
        self._n_scores = 0
        self._score_sum: list[float] = []  # exact partial sums: the same in any order
        self._score_min = math.inf
        self._score_max = -math.inf
        self._a_passed = 0
        self._soft = 0
        self._by_name: dict[str, FailureGroup] = {}
        self._by_site: dict[str, FailureGroup] = {}
        self._group_ids: dict[int, set[str | int]] = {}
        self._index_of: dict[str | int, int] = {}
        self._dur_sum = 0.0
        self._dur_n = 0
        self._agent = [0, 0, 0, 0]
        self._judge = [0, 0, 0, 0]
        self._calls = [0, 0, 0]
        self._by_model: dict[str, Usage] = {}

    def add(
        self, item: ItemResult, raw: str | None = None, at: tuple[int, int] | None = None
    ) -> None:
        """Account one item: keep where it is stored (``at``: offset and length in the
        store file) if given, else ``raw`` (its JSON text), else the model itself."""
        if at is not None and self._spans is not None:
            self._spans.add(item.index, item.repeat, *at)
        else:
            self._records.append((item.index, item.repeat, raw if raw is not None else item))
        status = "error" if item.status in ERROR_STATUSES else item.status
        self._counts[status] += 1
        if status != "cancelled":
            self._dur_sum += item.duration_s
            self._dur_n += 1
        notable = status != "passed"
        for a in item.assertions:
            score = a.score
            self._n_scores += 1
            _add_exactly(self._score_sum, score)
            if score < self._score_min:
                self._score_min = score
            if score > self._score_max:
                self._score_max = score
            if a.passed:
                self._a_passed += 1
                continue
            notable = True
            if a.soft:
                self._soft += 1
                continue
            site = f"{a.file}:{a.line}" if a.file else a.name
            for groups, key in ((self._by_name, a.name), (self._by_site, site)):
                group = groups.get(key)
                if group is None:
                    group = groups[key] = FailureGroup(key=key, count=0, items=[])
                group.count += 1
                ids = self._group_ids.setdefault(id(group), set())
                if item.id not in ids:
                    ids.add(item.id)
                    group.items.append(item.id)
                    self._index_of[item.id] = item.index
        if notable:
            self._notable.append(item)
        u = item.usage
        if u is not NO_ITEM_USAGE and (u.judge_calls or u.agent or u.judge or u.retries):
            for acc, usage in ((self._agent, u.agent), (self._judge, u.judge)):
                acc[0] += usage.input_tokens
                acc[1] += usage.output_tokens
                acc[2] += usage.cache_read_tokens
                acc[3] += usage.cache_write_tokens
            self._calls[0] += u.judge_calls
            self._calls[1] += u.cached_calls
            self._calls[2] += u.retries
            for model, used in u.judge_by_model.items():
                self._by_model[model] = self._by_model.get(model, ZERO_USAGE) + used

    def finish(
        self,
        *,
        name: str,
        wall_time: float,
        file: str = "",
        id: str = "",
        description: str = "",
        tags: Sequence[str] = (),
        error: ErrorInfo | None = None,
        skip_reason: str | None = None,
        complete: bool = True,
    ) -> EvaluatorSummary:
        """The summary of everything added so far (``complete=False``: interrupted)."""
        counts = self._counts
        total = len(self._records) + (len(self._spans) if self._spans is not None else 0)
        # only an interrupt cancels items: with any cancelled, not all of them ran, even
        # when every one had started
        complete = complete and not counts["cancelled"]
        if error is not None:
            status: EvaluatorStatus = "error"
        elif skip_reason is not None and not total:
            # (skipped by a resume or a retry that holds records of its items: those are
            # its verdict, never hidden behind "skipped")
            status = "skipped"
        elif not complete:
            status = "interrupted"  # whatever ran, the verdict on this evaluator is unknown
        elif counts["error"] or counts["cancelled"]:
            status = "error"
        elif counts["failed"]:
            status = "failed"
        else:
            status = "passed"
        n = self._n_scores

        def usage(acc: list[int]) -> Usage:
            return Usage(
                input_tokens=acc[0],
                output_tokens=acc[1],
                cache_read_tokens=acc[2],
                cache_write_tokens=acc[3],
            )

        def groups(found: dict[str, FailureGroup]) -> list[FailureGroup]:
            for group in found.values():
                group.items.sort(key=lambda i: self._index_of.get(i, 0))
            # ties in dataset order of their first item, not in the order items finished
            first = self._index_of.get
            return sorted(
                found.values(), key=lambda g: (-g.count, first(g.items[0], 0) if g.items else 0)
            )

        summary = EvaluatorSummary(
            name=name,
            file=file,
            id=id,
            description=description,
            tags=list(tags),
            status=status,
            error=error,
            skip_reason=skip_reason,
            total=total,
            passed=counts["passed"],
            failed=counts["failed"],
            errored=counts["error"],
            cancelled=counts["cancelled"],
            success_rate=_rate(counts["passed"], total),
            assertions=AssertionStats(
                total=n,
                passed=self._a_passed,
                failed=n - self._a_passed,
                success_rate=_rate(self._a_passed, n),
            ),
            score=ScoreStats(
                average=math.fsum(self._score_sum) / n if n else None,
                min=self._score_min if n else None,
                max=self._score_max if n else None,
            ),
            duration_s=DurationStats(
                total=wall_time,
                average=self._dur_sum / self._dur_n if self._dur_n else 0.0,
            ),
            failures_by_assertion=groups(self._by_name),
            failures_by_site=groups(self._by_site),
            soft_failures=self._soft,
            usage=ItemUsage(
                agent=usage(self._agent),
                judge=usage(self._judge),
                judge_calls=self._calls[0],
                cached_calls=self._calls[1],
                retries=self._calls[2],
                judge_by_model=dict(self._by_model),
            ),
            notable_items=sorted(self._notable, key=lambda r: (r.index, r.repeat)),
            complete=complete,
        )
        summary._records = sorted(self._records, key=lambda t: (t[0], t[1]))
        summary._spans = self._spans.sorted() if self._spans else None
        return summary


class RunCost(BaseModel):
    """USD spent, from the ``prices`` table of the config (``None`` where no price applies)."""

    agent: float | None = None
    judge: float | None = None
    unpriced_models: list[str] = Field(default_factory=list)

    @property
    def total(self) -> float:
        """Agent plus judge cost (unpriced parts count as 0)."""
        return (self.agent or 0.0) + (self.judge or 0.0)


class RunSummary(BaseModel):
    """The whole run: every evaluator summary, the totals and the exit code."""

    id: str
    started_at: str
    duration_s: float
    agenteval_version: str
    exit_code: int = 0
    interrupted: str | None = None
    evaluators: list[EvaluatorSummary] = Field(default_factory=list)
    driver_errors: list[str] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
    run_dir: str | None = None
    cost: RunCost | None = None

    @property
    def total(self) -> int:
        """Items over all evaluators."""
        return sum(e.total for e in self.evaluators)

    @property
    def passed(self) -> int:
        """Passed items over all evaluators."""
        return sum(e.passed for e in self.evaluators)

    @property
    def failed(self) -> int:
        """Failed items over all evaluators."""
        return sum(e.failed for e in self.evaluators)

    @property
    def errored(self) -> int:
        """Items that errored, timed out or crashed, over all evaluators."""
        return sum(e.errored for e in self.evaluators)

    @property
    def cancelled(self) -> int:
        """Items cancelled by an interrupt."""
        return sum(e.cancelled for e in self.evaluators)

    @property
    def success_rate(self) -> float:
        """Passed items over all items (0.0 when there are none)."""
        return _rate(self.passed, self.total)

    @property
    def usage(self) -> ItemUsage:
        """Token usage over all evaluators."""
        total = ItemUsage()
        for e in self.evaluators:
            u = e.usage
            by_model = dict(total.judge_by_model)
            for model, used in u.judge_by_model.items():
                by_model[model] = by_model.get(model, ZERO_USAGE) + used
            total = ItemUsage(
                agent=total.agent + u.agent,
                judge=total.judge + u.judge,
                judge_calls=total.judge_calls + u.judge_calls,
                cached_calls=total.cached_calls + u.cached_calls,
                retries=total.retries + u.retries,
                judge_by_model=by_model,
            )
        return total
