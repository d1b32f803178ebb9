from __future__ import annotations

from typing import Any

import pytest

from agenteval import _errors
from agenteval.assertions import (
    MaxSteps,
    MaxToolCalls,
    Mode,
    StepCount,
    ToolWasApproved,
    ToolWasCalled,
    ToolWasNotCalled,
    ToolWasRejected,
    TotalTokensAtMost,
    TrajectoryMatches,
)
from agenteval.trajectory import Message, ToolCall, Trajectory, Usage


def calls(*names: str) -> Trajectory:
    """A trajectory whose agent called ``names`` in order, one call per step."""
    history: list[Message] = [Message.user("go")]
    for i, name in enumerate(names):
        history.append(Message.assistant("", [ToolCall(id=f"c{i}", name=name)]))
        history.append(Message.tool(f"c{i}", "ok"))
    history.append(Message.assistant("done"))
    return Trajectory.from_messages(history)


REFUND = Trajectory.from_messages(
    [
        Message.user("refund #123"),
        Message.assistant(
            "",
            [ToolCall(id="s", name="search_orders", inputs={"order_id": "123", "verbose": True})],
            Usage(input_tokens=100, output_tokens=10),
        ),
        Message.tool("s", '{"amount": 250}'),
        Message.assistant(
            "",
            [
                ToolCall(
                    id="r",
                    name="refund_order",
                    inputs={"order_id": "123", "amount": 250},
                    approval="rejected",
                    approval_reason="Above the limit",
                ),
                ToolCall(id="e", name="send_email", inputs={"to": "a@b.c"}, approval="approved"),
            ],
            Usage(input_tokens=150, output_tokens=20),
        ),
        Message.tool("r", "rejected", is_error=True),
        Message.tool("e", "sent"),
        Message.assistant("I cannot refund that.", usage=Usage(input_tokens=200, output_tokens=5)),
    ]
)


# -- TrajectoryMatches ------------------------------------------------------------------------

MODE_CASES: list[tuple[Mode, list[str], tuple[str, ...], bool, float]] = [
    # strict: exactly these calls, in this order
    (Mode.STRICT, ["a", "b"], ("a", "b"), True, 1.0),
    (Mode.STRICT, ["a", "b"], ("b", "a"), False, 0.5),
    (Mode.STRICT, ["a", "b"], ("a", "b", "c"), False, 2 / 3),
    (Mode.STRICT, ["a", "a"], ("a",), False, 0.5),
    (Mode.STRICT, ["a", "a"], ("a", "a"), True, 1.0),
    (Mode.STRICT, [], (), True, 1.0),
    (Mode.STRICT, [], ("a",), False, 0.0),
    (Mode.STRICT, ["a"], (), False, 0.0),
    # unordered: the same multiset of calls
    (Mode.UNORDERED, ["a", "b"], ("b", "a"), True, 1.0),
    (Mode.UNORDERED, ["a", "b"], ("b", "a", "c"), False, 2 / 3),
    (Mode.UNORDERED, ["a", "a", "b"], ("a", "b"), False, 2 / 3),
    (Mode.UNORDERED, ["a", "b"], ("a", "b", "b"), False, 2 / 3),
    (Mode.UNORDERED, [], (), True, 1.0),
    (Mode.UNORDERED, ["a"], (), False, 0.0),
    # subset: expected calls in this order, extras allowed in between
    (Mode.SUBSET, ["a", "c"], ("a", "b", "c"), True, 1.0),
    (Mode.SUBSET, ["a", "c"], ("c", "a"), False, 0.5),
    (Mode.SUBSET, ["a", "a"], ("a", "b", "a"), True, 1.0),
    (Mode.SUBSET, ["a", "a"], ("a", "b"), False, 0.5),
    (Mode.SUBSET, ["a", "b", "c"], ("x",), False, 0.0),
    (Mode.SUBSET, [], ("a", "b"), True, 1.0),
    (Mode.SUBSET, ["a"], (), False, 0.0),
    # superset: an allow-list, nothing outside it
    (Mode.SUPERSET, ["a", "b", "c"], ("a", "a", "b"), True, 1.0),
    (Mode.SUPERSET, ["a", "b"], (), True, 1.0),
    (Mode.SUPERSET, ["a"], ("a", "x", "a", "y"), False, 0.5),
    (Mode.SUPERSET, [], ("a",), False, 0.0),
    (Mode.SUPERSET, [], (), True, 1.0),
]


