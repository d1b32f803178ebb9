from __future__ import annotations

import asyncio
import math
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agenteval import _cache_settings
from agenteval._cache_settings import CacheSettings
from agenteval._context import enter_item, exit_item
from agenteval._errors import ConfigError, JudgeError
from agenteval._usage import Usage
from agenteval.judges import AgentJudge, _prompt
from agenteval.llm import _cache
from agenteval.llm._types import ModelResponse
from agenteval.testing._scripted import ScriptedModel
from agenteval.trajectory._messages import Message, ToolCall
from agenteval.trajectory._trajectory import Trajectory

CRITERIA = "The reply is polite."


def verdict(score: Any, reasoning: Any = "Polite enough.", **usage: int) -> dict[str, Any]:
    reply: dict[str, Any] = {"structured": {"reasoning": reasoning, "score": score}}
    if usage:
        reply["usage"] = usage
    return reply


@pytest.fixture(autouse=True)
def _cache_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_cache_settings, "_settings", CacheSettings())
    yield
    _cache.close_connections()


@pytest.fixture
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setattr(_cache_settings, "_settings", CacheSettings(True, directory))
    return directory


def test_agent_judge_passes_when_score_equals_threshold() -> None:
    model = ScriptedModel([verdict(0.7, "Courteous and on point.")])

    result = AgentJudge(model, CRITERIA, threshold=0.7).evaluate("Thank you for asking!")

    assert (result.passed, result.score, result.message) == (True, 0.7, "Courteous and on point.")


def test_agent_judge_fails_below_threshold_with_score_and_reasoning() -> None:
    model = ScriptedModel([verdict(0.4, "Curt.")])

    result = AgentJudge(model, CRITERIA, threshold=0.7).evaluate("No.")

    assert (result.passed, result.score) == (False, 0.4)
    assert result.message == "Score 0.4 below threshold 0.7. Reasoning: Curt."


def test_agent_judge_context_holds_threshold_criteria_reference_and_score() -> None:
    model = ScriptedModel([verdict(1)])

    result = AgentJudge(model, CRITERIA, threshold=0.5, reference="Hello!").evaluate("Hi!")

    assert result.context == {
        "threshold": 0.5,
        "criteria": CRITERIA,
        "reference": "Hello!",
        "question": None,
        "judge": "scripted:model",
        "score": 1.0,
    }


def test_agent_judge_reads_a_verdict_from_plain_text() -> None:
    model = ScriptedModel(['{"reasoning": "Fine.", "score": 0.9}'])

    result = AgentJudge(model, CRITERIA).evaluate("Hello!")

    assert (result.passed, result.score, result.message) == (True, 0.9, "Fine.")


def test_agent_judge_reads_a_verdict_inside_a_json_fence() -> None:
    model = ScriptedModel(['Here it is:\n```json\n{"reasoning": "Meh.", "score": 0.2}\n```'])

    result = AgentJudge(model, CRITERIA).evaluate("Hello!")

    assert (result.passed, result.score) == (False, 0.2)


def test_agent_judge_retries_once_with_the_error_then_passes() -> None:
    model = ScriptedModel(["I think it is great!", verdict(0.8, "Kind.")])

    result = AgentJudge(model, CRITERIA).evaluate("Hello!")

    assert (result.passed, result.score, result.message) == (True, 0.8, "Kind.")
    first, retry = model.requests
    assert retry.messages[:1] == first.messages
    assert [m.role for m in retry.messages] == ["user", "assistant", "user"]
    assert retry.messages[1].content == "I think it is great!"
    assert retry.messages[2].content == (
        "Your reply was not a valid verdict: the reply is not JSON. Reply again with only a "
        'JSON object {"reasoning": "<a short paragraph>", "score": <a number from 0 to 1>} '
        "and nothing else."
    )
    assert retry.system == first.system


def test_agent_judge_raises_judge_error_when_the_retry_is_invalid_too() -> None:
    model = ScriptedModel(["not json", verdict(2)])

    with pytest.raises(JudgeError) as excinfo:
        AgentJudge(model, CRITERIA).evaluate("Hello!")

    assert str(excinfo.value) == (
        "AgentJudge: judge 'scripted:model' gave no valid verdict after a corrective retry "
        "(the reply is not JSON; then 'score' must be a number from 0 to 1, got 2; last reply "
        """'{"reasoning": "Polite enough.", "score": 2}'); check that the criteria and """
        "examples ask for a score from 0 to 1, or use a stronger judge model"
    )
    assert model.remaining == 0


