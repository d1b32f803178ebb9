from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from agenteval.trajectory import Message, ToolCall, Trajectory, as_trajectory

HISTORY = [Message.user("hi"), Message.assistant("hello")]

OPENAI_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Where is order 123?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "function": {"name": "search_orders", "arguments": '{"id": "123"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    {"role": "assistant", "content": "It has shipped."},
]

ANTHROPIC_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Where is order 123?"},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "search_orders", "input": {"id": "123"}}
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "shipped"}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "It has shipped."}]},
]


class HistoryAgent:
    """Stands for any agent exposing its history through messages()."""

    def messages(self) -> list[Message]:
        return list(HISTORY)


class Invoice:
    """A user object that knows how to present itself as a trajectory."""

    def to_trajectory(self) -> Trajectory:
        return Trajectory.from_messages(HISTORY)


def test_as_trajectory_returns_a_trajectory_unchanged() -> None:
    trajectory = Trajectory.from_messages(HISTORY)
    assert as_trajectory(trajectory) is trajectory


def test_as_trajectory_reads_an_agent_messages() -> None:
    converted = as_trajectory(HistoryAgent())
    assert converted is not None and converted.final_answer() == "hello"


def test_as_trajectory_uses_to_trajectory_hook() -> None:
    converted = as_trajectory(Invoice())
    assert converted == Trajectory.from_messages(HISTORY)


def test_as_trajectory_reads_a_list_of_messages() -> None:
    assert as_trajectory(HISTORY) == Trajectory(history=HISTORY)
    assert as_trajectory(tuple(HISTORY)) == Trajectory(history=HISTORY)
    assert as_trajectory([]) == Trajectory()


def test_as_trajectory_of_one_message_holds_only_that_message() -> None:
    message = Message.assistant("", [ToolCall(id="c", name="lookup")])
    converted = as_trajectory(message)
    assert converted is not None and converted.messages() == [message]
    assert [c.name for c in converted.tool_calls()] == ["lookup"]


def test_as_trajectory_reads_the_json_form() -> None:
    dumped = Trajectory.from_messages(HISTORY).model_dump(mode="json")
    assert as_trajectory(dumped) == Trajectory.from_messages(HISTORY)


@pytest.mark.parametrize(
    "value",
    [
        "tests/trajectory/test_as_trajectory.py",
        "hello",
        b"bytes",
        None,
        3,
        {"role": "user", "content": "hi"},
        {"history": "not a list"},
        [Message.user("hi"), "text"],
        [Message.user("hi"), {"role": "user", "content": "hi"}],
        [{"content": "no role"}],
        [{"role": "user", "content": "hi"}, {"role": "bot", "content": "?"}],
        [OPENAI_HISTORY[2], ANTHROPIC_HISTORY[1]],  # a tool message and a tool_use block
        object(),
        HistoryAgent,
    ],
)
def test_as_trajectory_returns_none_for_what_it_cannot_convert(value: object) -> None:
    assert as_trajectory(value) is None


def test_as_trajectory_reads_openai_style_dicts() -> None:
    assert as_trajectory(OPENAI_HISTORY) == Trajectory.from_openai(OPENAI_HISTORY)


def test_as_trajectory_reads_anthropic_style_dicts() -> None:
    converted = as_trajectory(ANTHROPIC_HISTORY)
    assert converted == Trajectory.from_anthropic(ANTHROPIC_HISTORY)
    assert converted is not None and converted.tool_calls()[0].result == "shipped"


def test_as_trajectory_reads_text_only_dicts() -> None:
    converted = as_trajectory(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    assert converted == Trajectory.from_messages(HISTORY)


def test_as_trajectory_reads_a_messages_list_attribute() -> None:
    class ChatRecord:
        """Stands for a stored chat, like RubyLLM's Chat.find(id)."""

        def __init__(self, messages: list[object]) -> None:
            self.messages = messages

    assert as_trajectory(ChatRecord(list(HISTORY))) == Trajectory.from_messages(HISTORY)
    from_dicts = as_trajectory(ChatRecord(list(OPENAI_HISTORY)))
    assert from_dicts == Trajectory.from_openai(OPENAI_HISTORY)
    assert as_trajectory(ChatRecord(["not", "messages"])) is None


def test_as_trajectory_never_opens_a_string_as_a_path(tmp_path: object) -> None:
    trajectory = Trajectory.from_messages(HISTORY)
    path = tmp_path / "saved.json"  # type: ignore[operator]
    path.write_text(trajectory.model_dump_json())
    assert as_trajectory(str(path)) is None


def test_as_trajectory_messages_returning_junk_is_none() -> None:
    class Junk:
        def messages(self) -> str:
            return "not messages"

    assert as_trajectory(Junk()) is None


def test_trajectory_facade_exports_documented_names() -> None:
    facade = importlib.import_module("agenteval.trajectory")
    assert facade.__all__ == sorted(facade.__all__)
    assert {"Message", "ToolCall", "Trajectory", "Usage"} <= set(facade.__all__)
    for name in facade.__all__:
        assert getattr(facade, name).__doc__, name


def test_legacy_function_calls_and_their_results_are_read() -> None:
    history = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "function", "name": "f", "content": "result"},
        {"role": "assistant", "content": "ok"},
    ]
    trajectory = as_trajectory(history)
    assert trajectory is not None
    assert [(c.name, c.result) for c in trajectory.tool_calls()] == [("f", "result")]


def test_a_message_list_that_cannot_be_read_says_why_in_the_assertion() -> None:
    from agenteval.assertions import ToolWasCalled

    history = [{"role": "user", "content": "x"}, {"role": "function", "name": "g", "content": "r"}]
    result = ToolWasCalled("g").evaluate(history)
    assert not result.passed
    assert result.message == (
        "ToolWasCalled could not read the message list as a conversation: "
        "Trajectory.from_openai: message #1 is the result of function 'g', which no earlier "
        "function_call called"
    )


def test_as_trajectory_reads_agentevals_own_messages_dumped() -> None:
    # a list of Message.model_dump() was taken for OpenAI-style, "tool call #0 has no
    # function name"
    trajectory = Trajectory.from_messages(
        [
            Message.user("refund A1"),
            Message.assistant("", [ToolCall(id="c", name="refund", inputs={"order": "A1"})]),
            Message.tool("c", "ok"),
            Message.assistant("Refunded."),
        ]
    )
    dumped = json.loads(json.dumps([m.model_dump(mode="json") for m in trajectory.messages()]))
    read = as_trajectory(dumped)
    assert read is not None and read.messages() == trajectory.messages()


def test_an_anthropic_history_with_only_server_tools_is_read_as_anthropic() -> None:
    # it was taken for OpenAI's: the web search vanished and ToolWasNotCalled passed
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "weather Paris"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": [{"type": "web_search_result", "url": "https://x", "title": "t"}],
                },
                {"type": "text", "text": "It is sunny."},
            ],
        },
    ]
    trajectory = as_trajectory(history)
    assert trajectory is not None
    assert [c.name for c in trajectory.tool_calls()] == ["web_search"]
    assert trajectory.final_answer() == "It is sunny."
