"""``run_evaluations``: discover, plan, execute, journal, report.

The plan is a lazy stream of tasks. Pulling it runs each evaluator's ``set_up`` and
``get_dataset`` when its turn comes, in the parent process, so the parallel executor forks
children that see the evaluator exactly as ``set_up`` left it, and items of different
evaluators can share one global concurrency limit. Records flow back through one
callback, which journals them, feeds drivers and finalises evaluators in discovery order.
"""

from __future__ import annotations

import datetime as _dt
import inspect
import os
import signal
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial, wraps
from pathlib import Path
from typing import Any, Literal, ParamSpec

from pydantic import BaseModel
from pydantic_core import to_json

from . import _interrupt
from ._cache_settings import cache_settings, using_cache
from ._config import Config, drivers_from, load_config, run_bootstrap
from ._context import current_item
from ._discovery import EvaluatorSpec, discover, select
from ._errors import (
    AgentEvalError,
    ConfigError,
    DatasetError,
    DiscoveryError,
    JournalError,
    SkipEvaluator,
    UsageError,
    described,
)
from ._evaluator import BaseEvaluator, is_async, prepare_call_sites
from ._executors._base import GRACE_TIMER, Executor, ExecutorOptions, Isolation, StopState
from ._item import (
    DEFAULT_MAX_OUTPUT_BYTES,
    HardStop,
    ItemTask,
    ProcessExit,
    clean_record,
    error_info,
    guarding_exit,
    record_json,
    return_to,
    scrub,
)
from ._journal import (
    DEFAULT_RUNS_DIR,
    MANIFEST_SCHEMA,
    Journal,
    find_run,
    fingerprint,
    latest_records_at,
    new_run_id,
)
from ._redact import RedactingStream, Redactor
from ._results import (
    ERROR_STATUSES,
    ErrorInfo,
    EvaluatorSummary,
    ItemResult,
    RunCost,
    RunSummary,
    Stage,
    SummaryBuilder,
)
from ._serialize import placeholder, to_jsonable, without_addresses
from ._version import __version__
from .outputs._base import OutputDriver, RunInfo

ExecutorName = Literal["auto", "inline", "fork", "async"]

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
EXIT_SIGNAL = {"SIGINT": 130, "SIGTERM": 143}


@dataclass
class _EvaluatorState:
    """One evaluator while the run goes: its instance, records and lifecycle."""

    spec: EvaluatorSpec
    position: int
    instance: BaseEvaluator | None = None
    builder: SummaryBuilder = field(default_factory=SummaryBuilder)
    """Replaced by one that keeps records on disk when the run is journaled."""
    pending: int = 0
    exhausted: bool = False
    finalised: bool = False
    error: ErrorInfo | None = None
    skip_reason: str | None = None
    started: float = 0.0
    ended: float = 0.0
    datasets: dict[str, str | None] = field(default_factory=dict)
    ready: bool = False
    complete: bool = True
    all_pulled: bool = False
    """Its dataset ended and every item was handed out: once all have a record, it is
    complete even if the run is interrupted before the generator finds out."""
    changed: int = 0
    """Items of a resumed run whose record is of another input: they run again."""
    cwd: str = ""
    """The working directory its ``set_up`` left: its items and ``tear_down`` run there."""


class _Drivers:
    """Calls every driver hook; a driver that raises is recorded, never fatal."""

    def __init__(
        self, drivers: Sequence[OutputDriver], redact: Callable[[str], str] | None = None
    ) -> None:
        self.drivers = list(drivers)
        self._redact = redact
        # (driver, hook, exception type) -> the first such failure, and how many there were:
        # an item_finished that fails on each item is one line, not one per item
        self._errors: dict[tuple[str, str, str], list[Any]] = {}

    @property
    def errors(self) -> list[str]:
        """One line per distinct failure, with how often it happened."""
        return [f"{e} ({n} times)" if n > 1 else e for e, n in self._errors.values()]

    def call(self, hook: str, *args: Any) -> None:
        self.call_some(hook, None, *args)

    def call_some(
        self, hook: str, which: Callable[[OutputDriver], bool] | None, *args: Any
    ) -> None:
        """Call ``hook`` on the drivers ``which`` picks (None: all), keeping their failures."""
        for driver in self.drivers:
            if which is None or which(driver):
                self.call_one(driver, hook, *args)

    def call_one(self, driver: OutputDriver, hook: str, *args: Any) -> None:
        """Call ``hook`` on ``driver``, keeping its failure. A driver of yours gets copies
        of the results: what it changes in them changes neither the verdict nor what the
        other drivers report."""
        if not _ours(driver):
            args = tuple(a.model_copy(deep=True) if isinstance(a, BaseModel) else a for a in args)
        try:
            getattr(driver, hook)(*args)  # (os._exit raises: run_evaluations guards it)
        except BaseException as exc:  # (rich exits on a broken stdout pipe)
            if isinstance(exc, (HardStop, _CutShort)):
                raise  # a signal: stop at once, or stop the drivers still finishing
            if isinstance(exc, KeyboardInterrupt) and _ctrl_c_raises():
                raise  # maybe the user's Ctrl-C: it stops the run
            kind = (type(driver).__name__, hook, type(exc).__name__)
            if kind in self._errors:
                self._errors[kind][1] += 1
                return
            error = f"{type(driver).__name__}.{hook}() "
            if isinstance(exc, ProcessExit):
                error += f"called os._exit({exc.status}): a driver must not end the process"
            else:
                error += f"raised {described(exc)}"
            self._errors[kind] = [self._redact(error) if self._redact else error, 1]


_MODEL_SETTINGS = {  # llm._factory's settings, named here: the model layer costs 0.3 s
    "AGENTEVAL_JUDGE_MODEL": ("Judge", "default_judge_model"),
    "AGENTEVAL_AGENT_MODEL": ("default_agent_model",),
}
"""Each setting, and the words by which an evaluator's source shows it may use it."""


def _build_models_named_in_the_environment(spec: EvaluatorSpec) -> None:
    """Build the judge and agent models ``AGENTEVAL_JUDGE_MODEL`` / ``AGENTEVAL_AGENT_MODEL``
    name, before the items of an evaluator that may use them are forked: built in each
    child (a judge made without a model, in ``evaluate``), each would import the SDK and
    make its first calls anew. An evaluator whose file names no judge is spared the cost.
    A bad setting is left to the items that use it to report."""
    wanted = [v for v in _MODEL_SETTINGS if os.environ.get(v, "").strip()]
    if not wanted:
        return
    try:
        source = Path(spec.file).read_text(encoding="utf-8", errors="replace")
    except OSError:
        source = ""
    wanted = [v for v in wanted if any(word in source for word in _MODEL_SETTINGS[v])]
    if not wanted:
        return
    from .llm import _factory

    builders = {
        _factory.JUDGE_MODEL_ENV: _factory.default_judge_model,
        _factory.AGENT_MODEL_ENV: _factory.default_agent_model,
    }
    for variable in wanted:
        with suppress(Exception):
            builders[variable]()


_IN_THE_PARENT = (
    "(set_up, get_dataset, tear_down and output drivers run in agenteval's process): "
    "raise an exception to report a problem"
)


