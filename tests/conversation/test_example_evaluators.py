"""The bundled conversation evaluators run offline, really exercise the agent, and can fail."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agenteval._context import ItemContext, enter_item, exit_item
from agenteval._errors import EvaluationError, SkipEvaluator
from agenteval.testing import FakeProvider, ScriptedModel
from agenteval.trajectory import Trajectory

EVALUATORS = Path(__file__).resolve().parents[2] / "evaluators"


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], ModuleType]]:
    # discovery puts the evaluator folder on sys.path so that helper modules import
    monkeypatch.syspath_prepend(str(EVALUATORS))
    for key in ("AGENTEVAL_AGENT_MODEL", "AGENTEVAL_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)

    def _load(file: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(
            f"_example_{Path(file).stem}", EVALUATORS / file
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    yield _load
    sys.modules.pop("_recorded", None)


def run_item(evaluator: Any, item: dict[str, Any]) -> tuple[ItemContext, Any]:
    ctx, token = enter_item()
    try:
        output = evaluator.run(item)
        evaluator.evaluate(output, item)
    finally:
        exit_item(token)
    return ctx, output


def items(evaluator: Any) -> list[dict[str, Any]]:
    return [dict(item) for item in evaluator.get_dataset()]


def test_refund_conversation_evaluator_passes_offline(load: Callable[[str], ModuleType]) -> None:
    evaluator = load("refund_conversation_evaluator.py").RefundConversationEvaluator()
    cases = items(evaluator)
    assert [c["id"] for c in cases] == [
        "refund-over-limit",
        "refund-within-limit",
        "refund-in-first-turn-rejected",
    ]
    for item in cases:
        ctx, trajectory = run_item(evaluator, item)
        assert isinstance(trajectory, Trajectory)
        assert [(a.name, a.passed) for a in ctx.assertions] == [
            ("TrajectoryMatches", True),
            ("ToolWasCalled", True),
            ("ToolWasNotCalled", True),
            (
                "ToolWasRejected" if item["expected_decision"] == "rejected" else "ToolWasApproved",
                True,
            ),
            ("StringContains", True),
            ("MaxSteps", True),
            ("TotalTokensAtMost", True),
        ], item["id"]


def test_refund_conversation_rejection_reaches_the_trajectory(
    load: Callable[[str], ModuleType],
) -> None:
    evaluator = load("refund_conversation_evaluator.py").RefundConversationEvaluator()
    _, trajectory = run_item(evaluator, items(evaluator)[0])
    refund = trajectory.last_tool_call("refund_order")
    assert (refund.approval, refund.approval_reason) == (
        "rejected",
        "Amount exceeds the automatic refund limit",
    )
    assert [t.index for t in trajectory.turns()] == [0, 1]  # the approval came in turn 2


def test_refund_conversation_a_lenient_approver_is_caught(
    load: Callable[[str], ModuleType],
) -> None:
    evaluator = load("refund_conversation_evaluator.py").RefundConversationEvaluator()
    item = {**items(evaluator)[0], "refund_limit": 1000}
    # the refund is now approved and runs; the recorded reply expected a rejection
    with pytest.raises(EvaluationError) as info:
        run_item(evaluator, item)
    assert str(info.value).startswith(
        "refund_conversations.json, case 'refund-over-limit', reply #4 was recorded after a tool "
        "message containing 'rejected', but the agent sent a tool message 'Refunded 250.00 for "
        "order 123'"
    )


def test_refund_conversation_wrong_expectations_fail(load: Callable[[str], ModuleType]) -> None:
    evaluator = load("refund_conversation_evaluator.py").RefundConversationEvaluator()
    item = {
        **items(evaluator)[0],
        "expected_tools": ["refund_order", "search_orders"],
        "expected_decision": "approved",
        "answer_contains": "refunded",
    }
    ctx, _ = run_item(evaluator, item)
    assert [a.name for a in ctx.assertions if not a.passed] == [
        "TrajectoryMatches",
        "ToolWasApproved",
        "StringContains",
    ]


def test_refund_conversation_judged_evaluator_is_skipped_without_a_judge(
    load: Callable[[str], ModuleType],
) -> None:
    evaluator = load("refund_conversation_evaluator.py").RefundConversationJudgedEvaluator()
    with pytest.raises(SkipEvaluator) as info:
        evaluator.set_up()
    assert info.value.reason == "no judge model configured: set AGENTEVAL_JUDGE_MODEL"


def judge_verdicts(n: int) -> ScriptedModel:
    return ScriptedModel([{"structured": {"reasoning": "Served.", "score": 1.0}}] * n)


def test_refund_conversation_judged_evaluator_runs_the_checks_and_adds_the_judge(
    load: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the example uses the public factory, so configuring agenteval.llm reaches it
    monkeypatch.setattr("agenteval.llm.default_judge_model", lambda: judge_verdicts(1))
    evaluator = load("refund_conversation_evaluator.py").RefundConversationJudgedEvaluator()
    evaluator.set_up()
    ctx, _ = run_item(evaluator, items(evaluator)[0])
    assert [(a.name, a.passed) for a in ctx.assertions] == [
        ("TrajectoryMatches", True),
        ("ToolWasCalled", True),
        ("ToolWasNotCalled", True),
        ("ToolWasRejected", True),
        ("StringContains", True),
        ("MaxSteps", True),
        ("TotalTokensAtMost", True),
        ("TaskCompletionJudge", True),
    ]


def test_example_agent_model_comes_from_the_public_factory(
    load: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    live = ScriptedModel(["Hello."], name="live")
    monkeypatch.setattr("agenteval.llm.default_agent_model", lambda: live)
    sys.modules.pop("_recorded", None)
    module = load("refund_conversation_evaluator.py")
    assert module.agent_model("refund_conversations.json", "refund-over-limit") is live


def test_refund_conversation_runs_on_a_real_model_when_configured(
    load: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = json.loads((EVALUATORS / "fixtures" / "refund_conversations.json").read_text())
    replies = []
    for entry in recorded["cases"]["refund-over-limit"]:
        reply = entry["reply"]
        calls = [(c["name"], c["inputs"]) for c in reply.get("tool_calls", [])]
        ids = [c["id"] for c in reply.get("tool_calls", [])]
        text = reply.get("text", "")
        replies.append(FakeProvider.tool_calls(calls, text=text, ids=ids) if calls else text)
    module = load("refund_conversation_evaluator.py")
    built: list[Any] = []

    def agent_model(fixture: str, case: str) -> Any:
        built.append(original(fixture, case))
        return built[-1]

    original = module.agent_model
    monkeypatch.setattr(module, "agent_model", agent_model)
    with FakeProvider(replies) as fake:
        monkeypatch.setenv(
            "AGENTEVAL_AGENT_MODEL", f"openai-compatible:fake-agent@{fake.openai_base_url}"
        )
        evaluator = module.RefundConversationEvaluator()
        ctx, trajectory = run_item(evaluator, items(evaluator)[0])
        assert len(fake.requests) == 4
        assert fake.requests[0].json["tools"][0]["function"]["name"] == "search_orders"
        for model in built:
            model.close()
    assert [type(m).__name__ for m in built] == ["OpenAIModel"]
    assert all(a.passed for a in ctx.assertions), [a.message for a in ctx.assertions]
    assert trajectory.usage().input_tokens == 40  # the fake's usage, not the recording's


def test_returns_conversation_evaluator_passes_offline(load: Callable[[str], ModuleType]) -> None:
    module = load("returns_conversation_evaluator.py")
    evaluator = module.ReturnsConversationEvaluator()
    cases = items(evaluator)
    assert [c["name"] for c in cases] == ["sale_item_followup", "opened_item_restocking_fee"]
    assert all(isinstance(c["inputs"], list) and "expected_output" in c for c in cases)
    for item in cases:
        ctx, agent = run_item(evaluator, item)
        assert isinstance(agent, module.ToolAgent)  # run returned the agent itself
        assert ctx.assertions and all(a.passed for a in ctx.assertions), item["name"]


def test_returns_conversation_cases_have_ids_for_reports(
    load: Callable[[str], ModuleType], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agenteval import run_evaluations

    module = load("returns_conversation_evaluator.py")
    cases = items(module.ReturnsConversationEvaluator())
    assert [c["id"] for c in cases] == [c["name"] for c in cases]
    monkeypatch.chdir(tmp_path)
    summary = run_evaluations(
        [module.ReturnsConversationEvaluator], outputs=[], journal=False, cache=False
    )
    assert [item.id for item in summary.evaluators[0].items] == [
        "sale_item_followup",
        "opened_item_restocking_fee",
    ]


def test_returns_conversation_judged_evaluator_runs_the_checks_and_adds_the_judges(
    load: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agenteval.llm.default_judge_model", lambda: judge_verdicts(2))
    evaluator = load("returns_conversation_evaluator.py").ReturnsConversationJudgedEvaluator()
    evaluator.set_up()
    ctx, _ = run_item(evaluator, items(evaluator)[0])
    assert [(a.name, a.passed) for a in ctx.assertions] == [
        ("StringContainsAll", True),
        ("StringContainsAll", True),
        ("ToolWasCalled", True),
        ("TrajectoryMatches", True),
        ("MaxToolCalls", True),
        ("CorrectnessJudge", True),
        ("AgentJudge", True),
    ]


def test_returns_conversation_sees_every_turn_of_the_returned_agent(
    load: Callable[[str], ModuleType],
) -> None:
    evaluator = load("returns_conversation_evaluator.py").ReturnsConversationEvaluator()
    _, agent = run_item(evaluator, items(evaluator)[0])
    trajectory = agent.to_trajectory()
    assert [t.message for t in trajectory.turns()] == items(evaluator)[0]["inputs"]
    assert [c.inputs["topic"] for c in trajectory.tool_calls()] == ["unopened", "sale"]


def test_returns_conversation_fails_when_a_turn_reply_is_wrong(
    load: Callable[[str], ModuleType],
) -> None:
    evaluator = load("returns_conversation_evaluator.py").ReturnsConversationEvaluator()
    item = {**items(evaluator)[0], "mentions": [["30 days"], ["can still be returned"]]}
    ctx, _ = run_item(evaluator, item)
    assert [(a.name, a.passed) for a in ctx.assertions][:2] == [
        ("StringContainsAll", True),
        ("StringContainsAll", False),
    ]


def test_returns_conversation_refuses_to_grade_an_unconvertible_output(
    load: Callable[[str], ModuleType],
) -> None:
    module = load("returns_conversation_evaluator.py")
    with pytest.raises(EvaluationError) as info:
        module.trajectory_of("Sale items cannot be returned.")
    assert str(info.value) == (
        "run() returned str, which holds no conversation: return the agent, a Conversation "
        "or a Trajectory"
    )
