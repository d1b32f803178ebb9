"""Running one dataset item: ``run`` then ``evaluate``, turned into a plain record.

Every executor calls into here, so an item's outcome is decided in exactly one place.
The record is built where the item ran (in a forked child, too) and holds only JSON-safe
data, so it can cross a pipe or a network without pickling user objects.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import pydantic

from . import _loops
from ._context import ItemContext, enter_item, exit_item
from ._errors import EvaluationError
from ._evaluator import BaseEvaluator, _shown_path
from ._results import (
    NO_ITEM_USAGE,
    AssertionRecord,
    AssertionResult,
    ErrorInfo,
    ItemResult,
    ItemStatus,
    ItemUsage,
    Stage,
    item_status,
    mean_score,
)
from ._serialize import json_size, placeholder, shrink, to_jsonable
from ._usage import ZERO_USAGE, Usage

if TYPE_CHECKING:
    # imported where an event loop is needed: a run of sync evaluators never loads asyncio
    # (nor the logging and ssl it brings), so each forked child has less to copy
    import asyncio

DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024


class HardStop(BaseException):
    """Raised by the signal handler on a second interrupt: stop at once, not per item."""


IN_PROCESS = (
    "(the items run in agenteval's process): use --executor fork to run such code in a "
    "process of its own"
)
"""What ``ProcessExit`` advises where items run in agenteval's own process."""


class ProcessExit(SystemExit):
    """Raised instead of ending the process when code run in it calls ``os._exit``."""

    def __init__(self, code: int, advice: str = IN_PROCESS) -> None:
        self.status = code
        super().__init__(
            f"os._exit({code}) was called, which would have ended the whole run {advice}"
        )


@contextmanager
def guarding_exit(
    threads: Collection[str] | None = None, advice: str = IN_PROCESS
) -> Iterator[None]:
    """While items run in this process (and the hooks around them): ``os._exit`` raises
    :class:`ProcessExit` in its caller, so that the run goes on to its verdict; an item
    that calls it is ``crashed``, as in a process of its own. Only in the thread that
    entered this, or those named in ``threads``: another thread's ``os._exit`` (a
    watchdog's) ends the process as it means to. Processes the items fork exit as they
    would."""
    real, ours = os._exit, os.getpid()
    guarded = {threading.current_thread().name} if threads is None else set(threads)

    def _exit(status: int) -> NoReturn:
        if os.getpid() != ours or threading.current_thread().name not in guarded:
            real(status)
        raise ProcessExit(status, advice)

    os._exit = _exit
    try:
        yield
    finally:
        os._exit = real


@dataclass(frozen=True)
class ItemTask:
    """One item to run: which evaluator, the item itself and where it sits in the dataset."""

    evaluator_id: str
    index: int
    id: str | int
    input: Any
    repeat: int = 0
    last: bool | None = None
    """Whether it is the last task of its evaluator, where the dataset can tell (None when
    it cannot): after it, the next task is another evaluator's, set up first."""
    cwd: str = ""
    """The working directory the evaluator's ``set_up`` left: the item starts there ("":
    wherever the process is)."""
    given: tuple[Any] | None = field(default=None, init=False, repr=False, compare=False)

    def recorded_input(self) -> Any:
        """``input`` as JSON-safe data, as it was before ``run``: what the record keeps (an
        agent that appends to its item's messages must not change what a resume compares).
        Taken when the item starts (where it runs: not in the fork parent) or, for an item
        that never reported, from the parent's untouched copy."""
        if self.given is None:
            object.__setattr__(self, "given", (to_jsonable(self.input),))
        assert self.given is not None
        return self.given[0]


@dataclass
class _Outcome:
    """What happened while the item ran, before it is turned into a record."""

    output: Any = None
    has_output: bool = False
    stage: Stage | None = None
    exc: BaseException | None = None


_loop: asyncio.AbstractEventLoop | None = None


_NEVER_AWAITABLE = frozenset({type(None), str, int, float, bool, dict, list})


def _awaitable(value: Any) -> bool:
    """``inspect.isawaitable``, without its checks for what ``run`` returns most."""
    return type(value) not in _NEVER_AWAITABLE and inspect.isawaitable(value)