def _ctrl_c_raises() -> bool:
    """Whether a Ctrl-C now raises KeyboardInterrupt (not so while the run's own signal
    handler is installed: a KeyboardInterrupt then is the code's own)."""
    return threading.current_thread() is threading.main_thread() and signal.getsignal(
        signal.SIGINT
    ) in (signal.default_int_handler, _interrupt.on_sigint)


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _iterable(cls: type) -> bool:
    """Whether ``iter()`` takes instances of ``cls`` (asked of the class: a stream opened
    to find out would be opened twice)."""
    return callable(getattr(cls, "__iter__", None)) or hasattr(cls, "__getitem__")


class _Ids:
    """Checks each item of a dataset and gives it its id: its ``id`` field, else its index."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset
        # the id as the journal writes it -> whether it was an explicit 'id' field, and the id
        self.seen: dict[str, tuple[bool, str | int]] = {}

    def __call__(self, item: Any, index: int) -> str | int:
        if type(item) is not dict and not isinstance(item, Mapping):  # dict: the fast way
            raise DatasetError(
                f"{self._where(index)} is a {type(item).__name__} ({_short(item)}): dataset "
                f"items must be dicts, e.g. {{'input': ...}}"
            )
        explicit = "id" in item
        value: str | int = item["id"] if explicit else index
        kind = type(value)
        if (
            kind is not int
            and kind is not str
            and (isinstance(value, bool) or not isinstance(value, (str, int)))
        ):
            raise DatasetError(
                f"{self._where(index)} has an 'id' of type {type(value).__name__} "
                f"({_short(value)}): use a string or an integer"
            )
        try:
            key = str(value)
        except ValueError:  # an int of more digits than Python writes out
            raise DatasetError(
                f"{self._where(index)} has an 'id' of more digits than Python writes out: "
                "use a string"
            ) from None
        journaled = _journaled(key)  # (ids that differ only in what is no text are one)
        earlier = self.seen.get(journaled)
        if earlier is not None:
            was_explicit, was = earlier
            if was_explicit and explicit and str(was) != key:
                raise DatasetError(
                    f"{self._where(index)}: ids {was!r} and {value!r} are one once written "
                    f"(what is not valid text, such as a lone surrogate from a file name, is "
                    f"written as U+FFFD): give items ids of valid text"
                )
            if was_explicit and explicit:
                raise DatasetError(
                    f"{self._where(index)}: duplicate item id {value!r}: ids must be unique "
                    f"within a dataset"
                )
            raise DatasetError(
                f"{self._where(index)}: id {value!r} is both an item's 'id' and another item's "
                f"index (items without an 'id' are numbered by position): give every item an "
                f"'id', or none"
            )
        self.seen[journaled] = (explicit, value)
        return value

    def _where(self, index: int) -> str:
        plain = f"item #{index}"
        try:  # (a dataset of yours: its describe may fail on the very item it is asked of)
            describe = getattr(self.dataset, "describe", None)
            return str(describe(index)) if callable(describe) else plain
        except Exception:
            return plain


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _alike(then: Any, now: Any) -> bool:
    """Whether two JSON values are equal, taking values that have no JSON form as equal
    when of the same type and ``repr`` but for memory addresses (``<Agent at 0x7f…>``):
    ``b'v1'`` is not ``b'v2'``, nor ``Decimal('1.00')`` ``Decimal('2.00')``."""
    if isinstance(then, dict) and isinstance(now, dict):
        if then.keys() != now.keys():
            return False
        if then.keys() == _PLACEHOLDER_KEYS:
            return bool(then["unserializable"] == now["unserializable"]) and without_addresses(
                str(then["repr"])
            ) == without_addresses(str(now["repr"]))
        return all(_alike(v, now[k]) for k, v in then.items())
    if isinstance(then, list) and isinstance(now, list):
        return len(then) == len(now) and all(_alike(a, b) for a, b in zip(then, now, strict=True))
    return type(then) is type(now) and bool(then == now)


_PLACEHOLDER_KEYS = placeholder(None).keys()


def _dataset_len(dataset: Any) -> int | None:
    hint = getattr(dataset, "length_hint", None)
    if callable(hint):
        try:
            value = hint()
            return int(value) if value is not None else None
        except Exception:
            return None
    try:
        return len(dataset)
    except Exception:
        return None


def _dataset_files(dataset: Any, home: str) -> dict[str, str | None]:
    """The dataset's file and its fingerprint, relative to the run's working directory
    (``home``) when inside it (so that a moved checkout can still be resumed)."""
    try:  # (a dataset of yours: a property that raises names no file)
        source = getattr(dataset, "path", None) or getattr(dataset, "source", None)
        if not source or not Path(str(source)).is_file():
            return {}
    except Exception:
        return {}
    path = Path(str(source)).resolve()
    try:
        shown = path.relative_to(Path(home).resolve()).as_posix()
    except ValueError:
        shown = str(path)
    return {shown: fingerprint(path)}


class _Run:
    """One invocation of run_evaluations, holding the per-run state."""

    def __init__(
        self,
        specs: list[EvaluatorSpec],
        drivers: _Drivers,
        options: ExecutorOptions,
        journal: Journal | None,
        previous: dict[tuple[str, str, int], tuple[ItemResult, int, int]],
        redact: Redactor,
        stop: StopState,
        forks: bool = False,
        unreached: dict[tuple[str, str, int], tuple[ItemResult, int, int]] | None = None,
    ) -> None:
        store = journal.records_path if journal is not None else None
        self.states = [
            _EvaluatorState(spec, i, builder=SummaryBuilder(store)) for i, spec in enumerate(specs)
        ]
        self.by_id = {s.spec.id: s for s in self.states}
        self.drivers = drivers
        self.options = options
        self.journal = journal
        self.journal_error: str | None = None  # why the journal stopped being written
        self.previous = previous
        # every record of the run resumed, until its item is reached: an interrupt keeps
        # the rest in the report, as the run holds them
        self.unreached = unreached or {}
        self.redact = redact
        self.stop = stop
        self.forks = forks  # items run in forked children: prepare what they would each do
        self.notices: list[str] = []  # for the report: what preparing them found
        self.home = os.getcwd()  # each set_up starts here; the run ends here
        self.summaries: list[EvaluatorSummary] = []
        self.started = 0  # items handed to the executor (a resume's kept ones are not)
        self._next_output = 0

    # -- planning --------------------------------------------------------------------
    def tasks(self) -> Iterator[tuple[BaseEvaluator, ItemTask]]:
        for state in self.states:
            if self.stop.requested:
                return
            instance = self._prepare(state)
            if instance is not None:
                yield from self._items(state, instance)
            state.exhausted = True
            self._maybe_finalise(state)

    def _fail(self, state: _EvaluatorState, stage: Stage, exc: BaseException) -> None:
        info = error_info(stage, exc)
        if isinstance(exc, AgentEvalError):
            info = info.model_copy(update={"traceback": ""})
        state.error = self._redact_error(info)

    def _redact_error(self, info: ErrorInfo) -> ErrorInfo:
        if not self.redact:
            return info
        return info.model_copy(
            update={"message": self.redact(info.message), "traceback": self.redact(info.traceback)}
        )

    def _prepare(self, state: _EvaluatorState) -> BaseEvaluator | None:
        state.started = time.perf_counter()
        return_to(self.home)  # not where the set_up before left
        try:
            instance = state.spec.cls()
        except HardStop:
            raise
        except BaseException as exc:
            self._fail(state, "set_up", _needs_arguments(state.spec.cls) or exc)
            return None
        state.instance = instance
        try:
            instance.set_up()
        except HardStop:
            raise
        except SkipEvaluator as exc:
            state.skip_reason = exc.reason or "skipped"
            return None
        except BaseException as exc:
            self._fail(state, "set_up", exc)
            return None
        if self.forks:
            prepare_call_sites(state.spec.cls)
            _build_models_named_in_the_environment(state.spec)
            clients = sys.modules.get("agenteval.llm._client")
            if clients is not None:  # models were built: rehearse their calls here
                cls = state.spec.cls
                self.notices += clients.warm_for_fork(is_async(cls.run) or is_async(cls.evaluate))
        state.cwd = _cwd(self.home)
        state.ready = True
        return instance

    def _items(
        self, state: _EvaluatorState, instance: BaseEvaluator
    ) -> Iterator[tuple[BaseEvaluator, ItemTask]]:
        ids: list[str | int] | None = None
        try:
            dataset = instance.get_dataset()
            returned = (
                "None (is a return missing?)"
                if dataset is None
                else _a(type(dataset).__name__)
                if isinstance(dataset, (Mapping, str, bytes)) or not _iterable(type(dataset))
                else None
            )
            if returned is not None:
                hint = "list of dicts or a Dataset, e.g. ArrayDataset([...]) or JsonDataset(path)"
                if inspect.iscoroutine(dataset):
                    dataset.close()  # (never awaited: Python would warn of it)
                    hint = "list of dicts (get_dataset is not awaited: run async code in it with asyncio.run)"
                raise DatasetError(
                    f"{state.spec.cls.__name__}.get_dataset() returned {returned}: return a {hint}"
                )
            check = _Ids(dataset)
            iterator = iter(dataset)
            if isinstance(dataset, Sized):
                # in memory anyway (streamed datasets have no len): check every item
                # before the first one spends tokens
                items = list(iterator)
                ids = [check(item, i) for i, item in enumerate(items)]
                iterator = iter(items)
        except HardStop:
            raise
        except BaseException as exc:
            self._fail(state, "get_dataset", exc)
            return
        state.datasets = _dataset_files(dataset, self.home)
        if self.journal is not None and state.datasets:
            try:
                _record_datasets(self.journal, [state])
            except (OSError, JournalError) as exc:  # (the manifest's rewrite says JournalError)
                self._journal_failed(exc)
        self.drivers.call(
            "evaluator_started", state.spec.id, self.redact(state.spec.name), _dataset_len(dataset)
        )
        runnable = self._runnable(state, iterator, ids, check)
        # one item ahead (the dataset's own iterator, never another evaluator's set_up):
        # each task says whether it is the evaluator's last
        ahead = next(runnable, None)
        while ahead is not None:
            following = next(runnable, None)
            index, item_id, item = ahead
            state.pending += 1
            self.unreached.pop((state.spec.id, _journaled(item_id), 0), None)
            yield (
                instance,
                ItemTask(
                    state.spec.id, index, item_id, item, last=following is None, cwd=state.cwd
                ),
            )
            ahead = following
        if self.stop.requested:
            state.complete = False

    def _runnable(
        self,
        state: _EvaluatorState,
        iterator: Iterator[Any],
        ids: list[str | int] | None,
        check: _Ids,
    ) -> Iterator[tuple[int, str | int, Any]]:
        """``(index, id, item)`` of each item to run, until the dataset ends (then
        ``all_pulled``), fails or the run is stopped. Items a resumed run has records of
        are recorded as they are passed."""
        spec_id, previous = state.spec.id, self.previous
        index = -1
        while not self.stop.requested:
            index += 1
            try:
                item = next(iterator)
            except StopIteration:
                state.all_pulled = True
                return
            except HardStop:
                raise
            except BaseException as exc:
                self._fail(state, "get_dataset", exc)
                return
            try:
                item_id = ids[index] if ids is not None else check(item, index)
            except DatasetError as exc:
                self._fail(state, "get_dataset", exc)
                return
            key = (spec_id, _journaled(item_id), 0)
            kept = previous.get(key) if previous else None
            if kept is not None:
                self.unreached.pop(key, None)
                done, offset, length = kept
                if not self._same_input(done.input, item):
                    # the item is not the one that ran: run it, as a fresh run would
                    state.changed += 1
                elif done.index != index:
                    # rows were added, removed or reordered (a --force resume): the record
                    # is journaled again at the item's new place, so the report keeps
                    # dataset order
                    state.pending += 1
                    self.on_result(done.model_copy(update={"index": index}))
                    continue
                else:
                    state.builder.add(done, at=(offset, length))
                    self.drivers.call("item_finished", done)
                    continue
            self.started += 1
            yield index, item_id, item

    def _same_input(self, recorded: Any, item: Any) -> bool:
        """Whether a record's ``input`` is that of ``item`` (as journaled: redacted)."""
        now = to_jsonable(item)
        try:
            text = to_json(now)
        except ValueError:  # text UTF-8 cannot hold: journaled with U+FFFD in its place
            now = scrub(now)
            text = to_json(now)
        if text == to_json(recorded):
            return True
        if self.redact:
            now = self.redact.values(now)
        return _alike(recorded, now)

    # -- results ---------------------------------------------------------------------
    def on_result(self, *results: ItemResult) -> None:
        """Record items that reached a terminal status: journal first, then the drivers."""
        cleaned = [clean_record(result) for result in results]  # (one copy for all)
        records = [record for record, _ in cleaned]
        texts = [text for _, text in cleaned]
        if self.redact:
            for i, text in enumerate(texts):
                if self.redact.in_json(text):
                    # its values, not its text: a secret may look like JSON or a field name
                    masked = self.redact.values(records[i].model_dump(mode="json"))
                    records[i] = ItemResult.model_validate(masked)
                    texts[i] = record_json(records[i])
        places = None
        if self.journal is not None and records:
            try:
                places = self.journal.append_many(texts)
            except OSError as exc:  # the disk is full, say: the records stay in memory
                self._journal_failed(exc)
        for i, result in enumerate(records):
            state = self.by_id[result.evaluator]
            if places is not None:
                state.builder.add(result, at=places[i])
            else:
                state.builder.add(result, raw=texts[i])
            state.pending -= 1
            self.drivers.call("item_finished", result)
            self._maybe_finalise(state)

    def _journal_failed(self, exc: OSError | JournalError) -> None:
        """Go on without the journal: the report is whole, but a resume would run again
        what was not journaled."""
        assert self.journal is not None
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        self.journal_error = (
            f"the journal could not be written ({why}: {self.journal.dir}): "
            f"the report is complete, but a resume would run again what it lacks"
        )
        self.journal = None

    def _maybe_finalise(self, state: _EvaluatorState) -> None:
        if not state.exhausted or state.pending > 0 or state.finalised:
            return
        state.finalised = True
        if not state.all_pulled:  # cut short (an interrupt in its set_up or get_dataset)
            self._add_unreached(state)
        if state.ready and state.instance is not None:
            try:
                with _working_in(state.cwd):
                    state.instance.tear_down()
            except HardStop:
                raise
            except BaseException as exc:
                if state.error is None:
                    self._fail(state, "tear_down", exc)
        state.ended = time.perf_counter()
        self._flush()

    def _summary(self, state: _EvaluatorState) -> EvaluatorSummary:
        cls, redact = state.spec.cls, self.redact  # (what the class says is code's text too)
        return state.builder.finish(
            name=redact(state.spec.name),
            file=state.spec.file,
            id=state.spec.id,
            description=redact(cls.description),
            tags=[redact(tag) for tag in cls.tags],
            wall_time=(state.ended or time.perf_counter()) - state.started
            if state.started
            else 0.0,
            error=state.error,
            skip_reason=redact(state.skip_reason) if state.skip_reason else None,
            complete=state.complete,
        )

    def _flush(self, *, drivers: bool = True) -> None:
        """Summarise the evaluators finished, in order, and hand each to the drivers."""
        while self._next_output < len(self.states) and self.states[self._next_output].finalised:
            summary = self._summary(self.states[self._next_output])
            self.summaries.append(summary)
            self._next_output += 1
            if drivers:
                self.drivers.call("output", summary)

    def close_unfinished(self, *, hard: bool) -> None:
        """After an interrupt: report every evaluator that did not finish, started or not.

        Each one whose ``set_up`` ran is torn down, unless the run was stopped at once
        (``hard``) or another interrupt comes meanwhile.
        """
        for state in self.states:
            if state.finalised:
                continue
            state.finalised = True
            state.complete = state.all_pulled and state.pending == 0
            if not state.all_pulled:
                self._add_unreached(state)
            if state.ready and state.instance is not None and not hard:
                try:
                    with _working_in(state.cwd):
                        state.instance.tear_down()
                except (HardStop, KeyboardInterrupt):
                    hard = True  # interrupted again: tear nothing more down
                except BaseException as exc:
                    if state.error is None:
                        self._fail(state, "tear_down", exc)
            state.ended = time.perf_counter()
        try:
            self._flush()
        except HardStop:  # interrupted again: the rest is summarised, not handed out
            self._flush(drivers=False)

    def _add_unreached(self, state: _EvaluatorState) -> None:
        """The records a resumed run holds of the items of ``state`` it did not reach (it
        was interrupted first): still the run's, as in its report."""
        for key in [k for k in self.unreached if k[0] == state.spec.id]:
            done, offset, length = self.unreached.pop(key)
            state.builder.add(done, at=(offset, length))
            self.drivers.call("item_finished", done)