def test_agent_judge_suggests_structured_output_only_when_the_reply_is_not_json() -> None:
    model = ScriptedModel([verdict(2), "I'd say it is great"])

    with pytest.raises(JudgeError) as excinfo:
        AgentJudge(model, CRITERIA).evaluate("Hello!")

    assert str(excinfo.value).endswith(
        """last reply "I'd say it is great"); use a judge model that supports structured output"""
    )


def test_agent_judge_says_when_the_reply_was_cut_off_at_the_token_limit() -> None:
    cut = {"text": '{"reasoning": "The answer is polite and', "stop_reason": "length"}
    model = ScriptedModel([cut, cut])

    with pytest.raises(JudgeError) as excinfo:
        AgentJudge(model, CRITERIA).evaluate("Hello!")

    assert "(the reply is not JSON: it was cut off at the token limit; then" in str(excinfo.value)
    assert str(excinfo.value).endswith("; raise the max_tokens of the judge's model")


@pytest.mark.parametrize(
    ("structured", "error"),
    [
        ({"reasoning": "x", "score": 1.5}, "'score' must be a number from 0 to 1, got 1.5"),
        ({"reasoning": "x", "score": -0.1}, "'score' must be a number from 0 to 1, got -0.1"),
        ({"reasoning": "x", "score": True}, "'score' must be a number from 0 to 1, got True"),
        ({"reasoning": "x", "score": "0.8"}, "'score' must be a number from 0 to 1, got '0.8'"),
        ({"reasoning": "x", "score": math.nan}, "'score' must be a number from 0 to 1, got nan"),
        (
            {"reasoning": "x", "score": 10**400},  # too big for a float: no OverflowError
            "'score' must be a number from 0 to 1, got 100000000000000000000000000000000000000…",
        ),
        ({"reasoning": "x", "score": math.inf}, "'score' must be a number from 0 to 1, got inf"),
        ({"reasoning": "x"}, "'score' is missing"),
        ({"score": 0.9}, "'reasoning' is missing"),
        ({"reasoning": 3, "score": 0.9}, "'reasoning' must be a string, got 3"),
    ],
)
def test_agent_judge_rejects_an_invalid_verdict(structured: dict[str, Any], error: str) -> None:
    model = ScriptedModel([{"structured": structured}, {"structured": structured}])

    with pytest.raises(JudgeError, match="gave no valid verdict"):
        AgentJudge(model, CRITERIA).evaluate("Hello!")

    assert (
        model.requests[1]
        .messages[2]
        .content.startswith(f"Your reply was not a valid verdict: {error}. ")
    )


def test_agent_judge_rejects_a_json_array() -> None:
    model = ScriptedModel(["[0.9]", "[0.9]"])

    with pytest.raises(JudgeError, match=r"the reply must be a JSON object, got list"):
        AgentJudge(model, CRITERIA).evaluate("Hello!")


def test_agent_judge_fails_other_types_without_calling_the_model() -> None:
    model = ScriptedModel([])

    result = AgentJudge(model, CRITERIA).evaluate(42)

    assert (result.passed, result.score) == (False, 0.0)
    assert result.message == "Expected a string or a Trajectory to judge, got int"
    assert model.requests == []


def test_agent_judge_says_why_a_message_list_cannot_be_read() -> None:
    model = ScriptedModel([])
    call = {"id": "a", "type": "function", "approval": "denied"}
    call["function"] = {"name": "f", "arguments": "{}"}
    history = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]

    result = AgentJudge(model, CRITERIA).evaluate(history)

    assert result.message == (
        "Could not read the message list as a conversation: tool call 'a': approval must be "
        "'pending', 'approved' or 'rejected', got 'denied'"
    )
    assert model.requests == []


@pytest.mark.parametrize("output", ["", "  \n\t "])
def test_agent_judge_fails_empty_output_without_calling_the_model(output: str) -> None:
    model = ScriptedModel([])

    result = AgentJudge(model, CRITERIA).evaluate(output)

    assert (result.passed, result.score, result.message) == (False, 0.0, "empty output")
    assert model.requests == []