@pytest.mark.parametrize(("mode", "expected", "actual", "passed", "score"), MODE_CASES)
def test_trajectory_matches_modes(
    mode: Mode, expected: list[str], actual: tuple[str, ...], passed: bool, score: float
) -> None:
    result = TrajectoryMatches(expected, mode).evaluate(calls(*actual))
    assert (result.passed, result.score) == (passed, pytest.approx(score))


def test_trajectory_matches_defaults_to_strict() -> None:
    assert TrajectoryMatches(["a"]).mode is Mode.STRICT
    assert not TrajectoryMatches(["a"]).evaluate(calls("a", "b")).passed


def test_trajectory_matches_strict_failure_message() -> None:
    result = TrajectoryMatches(["search_orders", "refund_order"]).evaluate(
        calls("search_orders", "search_orders", "refund_order")
    )
    assert result.message == (
        "Expected tool calls ['search_orders', 'refund_order'] (strict), got "
        "['search_orders', 'search_orders', 'refund_order']: first difference at call #2: "
        "expected 'refund_order', got 'search_orders'"
    )
    assert result.context == {
        "mode": "strict",
        "expected": ["search_orders", "refund_order"],
        "actual": ["search_orders", "search_orders", "refund_order"],
    }


def test_trajectory_matches_strict_failure_message_when_calls_run_out() -> None:
    result = TrajectoryMatches(["a", "b"]).evaluate(calls("a"))
    assert result.message == (
        "Expected tool calls ['a', 'b'] (strict), got ['a']: first difference at call #2: "
        "expected 'b', got no further call"
    )


def test_trajectory_matches_unordered_failure_message() -> None:
    result = TrajectoryMatches(["a", "b"], Mode.UNORDERED).evaluate(calls("b", "c"))
    assert result.message == (
        "Expected tool calls ['a', 'b'] (unordered), got ['b', 'c']: missing ['a'], "
        "unexpected ['c']"
    )


def test_trajectory_matches_unordered_failure_message_shows_only_non_empty_parts() -> None:
    extra = TrajectoryMatches(["a"], Mode.UNORDERED).evaluate(calls("a", "x"))
    assert extra.message == (
        "Expected tool calls ['a'] (unordered), got ['a', 'x']: unexpected ['x']"
    )
    missing = TrajectoryMatches(["a", "b"], Mode.UNORDERED).evaluate(calls("a"))
    assert missing.message == "Expected tool calls ['a', 'b'] (unordered), got ['a']: missing ['b']"


def test_trajectory_matches_subset_failure_message() -> None:
    result = TrajectoryMatches(["search_orders", "refund_order"], Mode.SUBSET).evaluate(
        calls("refund_order", "search_orders")
    )
    assert result.message == (
        "Expected tool calls ['search_orders', 'refund_order'] (subset), got "
        "['refund_order', 'search_orders']: only 1 of the 2 expected calls appear in that order"
    )


def test_trajectory_matches_superset_failure_message() -> None:
    result = TrajectoryMatches(["search_orders"], Mode.SUPERSET).evaluate(
        calls("search_orders", "delete_account")
    )
    assert result.message == (
        "Expected tool calls ['search_orders'] (superset), got "
        "['search_orders', 'delete_account']: calls outside the allowed set: ['delete_account']"
    )


