"""``AgentJudge``: an LLM grades an output (or a whole conversation) against criteria."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigError, JudgeError
from .._results import AssertionResult
from ..assertions._base import Assertion, type_name
from ..llm._cache import acomplete_cached, complete_cached
from ..llm._structured import parse_reply
from ..llm._types import Model, ModelRequest, ModelResponse, reply_text
from ..trajectory._messages import Message
from . import _prompt

DEFAULT_THRESHOLD = 0.7

_NO_JUDGE = (
    "No judge model: pass judge=... or set AGENTEVAL_JUDGE_MODEL (e.g. 'anthropic:claude-...')"
)


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()
"""The default of a judge's required fields (``criteria``, ``expected``, ...).

``judge`` comes first and may be omitted, so the fields after it need defaults as far as
dataclasses are concerned; this one makes ``__post_init__`` raise ``TypeError`` instead.
"""


@dataclass(frozen=True)
class _Judgment:
    """What one judgment sends: built by each judge class from its fields."""

    criteria: str
    reference: str | None
    reference_label: str
    question: str | None
    examples: Sequence[Mapping[str, Any]]


class _Judge(Assertion):
    """Shared behaviour of every LLM judge; subclasses are frozen dataclasses.

    Subclasses have the fields ``judge``, ``threshold``, ``examples``, ``instructions`` and
    ``temperature`` and implement :meth:`_judgment`.
    """

    judge: Model | None
    threshold: float
    examples: Sequence[Mapping[str, Any]]
    instructions: str | None
    temperature: float | None

    def _judgment(self) -> _Judgment:
        raise NotImplementedError

    def _require(self, *fields: str) -> None:
        """Raise ``TypeError`` for a required field left out (its default is ``REQUIRED``)."""
        for name in fields:
            if getattr(self, name) is REQUIRED:
                raise TypeError(
                    f"{type(self).__name__}: missing required argument {name!r}: pass {name}=..."
                )

    def _setup(self) -> None:
        """Validate the common fields and resolve the default judge model."""
        name = type(self).__name__
        threshold = self.threshold
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not math.isfinite(threshold)
            or not 0 <= threshold <= 1
        ):
            raise ValueError(f"{name}: threshold must be a number from 0 to 1, got {threshold!r}")
        object.__setattr__(self, "examples", _check_examples(name, self.examples))
        if self.judge is None:
            from ..llm._factory import default_judge_model

            model = default_judge_model()
            if model is None:
                raise ConfigError(_NO_JUDGE)
            object.__setattr__(self, "judge", model)
        elif not isinstance(self.judge, Model):
            raise TypeError(
                f"{name}: judge must be a Model (e.g. agenteval.llm.model('anthropic:...')), "
                f"got {type_name(self.judge)}"
            )

    @property
    def model(self) -> Model:
        """The model that grades (the default judge model when none was given)."""
        if self.judge is None:  # only if __post_init__ was bypassed
            raise ConfigError(_NO_JUDGE)
        return self.judge

    def evaluate(self, actual: Any) -> AssertionResult:
        """Grade ``actual`` (a string, a ``Trajectory``, or what converts to one).

        Raises:
            JudgeError: the judge gave no valid verdict, even after one corrective retry.
        """
        prepared = self._prepare(actual)
        if isinstance(prepared, AssertionResult):
            return prepared
        judgment, request = prepared
        response = complete_cached(self.model, request, _valid)
        error = _error_of(response)
        if error is not None:
            retry = _corrected(request, response, error)
            response = complete_cached(self.model, retry, _valid)
            self._raise_if_invalid(response, error)
        return self._result(judgment, response)

    async def aevaluate(self, actual: Any) -> AssertionResult:
        """Async :meth:`evaluate`: awaits the model's ``acomplete``."""
        prepared = self._prepare(actual)
        if isinstance(prepared, AssertionResult):
            return prepared
        judgment, request = prepared
        response = await acomplete_cached(self.model, request, _valid)
        error = _error_of(response)
        if error is not None:
            retry = _corrected(request, response, error)
            response = await acomplete_cached(self.model, retry, _valid)
            self._raise_if_invalid(response, error)
        return self._result(judgment, response)

    def _prepare(self, actual: Any) -> AssertionResult | tuple[_Judgment, ModelRequest]:
        judgment = self._judgment()
        if isinstance(actual, str):
            text, label = actual, "Output to evaluate"
        else:
            from ..trajectory._trajectory import as_trajectory, unreadable_message_list

            trajectory = as_trajectory(actual)
            if trajectory is None:
                problem = unreadable_message_list(actual)
                return AssertionResult.fail(
                    0.0,
                    f"Expected a string or a Trajectory to judge, got {type_name(actual)}"
                    if problem is None
                    else f"Could not read the message list as a conversation: {problem}",
                    self._context(judgment),
                )
            text, label = trajectory.to_transcript(), "Conversation to evaluate (transcript)"
        if not text.strip():
            return AssertionResult.fail(0.0, "empty output", self._context(judgment))
        prompt = _prompt.build_prompt(
            criteria=judgment.criteria,
            output=text,
            output_label=label,
            reference=judgment.reference,
            reference_label=judgment.reference_label,
            question=judgment.question,
            examples=judgment.examples,
        )
        system = _prompt.SYSTEM_PROMPT
        if self.instructions:
            system = f"{system}\n\n{self.instructions.strip()}"
        request = ModelRequest(
            system=system,
            messages=[Message.user(prompt)],
            json_schema=_prompt.VERDICT_SCHEMA,
            schema_name=_prompt.SCHEMA_NAME,
            temperature=self.temperature,
        )
        return judgment, request

    def _context(self, judgment: _Judgment, score: float | None = None) -> dict[str, Any]:
        context: dict[str, Any] = {
            "threshold": self.threshold,
            "criteria": judgment.criteria,
            "reference": judgment.reference,
            "question": judgment.question,
            "judge": self.model.name,
        }
        if score is not None:
            context["score"] = score
        return context

    def _result(self, judgment: _Judgment, response: ModelResponse) -> AssertionResult:
        score, reasoning = _verdict(response)
        context = self._context(judgment, score)
        if score >= self.threshold:
            return AssertionResult.pass_(score, reasoning, context)
        return AssertionResult.fail(
            score,
            f"Score {score} below threshold {self.threshold}. Reasoning: {reasoning}",
            context,
        )

    def _raise_if_invalid(self, response: ModelResponse, first_error: str) -> None:
        error = _error_of(response)
        if error is None:
            return
        raise JudgeError(
            f"{type(self).__name__}: judge {self.model.name!r} gave no valid verdict after a "
            f"corrective retry ({first_error}; then {error}; last reply "
            f"{reply_text(response)[:300]!r}); {_fix_for(response)}"
        )


