from __future__ import annotations

from typing import Any

import pytest

from agenteval._context import enter_item, exit_item
from agenteval._errors import EvaluationError
from agenteval._usage import Usage
from agenteval.agents import ToolAgent, tool
from agenteval.conversation import Conversation, SimulatedTurn, UserSimulator
from agenteval.conversation._simulator import USER_TURN_SCHEMA
from agenteval.testing._scripted import ScriptedModel
from agenteval.trajectory import Message, Trajectory


def send(message: str, reason: str = "pursuing the goal") -> dict[str, Any]:
    return {
        "structured": {"action": "send", "message": message, "reason": reason},
        "usage": {"input_tokens": 50, "output_tokens": 10},
    }


def stop(reason: str) -> dict[str, Any]:
    return {
        "structured": {"action": "stop", "message": "", "reason": reason},
        "usage": {"input_tokens": 60, "output_tokens": 8},
    }


@tool
def refund_order(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def simulator(*replies: Any, cacheable: bool = False) -> tuple[UserSimulator, ScriptedModel]:
    model = ScriptedModel(replies, name="scripted:simulator", cacheable=cacheable)
    sim = (
        UserSimulator(model)
        .with_persona("An impatient customer who gives short answers")
        .with_goal("Get a refund for order #123")
    )
    return sim, model


def test_simulator_stops_when_the_goal_is_met() -> None:
    sim, sim_model = simulator(
        send("Refund order #123. Now."), send("Yes."), stop("the refund was confirmed")
    )
    agent = ToolAgent(ScriptedModel(["Refund order #123? Confirm?", "Done: refunded."]))
    conversation = Conversation.make(agent).with_user(sim, max_turns=10)
    trajectory = conversation.run()
    assert [m.content for m in trajectory.user_messages()] == ["Refund order #123. Now.", "Yes."]
    assert trajectory.final_answer() == "Done: refunded."
    assert conversation.stop_reason == "the refund was confirmed"
    assert sim_model.remaining == 0


def test_simulator_max_turns_caps_the_conversation() -> None:
    sim, sim_model = simulator(send("one"), send("two"), send("three"))
    agent = ToolAgent(ScriptedModel(["a", "b", "c"]))
    conversation = Conversation.make(agent).with_user(sim, max_turns=2)
    trajectory = conversation.run()
    assert [m.content for m in trajectory.user_messages()] == ["one", "two"]
    assert sim_model.remaining == 1  # not asked for a third turn
    assert conversation.stop_reason == "max_turns (2) reached"


def test_simulator_can_stop_before_saying_anything() -> None:
    sim, _ = simulator(stop("nothing to ask"))
    trajectory = Conversation.make(ToolAgent(ScriptedModel([]))).with_user(sim, max_turns=3).run()
    assert trajectory == Trajectory()


def test_simulator_reads_the_visible_conversation() -> None:
    sim, sim_model = simulator(send("Refund #123"), stop("done"))
    agent = ToolAgent(
        ScriptedModel(
            [{"tool_calls": [{"name": "refund_order", "inputs": {"order_id": "123"}}]}, "Refunded."]
        ),
        tools=[refund_order],
    )
    Conversation.make(agent).with_user(sim, max_turns=5).run()
    first, second = sim_model.requests
    assert first.messages == [
        Message.user("The conversation has not started yet. Write the user's first message.")
    ]
    # the user sees the replies, not the agent's tool calls
    assert second.messages == [
        Message.user(
            "The conversation so far:\n\nUser: Refund #123\n\nAssistant: Refunded.\n\n"
            "Decide the user's next move."
        )
    ]
    assert second.json_schema == USER_TURN_SCHEMA
    assert second.schema_name == "user_turn"
    assert second.system is not None
    assert "Persona: An impatient customer who gives short answers" in second.system
    assert "Goal: Get a refund for order #123" in second.system
    assert "Never approve or reject the assistant's tool actions" in second.system


def test_simulator_never_answers_approval_requests() -> None:
    sim, sim_model = simulator(send("Refund #123"), stop("done"))
    agent = ToolAgent(
        ScriptedModel(
            [{"tool_calls": [{"name": "refund_order", "inputs": {"order_id": "123"}}]}, "No."]
        ),
        tools=[refund_order],
        require_approval=["refund_order"],
    )
    # without a policy, a simulated conversation still fails loudly on a suspension
    with pytest.raises(EvaluationError, match="no approval policy is configured"):
        Conversation.make(agent).with_user(sim, max_turns=5).run()
    assert len(sim_model.requests) == 1


def test_simulator_conversation_with_approvals() -> None:
    sim, sim_model = simulator(send("Refund #123"), stop("refund denied, giving up"))
    agent = ToolAgent(
        ScriptedModel(
            [
                {"tool_calls": [{"name": "refund_order", "inputs": {"order_id": "123"}}]},
                "I cannot refund it.",
            ]
        ),
        tools=[refund_order],
        require_approval=["refund_order"],
    )
    decided: list[str] = []

    def policy(request: Any, so_far: Trajectory) -> dict[str, Any]:
        decided.extend(a.id for a in request.pending)
        return {a.id: ("reject", "not eligible") for a in request.pending}

    trajectory = Conversation.make(agent).with_user(sim, max_turns=5).with_approvals(policy).run()
    assert decided == ["call_0_0"]
    assert trajectory.tool_calls()[0].approval == "rejected"
    assert len(sim_model.requests) == 2


def test_simulator_usage_counts_as_judge_usage() -> None:
    sim, _ = simulator(send("hi"), stop("done"))
    agent = ToolAgent(ScriptedModel([{"text": "hello", "usage": {"input_tokens": 7}}]))
    ctx, token = enter_item()
    try:
        trajectory = Conversation.make(agent).with_user(sim, max_turns=3).run()
    finally:
        exit_item(token)
    assert ctx.judge_calls == 2
    assert ctx.judge_usage == Usage(input_tokens=110, output_tokens=18)
    assert trajectory.usage() == Usage(input_tokens=7)  # the agent's own usage, separately


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"action": "send", "message": "hello", "reason": "r"}\n```',
        '```JSON\n{"action": "send", "message": "hello", "reason": "r"}\n```',
        'Here it is: {"action": "send", "message": "hello", "reason": "r"}',
    ],
)
def test_simulator_parses_json_text_replies(reply: str) -> None:
    sim, sim_model = simulator(reply)
    assert sim.next_turn(Trajectory()) == SimulatedTurn("send", "hello", "r")
    assert len(sim_model.requests) == 1  # no corrective retry


def test_simulator_invalid_reply_gets_one_corrective_retry() -> None:
    sim, sim_model = simulator("I think I'd say hello", send("hello"))
    assert sim.next_turn(Trajectory()) == SimulatedTurn("send", "hello", "pursuing the goal")
    retry = sim_model.requests[1]
    assert retry.messages[1:] == [
        Message.assistant("I think I'd say hello"),
        Message.user(
            "Your reply could not be used: the reply is not JSON. Reply again with one JSON "
            'object only, exactly {"action": "send" or "stop", "message": "...", "reason": "..."}.'
        ),
    ]


def test_simulator_invalid_twice_is_an_error() -> None:
    sim, _ = simulator(
        {"structured": {"action": "maybe", "message": "", "reason": ""}},
        {"structured": {"action": "send", "message": " ", "reason": ""}, "text": "{...}"},
    )
    with pytest.raises(EvaluationError) as info:
        sim.next_turn(Trajectory())
    assert str(info.value) == (
        "UserSimulator (model 'scripted:simulator') gave no valid reply after one corrective "
        "retry: 'message' is empty but 'action' is 'send'; last reply: '{...}'"
    )


def test_simulator_shows_a_structured_only_reply_in_the_retry_and_the_error() -> None:
    wrong = {"action": "continue", "message": "x", "reason": "r"}
    sim, sim_model = simulator({"structured": wrong}, {"structured": wrong})
    with pytest.raises(EvaluationError) as info:
        sim.next_turn(Trajectory())
    shown = '{"action": "continue", "message": "x", "reason": "r"}'
    assert str(info.value).endswith(f"last reply: {shown!r}")
    assert sim_model.requests[1].messages[-2] == Message.assistant(shown)


@pytest.mark.parametrize(
    ("structured", "problem"),
    [
        ({"action": "maybe"}, "'action' must be 'send' or 'stop', got 'maybe'"),
        ({"action": "send", "message": 3}, "'message' and 'reason' must be strings"),
        ({"action": "send", "message": ""}, "'message' is empty but 'action' is 'send'"),
    ],
)
def test_simulator_validates_the_structured_reply(structured: Any, problem: str) -> None:
    sim, _ = simulator({"structured": structured}, {"structured": structured})
    with pytest.raises(EvaluationError, match="retry: " + problem.replace("(", r"\(")):
        sim.next_turn(Trajectory())


def test_simulator_without_goal_is_an_error() -> None:
    with pytest.raises(EvaluationError) as info:
        UserSimulator(ScriptedModel([])).next_turn(Trajectory())
    assert str(info.value) == (
        "UserSimulator has no goal: call .with_goal('what the user wants') before using it in "
        "a conversation"
    )


def test_simulator_builders_return_copies() -> None:
    base = UserSimulator(ScriptedModel([]))
    changed = base.with_goal("g").with_persona("p")
    assert (base.goal, changed.goal, changed.persona) == ("", "g", "p")


def test_simulator_rejects_empty_persona() -> None:
    with pytest.raises(TypeError) as info:
        UserSimulator(ScriptedModel([])).with_persona("  ")
    assert str(info.value) == "UserSimulator.with_persona: expected a non-empty string, got '  '"


def test_simulator_replies_are_cached_when_the_cache_is_on(tmp_path: Any) -> None:
    from agenteval._cache_settings import configure_cache

    configure_cache(directory=tmp_path)
    try:
        first, first_model = simulator(send("hello"), cacheable=True)
        again, again_model = simulator(cacheable=True)
        assert first.next_turn(Trajectory()) == again.next_turn(Trajectory())
        assert (len(first_model.requests), len(again_model.requests)) == (1, 0)
    finally:
        configure_cache(enabled=False)
