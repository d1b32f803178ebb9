"""Assertions on what an agent *did*: tool calls, their order, approvals, steps and tokens.

Each accepts a :class:`~agenteval.trajectory.Trajectory` or anything
:func:`~agenteval.trajectory.as_trajectory` converts (an agent, a conversation, a list of
messages). Any other value fails with a message naming its type — it is never graded from
its ``repr``, and a string is never opened as a path.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval._errors import EvaluationError
from agenteval._results import AssertionResult
from agenteval.assertions._base import Assertion, type_name
from agenteval.assertions._common import shorten
from agenteval.trajectory._messages import ToolCall
from agenteval.trajectory._trajectory import Trajectory, as_trajectory

ArgsCheck = Mapping[str, Any] | Callable[[dict[str, Any]], bool]
"""Expected tool arguments: a dict (subset match) or a predicate on the inputs."""


class Mode(str, enum.Enum):
    """How :class:`TrajectoryMatches` compares the tool calls with the expected names.

    ``STRICT``: exactly these calls, in this order, nothing else. ``UNORDERED``: the same
    calls (counting repeats) in any order. ``SUBSET``: the expected calls appear in this
    order, other calls allowed in between. ``SUPERSET``: no call outside the expected
    names (an allow-list). Neuron's spellings ``Mode.Strict`` etc. are aliases.
    """

    STRICT = "strict"
    UNORDERED = "unordered"
    SUBSET = "subset"
    SUPERSET = "superset"
    Strict = "strict"
    Unordered = "unordered"
    Subset = "subset"
    Superset = "superset"


def _trajectory(assertion: Assertion, actual: object) -> Trajectory | AssertionResult:
    """``actual`` as a trajectory, or the failure explaining why it is not one."""
    trajectory = as_trajectory(actual)
    if trajectory is not None and not any(m.role == "assistant" for m in trajectory.history):
        # what never ran passes every "was not called" and "at most": it must not (nor
        # a history of the system prompt, or of the user's words, alone)
        stopped = getattr(actual, "stop_reason", None)
        why = (
            f"it ended before its first turn (stop_reason: {stopped!r})"
            if isinstance(stopped, str)
            else "run it (return Conversation(...).run()) or record its messages; a "
            "simulated user that stopped at once leaves none (return the Conversation itself "
            "to see its stop_reason)"
        )
        what = (
            "a conversation without a single message"
            if not trajectory.history
            else "a conversation in which the agent never answered (no assistant message)"
        )
        return AssertionResult.fail(
            0.0, f"{assertion.name} was given {what}, which cannot show what the agent did: {why}"
        )
    if trajectory is not None:
        return trajectory
    from ..trajectory._trajectory import unreadable_message_list

    problem = unreadable_message_list(actual)
    if problem is not None:
        return AssertionResult.fail(
            0.0, f"{assertion.name} could not read the message list as a conversation: {problem}"
        )
    hint = (
        " (a string is graded as text, never opened as a path)" if isinstance(actual, str) else ""
    )
    return AssertionResult(
        passed=False,
        score=0.0,
        message=(
            f"{assertion.name} expects a Trajectory, an agent with messages() or a list of "
            f"Messages, got {type_name(actual)}{hint}: return Conversation(...).run() or "
            f"Trajectory.from_messages(...) from run()"
        ),
    )


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``True`` is not ``1`` (as ``==`` has it), though ``1`` is
    ``1.0``; lists and objects compare their members so."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _json(value: Any) -> str:
    return shorten(json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr))


def _names(calls: Sequence[ToolCall]) -> list[str]:
    return [call.name for call in calls]


_SHOWN_CALLS = 20
"""Calls a failure message lists: an agent that looped through 500 calls must not make one
of 35 KB (the context keeps every name)."""


def _listed(parts: Sequence[str]) -> str:
    """The first ``_SHOWN_CALLS`` of ``parts``, joined, and how many more there were."""
    shown = ", ".join(parts[:_SHOWN_CALLS])
    rest = len(parts) - _SHOWN_CALLS
    return f"{shown}, … and {rest} more" if rest > 0 else shown


def _name_list(names: Sequence[str]) -> str:
    """Tool names as a list is shown (``['a', 'b']``), cut like :func:`_listed`."""
    return f"[{_listed([repr(n) for n in names])}]"


def _require_name(owner: str, name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"{owner}: name must be a tool name (a non-empty string), got {name!r}")
    return name


def _require_count(owner: str, argument: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{owner}: {argument} must be a non-negative integer, got {value!r}")
    return value


@dataclass(frozen=True)
class ToolWasCalled(Assertion):
    """Passes when the agent called tool ``name``, optionally with matching arguments.

    ``args`` as a dict is a subset match: every listed key must be present and equal,
    extra arguments are allowed. As a callable it receives the call's inputs and returns
    whether they are acceptable; a check that raises on a call (a ``KeyError`` for an
    argument that call lacks) means that call does not match, though a check that raises
    on every call fails the assertion (it could not tell: ``times=0`` must not pass on a
    typo). ``times`` requires exactly that many matching calls.

    Example::

        self.assert_that(ToolWasCalled("refund_order", {"order_id": "123"}), trajectory)
        self.assert_that(
            ToolWasCalled("refund_order", lambda inputs: inputs["amount"] <= 100), trajectory
        )
    """

    tool: str
    args: ArgsCheck | None = None
    times: int | None = None

    def __init__(
        self, name: str, args: ArgsCheck | None = None, *, times: int | None = None
    ) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "tool", _require_name(owner, name))
        if args is not None and not (isinstance(args, Mapping) or callable(args)):
            raise TypeError(
                f"{owner}: args must be a dict (subset match) or a callable taking the "
                f"inputs, got {type_name(args)} ({args!r})"
            )
        object.__setattr__(self, "args", args)
        if times is not None:
            _require_count(owner, "times", times)
        object.__setattr__(self, "times", times)

    def _matches(self, inputs: dict[str, Any], raised: list[Exception]) -> bool:
        if self.args is None:
            return True
        if isinstance(self.args, Mapping):
            if len(inputs) == 1 and isinstance(inputs.get("_digest"), dict):
                # only the arguments' shape is kept: no match, and no telling (times=0)
                raised.append(LookupError("its arguments were digested (with_digested_payloads())"))
                return False
            return all(key in inputs and same_json(inputs[key], v) for key, v in self.args.items())
        try:
            return bool(self.args(dict(inputs)))
        except Exception as exc:  # the check does not apply to this call: no match
            raised.append(exc)
            return False

    def _wanted(self) -> str:
        if self.args is None:
            return f"tool '{self.tool}' to be called"
        if isinstance(self.args, Mapping):
            return f"tool '{self.tool}' to be called with {_json(dict(self.args))}"
        return f"tool '{self.tool}' to be called with arguments accepted by the check"

    def evaluate(self, actual: object) -> AssertionResult:
        """Check that the tool was called (with matching arguments)."""
        trajectory = _trajectory(self, actual)
        if isinstance(trajectory, AssertionResult):
            return trajectory
        calls = trajectory.tool_calls(self.tool)
        raised: list[Exception] = []
        matching = [c for c in calls if self._matches(c.inputs, raised)]
        # a check that raised on every call tells nothing (a typo in a key, most often):
        # "never with amount > 100" must not pass on it
        blind = bool(calls) and len(raised) == len(calls)
        if self.times is None and matching:
            return AssertionResult.pass_()
        if self.times is not None and len(matching) == self.times and not blind:
            return AssertionResult.pass_()
        note = ""
        if blind:
            first = raised[0]
            note = (
                f" (the check raised {type(first).__name__}: {first} on every call, so it "
                f"could not tell: fix the check)"
            )
        elif raised:
            first = raised[0]
            note = (
                f" (the check raised {type(first).__name__}: {first} on {len(raised)} of "
                f"{len(calls)} call(s))"
            )
        if self.times is not None:
            called = (
                "" if calls else f"; tools called: {_name_list(_names(trajectory.tool_calls()))}"
            )
            return AssertionResult.fail(
                0.0,
                f"Expected {self._wanted()} {self.times} time(s), matched {len(matching)} "
                f"of {len(calls)} call(s) of '{self.tool}'{note}{called}",
            )
        if calls:
            seen = _listed([_json(c.inputs) for c in calls])
            return AssertionResult.fail(
                0.0, f"Expected {self._wanted()}; its calls had arguments: {seen}{note}"
            )
        called = _name_list(_names(trajectory.tool_calls()))
        return AssertionResult.fail(
            0.0,
            f"Expected {self._wanted()}, but it was never called; tools called: {called}",
        )


@dataclass(frozen=True)
class ToolWasNotCalled(Assertion):
    """Passes when the agent never called tool ``name``: a guardrail on forbidden paths.

    Example::

        self.assert_that(ToolWasNotCalled("delete_account"), trajectory)
    """

    tool: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "tool", _require_name(type(self).__name__, name))

    def evaluate(self, actual: object) -> AssertionResult:
        """Check that the tool was not called."""
        trajectory = _trajectory(self, actual)
        if isinstance(trajectory, AssertionResult):
            return trajectory
        calls = trajectory.tool_calls(self.tool)
        if not calls:
            return AssertionResult.pass_()
        seen = _listed([_json(c.inputs) for c in calls])
        return AssertionResult.fail(
            0.0,
            f"Expected tool '{self.tool}' not to be called, but it was called "
            f"{len(calls)} time(s) with arguments: {seen}",
        )


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two name sequences."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class TrajectoryMatches(Assertion):
    """Passes when the sequence of tool calls matches ``expected_names`` under ``mode``.

    See :class:`Mode` for the four comparisons; ``mode`` may also be a mode's name in any
    case (``"subset"``, ``"SUBSET"``, ``"Subset"``). Pass/fail follows the mode exactly; the
    score gives partial credit: ``STRICT`` the calls found in the expected order (longest
    common subsequence) over the longer list, ``UNORDERED`` the calls in common (counting
    repeats) over the longer list, ``SUBSET`` the share of expected calls found in order,
    ``SUPERSET`` the share of actual calls that are allowed. Empty lists score 1.0.

    Example::

        self.assert_that(
            TrajectoryMatches(["search_orders", "refund_order"], Mode.SUBSET), trajectory
        )
    """

    expected_names: tuple[str, ...]
    mode: Mode = Mode.STRICT

    def __init__(self, expected_names: Sequence[str], mode: Mode | str = Mode.STRICT) -> None:
        owner = type(self).__name__
        if isinstance(expected_names, str) or not isinstance(expected_names, Sequence):
            raise TypeError(
                f"{owner}: expected_names must be a list of tool names, got "
                f"{type_name(expected_names)} ({expected_names!r})"
            )
        for i, name in enumerate(expected_names):
            if not isinstance(name, str):
                raise TypeError(f"{owner}: expected_names[{i}] must be a tool name, got {name!r}")
        try:
            parsed = Mode(mode.lower() if isinstance(mode, str) else mode)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in Mode)
            raise ValueError(f"{owner}: mode must be one of {choices}, got {mode!r}") from None
        object.__setattr__(self, "expected_names", tuple(expected_names))
        object.__setattr__(self, "mode", parsed)

    def evaluate(self, actual: object) -> AssertionResult:
        """Compare the trajectory's tool-call names with the expected ones."""
        trajectory = _trajectory(self, actual)
        if isinstance(trajectory, AssertionResult):
            return trajectory
        expected = list(self.expected_names)
        got = _names(trajectory.tool_calls())
        passed, score, detail = _compare(self.mode, expected, got)
        context = {"mode": self.mode.value, "expected": expected, "actual": got}
        if passed:
            return AssertionResult.pass_(score, context=context)
        return AssertionResult.fail(
            score,
            f"Expected tool calls {_name_list(expected)} ({self.mode.value}), got "
            f"{_name_list(got)}: {detail}",
            context,
        )


