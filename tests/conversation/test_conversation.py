from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from agenteval._errors import EvaluationError, UsageError
from agenteval.agents import ToolAgent, tool
from agenteval.assertions import ToolWasNotCalled
from agenteval.conversation import (
    Action,
    ApprovalRequest,
    Conversation,
    ConversationalAgent,
    SimulatedTurn,
    UserSimulator,
)
from agenteval.conversation._protocol import Decision
from agenteval.testing._scripted import ScriptedModel
from agenteval.trajectory import Message, Trajectory, as_trajectory


@tool
def search_orders(order_id: str) -> dict[str, object]:
    """Look up an order."""
    return {"order_id": order_id, "amount": 250}


@tool
def refund_order(order_id: str, amount: float) -> str:
    """Refund an order."""
    return f"refunded {amount}"


def refund_call(amount: float, id: str = "r1") -> dict[str, Any]:
    return {
        "tool_calls": [
            {"id": id, "name": "refund_order", "inputs": {"order_id": "123", "amount": amount}}
        ]
    }


def refund_agent(*replies: Any) -> ToolAgent:
    return ToolAgent(
        ScriptedModel(replies),
        tools=[search_orders, refund_order],
        require_approval=["refund_order"],
    )


def threshold_policy(request: ApprovalRequest, so_far: Trajectory) -> dict[str, Decision]:
    """The seed's policy: reject refunds above 100, using the trajectory so far."""
    payload: dict[str, Decision] = {}
    for action in request.actions:
        last = so_far.last_tool_call(action.name)
        amount = last.inputs.get("amount", 0) if last else 0
        payload[action.id] = (
            ("reject", "Above the auto-approve threshold") if amount > 100 else "approve"
        )
    return payload


def test_conversation_delivers_scripted_turns_in_order() -> None:
    model = ScriptedModel(["Hello!", "Bye!"])
    agent = ToolAgent(model)
    trajectory = Conversation.make(agent).with_turns(["hi", Message.user("bye")]).run()
    assert [m.content for m in trajectory.user_messages()] == ["hi", "bye"]
    assert trajectory.final_answer() == "Bye!"
    # the second turn was sent only after the first completed
    assert model.requests[1].messages[:2] == [Message.user("hi"), Message.assistant("Hello!")]


def test_conversation_approval_approve() -> None:
    agent = refund_agent(refund_call(20), "Refunded 20.")
    trajectory = (
        Conversation.make(agent).with_turns(["refund 20"]).with_approvals(threshold_policy).run()
    )
    assert trajectory.tool_calls("refund_order")[0].approval == "approved"
    assert trajectory.final_answer() == "Refunded 20."


def test_conversation_approval_reject_with_reason() -> None:
    agent = refund_agent(refund_call(250), "I cannot refund that automatically.")
    trajectory = (
        Conversation.make(agent).with_turns(["refund 250"]).with_approvals(threshold_policy).run()
    )
    (call,) = trajectory.tool_calls("refund_order")
    assert (call.approval, call.approval_reason) == ("rejected", "Above the auto-approve threshold")
    assert "Above the auto-approve threshold" in str(call.result)
    assert "Approval [refund_order]: rejected (reason: Above the auto-approve threshold)" in (
        trajectory.to_transcript()
    )


def test_conversation_approval_at_the_second_turn() -> None:
    agent = refund_agent(
        {"tool_calls": [{"name": "search_orders", "inputs": {"order_id": "123"}}]},
        "Order 123 cost 250. Refund it?",
        refund_call(250),
        "I cannot process this refund.",
    )
    seen: list[tuple[list[str], int]] = []

    def policy(request: ApprovalRequest, so_far: Trajectory) -> Mapping[str, Decision]:
        seen.append(([a.id for a in request.pending], len(so_far.user_messages())))
        return threshold_policy(request, so_far)

    trajectory = (
        Conversation.make(agent)
        .with_turns(["Hi, I want a refund for order #123", "Yes, please proceed."])
        .with_approvals(policy)
        .run()
    )
    assert seen == [(["r1"], 2)]
    assert [c.name for c in trajectory.tool_calls()] == ["search_orders", "refund_order"]
    assert trajectory.last_tool_call("refund_order").approval == "rejected"  # type: ignore[union-attr]