def _drive(awaitable: Any, scope: contextvars.Context) -> Any:
    """Run a coroutine from sync code to its end on one event loop kept for this process,
    in the item's ``scope`` (what ``run`` sets, ``evaluate`` sees, as in one task)."""
    global _loop
    import asyncio

    if _loop is None or _loop.is_closed():
        _loop = _loops.own(asyncio.new_event_loop())
    loop = _loop

    def drive() -> Any:
        if sys.version_info >= (3, 11) and asyncio.iscoroutine(awaitable):
            return loop.run_until_complete(loop.create_task(awaitable, context=scope))
        # 3.10: its task runs in a copy of the scope (what an async run sets is lost)
        return scope.run(loop.run_until_complete, awaitable)

    return _beside_a_running_loop(drive)


def _beside_a_running_loop(call: Callable[[], Any]) -> Any:
    """``call()``, or, in a thread where an event loop runs already (``run_evaluations``
    called from a notebook, or from ``asyncio.run(main())``), ``call()`` in a thread of its
    own, waited for: a loop cannot run inside another."""
    import asyncio

    if asyncio._get_running_loop() is None:
        return call()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="agenteval-items-loop")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


_LEFT_TASKS_WAIT = 2.0
"""Seconds the tasks items left on the loop get to finish once cancelled."""


def close_loop() -> None:
    """Close the event loop :func:`_drive` may have created (end of run)."""
    global _loop
    loop, _loop = _loop, None
    if loop is not None and not loop.is_closed():
        _beside_a_running_loop(lambda: _close(loop))


def _close(loop: asyncio.AbstractEventLoop) -> None:
    import asyncio

    # tasks items left behind are cancelled, as the async executor's are: not destroyed
    # pending, their ``finally`` never run
    left = asyncio.all_tasks(loop)
    for task in left:
        task.cancel()
    if left:
        _, stubborn = loop.run_until_complete(asyncio.wait(left, timeout=_LEFT_TASKS_WAIT))
        for task in stubborn:  # it caught every cancellation: closed with the loop, quietly
            task._log_destroy_pending = False  # type: ignore[attr-defined]
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(_loops.release())
    loop.close()


def execute_item(
    evaluator: BaseEvaluator,
    task: ItemTask,
    *,
    max_output_bytes: int | None = None,
    ran: Callable[[Any], None] | None = None,
    spent: Callable[[ItemUsage], None] | None = None,
) -> ItemResult:
    """Run and evaluate one item synchronously (``async def`` methods are driven to the end).

    ``ran`` is called with the output once ``run`` returned, before ``evaluate``; ``spent``
    with the item's usage so far after each model call it accounts.
    """
    if task.cwd:
        return_to(task.cwd)
    task.recorded_input()  # before run can change it
    started, me = time.perf_counter(), os.getpid()
    ctx, token = enter_item(_reporting(spent))
    outcome = _Outcome()
    scope = contextvars.copy_context()  # the item's own: no context variable leaks to the next
    try:
        outcome.stage = "run"
        output = scope.run(evaluator.run, task.input)
        if _awaitable(output):
            output = _drive(output, scope)
        outcome.output, outcome.has_output = output, True
        if ran is not None:
            ran(output)
        outcome.stage = "evaluate"
        done = scope.run(evaluator.evaluate, output, task.input)
        if _awaitable(done):
            done = _drive(done, scope)
        _check_evaluated(ctx, done)
        outcome.stage = None
    except HardStop:
        raise
    except BaseException as exc:  # user code may raise anything, even SystemExit
        outcome.exc = exc
    finally:
        exit_item(token)
        if os.getpid() != me:  # a process the item forked without exec came back here
            end_forked_copy()
    return build_record(task, ctx, outcome, time.perf_counter() - started, max_output_bytes)


def end_forked_copy() -> NoReturn:
    """End a copy of the process that an item forked and that returned from the item's
    code: it would run the rest of the run a second time, and write its reports."""
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


async def aexecute_item(
    evaluator: BaseEvaluator,
    task: ItemTask,
    *,
    max_output_bytes: int | None = None,
    ran: Callable[[Any], None] | None = None,
    spent: Callable[[ItemUsage], None] | None = None,
) -> ItemResult:
    """Run and evaluate one item on the running event loop (the async executor); ``ran``
    and ``spent`` as for :func:`execute_item`."""
    import asyncio  # loaded already: this runs on its loop

    if task.cwd:  # (items in flight at once share the process's: the last one's)
        return_to(task.cwd)
    task.recorded_input()  # before run can change it
    started, me = time.perf_counter(), os.getpid()
    ctx, token = enter_item(_reporting(spent))
    outcome = _Outcome()
    try:
        outcome.stage = "run"
        output = evaluator.run(task.input)
        if _awaitable(output):
            output = await output
        outcome.output, outcome.has_output = output, True
        if ran is not None:
            ran(output)
        outcome.stage = "evaluate"
        done = evaluator.evaluate(output, task.input)
        if _awaitable(done):
            done = await done
        _check_evaluated(ctx, done)
        outcome.stage = None
    except (HardStop, asyncio.CancelledError):
        raise
    except BaseException as exc:
        if closed_with_loop(exc):
            raise
        outcome.exc = exc
    finally:
        exit_item(token)
        if os.getpid() != me:  # (one that awaits first ends there: _async's at-fork hook)
            end_forked_copy()
    return build_record(task, ctx, outcome, time.perf_counter() - started, max_output_bytes)