def _at(names: list[str], i: int) -> str:
    return repr(names[i]) if i < len(names) else "no further call"


def _compare(mode: Mode, expected: list[str], got: list[str]) -> tuple[bool, float, str]:
    longest = max(len(expected), len(got))
    if mode is Mode.STRICT:
        score = _lcs(expected, got) / longest if longest else 1.0
        if expected == got:
            return True, score, ""
        i = next(i for i in range(longest) if _at(expected, i) != _at(got, i))
        return (
            False,
            score,
            f"first difference at call #{i + 1}: expected {_at(expected, i)}, got {_at(got, i)}",
        )
    if mode is Mode.UNORDERED:
        want_c, got_c = Counter(expected), Counter(got)
        common = sum((want_c & got_c).values())
        score = common / longest if longest else 1.0
        if want_c == got_c:
            return True, score, ""
        missing = sorted((want_c - got_c).elements())
        extra = sorted((got_c - want_c).elements())
        parts = [f"missing {_name_list(missing)}"] if missing else []
        parts += [f"unexpected {_name_list(extra)}"] if extra else []
        return False, score, ", ".join(parts)
    if mode is Mode.SUBSET:
        found = _lcs(expected, got)
        score = found / len(expected) if expected else 1.0
        if found == len(expected):
            return True, score, ""
        return (
            False,
            score,
            f"only {found} of the {len(expected)} expected calls appear in that order",
        )
    allowed = set(expected)
    outside = [name for name in got if name not in allowed]
    score = (len(got) - len(outside)) / len(got) if got else 1.0
    if not outside:
        return True, score, ""
    return False, score, f"calls outside the allowed set: {_name_list(outside)}"


