"""``BaseEvaluator``: the class users subclass to evaluate their agent."""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, ClassVar

from ._context import current_item
from ._results import PASSED, AssertionRecord, AssertionResult
from ._serialize import to_jsonable
from ._usage import Usage
from .assertions._base import Assertion

_REQUIRED = ("get_dataset", "run", "evaluate")


def _check_class_attributes(cls: type) -> None:
    """``name``, ``description`` and ``tags`` as reports and ``--tag`` use them: a wrong
    type is an error where the class is defined, not once every item has run."""
    name, description, tags = cls.name, cls.description, cls.tags  # type: ignore[attr-defined]
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{cls.__name__}.name must be a string, got {type(name).__name__}")
    if not isinstance(description, str):
        raise TypeError(
            f"{cls.__name__}.description must be a string, got {type(description).__name__}"
        )
    if not isinstance(tags, (tuple, list)) or not all(isinstance(t, str) for t in tags):
        raise TypeError(
            f"{cls.__name__}.tags must be a string, or a list or set of strings, got {tags!r}"
        )
    for hook in ("set_up", "tear_down", "get_dataset"):
        if inspect.iscoroutinefunction(inspect.unwrap(getattr(cls, hook))) or (
            inspect.isasyncgenfunction(getattr(cls, hook))
        ):
            raise TypeError(
                f"{cls.__name__}.{hook} is async def, and would never run: it runs once, "
                f"outside any item's event loop; make it a plain def (open async clients "
                f"in run, on first use)"
            )
    for theirs, ours in _OTHER_NAMES.items():
        if theirs in cls.__dict__ and ours not in cls.__dict__:
            raise TypeError(
                f"{cls.__name__}.{theirs} would never be called: agenteval calls {ours} (rename it)"
            )


_OTHER_NAMES = {
    "setUp": "set_up",
    "setup": "set_up",
    "tearDown": "tear_down",
    "teardown": "tear_down",
    "getDataset": "get_dataset",
}
"""Names of other frameworks (Neuron, unittest) for our hooks."""