def test_conversation_policy_is_called_at_every_suspension() -> None:
    agent = refund_agent(refund_call(10, "a"), refund_call(20, "b"), "Both refunded.")
    calls: list[str] = []

    def approve_all(request: ApprovalRequest, so_far: Trajectory) -> dict[str, Decision]:
        calls.extend(a.id for a in request.pending)
        return {a.id: "approve" for a in request.pending}

    trajectory = Conversation.make(agent).with_turns(["refund"]).with_approvals(approve_all).run()
    assert calls == ["a", "b"]
    assert [c.approval for c in trajectory.tool_calls()] == ["approved", "approved"]


def test_conversation_policy_sees_the_pending_call() -> None:
    agent = refund_agent(refund_call(250), "No.")
    pending: list[Any] = []

    def policy(request: ApprovalRequest, so_far: Trajectory) -> dict[str, Decision]:
        pending.append(so_far.last_tool_call("refund_order"))
        return {"r1": ["reject", "no"]}  # type: ignore[dict-item]  # JSON datasets give lists

    Conversation.make(agent).with_turns(["refund"]).with_approvals(policy).run()
    assert pending[0].approval == "pending"
    assert pending[0].inputs == {"order_id": "123", "amount": 250}


def test_conversation_suspend_without_policy_is_an_error() -> None:
    agent = refund_agent(refund_call(250))
    with pytest.raises(EvaluationError) as info:
        Conversation.make(agent).with_turns(["refund"]).run()
    assert str(info.value) == (
        "Conversation: the agent suspended for approval of refund_order (r1) but no approval "
        "policy is configured: call with_approvals(policy) — there is no approve-everything "
        "default"
    )


def test_conversation_missing_decision_is_an_error() -> None:
    agent = refund_agent(
        {
            "tool_calls": [
                {"id": "r1", "name": "refund_order", "inputs": {"order_id": "1", "amount": 5}},
                {"id": "r2", "name": "refund_order", "inputs": {"order_id": "2", "amount": 5}},
            ]
        }
    )
    with pytest.raises(EvaluationError) as info:
        Conversation.make(agent).with_turns(["refund both"]).with_approvals(
            lambda request, so_far: {"r1": "approve"}
        ).run()
    assert str(info.value) == (
        "The approval policy gave no decision for pending action(s) 'r2' (refund_order): "
        "return 'approve' or ('reject', reason) for every pending action — silence is never "
        "consent"
    )


def test_conversation_empty_payload_is_an_error() -> None:
    agent = refund_agent(refund_call(5))
    with pytest.raises(EvaluationError, match=r"no decision for pending action\(s\) 'r1'"):
        Conversation.make(agent).with_turns(["x"]).with_approvals(lambda r, t: {}).run()


def test_conversation_invalid_decision_value_is_an_error() -> None:
    agent = refund_agent(refund_call(5))
    with pytest.raises(EvaluationError) as info:
        Conversation.make(agent).with_turns(["x"]).with_approvals(lambda r, t: {"r1": True}).run()
    assert str(info.value) == (
        "The approval policy, action 'r1' (refund_order): invalid decision True: use "
        "'approve' or ('reject', 'the reason')"
    )


def test_conversation_decisions_keyed_by_tool_name_get_a_hint() -> None:
    agent = refund_agent(refund_call(5))
    with pytest.raises(EvaluationError) as info:
        Conversation.make(agent).with_turns(["x"]).with_approvals(
            lambda r, t: {"refund_order": "approve"}
        ).run()
    assert str(info.value) == (
        "The approval policy decided unknown action id(s) ['refund_order'] (keys are action "
        "ids, action.id, not tool names): the request's actions are ['r1']"
    )