def _journaled(item_id: str | int) -> str:
    """An item's id as its record in the journal has it: text UTF-8 can hold."""
    key = str(item_id)
    return key if key.isascii() else scrub(key)


def _needs_arguments(cls: type) -> DiscoveryError | None:
    """Why ``cls()`` failed, if it is that its ``__init__`` takes arguments."""
    try:
        inspect.signature(cls).bind()
    except TypeError as exc:
        return DiscoveryError(
            f"{cls.__qualname__}() {exc}: agenteval builds evaluators without arguments — "
            "give them defaults, or build what they need in set_up"
        )
    except ValueError:  # no signature to read
        pass
    return None


def _cwd(otherwise: str) -> str:
    """The working directory, or ``otherwise`` when it was removed."""
    try:
        return os.getcwd()
    except OSError:
        return otherwise


@contextmanager
def _working_in(folder: str) -> Iterator[None]:
    """In ``folder`` meanwhile (an evaluator's ``tear_down``), then back where the run was:
    the folder of the evaluator whose items it is handing out."""
    if not folder:
        yield
        return
    was = _cwd(folder)
    return_to(folder)
    try:
        yield
    finally:
        return_to(was)


@contextmanager
def _handling(handler: Callable[[str, int], None]) -> Iterator[None]:
    """SIGINT and SIGTERM go to ``handler`` (with the signal's name and number) meanwhile,
    when this is the main thread. A process forked meanwhile that inherits it (a
    multiprocessing helper started in set_up, say) does what it would have done without:
    the signal is not about the run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = os.getpid()

    def on_signal(signum: int, _frame: Any) -> None:
        if os.getpid() != ours:
            signal.signal(signum, previous[signal.Signals(signum)])
            os.kill(os.getpid(), signum)
            return
        handler(signal.Signals(signum).name, signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextmanager
def _redacted_prints(redact: Redactor, drivers: Sequence[OutputDriver]) -> Iterator[None]:
    """What items print in this process is masked on its way to the console; and goes to
    stderr when stdout is the JSON report's alone, so that it stays a document a pipe can
    read."""
    streams = {name: getattr(sys, name) for name in ("stdout", "stderr")}
    masked = {
        name: RedactingStream(stream, redact)
        for name, stream in streams.items()
        if stream is not None
    }
    if "stderr" in masked and _json_on_stdout(drivers):
        masked["stdout"] = masked["stderr"]
    for name, stream in masked.items():
        setattr(sys, name, stream)
    try:
        yield
    finally:
        for name, stream in masked.items():
            if getattr(sys, name) is stream:  # (unless code replaced it meanwhile)
                setattr(sys, name, streams[name])


def _json_on_stdout(drivers: Sequence[OutputDriver]) -> bool:
    """Whether stdout is the JSON report's alone (``--output-json /dev/stdout`` with no
    console writing there)."""
    from .outputs import ConsoleOutput, JsonOutput

    if any(isinstance(d, ConsoleOutput) and d.stream is None for d in drivers):
        return False
    return any(isinstance(d, JsonOutput) and d.on_stdout() for d in drivers)


@contextmanager
def _signals(stop: StopState, on_first: Callable[[str], None]) -> Iterator[None]:
    """While items run. First SIGINT/SIGTERM: stop scheduling, let in-flight items finish
    within the grace period. Second: stop at once (raises HardStop in the main thread)."""
    timer: list[threading.Timer] = []
    over = threading.Event()

    def handler(name: str, signum: int) -> None:
        if stop.requested is None:
            stop.requested = name

            # in-process items cannot be killed: re-signal ourselves when grace runs out,
            # and again while an item's code still holds the run (its cleanup blocking as
            # the stop unwinds it: a thread pool waiting for a hung call), as a user would
            def expire() -> None:
                stop.expired = True
                os.kill(os.getpid(), signum)
                while not over.wait(_AGAIN) and stop.in_item:
                    os.kill(os.getpid(), signum)

            t = threading.Timer(stop.grace + stop.backstop, expire)
            t.name, t.daemon = GRACE_TIMER, True
            t.start()
            timer.append(t)
            on_first(name)
            return
        stop.hard = True
        if stop.holding:  # (raised once what is being taken in is kept)
            stop.held_stop = name
            return
        raise HardStop(name)

    try:
        with _handling(handler):
            yield
    finally:
        over.set()
        for t in timer:
            t.cancel()


_AGAIN = 2.0
"""Seconds between two stops at once sent to an item's code still running after the first."""


