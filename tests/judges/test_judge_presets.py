from __future__ import annotations

import sys
import types
from typing import Any

import pytest

import agenteval.judges as judges
from agenteval import _cache_settings
from agenteval._cache_settings import CacheSettings
from agenteval.judges import (
    CorrectnessJudge,
    FaithfulnessJudge,
    HelpfulnessJudge,
    RelevanceJudge,
    TaskCompletionJudge,
)
from agenteval.judges._judge import _Judge
from agenteval.judges._presets import (
    CORRECTNESS_CRITERIA,
    FAITHFULNESS_CRITERIA,
    HELPFULNESS_CRITERIA,
    RELEVANCE_CRITERIA,
    TASK_COMPLETION_CRITERIA,
)
from agenteval.testing._scripted import ScriptedModel
from agenteval.trajectory._messages import Message, ToolCall
from agenteval.trajectory._trajectory import Trajectory

VERDICT = {"structured": {"reasoning": "ok", "score": 0.9}}


@pytest.fixture(autouse=True)
def _cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cache_settings, "_settings", CacheSettings())


def prompt_of(judge_class: type[_Judge], output: Any = "An answer.", **kwargs: Any) -> str:
    model = ScriptedModel([{"structured": {"reasoning": "ok", "score": 0.9}}])
    result = judge_class(model, **kwargs).evaluate(output)
    assert result.passed
    return model.requests[0].messages[0].content


def test_judges_facade_exports_every_judge_with_a_docstring() -> None:
    assert judges.__all__ == sorted(judges.__all__)
    assert judges.__all__ == [
        "AgentJudge",
        "CorrectnessJudge",
        "FaithfulnessJudge",
        "HelpfulnessJudge",
        "RelevanceJudge",
        "TaskCompletionJudge",
    ]
    for name in judges.__all__:
        assert getattr(judges, name).__doc__


@pytest.mark.parametrize(
    ("judge_class", "kwargs", "criteria", "section"),
    [
        (
            CorrectnessJudge,
            {"expected": "Paris"},
            CORRECTNESS_CRITERIA,
            "## Expected answer\n<<<REFERENCE_BEGIN>>>\nParis\n<<<REFERENCE_END>>>",
        ),
        (
            FaithfulnessJudge,
            {"context": "Paris is the capital of France."},
            FAITHFULNESS_CRITERIA,
            "## Context\n<<<REFERENCE_BEGIN>>>\nParis is the capital of France.\n"
            "<<<REFERENCE_END>>>",
        ),
        (
            RelevanceJudge,
            {"question": "What is the capital of France?"},
            RELEVANCE_CRITERIA,
            "## Question\n<<<QUESTION_BEGIN>>>\nWhat is the capital of France?\n<<<QUESTION_END>>>",
        ),
        (
            HelpfulnessJudge,
            {"question": "How do I reset my password?"},
            HELPFULNESS_CRITERIA,
            "## Question\n<<<QUESTION_BEGIN>>>\nHow do I reset my password?\n<<<QUESTION_END>>>",
        ),
        (
            TaskCompletionJudge,
            {"goal": "Get a refund for order #123"},
            TASK_COMPLETION_CRITERIA,
            "## Goal\n<<<REFERENCE_BEGIN>>>\nGet a refund for order #123\n<<<REFERENCE_END>>>",
        ),
    ],
)
def test_preset_prompt_has_its_criteria_and_a_labelled_reference(
    judge_class: type[_Judge], kwargs: dict[str, Any], criteria: str, section: str
) -> None:
    prompt = prompt_of(judge_class, **kwargs)

    assert prompt.startswith(f"## Criteria\n{criteria}\n\n")
    assert section in prompt


def test_preset_result_is_named_after_the_class() -> None:
    assert CorrectnessJudge(ScriptedModel([]), "Paris").name == "CorrectnessJudge"


def test_preset_fails_below_threshold_with_the_standard_message() -> None:
    model = ScriptedModel([{"structured": {"reasoning": "Says Lyon.", "score": 0.0}}])

    result = CorrectnessJudge(model, expected="Paris", threshold=0.8).evaluate("Lyon")

    assert (result.passed, result.message) == (
        False,
        "Score 0.0 below threshold 0.8. Reasoning: Says Lyon.",
    )
    assert result.context["reference"] == "Paris"
    assert result.context["threshold"] == 0.8


def test_helpfulness_judge_without_a_question_has_no_question_section() -> None:
    prompt = prompt_of(HelpfulnessJudge)

    assert "## Question" not in prompt
    assert "<<<REFERENCE_BEGIN>>>" not in prompt


def test_correctness_judge_shows_the_question_when_given() -> None:
    prompt = prompt_of(CorrectnessJudge, expected="Paris", question="Capital of France?")

    assert prompt.index("## Question\n<<<QUESTION_BEGIN>>>\nCapital of France?") < prompt.index(
        "## Expected answer"
    )