def test_conversation_policy_returning_a_non_dict_is_an_error() -> None:
    agent = refund_agent(refund_call(5))
    with pytest.raises(EvaluationError) as info:
        Conversation.make(agent).with_turns(["x"]).with_approvals(lambda r, t: "approve").run()
    assert str(info.value) == (
        "The approval policy returned str, not a dict: return {action.id: 'approve' | "
        "('reject', reason)} for every pending action"
    )


def test_conversation_decisions_on_non_pending_actions_are_ignored() -> None:
    agent = refund_agent(
        {
            "tool_calls": [
                {"id": "s1", "name": "search_orders", "inputs": {"order_id": "1"}},
                {"id": "r1", "name": "refund_order", "inputs": {"order_id": "1", "amount": 5}},
            ]
        },
        "Done.",
    )
    # the seed's own example decides every action, not only the pending ones
    trajectory = (
        Conversation.make(agent)
        .with_turns(["x"])
        .with_approvals(lambda r, t: {a.id: "approve" for a in r.actions})
        .run()
    )
    assert [c.approval for c in trajectory.tool_calls()] == [None, "approved"]


def test_conversation_send_returns_the_turn() -> None:
    agent = refund_agent(
        {"tool_calls": [{"name": "search_orders", "inputs": {"order_id": "123"}}]},
        "It cost 250.",
        "You're welcome.",
    )
    conversation = Conversation.make(agent)
    first = conversation.send("What did order 123 cost?")
    second = conversation.send("Thanks")
    assert (first.index, first.message, first.reply()) == (
        0,
        "What did order 123 cost?",
        "It cost 250.",
    )
    assert [c.name for c in first.tool_calls()] == ["search_orders"]
    assert (second.index, second.reply(), second.tool_calls()) == (1, "You're welcome.", [])
    # everything accumulates on one trajectory
    whole = conversation.trajectory()
    assert len(whole.turns()) == 2
    assert whole.step_count() == 3


def test_conversation_is_convertible_to_a_trajectory() -> None:
    conversation = Conversation.make(ToolAgent(ScriptedModel(["Hi."])))
    conversation.send("hello")
    assert as_trajectory(conversation) == conversation.trajectory()


def test_conversation_scripted_and_simulated_are_exclusive() -> None:
    simulator = UserSimulator(ScriptedModel([])).with_goal("x")
    with pytest.raises(UsageError) as info:
        Conversation.make(ToolAgent(ScriptedModel([]))).with_turns(["a"]).with_user(
            simulator, max_turns=3
        )
    assert str(info.value) == (
        "Conversation.with_user: this conversation already has scripted turns (with_turns): "
        "a conversation is either scripted or simulated, not both"
    )
    with pytest.raises(UsageError) as info:
        Conversation.make(ToolAgent(ScriptedModel([]))).with_user(
            simulator, max_turns=3
        ).with_turns(["a"])
    assert str(info.value) == (
        "Conversation.with_turns: this conversation already has a simulated user (with_user): "
        "a conversation is either scripted or simulated, not both"
    )


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_conversation_max_turns_must_be_a_positive_int(bad: Any) -> None:
    simulator = UserSimulator(ScriptedModel([])).with_goal("x")
    with pytest.raises(UsageError) as info:
        Conversation.make(ToolAgent(ScriptedModel([]))).with_user(simulator, max_turns=bad)
    assert str(info.value) == (
        f"Conversation.with_user: max_turns must be a positive integer, got {bad!r}: there is "
        f"no unlimited default"
    )


def test_conversation_with_nothing_to_run_is_an_error() -> None:
    with pytest.raises(UsageError) as info:
        Conversation.make(ToolAgent(ScriptedModel([]))).run()
    assert str(info.value) == (
        "Conversation.run: nothing to say: script the user with with_turns([...]) or simulate "
        "it with with_user(simulator, max_turns=N)"
    )