def _decision_text(calls: Sequence[ToolCall]) -> str:
    parts = []
    for call in calls:
        text: str = call.approval or "no approval needed"
        if call.approval_reason:
            text += f" ({call.approval_reason})"
        parts.append(text)
    return _listed(parts)


@dataclass(frozen=True)
class _ApprovalState(Assertion):
    tool: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "tool", _require_name(type(self).__name__, name))

    _state = "approved"

    def evaluate(self, actual: object) -> AssertionResult:
        """Check the approver's decision recorded on the tool's calls."""
        trajectory = _trajectory(self, actual)
        if isinstance(trajectory, AssertionResult):
            return trajectory
        calls = trajectory.tool_calls(self.tool)
        if any(call.approval == self._state for call in calls):
            return AssertionResult.pass_()
        if not calls:
            return AssertionResult.fail(
                0.0,
                f"Expected a call of '{self.tool}' to be {self._state}, but '{self.tool}' "
                f"was never called; tools called: {_name_list(_names(trajectory.tool_calls()))}",
            )
        return AssertionResult.fail(
            0.0,
            f"Expected a call of '{self.tool}' to be {self._state}; its calls were: "
            f"{_decision_text(calls)}",
        )


@dataclass(frozen=True, init=False)
class ToolWasApproved(_ApprovalState):
    """Passes when at least one call of tool ``name`` was approved by the approver.

    Example::

        self.assert_that(ToolWasApproved("send_email"), trajectory)
    """

    _state = "approved"