def closed_with_loop(exc: BaseException) -> bool:
    """Whether ``exc`` is the ``GeneratorExit`` of a coroutine closed once its event loop
    is gone (then it must go on up), not one the item's code raised (then it is the
    item's error)."""
    if not isinstance(exc, GeneratorExit):
        return False
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


def _recorded(ctx: ItemContext, done: Any) -> bool:
    """Whether ``done`` is what ``assert_that`` returned: a result, or a list of them
    (``return await asyncio.gather(self.aassert_that(...), ...)``)."""
    results = done if isinstance(done, (list, tuple)) else [done]  # ([]: gathered nothing)
    recorded = {id(result) for result in ctx.recorded}
    return all(isinstance(r, AssertionResult) and id(r) in recorded for r in results)


def _check_evaluated(ctx: ItemContext, done: Any) -> None:
    """Raise when ``evaluate`` left a check unrecorded: it returned one (``return
    StringContains(...).evaluate(output)``, ``return "refund" in output``) or never awaited
    an ``aassert_that``. Either way the item would have passed on nothing."""
    for checked in ctx.unawaited:
        if inspect.getcoroutinestate(checked) == inspect.CORO_CREATED:
            where = checked.cr_frame.f_locals.get("frame")
            line = f" (line {where.f_lineno})" if where is not None else ""
            checked.close()
            raise EvaluationError(
                f"evaluate() called aassert_that(){line} without awaiting it, so nothing was "
                f"checked: write `await self.aassert_that(...)`"
            )
    if done is None or _recorded(ctx, done):  # (``return self.assert_that(...)``)
        return
    if isinstance(done, AssertionResult):
        shown = f"an AssertionResult ({'passed' if done.passed else 'failed'}: {done.message})"
    else:
        shown = f"{type(done).__name__} {placeholder(done)['repr']}"
    shown = shown if len(shown) <= 100 else shown[:99] + "…"
    raise EvaluationError(
        f"evaluate() returned {shown}, which records nothing: check with "
        f"self.assert_that(assertion, output) (evaluate returns nothing)"
    )


_SERIALIZER = ItemResult.__pydantic_serializer__


def record_json(record: ItemResult) -> str:
    """The record as JSON, never failing on text UTF-8 cannot hold.

    Python strings may hold lone surrogates (``json.loads('"\\ud83d"')`` makes one);
    they become U+FFFD rather than costing the item its record.
    """
    return clean_record(record)[1]


def clean_record(record: ItemResult) -> tuple[ItemResult, str]:
    """The record, with U+FFFD for each lone surrogate in its text (a new record only if
    it has one), and its JSON: every copy of it then says the same, and prints."""
    try:
        # what model_dump_json() does, without its keyword handling (this is per item)
        return record, _SERIALIZER.to_json(record).decode()
    except ValueError:  # PydanticSerializationError
        scrubbed = ItemResult.model_validate(scrub(record.model_dump(mode="python")))
        return scrubbed, scrubbed.model_dump_json()


