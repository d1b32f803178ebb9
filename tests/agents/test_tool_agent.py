from __future__ import annotations

import functools
import gc
import warnings
from typing import Any

import pytest

from agenteval._context import enter_item, exit_item
from agenteval._errors import EvaluationError, UsageError
from agenteval.agents import ToolAgent, tool
from agenteval.conversation import Action, ApprovalRequest, ConversationalAgent
from agenteval.llm import AnthropicModel, OpenAIModel, RetryPolicy
from agenteval.llm._types import ModelRequest
from agenteval.testing import FakeProvider
from agenteval.testing._scripted import ScriptedModel
from agenteval.trajectory import Message, Trajectory, Usage, as_trajectory

ORDERS = {"123": {"order_id": "123", "amount": 250}}


@tool
def search_orders(order_id: str) -> dict[str, object]:
    """Look up an order by its id.

    Args:
        order_id: The order number.
    """
    return ORDERS[order_id]


REFUNDS: list[tuple[str, float]] = []


@tool
def refund_order(order_id: str, amount: float) -> str:
    """Refund an order."""
    REFUNDS.append((order_id, amount))
    return f"Refunded {amount} for order {order_id}"


def call(name: str, **inputs: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "inputs": inputs}], "usage": {"input_tokens": 10}}


def agent_with(*replies: object, **options: object) -> tuple[ToolAgent, ScriptedModel]:
    model = ScriptedModel(replies)  # type: ignore[arg-type]
    agent = ToolAgent(
        model,
        tools=[search_orders, refund_order],
        instructions="You are a support agent.",
        **options,  # type: ignore[arg-type]
    )
    return agent, model


def test_tool_agent_implements_the_protocol() -> None:
    agent, _ = agent_with()
    assert isinstance(agent, ConversationalAgent)


def test_tool_agent_answers_without_tools() -> None:
    agent, model = agent_with({"text": "Hello!", "usage": {"input_tokens": 5, "output_tokens": 2}})
    assert agent.chat("hi") == "Hello!"
    assert agent.messages() == [
        Message.user("hi"),
        Message.assistant("Hello!", usage=Usage(input_tokens=5, output_tokens=2)),
    ]
    assert agent.stop_reason == "answered"
    (request,) = model.requests
    assert request.system == "You are a support agent."
    assert [t.name for t in request.tools] == ["search_orders", "refund_order"]


def test_tool_agent_loops_model_tools_results_until_the_answer() -> None:
    agent, model = agent_with(call("search_orders", order_id="123"), "Order 123 cost 250.")
    assert agent.chat("What did order 123 cost?") == "Order 123 cost 250."
    history = agent.messages()
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2] == Message.tool("call_0_0", '{"order_id": "123", "amount": 250}')
    # the second model call saw the tool result
    assert model.requests[1].messages[-1] == history[2]


def test_tool_agent_records_usage_per_message() -> None:
    agent, _ = agent_with(
        call("search_orders", order_id="123"),
        {"text": "250.", "usage": {"input_tokens": 30, "output_tokens": 4}},
    )
    agent.chat("cost?")
    assert [m.usage for m in agent.messages() if m.role == "assistant"] == [
        Usage(input_tokens=10),
        Usage(input_tokens=30, output_tokens=4),
    ]
    assert agent.to_trajectory().usage() == Usage(input_tokens=40, output_tokens=4)


def test_tool_agent_feeds_tool_exceptions_back_as_errors() -> None:
    agent, _model = agent_with(call("search_orders", order_id="999"), "No such order.")
    assert agent.chat("order 999?") == "No such order."
    result = agent.messages()[2]
    assert (result.is_error, result.content) == (True, "KeyError: '999'")
    (traced,) = agent.to_trajectory().tool_calls()
    assert (traced.is_error, traced.result) == (True, "KeyError: '999'")


def test_tool_agent_feeds_bad_arguments_back_as_errors() -> None:
    agent, _ = agent_with(call("search_orders", id="123"), "Sorry.")
    agent.chat("order?")
    result = agent.messages()[2]
    assert result.is_error
    assert result.content == (
        "invalid arguments for 'search_orders': order_id: Field required; id: Extra inputs "
        "are not permitted"
    )


def test_tool_agent_feeds_a_system_exit_of_a_tool_back_as_an_error() -> None:
    # a tool wrapping argparse raises SystemExit on arguments it refuses: the item erred
    @tool
    def cli_tool(args: str) -> str:
        """Run the command line tool."""
        raise SystemExit(2)

    agent = ToolAgent(ScriptedModel([call("cli_tool", args="--n x"), "It failed."]), [cli_tool])
    assert agent.chat("run it") == "It failed."
    assert (agent.messages()[2].is_error, agent.messages()[2].content) == (True, "SystemExit: 2")