class _CutShort(BaseException):
    """Raised in a user driver's ``finish_run`` by the first signal after the items."""


def _while_starting(stop: StopState, name: str, _signum: int) -> None:
    """A signal while the drivers start: the run is interrupted before any item starts
    (and told so once they have started); a second stops it at once."""
    if stop.requested is not None:
        stop.hard = True
        raise HardStop(name)
    stop.requested = name


def _reporting_signals(
    stop: StopState, in_user_drivers: Callable[[], bool], too_late: Callable[[], bool]
) -> AbstractContextManager[None]:
    """Once the items are done, while the run is reported. A first SIGINT/SIGTERM makes the
    run interrupted and cuts short the user's drivers still finishing (raises _CutShort
    while ``in_user_drivers()``); agenteval's report files and the console still finish.
    A second stops at once (raises HardStop). Once it is ``too_late()`` (the console prints
    the verdict), a signal changes the verdict no more: the command ends with it."""
    late: list[str] = []

    def handler(name: str, _signum: int) -> None:
        if too_late() and not late:
            late.append(name)
            return
        if stop.requested is not None or late:
            raise HardStop(name)
        stop.requested = name
        if in_user_drivers():
            raise _CutShort(name)

    return _handling(handler)


def _choose_executor(
    name: ExecutorName, options: ExecutorOptions, specs: list[EvaluatorSpec], notices: list[str]
) -> Executor:
    if name == "auto":
        # a timeout can only be enforced across a process boundary
        forks = options.concurrency > 1 or options.timeout or options.isolation == "worker"
        name = "fork" if forks else "inline"
    if name == "inline" and options.concurrency > 1:
        notices.append(
            f"--executor inline runs one item at a time: -c {options.concurrency} was not used"
        )
    if name == "inline" and options.timeout:
        raise UsageError(
            "--timeout needs a process per item: use --executor fork (or leave --executor unset)"
        )
    if name != "fork" and options.isolation == "worker":
        raise UsageError(
            f"--isolation worker is for the fork executor, not {name}: leave --executor unset "
            f"or use --executor fork"
        )
    if name == "async":
        sync = [s.cls.__name__ for s in specs if not is_async(s.cls.run)]
        if sync:
            raise UsageError(
                f"--executor async needs `async def run`; not async: {', '.join(sync)} "
                f"(use --executor fork for sync evaluators)"
            )
        from ._executors._async import AsyncExecutor

        return AsyncExecutor(options)
    if name == "fork":
        if not hasattr(os, "fork"):
            notices.append("fork is not available on this platform: running items sequentially")
            name = "inline"
        else:
            from ._executors._fork import ForkExecutor

            return ForkExecutor(options)
    from ._executors._inline import InlineExecutor

    return InlineExecutor(options)


