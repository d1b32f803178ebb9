"""Several turns in one case, RubyLLM style: ask each turn of one agent and return the agent.

Dataset: ``datasets/returns_conversation.yaml`` (``cases:``, each with an ``inputs:`` list of
customer turns and an ``expected_output:``). Agents often go wrong on the second message,
not the first: here the customer adds a detail that changes the answer. ``run`` returns the
agent itself; the evaluation still sees both user turns, both answers and every tool call
in between, because the agent converts to a :class:`~agenteval.trajectory.Trajectory`.

Offline the agent's model replays recorded replies from ``fixtures/returns_conversation.json``
(recorded fixture data, see ``_recorded.py``); set ``AGENTEVAL_AGENT_MODEL`` to run on a real
model. ``ReturnsConversationJudgedEvaluator`` runs the same checks and adds LLM judges
grading the final advice against ``expected_output``; it is skipped unless
``AGENTEVAL_JUDGE_MODEL`` is set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from _recorded import agent_model

from agenteval import BaseEvaluator, EvaluationError, SkipEvaluator
from agenteval.agents import ToolAgent, tool
from agenteval.assertions import (
    MaxToolCalls,
    Mode,
    StringContainsAll,
    ToolWasCalled,
    TrajectoryMatches,
)
from agenteval.datasets import YamlDataset
from agenteval.judges import AgentJudge, CorrectnessJudge
from agenteval.llm import default_judge_model
from agenteval.trajectory import Trajectory, as_trajectory

DATASETS = Path(__file__).parent / "datasets"

POLICIES = {
    "unopened": "Unopened items can be returned within 30 days of delivery for a full refund.",
    "opened": "Opened items can be returned within 30 days of delivery, minus a 15% restocking fee.",
    "sale": "Sale items are final sale: they cannot be returned or exchanged, even within 30 days.",
    "damaged": "Damaged or faulty items are replaced or refunded in full within 1 year.",
}


@tool
def lookup_return_policy(topic: Literal["unopened", "opened", "sale", "damaged"]) -> str:
    """Read the shop's return policy on one topic.

    Args:
        topic: Which rule to read: unopened, opened, sale or damaged items.
    """
    return POLICIES[topic]


def returns_agent(case: str) -> ToolAgent:
    """A fresh returns assistant for one conversation."""
    return ToolAgent(
        agent_model("returns_conversation.json", case),
        tools=[lookup_return_policy],
        instructions=(
            "You answer questions about returns for an online shop. Always check the return "
            "policy with lookup_return_policy before answering, and correct yourself when a "
            "new detail changes the answer."
        ),
        max_steps=4,
    )


def trajectory_of(output: Any) -> Trajectory:
    """The conversation held by what ``run`` returned; anything else is an error, not graded."""
    trajectory = as_trajectory(output)
    if trajectory is None:
        raise EvaluationError(
            f"run() returned {type(output).__name__}, which holds no conversation: return "
            f"the agent, a Conversation or a Trajectory"
        )
    return trajectory


class ReturnsConversationEvaluator(BaseEvaluator):
    name = "Returns conversation (multi-turn YAML)"
    description = "A follow-up detail changes the answer: the agent must correct itself."
    tags: ClassVar[tuple[str, ...]] = ("conversation", "returns", "yaml")

    def get_dataset(self) -> YamlDataset:
        return YamlDataset(DATASETS / "returns_conversation.yaml")

    def run(self, item: dict[str, Any]) -> ToolAgent:
        agent = returns_agent(item["name"])
        for question in item["inputs"]:
            agent.chat(question)
        return agent

    def evaluate(self, agent: ToolAgent, item: dict[str, Any]) -> None:
        trajectory = trajectory_of(agent)
        # Each reply, turn by turn, says what it must (an earlier turn matters too).
        for turn, phrases in zip(trajectory.turns(), item["mentions"], strict=True):
            self.assert_that(StringContainsAll(phrases), turn.reply())
        # The policy was checked for the detail that matters, and only the policy tool ran.
        self.assert_that(ToolWasCalled("lookup_return_policy", item["must_check"]), trajectory)
        self.assert_that(TrajectoryMatches(["lookup_return_policy"], Mode.SUPERSET), trajectory)
        self.assert_that(MaxToolCalls(2 * len(item["inputs"])), trajectory)


class ReturnsConversationJudgedEvaluator(ReturnsConversationEvaluator):
    name = "Returns conversation (judged)"
    description = "LLM judges grade the final advice and whether the agent corrected itself."
    tags: ClassVar[tuple[str, ...]] = ("conversation", "returns", "yaml", "judge")

    def set_up(self) -> None:
        judge = default_judge_model()
        if judge is None:
            raise SkipEvaluator("no judge model configured: set AGENTEVAL_JUDGE_MODEL")
        self.judge = judge

    def evaluate(self, agent: ToolAgent, item: dict[str, Any]) -> None:
        super().evaluate(agent, item)
        trajectory = trajectory_of(agent)
        self.assert_that(
            CorrectnessJudge(self.judge, expected=item["expected_output"]),
            trajectory.final_answer(),
        )
        self.assert_that(
            AgentJudge(
                self.judge,
                criteria=(
                    "After the follow-up, the assistant's final advice is consistent with the "
                    "new detail, and it withdraws any earlier advice the detail contradicts."
                ),
            ),
            trajectory,
        )
