"""Simulated users and the ToolAgent through the real SDKs, against the loopback FakeProvider."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agenteval._context import enter_item, exit_item
from agenteval.agents import ToolAgent, tool
from agenteval.assertions import Mode, ToolWasApproved, TrajectoryMatches
from agenteval.conversation import ApprovalRequest, Conversation, UserSimulator
from agenteval.llm import AnthropicModel, Model, OpenAIModel
from agenteval.testing import FakeProvider
from agenteval.trajectory import Trajectory


@tool
def search_orders(order_id: str) -> dict[str, object]:
    """Look up an order by its id.

    Args:
        order_id: The order number.
    """
    return {"order_id": order_id, "amount": 40}


@tool
def refund_order(order_id: str, amount: float) -> str:
    """Refund an order."""
    return f"Refunded {amount} for order {order_id}"


def build(provider: str, fake: FakeProvider) -> Model:
    if provider == "anthropic":
        return AnthropicModel("claude-test", api_key="sk-test", base_url=fake.anthropic_base_url)
    return OpenAIModel("gpt-test", api_key="sk-test", base_url=fake.openai_base_url)


@pytest.fixture(params=["anthropic", "openai"])
def models(request: pytest.FixtureRequest) -> Iterator[tuple[FakeProvider, Model, Model]]:
    with FakeProvider() as fake:
        agent_model, user_model = build(request.param, fake), build(request.param, fake)
        try:
            yield fake, agent_model, user_model
        finally:
            for m in (agent_model, user_model):
                m.close()  # type: ignore[attr-defined]


def user(message: str = "", *, stop: str | None = None) -> Any:
    if stop is not None:
        return FakeProvider.structured({"action": "stop", "message": "", "reason": stop})
    return FakeProvider.structured({"action": "send", "message": message, "reason": "goal"})


def approve_small(request: ApprovalRequest, so_far: Trajectory) -> dict[str, Any]:
    return {
        a.id: "approve" if a.inputs.get("amount", 0) <= 100 else ("reject", "too much")
        for a in request.pending
    }


def test_simulated_refund_conversation_through_real_sdks(
    models: tuple[FakeProvider, Model, Model],
) -> None:
    fake, agent_model, user_model = models
    fake.add(
        user("I want a refund for order 123"),
        FakeProvider.tool_call("search_orders", {"order_id": "123"}, id="call_s"),
        FakeProvider.text("Order 123 cost 40. Shall I refund it?", input_tokens=30),
        user("Yes, please."),
        FakeProvider.tool_call("refund_order", {"order_id": "123", "amount": 40}, id="call_r"),
        FakeProvider.text("Done: 40 refunded.", input_tokens=50),
        user(stop="the refund was made"),
    )
    agent = ToolAgent(
        agent_model,
        tools=[search_orders, refund_order],
        instructions="You are a support agent.",
        require_approval=["refund_order"],
    )
    simulator = (
        UserSimulator(user_model)
        .with_persona("A polite customer")
        .with_goal("Get a refund for order 123")
    )
    conversation = (
        Conversation.make(agent).with_user(simulator, max_turns=5).with_approvals(approve_small)
    )
    ctx, token = enter_item()
    try:
        trajectory = conversation.run()
    finally:
        exit_item(token)

    assert fake.pending == 0
    assert [m.content for m in trajectory.user_messages()] == [
        "I want a refund for order 123",
        "Yes, please.",
    ]
    assert trajectory.final_answer() == "Done: 40 refunded."
    assert conversation.stop_reason == "the refund was made"
    assert (
        TrajectoryMatches(["search_orders", "refund_order"], Mode.STRICT)
        .evaluate(trajectory)
        .passed
    )
    assert ToolWasApproved("refund_order").evaluate(trajectory).passed
    (refund,) = trajectory.tool_calls("refund_order")
    assert refund.result == "Refunded 40.0 for order 123"
    # three simulator calls are judge-side usage; the agent's four calls are on the trajectory
    assert ctx.judge_calls == 3
    assert trajectory.usage().input_tokens == 10 + 30 + 10 + 50
    # the agent's requests carried the tools; the simulator's carried the schema, no tools
    bodies = [r.json for r in fake.requests]
    assert [bool(b.get("tools")) for b in bodies] == [
        provider_forces_tool(fake),
        True,
        True,
        provider_forces_tool(fake),
        True,
        True,
        provider_forces_tool(fake),
    ]


def provider_forces_tool(fake: FakeProvider) -> bool:
    """Anthropic structured output is a forced tool; OpenAI uses response_format."""
    return fake.requests[0].api == "anthropic"


def test_tool_results_reach_the_model_through_real_sdks(
    models: tuple[FakeProvider, Model, Model],
) -> None:
    fake, agent_model, _ = models
    fake.add(
        FakeProvider.tool_call("refund_order", {"order_id": "9", "amount": 500}, id="call_r"),
        FakeProvider.text("I cannot refund that."),
    )
    agent = ToolAgent(agent_model, tools=[refund_order], require_approval=["refund_order"])
    trajectory = (
        Conversation.make(agent).with_turns(["refund 9"]).with_approvals(approve_small).run()
    )
    assert trajectory.tool_calls()[0].approval == "rejected"
    sent = fake.requests[1].json
    text = str(sent["messages"])
    assert "The approver rejected this call to 'refund_order': too much. It was not run." in text
    if fake.requests[1].api == "anthropic":
        result = sent["messages"][-1]["content"][0]
        assert (result["type"], result["tool_use_id"], result["is_error"]) == (
            "tool_result",
            "call_r",
            True,
        )
    else:
        assert sent["messages"][-1]["role"] == "tool"
        assert sent["messages"][-1]["tool_call_id"] == "call_r"


def test_simulator_corrective_retry_through_real_sdks(
    models: tuple[FakeProvider, Model, Model],
) -> None:
    fake, _, user_model = models
    fake.add(FakeProvider.text("hmm, let me think"), user("hello"))
    simulator = UserSimulator(user_model).with_goal("say hello")
    turn = simulator.next_turn(Trajectory())
    assert (turn.action, turn.message) == ("send", "hello")
    assert len(fake.requests) == 2