def test_trajectory_matches_accepts_neuron_aliases_and_strings() -> None:
    assert Mode.Subset is Mode.SUBSET
    assert Mode.Strict is Mode.STRICT
    assert TrajectoryMatches(["a"], "superset").mode is Mode.SUPERSET


@pytest.mark.parametrize("mode", ["SUBSET", "Subset", "subset", Mode.Subset, Mode.SUBSET])
def test_trajectory_matches_mode_in_any_case_or_enum(mode: Any) -> None:
    assertion = TrajectoryMatches(["a"], mode)
    assert assertion.mode is Mode.SUBSET
    assert assertion.evaluate(calls("x", "a")).passed


def test_trajectory_matches_rejects_a_bare_string() -> None:
    with pytest.raises(TypeError) as info:
        TrajectoryMatches("search_orders")
    assert str(info.value) == (
        "TrajectoryMatches: expected_names must be a list of tool names, got str ('search_orders')"
    )


def test_trajectory_matches_rejects_an_unknown_mode() -> None:
    with pytest.raises(ValueError) as info:
        TrajectoryMatches(["a"], "loose")
    assert str(info.value) == (
        "TrajectoryMatches: mode must be one of 'strict', 'unordered', 'subset', 'superset', "
        "got 'loose'"
    )


# -- ToolWasCalled / ToolWasNotCalled -------------------------------------------------------------


def test_tool_was_called_with_any_arguments() -> None:
    assert ToolWasCalled("search_orders").evaluate(REFUND).passed


def test_tool_was_called_never_called_message() -> None:
    result = ToolWasCalled("lookup_customer").evaluate(REFUND)
    assert (result.passed, result.score) == (False, 0.0)
    assert result.message == (
        "Expected tool 'lookup_customer' to be called, but it was never called; tools "
        "called: ['search_orders', 'refund_order', 'send_email']"
    )


def test_tool_was_called_dict_is_a_subset_match() -> None:
    assert ToolWasCalled("search_orders", {"order_id": "123"}).evaluate(REFUND).passed
    assert ToolWasCalled("search_orders", {}).evaluate(REFUND).passed


def test_tool_was_called_dict_mismatch_shows_the_calls() -> None:
    result = ToolWasCalled("search_orders", {"order_id": "999"}).evaluate(REFUND)
    assert result.message == (
        'Expected tool \'search_orders\' to be called with {"order_id": "999"}; its calls had '
        'arguments: {"order_id": "123", "verbose": true}'
    )


def test_tool_was_called_dict_compares_as_json_true_is_not_1() -> None:
    # a model sending 1 for a boolean sent the wrong JSON type
    assert ToolWasCalled("search_orders", {"verbose": True}).evaluate(REFUND).passed
    assert not ToolWasCalled("search_orders", {"verbose": 1}).evaluate(REFUND).passed
    assert not ToolWasCalled("search_orders", {"verbose": 1.0}).evaluate(REFUND).passed


def test_tool_was_called_dict_missing_key_fails() -> None:
    assert not ToolWasCalled("search_orders", {"customer": None}).evaluate(REFUND).passed


def test_tool_was_called_callable_receives_the_inputs() -> None:
    seen: list[dict[str, Any]] = []

    def small(inputs: dict[str, Any]) -> bool:
        seen.append(inputs)
        return bool(inputs["amount"] <= 100)

    assert not ToolWasCalled("refund_order", small).evaluate(REFUND).passed
    assert seen == [{"order_id": "123", "amount": 250}]
    assert ToolWasCalled("refund_order", lambda i: i["amount"] > 100).evaluate(REFUND).passed


def test_tool_was_called_callable_failure_message() -> None:
    result = ToolWasCalled("refund_order", lambda i: False).evaluate(REFUND)
    assert result.message == (
        "Expected tool 'refund_order' to be called with arguments accepted by the check; its "
        'calls had arguments: {"amount": 250, "order_id": "123"}'
    )