def test_tool_agent_does_not_take_an_unawaited_coroutine_for_a_result() -> None:
    # an async def behind a plain decorator: its coroutine was "the result", never run
    ran: list[float] = []

    def logged(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    @tool
    @logged
    async def refund(amount: float) -> str:
        """Refund."""
        ran.append(amount)
        return "refunded"

    agent = ToolAgent(ScriptedModel([call("refund", amount=5), "Sorry."]), [refund])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "coroutine ... was never awaited")
        agent.chat("refund me")
        gc.collect()
    result = agent.messages()[2]
    assert (result.is_error, ran) == (True, [])
    assert result.content == (
        "the tool 'refund' returned an awaitable (coroutine); async tools are not "
        "supported: it was not run"
    )


def test_tool_agent_unknown_tool_is_an_error_result() -> None:
    agent, _ = agent_with(call("delete_account"), "Done.")
    agent.chat("delete me")
    assert agent.messages()[2] == Message.tool(
        "call_0_0",
        "Unknown tool 'delete_account'; the available tools are ['refund_order', 'search_orders']",
        is_error=True,
    )


def test_tool_agent_suspends_on_a_gated_tool() -> None:
    REFUNDS.clear()
    agent, _ = agent_with(
        {
            "text": "I will refund it.",
            "tool_calls": [
                {"id": "s1", "name": "search_orders", "inputs": {"order_id": "123"}},
                {"id": "r1", "name": "refund_order", "inputs": {"order_id": "123", "amount": 250}},
            ],
        },
        require_approval=["refund_order"],
    )
    result = agent.chat("refund 123")
    assert result == ApprovalRequest(
        [
            Action(
                id="s1",
                name="search_orders",
                inputs={"order_id": "123"},
                approval=None,
                description="Look up an order by its id.",
            ),
            Action(
                id="r1",
                name="refund_order",
                inputs={"order_id": "123", "amount": 250},
                description="Refund an order.",
            ),
        ],
        message="I will refund it.",
    )
    assert isinstance(result, ApprovalRequest)
    assert [a.id for a in result.pending] == ["r1"]
    assert agent.stop_reason == "suspended"
    assert agent.pending_approval == result
    # nothing ran while suspended, and the pending snapshot is in the trajectory
    assert REFUNDS == []
    assert [m.role for m in agent.messages()] == ["user", "assistant"]
    assert agent.to_trajectory().last_tool_call("refund_order").approval == "pending"  # type: ignore[union-attr]


def test_tool_agent_resume_approve_runs_the_call() -> None:
    REFUNDS.clear()
    agent, _model = agent_with(
        call("refund_order", order_id="123", amount=20),
        "Refunded.",
        require_approval=["refund_order"],
    )
    request = agent.chat("refund 20")
    assert isinstance(request, ApprovalRequest)
    assert agent.resume({request.actions[0].id: "approve"}) == "Refunded."
    assert REFUNDS == [("123", 20.0)]
    (traced,) = agent.to_trajectory().tool_calls()
    assert (traced.approval, traced.result) == ("approved", "Refunded 20.0 for order 123")


def test_tool_agent_resume_reject_feeds_the_reason_to_the_model() -> None:
    REFUNDS.clear()
    agent, model = agent_with(
        call("refund_order", order_id="123", amount=250),
        "I cannot refund that.",
        require_approval=["refund_order"],
    )
    agent.chat("refund")
    assert agent.resume({"call_0_0": ("reject", "Above the limit")}) == "I cannot refund that."
    assert REFUNDS == []
    rejection = Message.tool(
        "call_0_0",
        "The approver rejected this call to 'refund_order': Above the limit. It was not run.",
        is_error=True,
    )
    assert model.requests[1].messages[-1] == rejection
    (traced,) = agent.to_trajectory().tool_calls()
    assert (traced.approval, traced.approval_reason, traced.is_error) == (
        "rejected",
        "Above the limit",
        True,
    )


def test_tool_agent_reject_without_reason() -> None:
    agent, model = agent_with(
        call("refund_order", order_id="1", amount=1), "OK.", require_approval=["refund_order"]
    )
    agent.chat("refund")
    agent.resume({"call_0_0": "reject"})
    assert model.requests[1].messages[-1].content == (
        "The approver rejected this call to 'refund_order' (no reason given). It was not run."
    )


