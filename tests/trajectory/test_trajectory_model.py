from __future__ import annotations

import json
from typing import Any

import pytest

from agenteval.trajectory import Message, ToolCall, Trajectory, Usage

OPENAI_HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Hi, I want a refund for order #123"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search_orders", "arguments": '{"order_id": "123"}'},
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"amount": 250}'},
    {
        "role": "assistant",
        "content": "Order 123 cost 250. Shall I refund it?",
        "usage": {"prompt_tokens": 140, "completion_tokens": 15},
    },
    {"role": "user", "content": [{"type": "text", "text": "Yes, please proceed."}]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_2",
                "type": "function",
                "function": {
                    "name": "refund_order",
                    "arguments": '{"order_id": "123", "amount": 250}',
                },
                "approval": "pending",
            }
        ],
        "usage": {"prompt_tokens": 170, "completion_tokens": 25},
    },
    # the final outcome of the same call, recorded once the approver decided
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_2",
                "type": "function",
                "function": {
                    "name": "refund_order",
                    "arguments": '{"order_id": "123", "amount": 250}',
                },
                "approval": "rejected",
                "approval_reason": "Above the auto-approve threshold",
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": "Rejected: Above the auto-approve threshold",
        "is_error": True,
    },
    {
        "role": "assistant",
        "content": "Sorry, I cannot process this refund automatically.",
        "usage": {"prompt_tokens": 200, "completion_tokens": 12},
    },
]

ANTHROPIC_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Hi, I want a refund for order #123"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look that up."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "search_orders",
                "input": {"order_id": "123"},
            },
        ],
        "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 7},
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": '{"amount": 250}'}],
            }
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Order 123 cost 250. Shall I refund it?"}],
        "usage": {"input_tokens": 140, "output_tokens": 15},
    },
    {"role": "user", "content": [{"type": "text", "text": "Yes, please proceed."}]},
    {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "refund_order",
                "input": {"order_id": "123", "amount": 250},
                "approval": "pending",
            }
        ],
        "usage": {"input_tokens": 170, "output_tokens": 25},
    },
    {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "refund_order",
                "input": {"order_id": "123", "amount": 250},
                "approval": "rejected",
                "approval_reason": "Above the auto-approve threshold",
            }
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": "Rejected: Above the auto-approve threshold",
                "is_error": True,
            }
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Sorry, I cannot process this refund automatically."}],
        "usage": {"input_tokens": 200, "output_tokens": 12},
    },
]


@pytest.fixture(params=["openai", "anthropic"])
def refund(request: pytest.FixtureRequest) -> Trajectory:
    if request.param == "openai":
        return Trajectory.from_openai(OPENAI_HISTORY)
    return Trajectory.from_anthropic(ANTHROPIC_HISTORY)


def test_trajectory_tool_calls_in_execution_order(refund: Trajectory) -> None:
    assert [c.name for c in refund.tool_calls()] == ["search_orders", "refund_order"]
    assert refund.tool_calls()[0].inputs == {"order_id": "123"}
    assert refund.tool_calls()[0].result == '{"amount": 250}'
    assert refund.tool_calls()[0].is_error is False


def test_trajectory_tool_calls_filtered_by_name(refund: Trajectory) -> None:
    calls = refund.tool_calls("refund_order")
    assert [c.inputs for c in calls] == [{"order_id": "123", "amount": 250}]
    assert refund.tool_calls("delete_account") == []


def test_trajectory_pending_and_final_snapshots_merge_final_winning(refund: Trajectory) -> None:
    (call,) = refund.tool_calls("refund_order")
    assert call.approval == "rejected"
    assert call.approval_reason == "Above the auto-approve threshold"
    assert call.result == "Rejected: Above the auto-approve threshold"
    assert call.is_error is True


def test_trajectory_last_tool_call(refund: Trajectory) -> None:
    last = refund.last_tool_call()
    assert last is not None and last.name == "refund_order"
    search = refund.last_tool_call("search_orders")
    assert search is not None and search.inputs == {"order_id": "123"}
    assert refund.last_tool_call("delete_account") is None