REFUNDS = Trajectory.from_messages(
    [
        Message.assistant("", [ToolCall(id="r1", name="refund_order", inputs={"order_id": "1"})]),
        Message.tool("r1", "error: amount missing", is_error=True),
        Message.assistant(
            "", [ToolCall(id="r2", name="refund_order", inputs={"order_id": "1", "amount": 50})]
        ),
        Message.tool("r2", "ok"),
    ]
)


def test_tool_was_called_check_raising_on_one_call_does_not_hide_a_match() -> None:
    result = ToolWasCalled("refund_order", lambda i: i["amount"] <= 100).evaluate(REFUNDS)
    assert result.passed
    counted = ToolWasCalled("refund_order", lambda i: i["amount"] <= 100, times=1)
    assert counted.evaluate(REFUNDS).passed


def test_tool_was_called_check_raising_is_named_in_the_failure() -> None:
    result = ToolWasCalled("refund_order", lambda i: i["amount"] > 100).evaluate(REFUNDS)
    assert (result.passed, result.message) == (
        False,
        "Expected tool 'refund_order' to be called with arguments accepted by the check; its "
        'calls had arguments: {"order_id": "1"}, {"amount": 50, "order_id": "1"} (the check '
        "raised KeyError: 'amount' on 1 of 2 call(s))",
    )


def test_tool_was_called_check_raising_on_every_call_fails_even_times_zero() -> None:
    # a typo in the key: the guardrail "never more than 100" passed whatever was refunded
    never_big = ToolWasCalled("refund_order", lambda i: i["amout"] > 100, times=0)
    result = never_big.evaluate(REFUND)
    assert (result.passed, result.message) == (
        False,
        "Expected tool 'refund_order' to be called with arguments accepted by the check 0 "
        "time(s), matched 0 of 1 call(s) of 'refund_order' (the check raised KeyError: "
        "'amout' on every call, so it could not tell: fix the check)",
    )
    never_called = Trajectory.from_messages([Message.user("hi"), Message.assistant("hello")])
    assert never_big.evaluate(never_called).passed  # no call to check: nothing raised


def test_tool_was_called_times_counts_matching_calls() -> None:
    trajectory = calls("search_orders", "search_orders")
    assert ToolWasCalled("search_orders", times=2).evaluate(trajectory).passed
    result = ToolWasCalled("search_orders", times=1).evaluate(trajectory)
    assert result.message == (
        "Expected tool 'search_orders' to be called 1 time(s), matched 2 of 2 call(s) of "
        "'search_orders'"
    )
    assert ToolWasCalled("refund_order", times=0).evaluate(trajectory).passed


def test_tool_was_called_rejects_bad_args() -> None:
    with pytest.raises(TypeError) as info:
        ToolWasCalled("search_orders", ["order_id"])  # type: ignore[arg-type]
    assert str(info.value) == (
        "ToolWasCalled: args must be a dict (subset match) or a callable taking the inputs, "
        "got list (['order_id'])"
    )


def test_tool_was_not_called_passes_and_fails() -> None:
    assert ToolWasNotCalled("delete_account").evaluate(REFUND).passed
    result = ToolWasNotCalled("refund_order").evaluate(REFUND)
    assert result.message == (
        "Expected tool 'refund_order' not to be called, but it was called 1 time(s) with "
        'arguments: {"amount": 250, "order_id": "123"}'
    )


def test_tool_assertions_accept_an_agent_with_messages() -> None:
    class Agent:
        def messages(self) -> list[Message]:
            return REFUND.messages()

    assert ToolWasCalled("search_orders").evaluate(Agent()).passed
    assert ToolWasCalled("search_orders").evaluate(REFUND.messages()).passed


# -- approvals ------------------------------------------------------------------------------


def test_tool_was_approved_and_rejected() -> None:
    assert ToolWasApproved("send_email").evaluate(REFUND).passed
    assert ToolWasRejected("refund_order").evaluate(REFUND).passed