def _exit_code(
    summaries: list[EvaluatorSummary],
    *,
    min_success_rate: float,
    max_errors: int,
    driver_errors: list[str],
    interrupted: str | None,
    journal_failed: bool = False,
) -> int:
    if interrupted:
        return EXIT_SIGNAL.get(interrupted, 130)
    errored = sum(s.errored + s.cancelled for s in summaries)
    broken = driver_errors or journal_failed or any(s.error is not None for s in summaries)
    if broken or errored > max_errors:
        return EXIT_ERROR
    for s in summaries:
        if s.status == "skipped" or s.total == 0:
            continue
        if s.success_rate < min_success_rate:
            return EXIT_FAILED
    return EXIT_OK


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _verdict_notices(summary: RunSummary, min_success_rate: float, max_errors: int) -> list[str]:
    """What the verdict let pass that a reader of its last line might not expect (of a run
    that was not interrupted: then what did not run is what the resume hint is about)."""
    if summary.interrupted:
        return []
    notices = [
        f"{s.name} has no items (its dataset is empty): nothing of it was evaluated"
        for s in summary.evaluators
        if s.total == 0 and s.status not in ("skipped", "error")
    ]
    failed = summary.failed
    if failed and summary.exit_code == EXIT_OK:
        notices.append(
            f"{_count(failed, 'item')} failed, and the run passed all the same: every "
            f"evaluator's success rate reached --min-success-rate {min_success_rate:g}"
        )
    if summary.exit_code == EXIT_FAILED and min_success_rate < 1.0:  # (the overall rate may
        # reach it: say which evaluator did not)
        notices.extend(
            f"{s.name}'s success rate {s.success_rate:.1%} is below --min-success-rate "
            f"{min_success_rate:g}"
            for s in summary.evaluators
            if s.status != "skipped" and s.total and s.success_rate < min_success_rate
        )
    errored = summary.errored
    if errored and summary.exit_code != EXIT_ERROR:
        notices.append(
            f"{_count(errored, 'item')} errored, timed out or crashed, within --max-errors "
            f"{max_errors}"
        )
    return notices


def _manifest(
    run_id: str,
    specs: list[EvaluatorSpec],
    config: Config,
    argv: list[str],
    redact: Redactor,
    imported: set[str],
) -> dict[str, Any]:
    return {
        "schema_version": MANIFEST_SCHEMA,
        "run_id": run_id,
        "agenteval_version": __version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": [redact(a) for a in argv],
        "cwd": os.getcwd(),
        "python": sys.version.split()[0],
        "config": {"path": config.path, "sha256": config.sha256},
        "evaluators": _evaluator_entries(specs),
        "modules": _project_modules(specs, imported),
    }


def _project_modules(specs: list[EvaluatorSpec], imported: set[str]) -> dict[str, str]:
    """The fingerprints of the project's own Python files that loading the evaluator files
    imported (``imported``: module names), a helper beside them or the agent's code: a
    change to one changes what the items do, as an edit to an evaluator file does. Files
    in the working directory or an evaluator's folder count; the evaluator files
    themselves (fingerprinted on their own), agenteval, the standard library and
    installed packages do not."""
    here = Path.cwd().resolve()
    roots = {here, *(Path(spec.file).resolve().parent for spec in specs)}
    skip = {Path(spec.file).resolve() for spec in specs}
    outside = {Path(__file__).resolve().parent} | {
        Path(p).resolve()
        for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    }
    found: dict[str, str] = {}
    for name in imported:
        source = getattr(sys.modules.get(name), "__file__", None)
        if name == "__main__" or not isinstance(source, str) or not source.endswith(".py"):
            continue
        path = Path(source).resolve()
        if (
            path in skip
            or not any(root in path.parents for root in roots)
            or any(folder == path or folder in path.parents for folder in outside)
            or {"site-packages", "dist-packages"} & set(path.parts)
        ):
            continue
        shown = path.relative_to(here).as_posix() if here in path.parents else str(path)
        digest = fingerprint(path)
        if digest:
            found[shown] = digest
    return dict(sorted(found.items()))


def _evaluator_entries(specs: list[EvaluatorSpec]) -> dict[str, dict[str, Any]]:
    return {s.id: {"file": s.file, "sha256": fingerprint(s.file), "datasets": {}} for s in specs}


