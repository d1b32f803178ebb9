"""Pre-configured judges: correctness, faithfulness, relevance, helpfulness, task completion.

Each is an :class:`~agenteval.judges.AgentJudge` with calibrated criteria and a reference
shown under a heading that says what it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..llm._types import Model
from ._judge import DEFAULT_THRESHOLD, REQUIRED, _Judge, _Judgment, as_text

CORRECTNESS_CRITERIA = """\
The output gives the same answer as the expected answer. Judge meaning, not wording: a \
paraphrase, a different order, a different format of the same value, or extra detail that is \
correct is fine. A contradiction, a wrong or missing key fact, or a hedge that avoids \
committing to the answer lowers the score; an answer that is wrong on the main point scores \
near 0."""

FAITHFULNESS_CRITERIA = """\
Every claim in the output is supported by the context. Claims the context does not support \
(hallucinations), claims that contradict it, and invented specifics (names, numbers, dates) \
lower the score, even when they happen to be true in the real world: judge support by the \
context, not correctness against outside knowledge. Saying that the context does not contain \
the answer is faithful. An output with no factual claims is faithful."""

RELEVANCE_CRITERIA = """\
The output addresses the question: it answers what was actually asked, stays on topic, and \
does not pad the reply with unrelated material. Judge relevance only, not whether the answer \
is correct. A reply that answers a different question, or only restates the question, scores \
low."""

HELPFULNESS_CRITERIA = """\
The output is useful to the person who asked: clear, specific and actionable, complete enough \
to act on without a follow-up, appropriately concise, and polite. A vague or evasive reply, \
needless padding, or a refusal scores low, unless declining was clearly the right and helpful \
thing to do and the reply says why and what to do instead."""

TASK_COMPLETION_CRITERIA = """\
Judge whether the agent accomplished the user's goal over the whole conversation, considering \
everything it did: its replies, the tools it called with their arguments and results, and the \
approval decisions made by the human approver.