@dataclass(frozen=True, init=False)
class ToolWasRejected(_ApprovalState):
    """Passes when at least one call of tool ``name`` was rejected by the approver.

    Example::

        self.assert_that(ToolWasRejected("refund_order"), trajectory)
    """

    _state = "rejected"


@dataclass(frozen=True)
class MaxToolCalls(Assertion):
    """Passes when the agent made at most ``n`` tool calls (of tool ``name``, if given).

    Example::

        self.assert_that(MaxToolCalls(5), trajectory)
        self.assert_that(MaxToolCalls(1, name="search_orders"), trajectory)
    """

    n: int
    tool: str | None = None

    def __init__(self, n: int, name: str | None = None) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "n", _require_count(owner, "n", n))
        object.__setattr__(self, "tool", None if name is None else _require_name(owner, name))

    def evaluate(self, actual: object) -> AssertionResult:
        """Count the tool calls."""
        trajectory = _trajectory(self, actual)
        if isinstance(trajectory, AssertionResult):
            return trajectory
        count = len(trajectory.tool_calls(self.tool))
        if count <= self.n:
            return AssertionResult.pass_()
        which = f"calls of '{self.tool}'" if self.tool else "tool calls"
        return AssertionResult.fail(
            self.n / count, f"Expected at most {self.n} {which}, got {count}"
        )