def _check_examples(name: str, examples: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    if isinstance(examples, (str, Mapping)) or not isinstance(examples, Sequence):
        raise TypeError(
            f"{name}: examples must be a list of {{'output': ..., 'score': ..., "
            f"'reasoning': ...}} dicts, got {type_name(examples)}"
        )
    checked = []
    for i, example in enumerate(examples):
        where = f"{name}: examples[{i}]"
        if not isinstance(example, Mapping) or not isinstance(example.get("output"), str):
            raise TypeError(
                f"{where} must be a dict with an 'output' string, a 'score' and an optional "
                f"'reasoning', got {example!r}"
            )
        try:
            _prompt.check_verdict({"reasoning": "", **example})
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        checked.append(dict(example))
    return tuple(checked)


def _verdict(response: ModelResponse) -> tuple[float, str]:
    value: object = response.structured
    if value is None:
        value = parse_reply(response.text, _prompt.VERDICT_SCHEMA)
    return _prompt.check_verdict(value)


_CUT_OFF = ("length", "max_tokens")
"""Stop reasons of a reply cut off at its token limit (OpenAI's, Anthropic's)."""


def _error_of(response: ModelResponse) -> str | None:
    try:
        _verdict(response)
    except ValueError as exc:
        if response.stop_reason in _CUT_OFF:
            return f"{exc}: it was cut off at the token limit"
        return str(exc)
    if response.stop_reason in _CUT_OFF:
        # what reads as a verdict may be the start of one ("score": 0 of 0.8): never one
        return "the reply was cut off at the token limit, so its verdict may be incomplete"
    return None


def _fix_for(response: ModelResponse) -> str:
    """What to change when ``response`` was still not a valid verdict after the retry."""
    if response.stop_reason in _CUT_OFF:
        return "raise the max_tokens of the judge's model"
    if response.structured is None:
        try:
            parse_reply(response.text, _prompt.VERDICT_SCHEMA)
        except ValueError:
            return "use a judge model that supports structured output"
    # a JSON object, but not a verdict (a score of 9, no reasoning)
    return (
        "check that the criteria and examples ask for a score from 0 to 1, or use a "
        "stronger judge model"
    )


def _valid(response: ModelResponse) -> bool:
    return _error_of(response) is None


def _corrected(request: ModelRequest, response: ModelResponse, error: str) -> ModelRequest:
    """The request again, with the invalid reply and a correction appended."""
    messages = [
        *request.messages,
        Message.assistant(reply_text(response)),
        Message.user(_prompt.correction(error)),
    ]
    return request.model_copy(update={"messages": messages})


@dataclass(frozen=True)
class AgentJudge(_Judge):
    """An LLM grades the output against your criteria: a score from 0 to 1 and a reason.

    Use it when "acceptable" is a matter of degree (tone, completeness, faithfulness) rather
    than an exact match. The item passes when ``score >= threshold``. ``actual`` may be a
    string or a ``Trajectory`` (the judge then reads the whole conversation: turns, tool
    calls with arguments and results, approval decisions); any other value fails with score
    0 and an empty output fails with ``empty output``, both without calling the model.

    A judge that cannot produce a valid verdict, even after one corrective retry, raises
    :class:`~agenteval.JudgeError`: the item is an error, never a pass or a silent 0.
    Each judgment is a fresh, stateless request, and goes through the response cache when
    it is on. ``judge`` may be passed first or by name, or left out to use
    ``AGENTEVAL_JUDGE_MODEL``; ``criteria`` is required. Example::

        judge = AgentJudge(
            judge=model("anthropic:claude-3-5-haiku-latest"),
            criteria="Polite, and answers the customer's question directly.",
            threshold=0.8,
        )
        self.assert_that(judge, output)

    Args:
        judge: the grading model; ``None`` (the default) uses ``AGENTEVAL_JUDGE_MODEL``.
        criteria: what a good output does, in plain words (required).
        threshold: the lowest passing score (inclusive).
        reference: material to grade against (an expected answer, a context...).
        reference_label: the heading the reference is shown under.
        question: the question the output answers, when relevant.
        examples: graded examples ``{"output": ..., "score": ..., "reasoning": ...}``.
        instructions: extra text appended to the judge's system prompt.
        temperature: sampling temperature; ``None`` for models that only accept their
            default.
    """

    judge: Model | None = None
    criteria: str = REQUIRED
    threshold: float = DEFAULT_THRESHOLD
    reference: str | None = None
    reference_label: str = "Reference"
    question: str | None = None
    examples: Sequence[Mapping[str, Any]] = ()
    instructions: str | None = None
    temperature: float | None = 0.0

    def __post_init__(self) -> None:
        self._require("criteria")
        if not isinstance(self.criteria, str) or not self.criteria.strip():
            raise ValueError(
                f"AgentJudge: criteria must be a non-empty string, got {self.criteria!r}"
            )
        if self.reference is not None:
            object.__setattr__(
                self, "reference", as_text("AgentJudge", "reference", self.reference)
            )
        if self.question is not None:
            object.__setattr__(self, "question", as_text("AgentJudge", "question", self.question))
        self._setup()

    def _judgment(self) -> _Judgment:
        return _Judgment(
            criteria=self.criteria,
            reference=self.reference,
            reference_label=self.reference_label,
            question=self.question,
            examples=self.examples,
        )


def as_text(judge: str, field: str, value: object) -> str:
    """A reference, question or goal as text: strings as they are, other values as JSON.

    Raises:
        ValueError: ``value`` is ``None`` or empty.
    """
    if isinstance(value, str):
        text = value
    elif value is None:
        text = ""
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    if not text.strip():
        raise ValueError(f"{judge}: {field} must be a non-empty string, got {value!r}")
    return text