def scrub(value: Any) -> Any:
    """JSON-safe data with each lone surrogate in its text replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def fault_record(
    task: ItemTask, error: ErrorInfo, duration: float, status: ItemStatus = "error"
) -> ItemResult:
    """The record of an item that produced no record of its own (crashed, timed out, ...)."""
    return ItemResult(
        evaluator=task.evaluator_id,
        id=task.id,
        index=task.index,
        repeat=task.repeat,
        status=status,
        duration_s=duration,
        input=task.recorded_input(),
        error=error,
    )


CANCELLED = "the run was interrupted and the item did not finish within the grace period"
STOPPED = "a second interrupt stopped the run before the item finished"


def error_info(stage: Stage, exc: BaseException) -> ErrorInfo:
    """An exception as plain data: stage, type, message and the formatted traceback."""
    cls = type(exc)
    # builtins, our own errors and classes from evaluator files read better without a module
    plain = cls.__module__ == "builtins" or cls.__module__.startswith(
        ("_agenteval_eval_", "agenteval.")
    )
    name = cls.__qualname__ if plain else f"{cls.__module__}.{cls.__qualname__}"
    if cls is pydantic.ValidationError:  # defined in a private module: its public name
        name = "pydantic.ValidationError"
    elif cls.__module__.startswith("asyncio."):  # (asyncio.exceptions.CancelledError, ...)
        name = f"asyncio.{cls.__qualname__}"
    try:
        message = _validation_text(exc) if isinstance(exc, pydantic.ValidationError) else str(exc)
    except Exception:  # a broken __str__ must not lose the item
        message = f"<{cls.__qualname__}: str() failed>"
    tb_start = exc.__traceback__
    # the first frames are agenteval's (the runner calling set_up, run, ...): start at the
    # user's code, and point at the deepest user frame as the error's site
    while tb_start is not None and _is_ours(tb_start.tb_frame.f_code.co_filename):
        tb_start = tb_start.tb_next
    file = line = None
    walk = tb_start
    while walk is not None:
        filename = walk.tb_frame.f_code.co_filename
        if not _is_ours(filename) and not filename.startswith("<"):
            file, line = filename, walk.tb_lineno
        walk = walk.tb_next
    tb = scrub("".join(traceback.format_exception(cls, exc, tb_start or exc.__traceback__)))
    return ErrorInfo(
        stage=stage,
        type=name,
        message=_capped_text(scrub(message)),
        traceback=_capped_text(tb),
        file=_shown_path(file) if file else None,
        line=line,
    )


_DUMP_FRAME = re.compile(r'^\s+File "(.+)", line (\d+) in ', re.MULTILINE)


def stuck_at(error: ErrorInfo, dump: str) -> ErrorInfo:
    """``error`` of an item stopped from outside (a timeout), with where its code was: the
    stack ``faulthandler`` wrote on its way out (its thread that ran the item: the first
    one dumped, most recent call first), the deepest frame of the user's code as its site."""
    start = dump.find("Current thread ")
    if start < 0:
        return error
    block = dump[start:].split("\n\n", 1)[0]
    for file, line in _DUMP_FRAME.findall(block):
        if not _is_ours(file) and not file.startswith("<"):
            update = {"file": _shown_path(file), "line": int(line), "traceback": block}
            return error.model_copy(update=update)
    return error.model_copy(update={"traceback": block})


def _validation_text(exc: pydantic.ValidationError) -> str:
    """pydantic's many-line message in one line: the model, then each field, what is wrong
    and what it got (``AssertionResult: score: Input should be less than or equal to 1
    (got 5.0)``); the whole text stays in the traceback."""
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors[:3]:
        where = ".".join(str(part) for part in error["loc"])
        got = repr(error.get("input"))
        got = got if len(got) <= 60 else got[:59] + "…"
        parts.append(f"{where}: {error['msg']} (got {got})" if where else error["msg"])
    more = f"; and {len(errors) - 3} more" if len(errors) > 3 else ""
    return f"{exc.title}: {'; '.join(parts)}{more}"


ERROR_TEXT_LIMIT = 64 * 1024
"""Characters of an error's message, and of its traceback, kept in the record."""


def _capped_text(text: str) -> str:
    if len(text) <= ERROR_TEXT_LIMIT:
        return text
    return f"{text[:ERROR_TEXT_LIMIT]}… [{len(text) - ERROR_TEXT_LIMIT} more characters not kept]"


def _package_dir(module: Any) -> str:
    return os.path.dirname(os.path.abspath(str(module.__file__))) + os.sep


# pydantic's frames, too: a record or result the user's code builds fails validation in them
_NOT_USER_CODE = tuple(_package_dir(m) for m in (sys.modules[__package__], os, pydantic))


def _is_ours(filename: str) -> bool:
    """Frames of agenteval itself, the standard library or pydantic are not the user's
    call site."""
    return filename.startswith(_NOT_USER_CODE)


def _as_trajectory(output: Any) -> Any:
    """The output as a Trajectory when it is one or converts to one (an agent, a message
    list, a chat record: see ``as_trajectory``), else None.

    The trajectory module is imported only for an output that may be a conversation: plain
    runs must not pay for it. While it is not loaded, no Trajectory or Message exists, so
    what remains to look for is a list of message-like dicts (or SDK message objects) and
    an object with ``to_trajectory`` or ``messages``.
    """
    if isinstance(output, (str, int, float, bool, dict)) or output is None:
        return None
    module: Any = sys.modules.get("agenteval.trajectory._trajectory")
    if module is None:
        if isinstance(output, (list, tuple)):
            first = output[0] if output else None
            role = first.get("role") if isinstance(first, Mapping) else None
            if hasattr(first, "model_dump") and not isinstance(first, Mapping):
                role = getattr(first, "role", None)
            if not isinstance(role, str):
                return None
        elif not (hasattr(output, "to_trajectory") or hasattr(output, "messages")):
            return None
        from .trajectory import _trajectory as module
    return module.as_trajectory(output)