def _check_unchanged(
    manifest: dict[str, Any],
    specs: list[EvaluatorSpec],
    *,
    retrying: bool = False,
    everything: bool = False,
) -> None:
    """Refuse to resume a run whose evaluator files or datasets changed since, or that
    holds evaluators not selected now although nothing was left out (``everything``: no
    -k or --tag) — their file was deleted, or the class renamed."""
    changes: list[str] = []
    missing: list[str] = []
    recorded = manifest.get("evaluators", {})
    if not isinstance(recorded, dict) or not all(isinstance(e, dict) for e in recorded.values()):
        raise JournalError(
            f"The manifest of run {manifest.get('run_id')!r} is damaged ('evaluators' is not "
            f"a mapping of evaluator entries): start a new run"
        )
    for spec in specs:
        entry = recorded.get(spec.id)
        if entry is None:
            missing.append(spec.id)
            continue
        if entry.get("sha256") != fingerprint(spec.file):
            changes.append(f"{spec.file} changed")
        datasets = entry.get("datasets") or {}
        if not isinstance(datasets, dict):
            raise JournalError(
                f"The manifest of run {manifest.get('run_id')!r} is damaged (the datasets of "
                f"{spec.id} are not a mapping of files to fingerprints): start a new run"
            )
        for path, digest in datasets.items():
            now = fingerprint(path)
            if now != digest:
                changes.append(f"dataset {path} {'is gone' if now is None else 'changed'}")
    modules = manifest.get("modules") or {}
    for path, digest in modules.items() if isinstance(modules, dict) else ():
        now = fingerprint(path)
        if now != digest:
            changes.append(
                f"{path} (imported by the evaluators) {'is gone' if now is None else 'changed'}"
            )
    started_in = manifest.get("cwd")
    moved = isinstance(started_in, str) and started_in != os.getcwd()
    if everything and not moved:  # (from another folder, every id differs: said below)
        # its file deleted, or a file run now that no longer defines it (a file not given
        # now is not selected: a notice says so)
        files, ids = {spec.file for spec in specs}, {spec.id for spec in specs}
        gone = sorted(
            e
            for e, entry in recorded.items()
            if e not in ids
            and (entry.get("file") in files or not Path(str(entry.get("file"))).exists())
        )
        changes.extend(f"{e} is gone (its file was removed, or no longer defines it)" for e in gone)
    if changes or missing:
        elsewhere = (
            f" (it ran in {started_in}: evaluators are known by their path from there, so "
            f"resume it from that folder)"
            if moved and missing  # (a file that changed changed wherever it is run from)
            else ""
        )
        why = [f"{'; '.join(sorted(set(changes)))} since it ran"] if changes else []
        if missing:
            why.append(
                f"{', '.join(missing)} {'was' if len(missing) == 1 else 'were'} not in it "
                f"(new since, or not selected then: select what it ran, with its -k or --tag)"
            )
        raise JournalError(
            f"Cannot {'retry the errors of' if retrying else 'resume'} run "
            f"{manifest.get('run_id')!r}: {'; '.join(why)}{elsewhere}. Start a new run, or "
            f"pass --force to {'retry' if retrying else 'resume'} anyway"
        )


def _accept_changes(entries: dict[str, Any], specs: list[EvaluatorSpec]) -> None:
    """Record the selected evaluators' files and datasets as they are now (a ``--force``
    resume): what changed before it is not refused again."""
    for spec in specs:
        entry = entries.get(spec.id)
        if not isinstance(entry, dict):
            continue
        entry["sha256"] = fingerprint(spec.file)
        datasets = entry.get("datasets")
        if isinstance(datasets, dict):  # (a dataset moved: its new file is added when read)
            now = {path: fingerprint(path) for path in datasets}
            entry["datasets"] = {path: digest for path, digest in now.items() if digest}


def _as_paths(paths: Any) -> list[str | Path | type[BaseEvaluator]]:
    """``paths`` as a list: one path or class alone is taken for a list of it (a string
    would otherwise be read one letter at a time)."""
    if isinstance(paths, (str, Path, type, BaseEvaluator)):
        paths = [paths]
    try:
        listed = list(paths)
    except TypeError:
        raise UsageError(
            f"run_evaluations: paths must be files, folders or evaluator classes, got "
            f"{type(paths).__name__}"
        ) from None
    for entry in listed:
        if isinstance(entry, BaseEvaluator):
            raise UsageError(
                f"run_evaluations: pass the class {type(entry).__name__}, not an instance of it: "
                f"agenteval builds it (with no arguments)"
            )
        if not isinstance(entry, (str, Path, type)):
            raise UsageError(
                f"run_evaluations: paths must be files, folders or evaluator classes, got "
                f"{type(entry).__name__} {entry!r}"
            )
    return listed


_P = ParamSpec("_P")

_RUNNING: list[tuple[int, int]] = []
"""The runs going on, as (process, thread): a run nested in an item of another is fine."""
_RUNNING_LOCK = threading.Lock()


def _one_run_per_process(run: Callable[_P, RunSummary]) -> Callable[_P, RunSummary]:
    """Refuse a run while another thread of this process runs one: the two would share
    the process's signal handlers, its ``os._exit`` guard and its subprocess tracking."""

    @wraps(run)
    def one(*args: _P.args, **kwargs: _P.kwargs) -> RunSummary:
        me = (os.getpid(), threading.get_ident())
        with _RUNNING_LOCK:
            nested = current_item() is not None  # (an item's code, in whatever thread)
            if not nested and any(other[0] == me[0] and other != me for other in _RUNNING):
                raise UsageError(
                    "run_evaluations is already running in another thread of this process: "
                    "run them one after another, or each in a process of its own"
                )
            _RUNNING.append(me)
        try:
            return run(*args, **kwargs)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.remove(me)

    return one


def _outermost() -> bool:
    """Whether the run going on is the only one of this process (none nested in it)."""
    with _RUNNING_LOCK:
        return sum(1 for pid, _ in _RUNNING if pid == os.getpid()) == 1