def test_agent_judge_fails_an_empty_trajectory_without_calling_the_model() -> None:
    model = ScriptedModel([])

    result = AgentJudge(model, CRITERIA).evaluate(Trajectory())

    assert (result.passed, result.message) == (False, "empty output")
    assert model.requests == []


def test_agent_judge_is_stateless_between_judgments() -> None:
    model = ScriptedModel([verdict(0.9), verdict(0.1)])
    judge = AgentJudge(model, CRITERIA)

    judge.evaluate("FIRST OUTPUT")
    judge.evaluate("SECOND OUTPUT")

    second = model.requests[1]
    assert len(second.messages) == 1
    assert "SECOND OUTPUT" in second.messages[0].content
    assert "FIRST OUTPUT" not in second.model_dump_json()
    assert "Polite enough" not in second.model_dump_json()


def _refund_trajectory() -> Trajectory:
    call = ToolCall(
        id="c1",
        name="refund_order",
        inputs={"order_id": "123"},
        approval="rejected",
        approval_reason="Amount exceeds the automatic refund limit",
    )
    return Trajectory.from_messages(
        [
            Message.user("I want a refund for order #123"),
            Message.assistant("", [call]),
            Message.assistant("I cannot refund this order automatically."),
        ]
    )


def test_agent_judge_reads_the_transcript_of_a_trajectory() -> None:
    model = ScriptedModel([verdict(0.9)])
    trajectory = _refund_trajectory()

    result = AgentJudge(model, CRITERIA).evaluate(trajectory)

    prompt = model.requests[0].messages[0].content
    assert result.passed
    assert (
        "## Conversation to evaluate (transcript)\n<<<UNTRUSTED_OUTPUT_BEGIN>>>\n"
        f"{trajectory.to_transcript()}\n<<<UNTRUSTED_OUTPUT_END>>>"
    ) in prompt
    assert (
        "Approval [refund_order]: rejected (reason: Amount exceeds the automatic refund limit)"
        in prompt
    )


def test_agent_judge_converts_a_message_list_to_a_trajectory() -> None:
    model = ScriptedModel([verdict(0.9)])
    messages = [Message.user("Hi"), Message.assistant("Hello, how can I help?")]

    AgentJudge(model, CRITERIA).evaluate(messages)

    assert "Assistant: Hello, how can I help?" in model.requests[0].messages[0].content


def test_agent_judge_accounts_every_call_to_the_running_item() -> None:
    model = ScriptedModel(
        [
            {"text": "oops", "usage": {"input_tokens": 100, "output_tokens": 5}, "retries": 2},
            verdict(0.9, input_tokens=120, output_tokens=20),
        ]
    )
    ctx, token = enter_item()
    try:
        AgentJudge(model, CRITERIA).evaluate("Hello!")
    finally:
        exit_item(token)

    assert (ctx.judge_calls, ctx.cached_calls, ctx.retries) == (2, 0, 2)
    assert ctx.judge_usage == Usage(input_tokens=220, output_tokens=25)
    assert ctx.agent_usage == Usage()


def test_agent_judge_aevaluate_awaits_acomplete_and_retries() -> None:
    class AsyncOnly(ScriptedModel):
        def complete(self, request: Any) -> ModelResponse:
            raise AssertionError("the sync path was used")

        async def acomplete(self, request: Any) -> ModelResponse:
            return ScriptedModel.complete(self, request)

    model = AsyncOnly(["not json", verdict(0.3, "Rude.")])

    result = asyncio.run(AgentJudge(model, CRITERIA).aevaluate("Go away."))

    assert (result.passed, result.message) == (
        False,
        "Score 0.3 below threshold 0.7. Reasoning: Rude.",
    )
    assert len(model.requests) == 2


def test_agent_judge_aevaluate_raises_judge_error_after_two_invalid_replies() -> None:
    model = ScriptedModel(["nope", "still nope"])

    with pytest.raises(JudgeError, match="the reply is not JSON; then the reply is not JSON"):
        asyncio.run(AgentJudge(model, CRITERIA).aevaluate("Hello!"))