@dataclass(frozen=True)
class TotalTokensAtMost(Assertion):
    """Passes when the conversation used at most ``n`` tokens: input (cached prompt tokens
    too, read or written) plus output. Cached tokens count like the others, so the verdict
    does not change with how warm the provider's cache was.

    The trajectory's messages must record usage (``ToolAgent`` does; converted histories
    carry it when their messages have a ``usage`` key). A trajectory whose agent messages
    record no usage, or record it for only some of them, cannot be shown to be within the
    budget: that raises :class:`~agenteval.EvaluationError` rather than passing a budget
    nobody measured. The measured messages alone being over the budget is a failure.

    Example::

        self.assert_that(TotalTokensAtMost(4_000), trajectory)
    """

    n: int

    def __post_init__(self) -> None:
        _require_count(type(self).__name__, "n", self.n)

    def evaluate(self, actual: object) -> AssertionResult:
        """Compare the total token usage with the budget."""
        trajectory = _trajectory(self, actual)
        if isinstance(trajectory, AssertionResult):
            return trajectory
        usage = trajectory.usage()
        cached = usage.cache_read_tokens + usage.cache_write_tokens
        used = usage.total + cached
        if used <= self.n:
            unmeasured = trajectory.steps_without_usage()
            if not unmeasured:
                return AssertionResult.pass_()
            steps = trajectory.step_count()
            which = (
                f"its {steps} assistant message(s)"
                if unmeasured == steps
                else f"{unmeasured} of its {steps} assistant messages"
            )
            raise EvaluationError(
                f"TotalTokensAtMost({self.n}): the trajectory records no token usage for "
                f"{which}: record usage on the agent's messages "
                f"(Message.usage, or a 'usage' key in converted histories)"
            )
        detail = f"input {usage.input_tokens}, output {usage.output_tokens}"
        if cached:
            detail += f", cached input {cached}"
        return AssertionResult.fail(
            self.n / used, f"Expected at most {self.n} total tokens, used {used} ({detail})"
        )


@dataclass(frozen=True)
class StepCount(Assertion):
    """Passes when the agent took exactly ``n`` steps (assistant messages, one per model call).

    A snapshot that only repeats tool calls already seen is not a step (see
    :meth:`Trajectory.step_count <agenteval.trajectory.Trajectory.step_count>`).

    Example::

        self.assert_that(StepCount(2), trajectory)
    """

    n: int

    def __post_init__(self) -> None:
        _require_count(type(self).__name__, "n", self.n)

    def evaluate(self, actual: object) -> AssertionResult:
        """Count the agent's steps."""
        trajectory = _trajectory(self, actual)
        if isinstance(trajectory, AssertionResult):
            return trajectory
        steps = trajectory.step_count()
        if steps == self.n:
            return AssertionResult.pass_()
        return AssertionResult.fail(
            min(steps, self.n) / max(steps, self.n),
            f"Expected exactly {self.n} step(s), got {steps}",
        )


@dataclass(frozen=True)
class MaxSteps(Assertion):
    """Passes when the agent took at most ``n`` steps (assistant messages).

    Example::

        self.assert_that(MaxSteps(6), trajectory)
    """

    n: int

    def __post_init__(self) -> None:
        _require_count(type(self).__name__, "n", self.n)

    def evaluate(self, actual: object) -> AssertionResult:
        """Count the agent's steps."""
        trajectory = _trajectory(self, actual)
        if isinstance(trajectory, AssertionResult):
            return trajectory
        steps = trajectory.step_count()
        if steps <= self.n:
            return AssertionResult.pass_()
        return AssertionResult.fail(
            self.n / steps, f"Expected at most {self.n} step(s), got {steps}"
        )