@_one_run_per_process
def run_evaluations(
    paths: Iterable[str | Path | type[BaseEvaluator]] = ("evaluators",),
    *,
    concurrency: int = 1,
    executor: ExecutorName = "auto",
    config: str | Path | None = None,
    outputs: Sequence[OutputDriver] | None = None,
    filter: str | None = None,
    tags: Sequence[str] = (),
    bootstrap: str | Path | None = None,
    min_success_rate: float = 1.0,
    max_errors: int = 0,
    timeout: float | None = None,
    grace: float = 10.0,
    max_output_bytes: int | None = DEFAULT_MAX_OUTPUT_BYTES,
    isolation: Isolation = "item",
    resume: str | bool | None = None,
    retry_errors: str | None = None,
    force: bool = False,
    runs_dir: str | Path | None = None,
    journal: bool = True,
    cache: bool = True,
    extra_outputs: Sequence[OutputDriver] = (),
    notices: list[str] | None = None,
    argv: Sequence[str] | None = None,
    verbose: bool | None = None,
    progress: bool | None = None,
) -> RunSummary:
    """Run evaluators and report them, exactly as ``agenteval run`` does.

    ``paths`` are files, folders or evaluator classes. ``outputs`` replaces the drivers of
    the config file; ``extra_outputs`` adds to them; ``verbose`` / ``progress`` override
    those settings of every console driver. Returns the :class:`RunSummary`, whose
    ``exit_code`` is the CLI's verdict. Raises :class:`~agenteval.AgentEvalError` for
    misuse (bad paths, config, options).
    """
    if concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {concurrency}")
    # (written so that NaN, which every comparison refuses, is refused too)
    if not 0.0 <= min_success_rate <= 1.0:
        raise UsageError(f"--min-success-rate must be between 0 and 1, got {min_success_rate}")
    if not 0 <= grace < float("inf"):  # (inf: the grace timer cannot be set)
        raise UsageError(f"--grace must be 0 or more seconds, got {grace}")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout must be positive, got {timeout}")
    if resume and retry_errors:
        raise UsageError("use either --resume or --retry-errors, not both")
    if force and not (resume or retry_errors):
        raise UsageError(
            "--force only applies to --resume or --retry-errors: drop it, or add one of them"
        )
    if executor not in ("auto", "inline", "fork", "async"):
        raise UsageError(f"--executor must be one of auto, inline, fork, async, got {executor!r}")
    paths = _as_paths(paths)
    notices = notices if notices is not None else []
    # config, bootstrap and evaluators may import the project's own modules
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if bootstrap is not None:
        run_bootstrap(bootstrap)
    cfg = load_config(config)
    drivers = (
        drivers_from(outputs, "run_evaluations", "outputs")
        if outputs is not None
        else list(cfg.outputs)
    )
    drivers.extend(drivers_from(extra_outputs, "run_evaluations", "extra_outputs"))
    if not drivers and outputs is None:
        raise ConfigError(
            f"{cfg.path}: 'output' is an empty list, so the run would report nothing (not "
            f"even its verdict): list a driver, e.g. output = [ConsoleOutput]"
        )
    _apply_console_flags(
        drivers, verbose, progress, str(cfg.path) if outputs is None else "run_evaluations"
    )
    _discard_earlier_reports(drivers)
    before = set(sys.modules)  # (what the config and its drivers imported is no item's)
    found = discover(paths)
    specs = select(found, filter, tags)
    imported = set(sys.modules) - before
    if not specs:
        where = ", ".join(str(p) for p in paths)
        if filter or tags:
            known = sorted({tag for spec in found for tag in spec.cls.tags})
            raise DiscoveryError(
                f"No evaluator in {where} matches "
                + " and ".join(
                    ([f"-k {filter!r}"] if filter else []) + [f"--tag {t!r}" for t in tags]
                )
                + (f" (their tags: {', '.join(known)})" if tags and known else "")
            )
        raise DiscoveryError(
            f"No evaluators found in {where}: define a BaseEvaluator subclass in a .py file "
            f"(files starting with '_' are skipped)"
        )
    if isolation not in ("item", "worker"):
        raise UsageError(f"--isolation must be item or worker, got {isolation!r}")
    options = ExecutorOptions(
        concurrency=concurrency,
        timeout=timeout,
        max_output_bytes=max_output_bytes,
        isolation=isolation,
    )
    chosen = _choose_executor(executor, options, specs, notices)

    redact = Redactor.from_environ()
    runs = Path(runs_dir) if runs_dir is not None else DEFAULT_RUNS_DIR
    previous: dict[tuple[str, str, int], tuple[ItemResult, int, int]] = {}
    unreached = previous
    resumed = nothing_to_retry = partial_run = False
    argv = list(argv) if argv is not None else list(sys.argv)
    jr: Journal | None = None
    if resume or retry_errors:
        run_dir = find_run(
            runs,
            retry_errors or (resume if isinstance(resume, str) else None),
            {spec.id for spec in specs},
        )
        jr = Journal.reopen(run_dir)
        try:  # refused: the run's lock goes at once (a caller may try again)
            if not force:
                _check_unchanged(
                    jr.manifest,
                    specs,
                    retrying=bool(retry_errors),
                    # (classes passed in code are a selection of their own)
                    everything=not (
                        filter or tags or any(isinstance(p, type) or "::" in str(p) for p in paths)
                    ),
                )
            # a record counts as done unless it was cancelled (or, retrying, it errored)
            redo = {"cancelled", *ERROR_STATUSES} if retry_errors else {"cancelled"}
            latest = latest_records_at(run_dir)
            entries = jr.manifest.setdefault("evaluators", {})
            new = [s for s in specs if s.id not in entries]  # (--force let them in)
            if new:  # a later resume selecting them knows them
                entries.update(_evaluator_entries(new))
            if force:  # the changes are accepted: a later resume compares with the files now
                _accept_changes(entries, specs)
                modules = jr.manifest.get("modules")  # (those another selection imports kept)
                jr.manifest["modules"] = {
                    **(modules if isinstance(modules, dict) else {}),
                    **_project_modules(specs, imported),
                }
            if new or force:
                jr.save_manifest()
        except BaseException:
            jr.close()
            raise
        previous = {k: v for k, v in latest.items() if v[0].status not in redo}
        # (forced, the records may be of rows the dataset no longer has)
        unreached = {} if force else latest
        then = jr.manifest.get("config")
        if isinstance(then, dict) and then.get("sha256") != cfg.sha256:
            notices.append(
                f"the config ({cfg.path or then.get('path') or 'none'}) changed since run "
                f"{jr.manifest.get('run_id', run_dir.name)} began: the items it finished "
                f"ran under the one before"
            )
        selected = {s.id for s in specs}  # (of the evaluators selected: -k, --tag)
        nothing_to_retry = bool(retry_errors) and not any(
            key[0] in selected for key in latest.keys() - previous.keys()
        )
        left_out = sorted(set(jr.manifest.get("evaluators") or {}) - selected)
        partial_run = bool(left_out)
        if left_out:
            notices.append(
                f"only the selected evaluators are resumed; run "
                f"{jr.manifest.get('run_id', run_dir.name)} also holds {', '.join(left_out)}: "
                f"what did not finish there needs a resume that selects them"
            )
        run_id = jr.manifest.get("run_id", run_dir.name)
        resumed = True
    else:
        run_id = new_run_id()
        if journal:
            jr = Journal.create(runs, run_id, _manifest(run_id, specs, cfg, argv, redact, imported))
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    stop = StopState(grace=grace)
    driver_set = _Drivers(drivers, redact)
    run = _Run(
        specs, driver_set, options, jr, previous, redact, stop, chosen.name == "fork", unreached
    )
    # os._exit in a driver hook (or anything else of the parent's) is that code's failure,
    # not the end of the run: under fork too, where items are no longer in this process
    with guarding_exit(advice=_IN_THE_PARENT):
        with _handling(partial(_while_starting, stop)):  # a driver's start_run may be slow
            driver_set.call(
                "start_run",
                RunInfo(
                    id=run_id,
                    started_at=started_at,
                    evaluators=[redact(s.name) for s in specs],
                    concurrency=concurrency,
                    executor=chosen.name,
                    isolation=options.isolation,
                    run_dir=str(jr.dir) if jr else None,
                    resumed=resumed,
                    retrying=bool(retry_errors),
                    argv=[redact(a) for a in argv],
                ),
            )
        hard = False
        try:  # the journal, and the run's lock, are held until the run is reported
            announce = partial(driver_set.call, "run_interrupted")
            with (
                _signals(stop, lambda name: announce(name, grace)),
                using_cache(
                    enabled=cache,
                    directory=cache_settings().directory,  # (configure_cache's)
                ),
            ):
                if stop.requested:  # it came while the drivers started: no item starts
                    announce(stop.requested, grace)
                try:
                    with _redacted_prints(redact, drivers):
                        chosen.run(run.tasks(), run.on_result, stop)
                except HardStop:
                    # the grace period's end stops the items, not the tearing down: only a
                    # second signal means "stop now"
                    hard = not stop.expired
                finally:
                    return_to(run.home)
            finishing: list[int] = []  # the turn of the drivers finishing now
            verdict: list[bool] = []  # the console is printing the verdict, or has
            with _reporting_signals(stop, lambda: finishing == [0], lambda: bool(verdict)):
                if stop.requested or hard:
                    run.close_unfinished(hard=hard)
                interrupted = stop.requested
                if nothing_to_retry and not run.started:
                    notices.append(
                        f"no item of run {run_id}{' of the evaluators selected' if partial_run else ''} "
                        f"had errored, timed out or crashed: none was retried"
                    )
                notices.extend([*run.notices, *chosen.notices])
                if run.journal_error:
                    notices.append(run.journal_error)
                notices.extend(
                    f"{state.changed} item{'s' if state.changed != 1 else ''} of {state.spec.name} "
                    f"differed from what run {run_id} recorded (another input under the same id): "
                    f"run again"
                    for state in run.states
                    if state.changed
                )
                summary = RunSummary(
                    id=run_id,
                    started_at=started_at,
                    duration_s=time.perf_counter() - t0,
                    agenteval_version=__version__,
                    interrupted=interrupted,
                    evaluators=run.summaries,
                    notices=list(notices),
                    run_dir=str(jr.dir) if jr else None,
                )
                if cfg.prices:
                    summary.cost = _cost(summary, cfg.prices)
                summary.exit_code = _exit_code(
                    run.summaries,
                    min_success_rate=min_success_rate,
                    max_errors=max_errors,
                    driver_errors=driver_set.errors,
                    interrupted=interrupted,
                    journal_failed=run.journal_error is not None,
                )
                summary.notices.extend(_verdict_notices(summary, min_success_rate, max_errors))
                # the user's own drivers finish first, then the report files, then the console:
                # what those write (the exit code, the driver errors) includes every earlier one's
                # failure, and an interrupt that came meanwhile
                try:
                    for turn in range(3):
                        finishing[:] = [turn]
                        if turn == 2:
                            verdict.append(True)
                        try:
                            for driver in driver_set.drivers:
                                if _finishes_in(turn, driver):  # (one at a time: each is told
                                    _settle(summary, driver_set, stop)  # who failed before it)
                                    driver_set.call_one(driver, "finish_run", summary)
                        except _CutShort as exc:
                            summary.notices.append(
                                f"{exc} came while the output drivers finished: the drivers of yours "
                                f"still finishing were stopped; agenteval's report files are complete"
                            )
                        finally:
                            finishing.clear()
                        if turn == 1 and stop.requested and not summary.interrupted:
                            # it came while agenteval's report files were written: what they
                            # say must be the verdict the run exits with
                            _settle(summary, driver_set, stop)
                            summary.notices.append(
                                f"{stop.requested} came while agenteval's report files were "
                                f"written: they were written again, with the run interrupted (one "
                                f"sent into a pipe or device keeps the first)"
                            )
                            driver_set.call_some("finish_run", partial(_finishes_in, 1), summary)
                except HardStop:
                    pass  # a second signal: stop reporting at once (the journal is complete)
                _settle(summary, driver_set, stop)
                if _outermost():
                    # the verdict is final: a signal after the run's handlers are gone ends
                    # the command with it (under the CLI's handlers; a library caller's are
                    # its own; a run nested in an item is not the command's)
                    _interrupt.settle(summary.exit_code)
            return summary
        finally:
            if jr is not None:
                jr.close()
            _stop_live(drivers)