def build_record(
    task: ItemTask,
    ctx: ItemContext,
    outcome: _Outcome,
    duration: float,
    max_output_bytes: int | None,
) -> ItemResult:
    """Turn what the item produced into its JSON-safe :class:`ItemResult` — or, should
    that fail, an error record that says why: one item's odd output must never cost the
    run its other items and its report."""
    try:
        error = None
        if outcome.exc is not None:
            error = error_info(outcome.stage or "run", outcome.exc)
        output: Any = None
        truncated = False
        size: int | None = None
        spent = ZERO_USAGE
        if outcome.has_output:
            output, truncated, size, spent = recorded_output(outcome.output, max_output_bytes)
        agent_usage = ctx.spent_by_agent(spent)
        assertions = ctx.assertions
        if max_output_bytes is not None:
            assertions = [_capped(a, max_output_bytes) for a in assertions]
        return ItemResult(
            evaluator=task.evaluator_id,
            id=task.id,
            index=task.index,
            repeat=task.repeat,
            status="crashed"
            if isinstance(outcome.exc, ProcessExit)
            else item_status(assertions, error),
            score=mean_score(assertions),
            duration_s=duration,
            input=task.recorded_input(),
            output=output,
            truncated=truncated,
            original_size=size,
            assertions=assertions,
            error=error,
            stdout="",
            stderr="",
            usage=_usage(ctx, agent_usage),
        )
    except Exception as exc:
        failure = error_info("executor", exc)
        message = f"the item's record could not be built: {failure.message}"
        return fault_record(task, failure.model_copy(update={"message": message}), duration)


def recorded_output(raw: Any, max_output_bytes: int | None) -> tuple[Any, bool, int | None, Usage]:
    """What a record keeps of an output: its JSON-safe form (a trajectory's, when it holds a
    conversation), whether it was truncated, its original size then, and the agent usage a
    trajectory carries."""
    spent = ZERO_USAGE
    try:
        trajectory = _as_trajectory(raw)
    except Exception:  # its own to_trajectory() raised, say: recorded as it is
        trajectory = None
    if trajectory is not None:
        spent, raw = trajectory.usage(), trajectory
    output = to_jsonable(raw)
    if max_output_bytes is not None and not isinstance(output, (int, float, bool)):
        size = json_size(output)
        if size > max_output_bytes:
            return shrink(output, max_output_bytes), True, size, spent
    return output, False, None, spent


def _reporting(spent: Callable[[ItemUsage], None] | None) -> Callable[[ItemContext], None] | None:
    if spent is None:
        return None
    return lambda ctx: spent(_usage(ctx, ctx.spent_by_agent()))


def _usage(ctx: ItemContext, agent: Usage) -> ItemUsage:
    # (judge usage comes with judge calls; an agent's model adds retries of its own)
    if agent is ZERO_USAGE and not ctx.judge_calls and not ctx.retries:
        return NO_ITEM_USAGE
    return ItemUsage(
        agent=agent,
        judge=ctx.judge_usage,
        judge_calls=ctx.judge_calls,
        cached_calls=ctx.cached_calls,
        retries=ctx.retries,
        judge_by_model=ctx.judge_by_model,
    )


def _capped(record: AssertionRecord, limit: int) -> AssertionRecord:
    """An assertion whose context or message would bypass --max-output-bytes, cut down.

    (``IsValidJson`` keeps the whole actual value in its context, for one.)
    """
    if not record.context and len(record.message) <= limit:
        return record
    update: dict[str, Any] = {}
    if record.context:
        size = json_size(record.context)
        if size > limit:
            update["context"] = {"truncated": True, "original_size": size}
    if len(record.message) > limit:
        update["message"] = record.message[:limit] + "…"
    return record.model_copy(update=update) if update else record


def return_to(home: str) -> None:
    """Into ``home`` unless there already: each item starts in the folder its evaluator's
    ``set_up`` left, whatever an item before it in the same process did. Never fails (the
    folder may be gone)."""
    try:
        if os.getcwd() == home:
            return
    except OSError:  # the item removed the folder it moved to
        pass
    with contextlib.suppress(OSError):
        os.chdir(home)