def test_trajectory_final_answer(refund: Trajectory) -> None:
    assert refund.final_answer() == "Sorry, I cannot process this refund automatically."


def test_trajectory_final_answer_is_empty_without_assistant_text() -> None:
    assert Trajectory().final_answer() == ""
    suspended = Trajectory.from_messages(
        [
            Message.user("refund #1"),
            Message.assistant("", [ToolCall(id="c", name="refund_order", approval="pending")]),
        ]
    )
    assert suspended.final_answer() == ""
    claims = Trajectory.from_messages(
        [
            Message.user("refund #1"),
            Message.assistant(
                "Your refund has been issued.",
                [ToolCall(id="c", name="refund_order", approval="pending")],
            ),
        ]
    )
    assert claims.final_answer() == ""  # it says so before the refund was even approved


def test_trajectory_user_messages(refund: Trajectory) -> None:
    assert [m.content for m in refund.user_messages()] == [
        "Hi, I want a refund for order #123",
        "Yes, please proceed.",
    ]


def test_trajectory_usage_aggregates_every_message() -> None:
    openai = Trajectory.from_openai(OPENAI_HISTORY).usage()
    assert (openai.input_tokens, openai.output_tokens, openai.total) == (610, 72, 682)
    anthropic = Trajectory.from_anthropic(ANTHROPIC_HISTORY).usage()
    assert anthropic == Usage(input_tokens=610, output_tokens=72, cache_read_tokens=7)


def test_trajectory_messages_keeps_full_fidelity(refund: Trajectory) -> None:
    messages = refund.messages()
    assert [m.role for m in messages][-3:] == ["assistant", "tool", "assistant"]
    messages.clear()
    assert refund.messages() != []


def test_trajectory_from_openai_reads_system_and_tool_messages() -> None:
    messages = Trajectory.from_openai(OPENAI_HISTORY).messages()
    assert messages[0] == Message(role="system", content="You are a support agent.")
    assert messages[3] == Message.tool("call_1", '{"amount": 250}')


def test_trajectory_from_anthropic_system_and_tool_result_blocks() -> None:
    messages = Trajectory.from_anthropic(ANTHROPIC_HISTORY, system="Be kind.").messages()
    assert messages[0] == Message(role="system", content="Be kind.")
    assert messages[2].content == "Let me look that up."
    assert messages[3] == Message.tool("toolu_1", '{"amount": 250}')


def test_trajectory_to_transcript_openai() -> None:
    assert Trajectory.from_openai(OPENAI_HISTORY).to_transcript() == "\n".join(
        [
            "System: You are a support agent.",
            "User: Hi, I want a refund for order #123",
            'Tool call [search_orders] {"order_id": "123"}',
            'Tool result [search_orders]: {"amount": 250}',
            "Assistant: Order 123 cost 250. Shall I refund it?",
            "User: Yes, please proceed.",
            'Tool call [refund_order] {"amount": 250, "order_id": "123"}',
            "Approval [refund_order]: rejected (reason: Above the auto-approve threshold)",
            "Tool error [refund_order]: Rejected: Above the auto-approve threshold",
            "Assistant: Sorry, I cannot process this refund automatically.",
        ]
    )


def test_trajectory_to_transcript_anthropic_includes_text_and_results() -> None:
    transcript = Trajectory.from_anthropic(ANTHROPIC_HISTORY).to_transcript()
    assert transcript.splitlines()[:4] == [
        "User: Hi, I want a refund for order #123",
        "Assistant: Let me look that up.",
        'Tool call [search_orders] {"order_id": "123"}',
        'Tool result [search_orders]: {"amount": 250}',
    ]
    assert "Approval [refund_order]: rejected (reason: Above the auto-approve threshold)" in (
        transcript
    )