def test_agent_judge_aevaluate_fails_empty_output_without_calling_the_model() -> None:
    model = ScriptedModel([])

    result = asyncio.run(AgentJudge(model, CRITERIA).aevaluate(" "))

    assert (result.passed, result.message, model.requests) == (False, "empty output", [])


def _fake_factory(monkeypatch: pytest.MonkeyPatch, default: Any) -> None:
    factory = types.ModuleType("agenteval.llm._factory")
    factory.default_judge_model = lambda: default  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agenteval.llm._factory", factory)


def test_agent_judge_without_a_judge_and_no_default_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_factory(monkeypatch, None)

    with pytest.raises(ConfigError) as excinfo:
        AgentJudge(None, CRITERIA)

    assert str(excinfo.value) == (
        "No judge model: pass judge=... or set AGENTEVAL_JUDGE_MODEL (e.g. 'anthropic:claude-...')"
    )


def test_agent_judge_without_a_judge_uses_the_default_judge_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    default = ScriptedModel([verdict(1.0)], name="scripted:default")
    _fake_factory(monkeypatch, default)

    judge = AgentJudge(None, CRITERIA)

    assert judge.evaluate("Hi!").context["judge"] == "scripted:default"
    assert len(default.requests) == 1


def test_agent_judge_judge_may_be_left_out_or_passed_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    default = ScriptedModel([verdict(1.0)], name="scripted:default")
    _fake_factory(monkeypatch, default)
    mine = ScriptedModel([verdict(1.0)], name="scripted:mine")

    left_out = AgentJudge(criteria=CRITERIA)
    by_name = AgentJudge(judge=mine, criteria=CRITERIA, threshold=0.5)

    assert (left_out.model, by_name.model, by_name.threshold) == (default, mine, 0.5)


def test_agent_judge_without_criteria_is_a_type_error() -> None:
    with pytest.raises(TypeError) as excinfo:
        AgentJudge(ScriptedModel([]))

    assert str(excinfo.value) == (
        "AgentJudge: missing required argument 'criteria': pass criteria=..."
    )


