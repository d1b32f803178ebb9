"""A refund conversation with a human approver, end to end (Neuron's "Putting It All Together").

Dataset: ``datasets/refund_conversations.json``. Each case scripts the customer's turns and
the approver's refund limit. A :class:`~agenteval.agents.ToolAgent` with ``search_orders``
and an approval-gated ``refund_order`` is driven through a
:class:`~agenteval.conversation.Conversation`; the approval policy rejects refunds above the
case's limit, reading the amount from the pending call. The evaluator then checks the path
the agent took (``TrajectoryMatches`` in subset mode), the approver's decision
(``ToolWasRejected`` / ``ToolWasApproved``), what the agent finally told the customer, and its
step and token budgets.

Offline the agent's model replays recorded replies from ``fixtures/refund_conversations.json``
(recorded fixture data, see ``_recorded.py``); set ``AGENTEVAL_AGENT_MODEL`` (for example
``anthropic:claude-haiku-4-5``) to run the same conversations on a real model.
``RefundConversationJudgedEvaluator`` runs the same checks and adds ``TaskCompletionJudge``;
it is skipped unless ``AGENTEVAL_JUDGE_MODEL`` names a judge model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from _recorded import agent_model

from agenteval import BaseEvaluator, SkipEvaluator
from agenteval.agents import ToolAgent, tool
from agenteval.assertions import (
    MaxSteps,
    Mode,
    StringContains,
    ToolWasApproved,
    ToolWasCalled,
    ToolWasNotCalled,
    ToolWasRejected,
    TotalTokensAtMost,
    TrajectoryMatches,
)
from agenteval.conversation import ApprovalRequest, Conversation
from agenteval.datasets import JsonDataset
from agenteval.judges import TaskCompletionJudge
from agenteval.llm import default_judge_model
from agenteval.trajectory import Trajectory

DATASETS = Path(__file__).parent / "datasets"

INSTRUCTIONS = """\
You are the customer support agent of an online kitchenware shop.
Look orders up with search_orders before discussing them. Refunds go through refund_order,
which a human approves or rejects; confirm the amount with the customer first. If a refund
is rejected, say plainly that you cannot process it and what happens next.
"""

ORDERS: dict[str, dict[str, Any]] = {
    "123": {"order_id": "123", "item": "Espresso machine", "amount": 250.0, "status": "delivered"},
    "456": {
        "order_id": "456",
        "item": "Burr coffee grinder",
        "amount": 40.0,
        "status": "delivered",
    },
    "789": {"order_id": "789", "item": "Cast-iron skillet", "amount": 95.0, "status": "delivered"},
}


def build_agent(case: str) -> ToolAgent:
    """A fresh support agent for one conversation, with its own refund ledger."""
    refunded: dict[str, float] = {}

    @tool
    def search_orders(order_id: str) -> dict[str, Any]:
        """Look up an order by its number.

        Args:
            order_id: The order number, without the leading '#'.
        """
        if order_id not in ORDERS:
            raise LookupError(f"no order {order_id!r}")
        return {**ORDERS[order_id], "refunded": refunded.get(order_id, 0.0)}

    @tool
    def refund_order(order_id: str, amount: float) -> str:
        """Refund (part of) an order to the customer's original payment method.

        Args:
            order_id: The order number, without the leading '#'.
            amount: The amount to refund, at most what was paid.
        """
        order = ORDERS[order_id]
        if amount > order["amount"] - refunded.get(order_id, 0.0):
            raise ValueError(f"{amount} exceeds what is left to refund on order {order_id}")
        refunded[order_id] = refunded.get(order_id, 0.0) + amount
        return f"Refunded {amount:.2f} for order {order_id}"

    return ToolAgent(
        agent_model("refund_conversations.json", case),
        tools=[search_orders, refund_order],
        instructions=INSTRUCTIONS,
        require_approval=["refund_order"],
        max_steps=6,
    )


def refund_limit_policy(limit: float) -> Any:
    """The scripted approver: approve refunds up to ``limit``, reject anything above it."""

    def decide(request: ApprovalRequest, so_far: Trajectory) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        for action in request.pending:  # each by its own arguments (there may be several)
            amount = float(action.inputs.get("amount", 0))
            payload[action.id] = (
                ("reject", "Amount exceeds the automatic refund limit")
                if amount > limit
                else "approve"
            )
        return payload

    return decide


class RefundConversationEvaluator(BaseEvaluator):
    name = "Refund conversation (approvals)"
    description = "A refund agent asks before refunding and handles the approver's decision."
    tags: ClassVar[tuple[str, ...]] = ("conversation", "approvals", "refunds")

    def get_dataset(self) -> JsonDataset:
        return JsonDataset(DATASETS / "refund_conversations.json")

    def run(self, item: dict[str, Any]) -> Trajectory:
        return (
            Conversation.make(build_agent(item["id"]))
            .with_turns(item["turns"])
            .with_approvals(refund_limit_policy(item["refund_limit"]))
            .run()
        )

    def evaluate(self, trajectory: Trajectory, item: dict[str, Any]) -> None:
        # The agent followed the essential path: look the order up, then ask to refund it.
        self.assert_that(TrajectoryMatches(item["expected_tools"], Mode.SUBSET), trajectory)
        self.assert_that(ToolWasCalled("refund_order", {"order_id": item["order_id"]}), trajectory)
        self.assert_that(ToolWasNotCalled("delete_account"), trajectory)
        # The approver's decision is on record...
        if item["expected_decision"] == "rejected":
            self.assert_that(ToolWasRejected("refund_order"), trajectory)
        else:
            self.assert_that(ToolWasApproved("refund_order"), trajectory)
        # ...and the agent told the customer the truth about it.
        self.assert_that(StringContains(item["answer_contains"]), trajectory.final_answer())
        self.assert_that(MaxSteps(6), trajectory)
        self.assert_that(TotalTokensAtMost(item["token_budget"]), trajectory, soft=True)


class RefundConversationJudgedEvaluator(RefundConversationEvaluator):
    name = "Refund conversation (task completion judge)"
    description = "An LLM judge decides whether the conversation served the customer."
    tags: ClassVar[tuple[str, ...]] = ("conversation", "approvals", "refunds", "judge")

    def set_up(self) -> None:
        judge = default_judge_model()
        if judge is None:
            raise SkipEvaluator("no judge model configured: set AGENTEVAL_JUDGE_MODEL")
        self.judge = judge

    def evaluate(self, trajectory: Trajectory, item: dict[str, Any]) -> None:
        super().evaluate(trajectory, item)
        # Given the approver's decision, did the conversation serve the customer?
        self.assert_that(TaskCompletionJudge(self.judge, goal=item["goal"]), trajectory)