def test_trajectory_to_transcript_shows_results_stored_on_calls() -> None:
    trajectory = Trajectory.from_messages(
        [
            Message.user("weather?"),
            Message.assistant(
                "", [ToolCall(id="w", name="weather", inputs={"city": "Oslo"}, result={"c": 3})]
            ),
            Message.assistant("3 degrees."),
        ]
    )
    assert trajectory.to_transcript().splitlines()[1:3] == [
        'Tool call [weather] {"city": "Oslo"}',
        'Tool result [weather]: {"c": 3}',
    ]


def test_trajectory_turns_split_at_user_messages(refund: Trajectory) -> None:
    turns = refund.turns()
    assert [(t.index, t.message) for t in turns] == [
        (0, "Hi, I want a refund for order #123"),
        (1, "Yes, please proceed."),
    ]
    assert turns[0].reply() == "Order 123 cost 250. Shall I refund it?"
    assert [c.name for c in turns[0].tool_calls()] == ["search_orders"]
    assert [c.name for c in turns[1].tool_calls()] == ["refund_order"]


def test_trajectory_step_count_skips_a_snapshot_repeating_a_call(refund: Trajectory) -> None:
    # the final snapshot of refund_order is the fourth assistant message, not a model call
    assert len(refund.assistant_messages()) == 5
    assert refund.step_count() == 4


def test_trajectory_step_count_counts_a_repeated_call_that_records_usage() -> None:
    looped = Trajectory.from_messages(
        [
            Message.user("go"),
            Message.assistant("", [ToolCall(id="c", name="f")], Usage(input_tokens=1)),
            Message.tool("c", "ok"),
            Message.assistant("", [ToolCall(id="c", name="f")], Usage(input_tokens=1)),
            Message.tool("c", "ok"),
        ]
    )
    assert looped.step_count() == 2


REUSED_IDS = Trajectory.from_messages(
    [
        Message.user("find a, then b"),
        Message.assistant("", [ToolCall(id="call_0", name="search", inputs={"q": "a"})]),
        Message.tool("call_0", "result a"),
        Message.assistant("", [ToolCall(id="call_0", name="search", inputs={"q": "b"})]),
        Message.tool("call_0", "result b", is_error=True),
        Message.assistant("Found a; b failed."),
    ]
)


def test_trajectory_separate_calls_reusing_an_id_stay_separate() -> None:
    calls = REUSED_IDS.tool_calls()
    assert [(c.inputs, c.result, c.is_error) for c in calls] == [
        ({"q": "a"}, "result a", False),
        ({"q": "b"}, "result b", True),
    ]
    assert REUSED_IDS.step_count() == 3


def test_trajectory_transcript_of_calls_reusing_an_id() -> None:
    assert REUSED_IDS.to_transcript().splitlines()[1:5] == [
        'Tool call [search] {"q": "a"}',
        "Tool result [search]: result a",
        'Tool call [search] {"q": "b"}',
        "Tool error [search]: result b",
    ]


def test_trajectory_the_same_call_made_again_under_its_id_counts_twice() -> None:
    # a snapshot has no result of its own; a call the provider made again does
    again = Trajectory.from_messages(
        [
            Message.user("go"),
            Message.assistant("", [ToolCall(id="call_0", name="search", inputs={"q": "a"})]),
            Message.tool("call_0", "first"),
            Message.assistant("", [ToolCall(id="call_0", name="search", inputs={"q": "a"})]),
            Message.tool("call_0", "second"),
            Message.assistant("done"),
        ]
    )
    assert [c.result for c in again.tool_calls()] == ["first", "second"]
    assert again.step_count() == 3