def test_agent_judge_without_a_judge_and_no_environment_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("agenteval.llm._factory")
    monkeypatch.delenv("AGENTEVAL_JUDGE_MODEL", raising=False)

    with pytest.raises(ConfigError, match=r"No judge model: pass judge=\.\.\."):
        AgentJudge(None, CRITERIA)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"threshold": 1.5},
            ValueError,
            "AgentJudge: threshold must be a number from 0 to 1, got 1.5",
        ),
        (
            {"threshold": True},
            ValueError,
            "AgentJudge: threshold must be a number from 0 to 1, got True",
        ),
        (
            {"criteria": "  "},
            ValueError,
            "AgentJudge: criteria must be a non-empty string, got '  '",
        ),
        ({"reference": ""}, ValueError, "AgentJudge: reference must be a non-empty string, got ''"),
        (
            {"examples": [{"output": "Hi", "score": 3}]},
            ValueError,
            "AgentJudge: examples[0]: 'score' must be a number from 0 to 1, got 3",
        ),
        (
            {"examples": [{"score": 1}]},
            TypeError,
            "AgentJudge: examples[0] must be a dict with an 'output' string, a 'score' and an "
            "optional 'reasoning', got {'score': 1}",
        ),
        (
            {"examples": {"output": "Hi", "score": 1}},
            TypeError,
            "AgentJudge: examples must be a list of {'output': ..., 'score': ..., "
            "'reasoning': ...} dicts, got dict",
        ),
        (
            {"judge": "anthropic:claude"},
            TypeError,
            "AgentJudge: judge must be a Model (e.g. agenteval.llm.model('anthropic:...')), "
            "got str",
        ),
    ],
)
def test_agent_judge_rejects_bad_arguments(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    arguments: dict[str, Any] = {"judge": ScriptedModel([]), "criteria": CRITERIA, **kwargs}

    with pytest.raises(error) as excinfo:
        AgentJudge(**arguments)

    assert str(excinfo.value) == message


def test_agent_judge_non_string_reference_is_shown_as_json() -> None:
    model = ScriptedModel([verdict(1.0)])

    AgentJudge(model, CRITERIA, reference={"total": 42}).evaluate("Total: 42")

    assert '<<<REFERENCE_BEGIN>>>\n{"total": 42}\n<<<REFERENCE_END>>>' in (
        model.requests[0].messages[0].content
    )


def test_agent_judge_cache_hit_makes_no_model_call(cache_on: Path) -> None:
    model = ScriptedModel(
        [verdict(0.9, "Kind.", input_tokens=50, output_tokens=10)], cacheable=True
    )
    judge = AgentJudge(model, CRITERIA)
    first = judge.evaluate("Hello!")

    ctx, token = enter_item()
    try:
        second = AgentJudge(model, CRITERIA).evaluate("Hello!")
    finally:
        exit_item(token)

    assert second == first
    assert len(model.requests) == 1
    assert (ctx.judge_calls, ctx.cached_calls, ctx.judge_usage) == (1, 1, Usage())


def test_agent_judge_does_not_cache_an_invalid_reply(cache_on: Path) -> None:
    model = ScriptedModel(
        ["not json", verdict(0.9, "First."), verdict(0.8, "Second.")], cacheable=True
    )
    judge = AgentJudge(model, CRITERIA)

    judge.evaluate("Hello!")
    again = judge.evaluate("Hello!")

    # The first request's invalid reply was not stored, so it is asked again.
    assert (again.score, again.message) == (0.8, "Second.")
    assert len(model.requests) == 3
    assert model.requests[2] == model.requests[0]


def test_agent_judge_replays_a_corrected_verdict_only_after_the_same_invalid_reply(
    cache_on: Path,
) -> None:
    # The corrected verdict is stored under the corrected request, which contains the
    # invalid reply: it is replayed when the judge repeats that invalid reply, never for the
    # first request (whose invalid reply is not stored, so it is always asked again).
    model = ScriptedModel(
        ["not json", verdict(0.9, "Corrected."), "not json", "other junk", verdict(0.4, "New.")],
        cacheable=True,
    )
    judge = AgentJudge(model, CRITERIA)

    first = judge.evaluate("Hello!")
    replayed = judge.evaluate("Hello!")
    fresh = judge.evaluate("Hello!")

    assert [first.message, replayed.message] == ["Corrected.", "Corrected."]
    assert fresh.message == "Score 0.4 below threshold 0.7. Reasoning: New."
    assert len(model.requests) == 5  # the second judgment asked only its first request


def test_agent_judge_with_a_changed_script_is_not_served_the_old_verdict(
    cache_on: Path,
) -> None:
    AgentJudge(ScriptedModel([verdict(0.9, "Old script.")]), CRITERIA).evaluate("Hello!")

    again = AgentJudge(ScriptedModel([verdict(0.2, "New script.")]), CRITERIA).evaluate("Hello!")

    assert (again.passed, again.score) == (False, 0.2)
    assert not cache_on.exists()


def test_agent_judge_calls_the_model_every_time_with_the_cache_off(tmp_path: Path) -> None:
    _cache_settings.configure_cache(enabled=False, directory=tmp_path / "cache")
    model = ScriptedModel([verdict(0.9), verdict(0.9)])
    judge = AgentJudge(model, CRITERIA)

    judge.evaluate("Hello!")
    judge.evaluate("Hello!")

    assert len(model.requests) == 2
    assert not (tmp_path / "cache").exists()


def test_agent_judge_takes_no_verdict_from_a_reply_cut_off_at_the_token_limit(
    cache_on: Path,
) -> None:
    # a verdict cut off in its score ("score": 0 of 0.8) reads as a whole one
    cut = {**verdict(0, "Mostly right."), "stop_reason": "max_tokens"}
    model = ScriptedModel(
        [cut, verdict(0.8, "Mostly right."), verdict(0.7, "Again.")], cacheable=True
    )
    judge = AgentJudge(model, CRITERIA)

    result = judge.evaluate("Paris")
    assert (result.score, len(model.requests)) == (0.8, 2)
    again = judge.evaluate("Paris")

    assert model.requests[1].messages[-1].content == _prompt.correction(
        "the reply was cut off at the token limit, so its verdict may be incomplete"
    )
    # the cut-off reply was not stored: the same request is asked again
    assert (again.score, model.requests[2]) == (0.7, model.requests[0])