def test_faithfulness_judge_numbers_a_list_of_documents() -> None:
    prompt = prompt_of(FaithfulnessJudge, context=["Doc one.", "Doc two."])

    assert (
        "## Context\n<<<REFERENCE_BEGIN>>>\n[1] Doc one.\n\n[2] Doc two.\n<<<REFERENCE_END>>>"
        in (prompt)
    )


def test_task_completion_judge_reads_rejections_in_the_transcript() -> None:
    call = ToolCall(
        id="c1",
        name="refund_order",
        inputs={"order_id": "123"},
        approval="rejected",
        approval_reason="Amount exceeds the automatic refund limit",
    )
    trajectory = Trajectory.from_messages(
        [
            Message.user("I want a refund for order #123"),
            Message.assistant("", [call]),
            Message.assistant("I cannot refund this automatically; a colleague will follow up."),
        ]
    )

    prompt = prompt_of(TaskCompletionJudge, trajectory, goal="Get a refund for order #123")

    assert "## Conversation to evaluate (transcript)" in prompt
    assert (
        "Approval [refund_order]: rejected (reason: Amount exceeds the automatic refund limit)"
    ) in prompt
    assert "do not punish the agent for the denial itself: judge how it handled the rejection" in (
        TASK_COMPLETION_CRITERIA
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda m: CorrectnessJudge(m, expected=None),
            "CorrectnessJudge: expected must be a non-empty string, got None",
        ),
        (
            lambda m: FaithfulnessJudge(m, context=[]),
            "FaithfulnessJudge: context must be a non-empty string or a list of non-empty "
            "strings, got []",
        ),
        (
            lambda m: FaithfulnessJudge(m, context=["Doc.", ""]),
            "FaithfulnessJudge: context must be a non-empty string or a list of non-empty "
            "strings, got ['Doc.', '']",
        ),
        (
            lambda m: RelevanceJudge(m, question=" "),
            "RelevanceJudge: question must be a non-empty string, got ' '",
        ),
        (
            lambda m: TaskCompletionJudge(m, goal="", threshold=0.5),
            "TaskCompletionJudge: goal must be a non-empty string, got ''",
        ),
        (
            lambda m: HelpfulnessJudge(m, threshold=-1),
            "HelpfulnessJudge: threshold must be a number from 0 to 1, got -1",
        ),
    ],
)
def test_preset_rejects_a_missing_reference(build: Any, message: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        build(ScriptedModel([]))

    assert str(excinfo.value) == message


def test_correctness_judge_shows_a_number_as_text() -> None:
    prompt = prompt_of(CorrectnessJudge, "42", expected=42)

    assert "## Expected answer\n<<<REFERENCE_BEGIN>>>\n42\n<<<REFERENCE_END>>>" in prompt


PRESETS = [
    (CorrectnessJudge, "expected", "Paris"),
    (FaithfulnessJudge, "context", "Paris is the capital of France."),
    (RelevanceJudge, "question", "What is the capital of France?"),
    (TaskCompletionJudge, "goal", "Get a refund for order #123"),
]


def _default_judge(monkeypatch: pytest.MonkeyPatch, default: ScriptedModel) -> None:
    factory = types.ModuleType("agenteval.llm._factory")
    factory.default_judge_model = lambda: default  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agenteval.llm._factory", factory)


@pytest.mark.parametrize(("judge_class", "field", "value"), PRESETS)
def test_preset_without_a_judge_uses_the_default_judge_model(
    judge_class: Any, field: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = ScriptedModel([VERDICT], name="scripted:default")
    _default_judge(monkeypatch, default)

    result = judge_class(**{field: value}).evaluate("An answer.")

    assert (result.passed, result.context["judge"], len(default.requests)) == (
        True,
        "scripted:default",
        1,
    )


def test_helpfulness_judge_without_anything_uses_the_default_judge_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    default = ScriptedModel([VERDICT], name="scripted:default")
    _default_judge(monkeypatch, default)

    assert HelpfulnessJudge().evaluate("An answer.").context["judge"] == "scripted:default"


@pytest.mark.parametrize(("judge_class", "field", "value"), PRESETS)
def test_preset_takes_its_judge_first_or_by_name_and_its_reference_by_position_or_name(
    judge_class: Any, field: str, value: str
) -> None:
    model = ScriptedModel([])

    built = [
        judge_class(model, value),
        judge_class(model, **{field: value}),
        judge_class(judge=model, **{field: value}, threshold=0.7),
    ]

    assert all(j == built[0] and getattr(j, field) == value for j in built)
    assert built[0].model is model


@pytest.mark.parametrize(("judge_class", "field", "value"), PRESETS)
def test_preset_without_its_reference_is_a_type_error(
    judge_class: Any, field: str, value: str
) -> None:
    with pytest.raises(TypeError) as excinfo:
        judge_class(ScriptedModel([]))

    name = judge_class.__name__
    assert str(excinfo.value) == f"{name}: missing required argument {field!r}: pass {field}=..."