def test_trajectory_final_snapshot_after_the_result_merges_when_inputs_match() -> None:
    trajectory = Trajectory.from_messages(
        [
            Message.assistant(
                "", [ToolCall(id="r", name="refund", inputs={"n": 1}, approval="pending")]
            ),
            Message.tool("r", "Refunded"),
            Message.assistant(
                "", [ToolCall(id="r", name="refund", inputs={"n": 1}, approval="approved")]
            ),
        ]
    )
    assert trajectory.tool_calls() == [
        ToolCall(id="r", name="refund", inputs={"n": 1}, result="Refunded", approval="approved")
    ]
    assert trajectory.step_count() == 1


def test_trajectory_pending_snapshot_merges_with_edited_arguments() -> None:
    trajectory = Trajectory.from_messages(
        [
            Message.assistant(
                "", [ToolCall(id="r", name="refund", inputs={"n": 9}, approval="pending")]
            ),
            Message.assistant(
                "", [ToolCall(id="r", name="refund", inputs={"n": 1}, approval="approved")]
            ),
            Message.tool("r", "Refunded 1"),
        ]
    )
    (call,) = trajectory.tool_calls()
    assert (call.inputs, call.approval, call.result) == ({"n": 1}, "approved", "Refunded 1")


def test_trajectory_calls_of_one_message_sharing_an_id_stay_separate() -> None:
    trajectory = Trajectory.from_messages(
        [Message.assistant("", [ToolCall(id="x", name="f"), ToolCall(id="x", name="g")])]
    )
    assert [c.name for c in trajectory.tool_calls()] == ["f", "g"]


def test_trajectory_from_openai_does_not_count_cached_tokens_twice() -> None:
    trajectory = Trajectory.from_openai(
        [
            {
                "role": "assistant",
                "content": "hi",
                "usage": {
                    "prompt_tokens": 100,
                    "completion_tokens": 5,
                    "prompt_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 10},
                },
            }
        ]
    )
    assert trajectory.usage() == Usage(
        input_tokens=50, output_tokens=5, cache_read_tokens=40, cache_write_tokens=10
    )


def test_trajectory_json_round_trip(refund: Trajectory) -> None:
    text = refund.model_dump_json()
    again = Trajectory.model_validate_json(text)
    assert again == refund
    assert again.tool_calls() == refund.tool_calls()
    assert json.loads(text)["schema_version"] == 1


def test_trajectory_json_round_trip_keeps_merge_and_usage() -> None:
    trajectory = Trajectory.from_openai(OPENAI_HISTORY)
    again = Trajectory.model_validate_json(trajectory.model_dump_json())
    assert again.tool_calls("refund_order")[0].approval == "rejected"
    assert again.usage().total == 682


def test_trajectory_from_openai_accepts_sdk_objects() -> None:
    from openai.types.chat import ChatCompletionMessage

    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c9",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                }
            ],
        }
    )
    trajectory = Trajectory.from_openai([{"role": "user", "content": "hi"}, message])
    assert trajectory.tool_calls()[0] == ToolCall(id="c9", name="lookup", inputs={"q": "x"})


def test_trajectory_from_openai_reads_a_refusal_as_the_assistants_text() -> None:
    from openai.types.chat import ChatCompletionMessage

    refused = ChatCompletionMessage(
        role="assistant", content=None, refusal="I'm sorry, I can't help with refunds."
    )
    trajectory = Trajectory.from_openai([{"role": "user", "content": "refund me"}, refused])
    assert trajectory.final_answer() == "I'm sorry, I can't help with refunds."
    assert "Assistant: I'm sorry" in trajectory.to_transcript()
    # content, when there is some, stays the text
    both = {"role": "assistant", "content": "Here.", "refusal": "no"}
    assert Trajectory.from_openai([both]).final_answer() == "Here."


def test_trajectory_from_anthropic_accepts_sdk_blocks() -> None:
    from anthropic.types import TextBlock, ToolUseBlock

    blocks = [
        TextBlock(type="text", text="Checking."),
        ToolUseBlock(type="tool_use", id="t1", name="lookup", input={"q": "x"}),
    ]
    trajectory = Trajectory.from_anthropic([{"role": "assistant", "content": blocks}])
    assert trajectory.final_answer() == "Checking."
    assert trajectory.tool_calls()[0].inputs == {"q": "x"}