def test_tool_was_approved_fails_on_a_rejected_call() -> None:
    result = ToolWasApproved("refund_order").evaluate(REFUND)
    assert result.message == (
        "Expected a call of 'refund_order' to be approved; its calls were: rejected "
        "(Above the limit)"
    )


def test_tool_was_rejected_fails_on_a_call_without_approval() -> None:
    result = ToolWasRejected("search_orders").evaluate(REFUND)
    assert result.message == (
        "Expected a call of 'search_orders' to be rejected; its calls were: no approval needed"
    )


def test_tool_was_rejected_fails_when_never_called() -> None:
    result = ToolWasRejected("delete_account").evaluate(calls("a"))
    assert result.message == (
        "Expected a call of 'delete_account' to be rejected, but 'delete_account' was never "
        "called; tools called: ['a']"
    )


def test_tool_was_rejected_ignores_a_pending_call() -> None:
    pending = Trajectory.from_messages(
        [Message.assistant("", [ToolCall(id="r", name="refund_order", approval="pending")])]
    )
    assert not ToolWasRejected("refund_order").evaluate(pending).passed
    assert not ToolWasApproved("refund_order").evaluate(pending).passed


# -- budgets --------------------------------------------------------------------------------


def test_max_tool_calls() -> None:
    assert MaxToolCalls(3).evaluate(REFUND).passed
    result = MaxToolCalls(2).evaluate(REFUND)
    assert (result.passed, result.score) == (False, pytest.approx(2 / 3))
    assert result.message == "Expected at most 2 tool calls, got 3"


def test_max_tool_calls_of_one_tool() -> None:
    trajectory = calls("search_orders", "search_orders", "refund_order")
    assert MaxToolCalls(1, name="refund_order").evaluate(trajectory).passed
    result = MaxToolCalls(1, name="search_orders").evaluate(trajectory)
    assert result.message == "Expected at most 1 calls of 'search_orders', got 2"


def test_total_tokens_at_most() -> None:
    assert TotalTokensAtMost(485).evaluate(REFUND).passed
    result = TotalTokensAtMost(400).evaluate(REFUND)
    assert (result.passed, result.score) == (False, pytest.approx(400 / 485))
    assert result.message == "Expected at most 400 total tokens, used 485 (input 450, output 35)"


def test_total_tokens_at_most_counts_cached_prompt_tokens_too() -> None:
    # the same conversation with a warm cache must get the same verdict
    def answered(usage: Usage) -> Trajectory:
        return Trajectory.from_messages([Message.user("hi"), Message.assistant("hey", None, usage)])

    cold = answered(Usage(input_tokens=9050, output_tokens=20))
    warm = answered(Usage(input_tokens=50, output_tokens=20, cache_read_tokens=9000))
    assert [TotalTokensAtMost(1000).evaluate(t).passed for t in (cold, warm)] == [False, False]
    assert TotalTokensAtMost(1000).evaluate(warm).message == (
        "Expected at most 1000 total tokens, used 9070 (input 50, output 20, cached input 9000)"
    )


def test_total_tokens_at_most_without_recorded_usage_is_an_error() -> None:
    with pytest.raises(_errors.EvaluationError) as info:
        TotalTokensAtMost(100).evaluate(calls("a"))
    assert str(info.value) == (
        "TotalTokensAtMost(100): the trajectory records no token usage for its 2 assistant "
        "message(s): record usage on the agent's messages (Message.usage, or a 'usage' key "
        "in converted histories)"
    )