def test_tool_agent_resume_missing_decision_is_an_error() -> None:
    agent, _ = agent_with(
        call("refund_order", order_id="1", amount=1), require_approval=["refund_order"]
    )
    agent.chat("refund")
    with pytest.raises(EvaluationError) as info:
        agent.resume({})
    assert str(info.value) == (
        "ToolAgent.resume gave no decision for pending action(s) 'call_0_0' (refund_order): "
        "return 'approve' or ('reject', reason) for every pending action — silence is never "
        "consent"
    )


def test_tool_agent_resume_invalid_decision_is_an_error() -> None:
    agent, _ = agent_with(
        call("refund_order", order_id="1", amount=1), require_approval=["refund_order"]
    )
    agent.chat("refund")
    with pytest.raises(EvaluationError) as info:
        agent.resume({"call_0_0": "yes"})  # type: ignore[dict-item]
    assert str(info.value) == (
        "ToolAgent.resume, action 'call_0_0' (refund_order): invalid decision 'yes': use "
        "'approve' or ('reject', 'the reason')"
    )


def test_tool_agent_resume_when_not_suspended_is_an_error() -> None:
    agent, _ = agent_with()
    with pytest.raises(EvaluationError) as info:
        agent.resume({})
    assert str(info.value) == (
        "ToolAgent.resume: the agent is not waiting for approval; resume() only follows a "
        "chat() or resume() that returned an ApprovalRequest"
    )


def test_tool_agent_chat_while_suspended_is_an_error() -> None:
    agent, _ = agent_with(
        call("refund_order", order_id="1", amount=1), require_approval=["refund_order"]
    )
    agent.chat("refund")
    with pytest.raises(EvaluationError) as info:
        agent.chat("hello?")
    assert str(info.value) == (
        "ToolAgent.chat: the agent is waiting for approval of call_0_0; call resume(decisions) "
        "before sending another message"
    )


def test_tool_agent_max_steps_ends_the_turn() -> None:
    agent, model = agent_with(
        {"text": "Searching...", **call("search_orders", order_id="123")},
        call("search_orders", order_id="123"),
        "never reached",
        max_steps=2,
    )
    # the last text the model gave (its steps end in tool results; "" was returned)
    assert agent.chat("loop") == "Searching..."
    assert agent.stop_reason == "max_steps"
    assert model.remaining == 1
    assert agent.to_trajectory().step_count() == 2


def test_tool_agent_converts_to_a_trajectory() -> None:
    agent, _ = agent_with("Hi.")
    agent.chat("hello")
    assert as_trajectory(agent) == Trajectory.from_messages(agent.messages())


def test_tool_agent_accepts_plain_functions() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedModel([call("add", a=2, b=3), "5"])
    agent = ToolAgent(model, tools=[add])
    assert agent.chat("2+3?") == "5"
    assert agent.messages()[2].content == "5"


def test_tool_agent_accepts_user_messages() -> None:
    agent, model = agent_with("Hi.")
    agent.chat(Message.user("hello"))
    assert model.requests[0].messages == [Message.user("hello")]


def test_tool_agent_rejects_unknown_gated_tools() -> None:
    with pytest.raises(UsageError) as info:
        ToolAgent(ScriptedModel([]), tools=[search_orders], require_approval=["refund"])
    assert str(info.value) == (
        "ToolAgent: require_approval names ['refund'], which are not among the tools "
        "['search_orders']"
    )


def test_tool_agent_rejects_a_string_for_require_approval() -> None:
    with pytest.raises(UsageError) as info:
        ToolAgent(ScriptedModel([]), tools=[refund_order], require_approval="refund_order")
    assert str(info.value) == (
        "ToolAgent: require_approval must be a list of tool names, got the string "
        "'refund_order': write ['refund_order']"
    )


def test_tool_agent_rejects_duplicate_tool_names() -> None:
    with pytest.raises(UsageError) as info:
        ToolAgent(ScriptedModel([]), tools=[search_orders, search_orders])
    assert (
        str(info.value)
        == "ToolAgent: two tools are named 'search_orders'; tool names must be unique"
    )


def test_tool_agent_rejects_bad_max_steps() -> None:
    with pytest.raises(UsageError) as info:
        ToolAgent(ScriptedModel([]), max_steps=0)
    assert str(info.value) == "ToolAgent: max_steps must be a positive integer, got 0"


def test_tool_agent_sends_temperature_and_max_tokens() -> None:
    model = ScriptedModel(["ok"])
    ToolAgent(model, temperature=0.0, max_tokens=50).chat("hi")
    request: ModelRequest = model.requests[0]
    assert (request.temperature, request.max_tokens, request.tools) == (0.0, 50, [])


@tool
def search(q: str) -> str:
    """Search the catalogue."""
    return f"results for {q}"