def test_trajectory_from_openai_keeps_invalid_arguments_raw() -> None:
    trajectory = Trajectory.from_openai(
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{not json"}}],
            }
        ]
    )
    assert trajectory.tool_calls()[0].inputs == {
        "_invalid_json_arguments": "{not json"
    }  # as OpenAIModel


def test_trajectory_from_openai_unknown_role_is_an_error() -> None:
    with pytest.raises(ValueError) as info:
        Trajectory.from_openai([{"role": "user", "content": "a"}, {"role": "bot"}])
    assert str(info.value) == (
        "Trajectory.from_openai: message #1 has role 'bot': expected system, developer, "
        "user, assistant, tool or function"
    )


def test_trajectory_from_openai_tool_message_needs_its_call_id() -> None:
    with pytest.raises(ValueError) as info:
        Trajectory.from_openai([{"role": "tool", "content": "x"}])
    assert str(info.value) == (
        "Trajectory.from_openai: message #0 is a tool result without a 'tool_call_id'"
    )


def test_trajectory_from_anthropic_unknown_role_is_an_error() -> None:
    with pytest.raises(ValueError) as info:
        Trajectory.from_anthropic([{"role": "tool", "content": "x"}])
    assert str(info.value) == (
        "Trajectory.from_anthropic: message #0 has role 'tool': expected user or assistant "
        "(or system)"
    )


def test_trajectory_from_messages_rejects_dicts() -> None:
    with pytest.raises(TypeError) as info:
        Trajectory.from_messages([{"role": "user", "content": "hi"}])  # type: ignore[list-item]
    assert str(info.value) == (
        "Trajectory.from_messages: item #0 is a dict, not a Message: use "
        "Trajectory.from_openai or from_anthropic for provider-style dicts"
    )


def test_trajectory_invalid_approval_value_is_an_error() -> None:
    with pytest.raises(ValueError) as info:
        Trajectory.from_anthropic(
            [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t", "name": "f", "input": {}, "approval": "ok"}
                    ],
                }
            ]
        )
    assert str(info.value) == (
        "tool call 't': approval must be 'pending', 'approved' or 'rejected', got 'ok'"
    )


def test_trajectory_orphan_tool_result_is_not_a_call() -> None:
    trajectory = Trajectory.from_messages([Message.tool("ghost", "x")])
    assert trajectory.tool_calls() == []
    assert trajectory.to_transcript() == "Tool result [unknown tool]: x"


def test_trajectory_with_digested_payloads_keeps_names_order_and_decisions() -> None:
    import hashlib

    trajectory = Trajectory.from_openai(OPENAI_HISTORY).with_digested_payloads()
    search, refund = trajectory.tool_calls()
    assert (search.name, refund.name) == ("search_orders", "refund_order")
    assert (refund.approval, refund.approval_reason, refund.is_error) == (
        "rejected",
        "Above the auto-approve threshold",
        True,
    )
    canonical = b'{"order_id": "123"}'
    assert search.inputs == {
        "_digest": {
            "sha256": hashlib.sha256(canonical).hexdigest(),
            "bytes": len(canonical),
            "shape": {"order_id": "str"},
        }
    }
    tool_messages = [m for m in trajectory.messages() if m.role == "tool"]
    assert [set(json.loads(m.content)) for m in tool_messages] == [{"sha256", "bytes", "shape"}] * 2
    assert "Above the auto-approve threshold" not in str([m.content for m in tool_messages])
    assert json.loads(search.result)["shape"] == "str"
    assert trajectory.final_answer() == "Sorry, I cannot process this refund automatically."