def _settle(summary: RunSummary, drivers: _Drivers, stop: StopState) -> None:
    """The verdict as it stands: interrupted if a signal came since, an error if a driver
    failed."""
    if stop.requested and not summary.interrupted:
        summary.interrupted = stop.requested
        summary.exit_code = EXIT_SIGNAL.get(stop.requested, 130)
    summary.driver_errors = list(drivers.errors)
    if drivers.errors and summary.exit_code in (EXIT_OK, EXIT_FAILED):
        summary.exit_code = EXIT_ERROR


def _stop_live(drivers: Sequence[OutputDriver]) -> None:
    """Take every console's live display away: a run stopped at once may not have finished
    its drivers, and what is printed next must reach the terminal."""
    from .outputs._console import ConsoleOutput

    for driver in drivers:
        if isinstance(driver, ConsoleOutput):
            with suppress(Exception):
                driver.stop_live()


def _finishes_in(turn: int, driver: OutputDriver) -> bool:
    """Whether ``driver`` finishes in ``turn``: 0 the user's drivers, 1 agenteval's report
    files, 2 the console."""
    from .outputs._console import ConsoleOutput

    if isinstance(driver, ConsoleOutput):
        return turn == 2
    return turn == (1 if _ours(driver) else 0)


def _ours(driver: OutputDriver) -> bool:
    """Whether ``driver`` is one of agenteval's own (not a subclass of yours)."""
    return type(driver).__module__.startswith("agenteval.")


def _discard_earlier_reports(drivers: Sequence[OutputDriver]) -> None:
    from .outputs import JsonOutput

    for driver in drivers:
        if isinstance(driver, JsonOutput):
            driver.discard_earlier()


def _apply_console_flags(
    drivers: Sequence[OutputDriver], verbose: bool | None, progress: bool | None, where: str
) -> None:
    from .outputs._console import ConsoleOutput

    consoles = [d for d in drivers if isinstance(d, ConsoleOutput)]
    on_stdout = [d for d in consoles if d.stream is None or d.stream is sys.stdout]
    if len(on_stdout) > 1:  # their reports interleave, and two live displays fight
        raise ConfigError(
            f"{where}: {len(on_stdout)} ConsoleOutputs write to standard output: keep one (with "
            f"verbose=True for the longer report), or give the others a stream=..."
        )
    for driver in consoles:
        if verbose is not None:
            driver.verbose = verbose
        if progress is not None:
            driver.progress = progress


def _cost(summary: RunSummary, prices: dict[str, dict[str, float]]) -> RunCost:
    """Price judge usage per model, and agent usage with the table's ``agent`` entry."""
    from .llm._pricing import AGENT, cost_of

    usage = summary.usage
    judge: float | None = None
    unpriced = []
    for model, used in sorted(usage.judge_by_model.items()):
        value = cost_of(used, model, prices)
        if value is None:
            unpriced.append(model or "<unnamed model>")
        else:
            judge = (judge or 0.0) + value
    agent = cost_of(usage.agent, AGENT, prices) if usage.agent else None
    if usage.agent and agent is None:  # the agent's tokens, uncounted: said like a model's
        unpriced.insert(0, AGENT)
    return RunCost(agent=agent, judge=judge, unpriced_models=unpriced)


def _record_datasets(jr: Journal, states: list[_EvaluatorState]) -> None:
    entries = jr.manifest.setdefault("evaluators", {})
    changed = False
    for state in states:
        if state.datasets:
            entry = entries.setdefault(state.spec.id, {"file": state.spec.file})
            known = entry.setdefault("datasets", {})
            for path, digest in state.datasets.items():
                if path not in known:
                    known[path] = digest
                    changed = True
    if changed:
        jr.save_manifest()