def test_conversation_turns_must_be_a_list() -> None:
    with pytest.raises(UsageError) as info:
        Conversation.make(ToolAgent(ScriptedModel([]))).with_turns("hello")
    assert str(info.value) == (
        "Conversation.with_turns: expected a list of turns, got a single str ('hello'): wrap "
        "it in a list"
    )
    item = {"goal": "a refund", "turns": ["Hi", "Yes please"]}
    with pytest.raises(UsageError) as info:
        Conversation.make(ToolAgent(ScriptedModel([]))).with_turns(item)  # type: ignore[arg-type]
    assert str(info.value) == (
        "Conversation.with_turns: expected a list of turns, got a dict (keys: 'goal', "
        "'turns'): pass the list it holds, e.g. item['turns']"
    )


def test_a_user_simulator_needs_a_model_not_its_name() -> None:
    with pytest.raises(TypeError) as info:
        UserSimulator("openai:gpt-4o-mini")  # type: ignore[arg-type]
    assert str(info.value) == (
        "UserSimulator: model must be a Model (e.g. agenteval.llm.model('anthropic:...')), "
        "got str 'openai:gpt-4o-mini'"
    )


def test_conversation_turns_may_not_be_empty() -> None:
    # a dataset's "turns" missing: nothing would run, and every guardrail would pass
    with pytest.raises(UsageError, match=r"^Conversation.with_turns: no turns given"):
        Conversation.make(ToolAgent(ScriptedModel([]))).with_turns([])


def test_conversation_turns_must_be_user_messages() -> None:
    with pytest.raises(UsageError) as info:
        Conversation.make(ToolAgent(ScriptedModel([]))).with_turns([Message.assistant("hi")])
    assert str(info.value).startswith(
        "Conversation.with_turns: turn #0 is Message(role='assistant'"
    )


def test_conversation_rejects_objects_that_are_not_agents() -> None:
    with pytest.raises(UsageError) as info:
        Conversation.make(object())  # type: ignore[arg-type]
    assert str(info.value) == (
        "Conversation.make: object has no chat() method: an agent must implement "
        "chat(message), resume(decisions) and messages() (see ConversationalAgent)"
    )


class EchoAgent:
    """A hand-written agent from 'another framework', adapted to the protocol."""

    def __init__(self, reply: object) -> None:
        self.reply = reply
        self.history: list[Message] = []

    def chat(self, message: str | Message) -> Any:
        text = message.content if isinstance(message, Message) else message
        self.history += [Message.user(text), Message.assistant(f"echo {text}")]
        return self.reply

    def resume(self, decisions: Mapping[str, Decision]) -> str:
        return "resumed"

    def messages(self) -> list[Message]:
        return list(self.history)


def test_conversation_drives_any_protocol_agent() -> None:
    agent = EchoAgent("ok")
    assert isinstance(agent, ConversationalAgent)
    trajectory = Conversation.make(agent).with_turns(["a", "b"]).run()
    assert trajectory.final_answer() == "echo b"


def test_conversation_agent_returning_junk_is_an_error() -> None:
    with pytest.raises(EvaluationError) as info:
        Conversation.make(EchoAgent(42)).with_turns(["a"]).run()
    assert str(info.value) == (
        "Conversation: EchoAgent.chat()/resume() returned int: a ConversationalAgent returns "
        "its reply text or an ApprovalRequest"
    )


def test_conversation_stuck_agent_is_an_error() -> None:
    stuck = ApprovalRequest([Action(id="x", name="t")])

    class Stuck(EchoAgent):
        def resume(self, decisions: Mapping[str, Decision]) -> Any:
            return stuck

    with pytest.raises(EvaluationError) as info:
        Conversation.make(Stuck(stuck)).with_turns(["a"]).with_approvals(
            lambda r, t: {"x": "approve"}
        ).run()
    assert str(info.value) == (
        "Conversation: the agent suspended 100 times in turn #1 without finishing: it looks stuck"
    )