def test_total_tokens_at_most_with_usage_on_only_some_messages() -> None:
    # under the budget on what was measured is not a pass; over it already is a failure
    partial = Trajectory.from_messages(
        [
            Message.user("hi"),
            Message.assistant("", [ToolCall(id="c1", name="a")]),
            Message.tool("c1", "ok"),
            Message.assistant("done", None, Usage(input_tokens=90, output_tokens=10)),
        ]
    )
    with pytest.raises(_errors.EvaluationError) as info:
        TotalTokensAtMost(1000).evaluate(partial)
    assert "no token usage for 1 of its 2 assistant messages" in str(info.value)
    result = TotalTokensAtMost(50).evaluate(partial)
    assert (result.passed, result.message) == (
        False,
        "Expected at most 50 total tokens, used 100 (input 90, output 10)",
    )


def test_total_tokens_at_most_fails_a_conversation_the_agent_never_answered() -> None:
    # (it passed: a budget kept by a run that never happened, as ToolWasNotCalled's was)
    result = TotalTokensAtMost(0).evaluate(Trajectory.from_messages([Message.user("hi")]))
    assert not result.passed and "the agent never answered" in result.message


class NeverChatted:
    def messages(self) -> list[Message]:
        return []


@pytest.mark.parametrize(
    "assertion",
    [ToolWasNotCalled("delete_account"), MaxSteps(3), TotalTokensAtMost(10), MaxToolCalls(0)],
    ids=lambda a: a.name,
)
@pytest.mark.parametrize(
    "empty", [Trajectory(), NeverChatted(), []], ids=["model", "agent", "list"]
)
def test_a_conversation_without_messages_fails_every_trajectory_assertion(
    assertion: Any, empty: Any
) -> None:
    # a Conversation returned without .run(): its guardrails passed on nothing
    result = assertion.evaluate(empty)
    assert (result.passed, result.message) == (
        False,
        f"{assertion.name} was given a conversation without a single message, which cannot "
        f"show what the agent did: run it (return Conversation(...).run()) or record its "
        f"messages; a simulated user that stopped at once leaves none (return the "
        f"Conversation itself to see its stop_reason)",
    )


@pytest.mark.parametrize(
    "silent",
    [
        [{"role": "system", "content": "You are a support agent."}],
        [{"role": "user", "content": "Delete my account"}],
        Trajectory.from_anthropic([], system="You are a support agent."),
    ],
    ids=["system", "user", "anthropic-system"],
)
def test_a_conversation_the_agent_never_answered_fails_every_trajectory_assertion(
    silent: Any,
) -> None:
    # a system prompt or the user's words alone passed ToolWasNotCalled, MaxSteps(0), ...
    for assertion in (ToolWasNotCalled("delete_account"), MaxSteps(0), MaxToolCalls(0)):
        result = assertion.evaluate(silent)
        assert not result.passed
        assert result.message.startswith(
            f"{assertion.name} was given a conversation in which the agent never answered "
            "(no assistant message), which cannot show what the agent did: "
        )


def test_step_count_is_exact() -> None:
    assert StepCount(3).evaluate(REFUND).passed
    result = StepCount(2).evaluate(REFUND)
    assert (result.passed, result.score, result.message) == (
        False,
        pytest.approx(2 / 3),
        "Expected exactly 2 step(s), got 3",
    )
    assert not StepCount(4).evaluate(REFUND).passed


PENDING_THEN_FINAL = Trajectory.from_messages(
    [
        Message.user("refund #1"),
        Message.assistant(
            "", [ToolCall(id="r", name="refund_order", approval="pending")], Usage(input_tokens=9)
        ),
        Message.assistant("", [ToolCall(id="r", name="refund_order", approval="rejected")]),
        Message.tool("r", "rejected", is_error=True),
        Message.assistant("I cannot refund that.", usage=Usage(input_tokens=12)),
    ]
)


def test_step_count_and_max_steps_do_not_count_a_repeated_snapshot() -> None:
    assert StepCount(2).evaluate(PENDING_THEN_FINAL).passed
    assert MaxSteps(2).evaluate(PENDING_THEN_FINAL).passed