- Full marks when the goal was reached and the agent told the user the outcome accurately.
- When the approver rejected an action, do not punish the agent for the denial itself: judge \
how it handled the rejection. It should not retry the rejected action or work around it, \
should tell the user honestly that the action was not carried out (and why, when a reason was \
given), and should offer a sensible next step. Handled that way, the conversation can score \
high even though the goal was not reached.
- Score low when the agent claims success it did not achieve, ignores a tool error, takes an \
action the user did not ask for, or gives up while the goal was still reachable."""


@dataclass(frozen=True)
class CorrectnessJudge(_Judge):
    """An LLM checks that the output gives the expected answer (meaning, not wording).

    Use it for question answering with a known answer that can be phrased many ways::

        self.assert_that(CorrectnessJudge(judge, expected=item["expected_answer"]), output)

    Args:
        judge: the grading model; ``None`` (the default) uses ``AGENTEVAL_JUDGE_MODEL``.
        expected: the expected answer (shown under "Expected answer").
        threshold: the lowest passing score (inclusive).
        question: the question asked, when it helps to judge the answer.
        examples: graded examples ``{"output": ..., "score": ..., "reasoning": ...}``.
        instructions: extra text appended to the judge's system prompt.
        temperature: sampling temperature; ``None`` for the model's default.
    """

    criteria: ClassVar[str] = CORRECTNESS_CRITERIA

    judge: Model | None = None
    expected: str = REQUIRED
    threshold: float = DEFAULT_THRESHOLD
    question: str | None = None
    examples: Sequence[Mapping[str, Any]] = ()
    instructions: str | None = None
    temperature: float | None = 0.0

    def __post_init__(self) -> None:
        self._require("expected")
        object.__setattr__(self, "expected", as_text("CorrectnessJudge", "expected", self.expected))
        if self.question is not None:
            object.__setattr__(
                self, "question", as_text("CorrectnessJudge", "question", self.question)
            )
        self._setup()

    def _judgment(self) -> _Judgment:
        return _Judgment(
            self.criteria, self.expected, "Expected answer", self.question, self.examples
        )


@dataclass(frozen=True)
class FaithfulnessJudge(_Judge):
    """An LLM checks that every claim in the output is grounded in the given context.

    Use it for RAG: pass the retrieved documents (a string, or a list of strings shown as
    numbered documents) and it flags hallucinated or contradicting claims::

        self.assert_that(FaithfulnessJudge(judge, context=retrieved_docs), answer)

    Args:
        judge: the grading model; ``None`` (the default) uses ``AGENTEVAL_JUDGE_MODEL``.
        context: the source material (shown under "Context").
        threshold: the lowest passing score (inclusive).
        question: the question asked, when it helps to judge the answer.
        examples: graded examples ``{"output": ..., "score": ..., "reasoning": ...}``.
        instructions: extra text appended to the judge's system prompt.
        temperature: sampling temperature; ``None`` for the model's default.
    """

    criteria: ClassVar[str] = FAITHFULNESS_CRITERIA

    judge: Model | None = None
    context: str | Sequence[str] = REQUIRED
    threshold: float = DEFAULT_THRESHOLD
    question: str | None = None
    examples: Sequence[Mapping[str, Any]] = ()
    instructions: str | None = None
    temperature: float | None = 0.0

    def __post_init__(self) -> None:
        self._require("context")
        context = self.context
        if isinstance(context, Sequence) and not isinstance(context, str):
            if not context or not all(isinstance(doc, str) and doc.strip() for doc in context):
                raise ValueError(
                    f"FaithfulnessJudge: context must be a non-empty string or a list of "
                    f"non-empty strings, got {context!r}"
                )
            context = "\n\n".join(f"[{i}] {doc}" for i, doc in enumerate(context, 1))
        object.__setattr__(self, "context", as_text("FaithfulnessJudge", "context", context))
        if self.question is not None:
            object.__setattr__(
                self, "question", as_text("FaithfulnessJudge", "question", self.question)
            )
        self._setup()

    def _judgment(self) -> _Judgment:
        return _Judgment(self.criteria, str(self.context), "Context", self.question, self.examples)


@dataclass(frozen=True)
class RelevanceJudge(_Judge):
    """An LLM checks that the output addresses the question asked (not that it is correct).

    Example::

        self.assert_that(RelevanceJudge(judge, question=item["question"]), output)

    Args:
        judge: the grading model; ``None`` (the default) uses ``AGENTEVAL_JUDGE_MODEL``.
        question: the question the output should address (shown under "Question").
        threshold: the lowest passing score (inclusive).
        examples: graded examples ``{"output": ..., "score": ..., "reasoning": ...}``.
        instructions: extra text appended to the judge's system prompt.
        temperature: sampling temperature; ``None`` for the model's default.
    """

    criteria: ClassVar[str] = RELEVANCE_CRITERIA

    judge: Model | None = None
    question: str = REQUIRED
    threshold: float = DEFAULT_THRESHOLD
    examples: Sequence[Mapping[str, Any]] = ()
    instructions: str | None = None
    temperature: float | None = 0.0

    def __post_init__(self) -> None:
        self._require("question")
        object.__setattr__(self, "question", as_text("RelevanceJudge", "question", self.question))
        self._setup()

    def _judgment(self) -> _Judgment:
        return _Judgment(self.criteria, None, "Question", self.question, self.examples)


@dataclass(frozen=True)
class HelpfulnessJudge(_Judge):
    """An LLM checks that the output is useful: clear, actionable, complete and polite.

    Example::

        self.assert_that(HelpfulnessJudge(judge, question=item["input"]), output)

    Args:
        judge: the grading model; ``None`` (the default) uses ``AGENTEVAL_JUDGE_MODEL``.
        question: the request the output answers (shown under "Question"), if any.
        threshold: the lowest passing score (inclusive).
        examples: graded examples ``{"output": ..., "score": ..., "reasoning": ...}``.
        instructions: extra text appended to the judge's system prompt.
        temperature: sampling temperature; ``None`` for the model's default.
    """

    criteria: ClassVar[str] = HELPFULNESS_CRITERIA

    judge: Model | None = None
    question: str | None = None
    threshold: float = DEFAULT_THRESHOLD
    examples: Sequence[Mapping[str, Any]] = ()
    instructions: str | None = None
    temperature: float | None = 0.0

    def __post_init__(self) -> None:
        if self.question is not None:
            object.__setattr__(
                self, "question", as_text("HelpfulnessJudge", "question", self.question)
            )
        self._setup()

    def _judgment(self) -> _Judgment:
        return _Judgment(self.criteria, None, "Question", self.question, self.examples)


@dataclass(frozen=True)
class TaskCompletionJudge(_Judge):
    """An LLM checks that the agent accomplished the user's goal over a whole conversation.

    Pass the ``Trajectory`` returned by ``run``: the judge reads the transcript, tool calls
    and approval decisions. It is calibrated for human-in-the-loop runs: an agent whose
    action was rejected by the approver is judged on how it handled the rejection, not
    punished for the denial::

        self.assert_that(TaskCompletionJudge(judge, goal=item["goal"]), trajectory)

    Args:
        judge: the grading model; ``None`` (the default) uses ``AGENTEVAL_JUDGE_MODEL``.
        goal: what the user came to get done (shown under "Goal").
        threshold: the lowest passing score (inclusive).
        examples: graded examples ``{"output": ..., "score": ..., "reasoning": ...}``.
        instructions: extra text appended to the judge's system prompt.
        temperature: sampling temperature; ``None`` for the model's default.
    """

    criteria: ClassVar[str] = TASK_COMPLETION_CRITERIA

    judge: Model | None = None
    goal: str = REQUIRED
    threshold: float = DEFAULT_THRESHOLD
    examples: Sequence[Mapping[str, Any]] = ()
    instructions: str | None = None
    temperature: float | None = 0.0

    def __post_init__(self) -> None:
        self._require("goal")
        object.__setattr__(self, "goal", as_text("TaskCompletionJudge", "goal", self.goal))
        self._setup()

    def _judgment(self) -> _Judgment:
        return _Judgment(self.criteria, self.goal, "Goal", None, self.examples)