def test_conversation_with_user_accepts_any_next_turn_object() -> None:
    class RuleBasedUser:
        def __init__(self) -> None:
            self.said = 0

        def next_turn(self, trajectory: Trajectory) -> SimulatedTurn:
            self.said += 1
            if trajectory.final_answer().endswith("?"):
                return SimulatedTurn("send", "yes")
            if self.said > 1:
                return SimulatedTurn("stop", reason="answered")
            return SimulatedTurn("send", "hi")

    agent = ToolAgent(ScriptedModel(["Want a refund?", "Done."]))
    conversation = Conversation.make(agent).with_user(RuleBasedUser(), max_turns=5)  # type: ignore[arg-type]
    trajectory = conversation.run()
    assert [m.content for m in trajectory.user_messages()] == ["hi", "yes"]
    assert conversation.stop_reason == "answered"


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            lambda: SimulatedTurn("quit", "bye"),  # type: ignore[arg-type]
            "SimulatedTurn: action must be 'send' or 'stop', got 'quit'",
        ),
        (
            lambda: SimulatedTurn("send", ""),
            "SimulatedTurn: action 'send' needs a message (an empty user turn); to end the "
            "conversation, use action 'stop'",
        ),
        (
            lambda: SimulatedTurn("send", None),  # type: ignore[arg-type]
            "SimulatedTurn: message must be a str, got NoneType None",
        ),
    ],
)
def test_a_simulated_turn_that_means_nothing_is_refused(turn: Any, message: str) -> None:
    # "quit" was taken for "send" (sent until max_turns), and empty user turns were sent
    with pytest.raises((ValueError, TypeError)) as info:
        turn()
    assert str(info.value) == message


def test_a_rule_based_user_returning_no_simulated_turn_is_an_item_error() -> None:
    # it raised a bare AttributeError: 'str' object has no attribute 'action'
    class SaysHi:
        def next_turn(self, trajectory: Trajectory) -> str:
            return "hi"

    conversation = Conversation.make(ToolAgent(ScriptedModel([]))).with_user(SaysHi(), max_turns=2)  # type: ignore[arg-type]
    with pytest.raises(EvaluationError) as info:
        conversation.run()
    assert str(info.value) == (
        "Conversation: SaysHi.next_turn() returned str 'hi'; it must return a "
        "SimulatedTurn(action='send', message=...) or SimulatedTurn(action='stop', reason=...)"
    )


def test_a_user_stopping_before_the_first_turn_is_told_in_the_trajectory_failure() -> None:
    class Leaves:
        def next_turn(self, trajectory: Trajectory) -> SimulatedTurn:
            return SimulatedTurn("stop", reason="nothing to ask")

    conversation = Conversation.make(ToolAgent(ScriptedModel([]))).with_user(Leaves(), max_turns=2)  # type: ignore[arg-type]
    conversation.run()
    result = ToolWasNotCalled("refund_order").evaluate(conversation)
    assert not result.passed
    assert result.message == (
        "ToolWasNotCalled was given a conversation without a single message, which cannot "
        "show what the agent did: it ended before its first turn (stop_reason: "
        "'nothing to ask')"
    )


def test_conversation_with_user_rejects_other_objects() -> None:
    with pytest.raises(UsageError) as info:
        Conversation.make(ToolAgent(ScriptedModel([]))).with_user("a user", max_turns=2)  # type: ignore[arg-type]
    assert str(info.value) == (
        "Conversation.with_user: expected a UserSimulator (or an object with "
        "next_turn(trajectory)), got str"
    )


def test_a_policy_that_cannot_take_two_arguments_is_refused_where_it_is_given() -> None:
    # it failed at the first suspension with a raw "takes 1 positional argument"
    with pytest.raises(UsageError) as info:
        Conversation.make(EchoAgent("hi")).with_approvals(lambda request: {})
    assert str(info.value) == (
        "Conversation.with_approvals: the policy is called as policy(request, "
        "trajectory_so_far), with two arguments, and <lambda> cannot take them: write it "
        "as lambda request, so_far: ..."
    )
    Conversation.make(EchoAgent("hi")).with_approvals(lambda *args: {})  # (takes them)
