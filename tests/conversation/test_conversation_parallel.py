"""Trajectories cross the parallel (fork) executor intact and land in the JSON report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agenteval.trajectory import Trajectory

EVALUATOR = '''
from agenteval import BaseEvaluator
from agenteval.agents import ToolAgent, tool
from agenteval.assertions import ToolWasRejected, TrajectoryMatches
from agenteval.conversation import Conversation
from agenteval.testing import ScriptedModel


@tool
def refund_order(order_id: str, amount: float) -> str:
    """Refund an order."""
    return "refunded"


def build(n):
    model = ScriptedModel([
        {"text": "Refunding.", "tool_calls": [{"id": f"r{n}", "name": "refund_order",
         "inputs": {"order_id": str(n), "amount": 100 * n}}], "usage": {"input_tokens": 10 * n}},
        {"text": f"Decision handled for {n}.", "usage": {"output_tokens": n}},
    ])
    return ToolAgent(model, tools=[refund_order], require_approval=["refund_order"])


class ParallelConversations(BaseEvaluator):
    def get_dataset(self):
        return [{"id": f"case-{n}", "n": n} for n in range(1, 5)]

    def run(self, item):
        return (
            Conversation.make(build(item["n"]))
            .with_turns([f"refund order {item['n']}"])
            .with_approvals(lambda request, so_far: {
                a.id: ("reject", "over 200") if a.inputs["amount"] > 200 else "approve"
                for a in request.pending
            })
            .run()
        )

    def evaluate(self, trajectory, item):
        self.assert_that(TrajectoryMatches(["refund_order"]), trajectory)
        if item["n"] > 2:
            self.assert_that(ToolWasRejected("refund_order"), trajectory)
'''


def test_trajectories_cross_the_fork_executor_intact(
    cli: Callable[..., Any], write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    write("evals/parallel_evaluator.py", EVALUATOR)
    result = cli(
        "run",
        "evals",
        "-c",
        "2",
        "--executor",
        "fork",
        "--no-progress",
        "--output-json",
        "report.json",
    )
    assert result.code == 0, result
    assert "concurrency 2 (fork)" in result.lines[0]
    report = json.loads((tmp_path / "report.json").read_text())
    (evaluator,) = report["evaluators"]
    records = {item["id"]: item for item in evaluator["items"]}
    assert sorted(records) == ["case-1", "case-2", "case-3", "case-4"]
    for n in range(1, 5):
        record = records[f"case-{n}"]
        trajectory = Trajectory.model_validate(record["output"])
        (call,) = trajectory.tool_calls()
        assert (call.id, call.inputs) == (f"r{n}", {"order_id": str(n), "amount": 100 * n})
        assert call.approval == ("rejected" if n > 2 else "approved")
        assert call.approval_reason == ("over 200" if n > 2 else None)
        assert trajectory.final_answer() == f"Decision handled for {n}."
        assert [m.content for m in trajectory.user_messages()] == [f"refund order {n}"]
        # the agent's usage, read from the trajectory, is the item's agent usage
        assert record["usage"]["agent"]["input_tokens"] == 10 * n
        assert record["usage"]["agent"]["output_tokens"] == n
