"""ScriptedModel checks its script when built, so a typo cannot make a test pass."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agenteval.llm import ModelRequest
from agenteval.testing import ScriptedModel
from agenteval.trajectory import Message
from cli_support import CliResult


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"tool_call": []}, "reply #1: unknown key 'tool_call' (known keys: text, tool_calls"),
        (
            {"tool_calls": [{"name": "f", "arguments": {}}]},
            "reply #1, tool call #1: unknown key 'arguments' (known keys: id, name, inputs",
        ),
        ({"tool_calls": [{"inputs": {}}]}, "reply #1, tool call #1: name: Field required"),
        ({"structured": [1]}, "reply #1: structured: Input should be a valid dictionary"),
    ],
)
def test_a_bad_reply_is_refused_when_the_model_is_built(reply: object, message: str) -> None:
    with pytest.raises(ValueError, match=r"^ScriptedModel ") as caught:
        ScriptedModel([reply])  # type: ignore[list-item]
    assert message in str(caught.value)


def test_a_bad_later_reply_names_its_position() -> None:
    with pytest.raises(ValueError, match=r"reply #3: unknown key 'txt'"):
        ScriptedModel(["a", {"text": "b"}, {"txt": "c"}])


def test_a_tool_call_that_is_not_a_dict_is_refused() -> None:
    with pytest.raises(
        TypeError, match=r"reply #1: tool call #1 must be a dict or ToolCall, got str"
    ):
        ScriptedModel([{"tool_calls": ["search"]}])


def test_valid_replies_still_play_in_order() -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "f", "inputs": {"a": 1}}]}, "done"])
    request = ModelRequest(messages=[Message.user("hi")])
    first = model.complete(request)
    assert [(c.id, c.name, c.inputs) for c in first.tool_calls] == [("call_0_0", "f", {"a": 1})]
    assert first.stop_reason == "tool_use"
    assert model.complete(request).text == "done"
    assert model.remaining == 0


def test_a_typo_in_a_script_fails_the_item_instead_of_passing(
    cli: Callable[..., CliResult], write: Callable[[str, str], Path]
) -> None:
    write(
        "evaluators/guard_evaluator.py",
        '''
from agenteval import BaseEvaluator
from agenteval.agents import ToolAgent, tool
from agenteval.assertions import ToolWasNotCalled
from agenteval.datasets import ArrayDataset
from agenteval.testing import ScriptedModel


@tool
def delete_account(user_id: str) -> str:
    """Delete an account.

    Args:
        user_id: The user.
    """
    return "deleted"


class GuardEvaluator(BaseEvaluator):
    def get_dataset(self):
        return ArrayDataset([{"id": "bad-agent"}])

    def run(self, item):
        model = ScriptedModel(
            [{"tool_call": [{"name": "delete_account", "inputs": {"user_id": "u1"}}]}, "Done."]
        )
        agent = ToolAgent(model, tools=[delete_account])
        agent.chat("close my account")
        return agent

    def evaluate(self, agent, item):
        self.assert_that(ToolWasNotCalled("delete_account"), agent)
''',
    )
    result = cli("run", "evaluators", "--no-progress")
    assert result.code == 2, result.stdout
    assert "unknown key 'tool_call'" in result.stdout


def test_a_script_run_out_says_why_it_may_have_and_what_to_do() -> None:
    from agenteval.llm import ModelRequest
    from agenteval.testing import ScriptExhaustedError
    from agenteval.trajectory import Message

    model = ScriptedModel(["only one"])
    request = ModelRequest(messages=[Message.user("hi")])
    model.complete(request)
    with pytest.raises(ScriptExhaustedError) as error:
        model.complete(request)
    assert str(error.value) == (
        "ScriptedModel 'scripted:model' ran out of replies: request #2 but only 1 scripted "
        "(one built in set_up serves every item of a run that runs them one after another: "
        "script a reply for each, or build it in run)"
    )