def provider_model(api: str, fake: FakeProvider) -> Any:
    policy = RetryPolicy(jitter=False, sleep=lambda _: None)
    if api == "anthropic":
        return AnthropicModel(
            "claude-test", api_key="sk-test-123456", base_url=fake.anthropic_base_url, retry=policy
        )
    return OpenAIModel(
        "gpt-test", api_key="sk-test-123456", base_url=fake.openai_base_url, retry=policy
    )


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_tool_agent_over_fake_provider_keeps_two_calls_of_one_tool(api: str) -> None:
    replies = [
        FakeProvider.tool_call("search", {"q": "a"}),
        FakeProvider.tool_call("search", {"q": "b"}),
        FakeProvider.text("Done."),
    ]
    with FakeProvider(replies) as fake:
        model = provider_model(api, fake)
        try:
            agent = ToolAgent(model, tools=[search])
            assert agent.chat("search a, then b") == "Done."
        finally:
            model.close()
    trajectory = agent.to_trajectory()
    assert [(c.inputs, c.result) for c in trajectory.tool_calls()] == [
        ({"q": "a"}, "results for a"),
        ({"q": "b"}, "results for b"),
    ]
    assert trajectory.step_count() == 3


def test_tool_agent_adds_model_retries_to_the_item() -> None:
    replies = [
        FakeProvider.rate_limited(retry_after=0),  # retry 1, then the tool call
        FakeProvider.tool_call("search", {"q": "a"}),
        FakeProvider.server_error(),  # retries 2 and 3, then the answer
        FakeProvider.server_error(),
        FakeProvider.text("Done."),
    ]
    ctx, token = enter_item()
    try:
        with FakeProvider(replies) as fake:
            model = provider_model("openai", fake)
            try:
                assert ToolAgent(model, tools=[search]).chat("search a") == "Done."
            finally:
                model.close()
    finally:
        exit_item(token)
    assert (ctx.retries, ctx.judge_calls) == (3, 0)


def test_tool_agent_outside_an_item_ignores_retries() -> None:
    agent, _ = agent_with({"text": "ok", "retries": 2})
    assert agent.chat("hi") == "ok"


def _refunds_without_ids(ids: list[str | None]) -> str:
    import json

    calls = [
        {"type": "function", "function": {"name": "refund_order", "arguments": json.dumps(a)}}
        for a in ({"order_id": "123", "amount": 250}, {"order_id": "456", "amount": 40})
    ]
    for entry, given in zip(calls, ids, strict=True):
        if given is not None:
            entry["id"] = given
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "local",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        }
    )


@pytest.mark.parametrize("ids", [["", ""], [None, None], ["same", "same"]])
def test_tool_agent_gives_calls_without_ids_of_their_own_one_each(
    fake_provider: FakeProvider, ids: list[str | None]
) -> None:
    # a decision keyed by a shared id would be taken for both calls: the $250 refund the
    # policy rejects would run
    from agenteval.conversation import Conversation

    REFUNDS.clear()
    fake_provider.add(FakeProvider.raw(_refunds_without_ids(ids)), "Refunded one of them.")
    model = OpenAIModel(
        "local", base_url=fake_provider.openai_base_url, retry=RetryPolicy(max_attempts=1)
    )
    agent = ToolAgent(model, tools=[refund_order], require_approval=["refund_order"])

    def policy(request: ApprovalRequest, so_far: Trajectory) -> dict[str, object]:
        return {
            a.id: ("reject", "over limit") if a.inputs["amount"] > 100 else "approve"
            for a in request.pending
        }

    trajectory = Conversation.make(agent).with_turns(["refund both"]).with_approvals(policy).run()
    assert REFUNDS == [("456", 40)]
    calls = trajectory.tool_calls()
    assert [(c.inputs["amount"], c.approval) for c in calls] == [
        (250, "rejected"),
        (40, "approved"),
    ]
    assert calls[1].result == "Refunded 40.0 for order 456"
    assert len({c.id for c in calls}) == 2 and all(c.id for c in calls)
    # the provider gets each result with the id of its own call
    sent = fake_provider.requests[-1].json["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == [c.id for c in calls]
    assert [c["id"] for c in sent[-3]["tool_calls"]] == [c.id for c in calls]


def test_approval_decisions_for_actions_sharing_an_id_are_refused() -> None:
    from agenteval.conversation._protocol import normalize_decisions

    twins = ApprovalRequest(
        [Action(id="a", name="refund", inputs={"n": 1}), Action(id="a", name="refund", inputs={})]
    )
    with pytest.raises(EvaluationError, match=r"share the id\(s\) \['a'\]"):
        normalize_decisions(twins, {"a": "approve"}, source="the policy")