def test_trajectory_from_anthropic_cited_text_and_server_tools() -> None:
    from anthropic.types import ServerToolUseBlock, TextBlock, WebSearchToolResultBlock

    # cited text comes in several blocks; the server's own tools sit in the same message
    blocks = [
        TextBlock(type="text", text="Let me look."),
        ServerToolUseBlock(type="server_tool_use", id="s1", name="web_search", input={"q": "x"}),
        WebSearchToolResultBlock.model_validate(
            {
                "type": "web_search_tool_result",
                "tool_use_id": "s1",
                "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"},
            }
        ),
        TextBlock(type="text", text="The capital of France is "),
        TextBlock(type="text", text="Paris", citations=[]),
        TextBlock(type="text", text="."),
    ]
    trajectory = Trajectory.from_anthropic(
        [{"role": "user", "content": "capital?"}, {"role": "assistant", "content": blocks}]
    )
    assert trajectory.final_answer() == "Let me look.\nThe capital of France is Paris."
    assert trajectory.step_count() == 1  # one model call
    (call,) = trajectory.tool_calls("web_search")
    assert (call.id, call.inputs, call.is_error) == ("s1", {"q": "x"}, True)
    assert "unavailable" in str(call.result)


def test_trajectory_from_openai_pairs_results_without_ids_with_calls_without_ids() -> None:
    # a server that sends no ids: each result was lost ("Tool result [unknown tool]")
    call = {"type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    trajectory = Trajectory.from_openai(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [call, {**call, "function": {"name": "ship"}}]},
            {"role": "tool", "tool_call_id": "", "content": "found"},
            {"role": "tool", "tool_call_id": "", "content": "shipped"},
            {"role": "assistant", "content": "done"},
        ]
    )
    assert [(c.name, c.result) for c in trajectory.tool_calls()] == [
        ("lookup", "found"),
        ("ship", "shipped"),
    ]


@pytest.mark.parametrize(
    "usage", [{}, {"promptTokens": 90000, "completionTokens": 4000}], ids=["empty", "camel-case"]
)
def test_usage_agenteval_cannot_read_is_unmeasured_not_zero(usage: dict[str, int]) -> None:
    # it counted as 0 tokens, and TotalTokensAtMost passed a 94,000-token answer
    history = [
        {"role": "user", "content": "Summarise"},
        {"role": "assistant", "content": "...", "usage": usage},
    ]
    assert Trajectory.from_openai(history).history[1].usage is None


def test_usage_counts_are_whole_numbers() -> None:
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    history[1]["usage"] = {"prompt_tokens": 9.0, "completion_tokens": 2}  # type: ignore[assignment]
    assert Trajectory.from_openai(history).history[1].usage == Usage(
        input_tokens=9, output_tokens=2
    )
    history[1]["usage"] = {"prompt_tokens": "9"}  # type: ignore[assignment]
    with pytest.raises(ValueError) as error:
        Trajectory.from_openai(history)
    assert str(error.value) == (
        "Trajectory.from_openai: message #1: usage 'prompt_tokens' must be a whole number of "
        "tokens, got '9'"
    )


def test_a_trajectory_loaded_from_json_keeps_the_verdict_its_merge_gave() -> None:
    # a decision's None in a later snapshot, set by the JSON loader, undid the rejection
    def call(**decision: str) -> dict[str, object]:
        arguments = '{"order_id": "123"}'
        return {
            "id": "c1",
            "function": {"name": "refund_order", "arguments": arguments},
            **decision,
        }

    history = [
        {"role": "user", "content": "Refund #123"},
        {"role": "assistant", "content": None, "tool_calls": [call(approval="rejected")]},
        {"role": "assistant", "content": None, "tool_calls": [call()]},  # logged again
        {"role": "tool", "tool_call_id": "c1", "content": "Rejected", "is_error": True},
        {"role": "assistant", "content": "I cannot refund this order."},
    ]
    trajectory = Trajectory.from_openai(history)
    loaded = Trajectory.model_validate_json(trajectory.model_dump_json())
    assert [c.approval for c in trajectory.tool_calls()] == ["rejected"]
    assert [c.approval for c in loaded.tool_calls()] == ["rejected"]