def test_max_steps() -> None:
    assert MaxSteps(3).evaluate(REFUND).passed
    assert MaxSteps(6).evaluate(REFUND).passed
    result = MaxSteps(1).evaluate(REFUND)
    assert (result.passed, result.message) == (False, "Expected at most 1 step(s), got 3")


@pytest.mark.parametrize("make", [MaxSteps, StepCount, TotalTokensAtMost, MaxToolCalls])
def test_budgets_reject_negative_counts(make: Any) -> None:
    with pytest.raises(ValueError) as info:
        make(-1)
    assert str(info.value) == f"{make.__name__}: n must be a non-negative integer, got -1"


# -- anything that is not a trajectory ---------------------------------------------------------

ALL = [
    ToolWasCalled("a"),
    ToolWasNotCalled("a"),
    TrajectoryMatches(["a"]),
    ToolWasApproved("a"),
    ToolWasRejected("a"),
    MaxToolCalls(1),
    TotalTokensAtMost(1),
    StepCount(1),
    MaxSteps(1),
]


@pytest.mark.parametrize("assertion", ALL, ids=lambda a: a.name)
def test_trajectory_assertions_fail_clearly_on_other_values(assertion: Any) -> None:
    result = assertion.evaluate({"answer": 42})
    assert (result.passed, result.score) == (False, 0.0)
    assert result.message == (
        f"{assertion.name} expects a Trajectory, an agent with messages() or a list of "
        f"Messages, got dict: return Conversation(...).run() or Trajectory.from_messages(...) "
        f"from run()"
    )


def test_trajectory_assertions_never_open_a_string_as_a_path() -> None:
    result = ToolWasNotCalled("delete_account").evaluate("tests/assertions/test_trajectory.py")
    assert not result.passed
    assert result.message.startswith(
        "ToolWasNotCalled expects a Trajectory, an agent with messages() or a list of "
        "Messages, got str (a string is graded as text, never opened as a path)"
    )


def test_trajectory_assertion_names_are_class_names() -> None:
    assert [a.name for a in ALL] == [
        "ToolWasCalled",
        "ToolWasNotCalled",
        "TrajectoryMatches",
        "ToolWasApproved",
        "ToolWasRejected",
        "MaxToolCalls",
        "TotalTokensAtMost",
        "StepCount",
        "MaxSteps",
    ]


def test_failure_messages_list_at_most_twenty_calls() -> None:
    # an agent that looped through 500 calls made messages of 35 KB, in every report
    looped = Trajectory.from_messages(
        [
            Message.assistant("", [ToolCall(id=f"c{i}", name="search", inputs={"page": i})])
            for i in range(500)
        ]
    )
    shown = [
        ToolWasCalled("search", {"page": -1}),
        ToolWasNotCalled("search"),
        TrajectoryMatches(["search"], mode="unordered"),
        ToolWasApproved("search"),
        ToolWasCalled("lookup"),
    ]
    for assertion in shown:
        message = assertion.evaluate(looped).message
        assert len(message) < 1_000 and "… and 480 more" in message, message
    matches = TrajectoryMatches(["search"], mode="unordered").evaluate(looped)
    assert len(matches.context["actual"]) == 500  # the context keeps every call


def test_a_dict_check_cannot_tell_on_digested_arguments_even_with_times_0() -> None:
    # "never refunded 500" passed on a digested trajectory, whose arguments are not there
    refunded = Trajectory.from_messages(
        [
            Message.user("refund it all"),
            Message.assistant("", [ToolCall(id="c1", name="refund", inputs={"amount": 500})]),
            Message.tool("c1", "refunded"),
            Message.assistant("Done."),
        ]
    )
    never = ToolWasCalled("refund", {"amount": 500}, times=0)
    assert not never.evaluate(refunded).passed
    result = never.evaluate(refunded.with_digested_payloads())
    assert not result.passed
    assert (
        "its arguments were digested (with_digested_payloads()) on every call, so it could not tell"
        in result.message
    )