class BaseEvaluator:
    """Base class of an evaluator: a dataset, the agent run on each item, and assertions.

    Implement ``get_dataset``, ``run`` and ``evaluate``; optionally ``set_up`` (once, before
    any item) and ``tear_down`` (once, after the last). ``run`` and ``evaluate`` may be
    ``async def``. Example::

        class RefundEvaluator(BaseEvaluator):
            def get_dataset(self):
                return JsonDataset(Path(__file__).parent / "datasets/refunds.json")

            def run(self, item: dict) -> str:
                return support_agent.chat(item["input"])

            def evaluate(self, output: str, item: dict) -> None:
                self.assert_that(StringContains(item["reference"]), output)

    Class attributes: ``name`` and ``description`` for reports, ``tags`` for ``--tag``
    selection, and ``__abstract__ = True`` on an intermediate base class to keep it out of
    discovery (and out of the missing-method check).
    """

    __abstract__: ClassVar[bool] = True
    name: ClassVar[str | None] = None
    description: ClassVar[str] = ""
    tags: ClassVar[tuple[str, ...] | list[str]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("tags")
        if isinstance(own, str):
            cls.tags = (own,)  # `tags = "smoke"` means one tag, not five
        elif isinstance(own, (set, frozenset)):
            cls.tags = tuple(sorted(own, key=str))
        _check_class_attributes(cls)
        if cls.__dict__.get("__abstract__", False):
            return
        missing = [m for m in _REQUIRED if getattr(cls, m) is getattr(BaseEvaluator, m)]
        if missing:
            raise TypeError(
                f"{cls.__name__} must implement {', '.join(missing)} "
                f"(or set __abstract__ = True on it if it is a base class)"
            )

    @classmethod
    def display_name(cls) -> str:
        """``name`` if set, else the class name."""
        return cls.name or cls.__name__

    @classmethod
    def is_abstract(cls) -> bool:
        """True when this class itself (not a parent) sets ``__abstract__ = True``."""
        return bool(cls.__dict__.get("__abstract__", False))

    def set_up(self) -> None:
        """Prepare shared state (build the agent, open clients); runs once, before any item."""

    def tear_down(self) -> None:
        """Release what ``set_up`` acquired; runs once, after the last item."""

    def get_dataset(self) -> Iterable[Mapping[str, Any]]:
        """Return the items to evaluate: a ``Dataset`` or any iterable of dicts."""
        raise NotImplementedError

    def run(self, item: Any) -> Any:
        """Run the agent on one item and return its output (may be ``async def``)."""
        raise NotImplementedError

    def evaluate(self, output: Any, item: Any) -> Any:
        """Check ``output`` with ``self.assert_that(...)`` (may be ``async def``)."""
        raise NotImplementedError

    def assert_that(
        self, assertion: Assertion, actual: Any, *, soft: bool = False
    ) -> AssertionResult:
        """Evaluate ``assertion`` on ``actual``, record the result for this item, return it.

        A ``soft`` assertion counts in the item's score but its failure does not fail the
        item. The call site (file and line of the caller) is recorded with the result.
        """
        evaluate = getattr(assertion, "evaluate", None)
        if evaluate is None or isinstance(assertion, type):
            raise TypeError(_not_an_assertion("assert_that", assertion))
        result: AssertionResult = evaluate(actual)
        self._record(assertion, result, soft, sys._getframe(1))
        return result

    def aassert_that(
        self, assertion: Assertion, actual: Any, *, soft: bool = False
    ) -> Coroutine[Any, Any, AssertionResult]:
        """Async :meth:`assert_that`, for ``async def evaluate``: awaits ``aevaluate``.

        Await it: one never awaited checks nothing, and makes the item an error.
        """
        aevaluate = getattr(assertion, "aevaluate", None)
        if aevaluate is None or isinstance(assertion, type):
            raise TypeError(_not_an_assertion("aassert_that", assertion))
        checked = self._aassert(assertion, aevaluate, actual, soft, sys._getframe(1))
        ctx = current_item()
        if ctx is not None:
            ctx.unawaited.append(checked)
        return checked

    async def _aassert(
        self, assertion: Assertion, aevaluate: Any, actual: Any, soft: bool, frame: Any
    ) -> AssertionResult:
        result: AssertionResult = await aevaluate(actual)
        self._record(assertion, result, soft, frame)
        return result

    def report_usage(self, usage: Usage | Mapping[str, int] | None = None, **tokens: int) -> None:
        """Add token usage of the agent under test to the current item: a
        :class:`~agenteval.trajectory.Usage`, or its counts
        (``self.report_usage(input_tokens=812, output_tokens=95)``, or the same as a dict).

        Not needed when ``run`` returns a ``Trajectory``: its usage is taken automatically.
        """
        ctx = current_item()
        if ctx is None:
            raise RuntimeError(
                "report_usage() can only be called while an item is running"
                f"{_THREAD_HINT if _in_a_thread() else ''}"
            )
        if usage is None or isinstance(usage, Mapping):
            usage = _usage_of({**(usage or {}), **tokens})
        elif not isinstance(usage, Usage) or tokens:
            cls = type(usage)
            raise TypeError(
                f"report_usage() takes an agenteval.trajectory.Usage or token counts, e.g. "
                f"report_usage(input_tokens=812, output_tokens=95); got "
                f"{cls.__module__}.{cls.__qualname__}" + (" and counts" if tokens else "")
            )
        ctx.add_agent_usage(usage)

    def _record(
        self, assertion: Assertion, result: AssertionResult, soft: bool, frame: Any
    ) -> None:
        if not isinstance(result, AssertionResult):
            raise TypeError(
                f"{type(assertion).__name__}.evaluate() must return an AssertionResult, "
                f"got {type(result).__name__}"
            )
        score = result.score
        if result is not PASSED and (
            isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1
        ):  # (model_copy(update=...) skips the check AssertionResult(...) makes: NaN, 1.5)
            raise ValueError(
                f"{type(assertion).__name__}.evaluate() returned a score of {score!r}: a score "
                f"is a number from 0 to 1"
            )
        ctx = current_item()
        if ctx is None:
            raise RuntimeError(
                "assert_that() can only be called while an item is being evaluated "
                f"(from evaluate() or run()){_THREAD_HINT if _in_a_thread() else ''}"
            )
        ctx.recorded.append(result)
        name = getattr(assertion, "name", type(assertion).__name__)
        if result is not PASSED or type(name) is not str:
            ctx.assertions.append(_new_record(name, result, soft, frame))
            return
        # a plain pass says nothing but where it happened: one record per call site (the
        # code object by identity: equal code in two files is two sites)
        code = frame.f_code
        site = (id(code), frame.f_lasti, name, soft)
        kept = _PASSES.get(site)
        if kept is None:
            kept = (code, _new_record(name, result, soft, frame))
            if len(_PASSES) < _MAX_PASSES:
                _PASSES[site] = kept  # holding the code keeps its id from being reused
        ctx.assertions.append(kept[1])


_THREAD_HINT = (
    ": a thread knows its item only if the item's code starts it in its own context — "
    "pool.submit(contextvars.copy_context().run, self.assert_that, ...), or "
    "asyncio.to_thread"
)


def _in_a_thread() -> bool:
    import threading

    return threading.current_thread() is not threading.main_thread()


def _usage_of(counts: dict[str, Any]) -> Usage:
    """A :class:`Usage` of ``counts``, whose names must be its fields."""
    unknown = sorted(set(counts) - set(Usage.model_fields))
    if unknown:
        raise TypeError(
            f"report_usage(): unknown count {unknown[0]!r}: the counts are "
            f"{', '.join(Usage.model_fields)}"
        )
    bad = {k: v for k, v in counts.items() if type(v) is not int or v < 0}
    if bad:
        name, value = next(iter(bad.items()))
        raise TypeError(f"report_usage(): {name} must be a whole number, 0 or more, got {value!r}")
    return Usage(**counts)


def _not_an_assertion(method: str, value: object) -> str:
    if isinstance(value, type):
        return (
            f"{method}() takes an assertion, and {value.__name__} is its class: "
            f"build one, e.g. {value.__name__}(...)"
        )
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    return (
        f"{method}() takes an assertion, like StringContains('refund'), and its actual value; "
        f"got {type(value).__name__} {shown} as the assertion"
    )


_PASSES: dict[tuple[int, int, str, bool], tuple[Any, AssertionRecord]] = {}
_MAX_PASSES = 10_000


def _new_record(name: Any, result: AssertionResult, soft: bool, frame: Any) -> AssertionRecord:
    return AssertionRecord(
        name=name,
        passed=result.passed,
        soft=soft,
        score=result.score,
        message=result.message,
        context=to_jsonable(result.context) if result.context else {},
        file=_shown_path(frame.f_code.co_filename),
        line=frame.f_lineno,
    )


_SHOWN: dict[str, str] = {}


def _shown_path(filename: str) -> str:
    """A call site's file, relative to the working directory when inside it (memoised)."""
    shown = _SHOWN.get(filename)
    if shown is None:
        cwd = os.getcwd()
        shown = os.path.relpath(filename, cwd) if filename.startswith(cwd + os.sep) else filename
        _SHOWN[filename] = shown
    return shown


def prepare_call_sites(cls: type[BaseEvaluator]) -> None:
    """Work out how the file of ``cls.evaluate`` is shown, before its items run.

    Each item's assertions are recorded with it. Done once in the parent, it is not done
    again in every forked child, where it would copy some forty pages of the parent's
    memory (each page a child writes is copied). Only a saving: it never fails (an
    ``evaluate`` that is an odd object, a working directory that is gone).
    """
    with contextlib.suppress(Exception):
        _shown_path(cls.evaluate.__code__.co_filename)


def is_async(fn: Any) -> bool:
    """True for ``async def`` functions and methods."""
    return inspect.iscoroutinefunction(fn)
