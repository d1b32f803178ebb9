"""Refund questions, checked against reference answers written by the support team.

Dataset: ``datasets/refund_policy.yaml`` (a mapping with a ``cases:`` list). The desk must
reach the right verdict for each order (eligible, outside the 30-day window, final sale,
not shipped yet, already refunded) and explain the general policy.

Shows: a YAML dataset, ``StringDistance`` against a reference (small rewordings pass),
``StringContainsAny`` for acceptable phrasings of a verdict, ``StringContainsAll``,
``MatchesRegex`` from the dataset, ``ToolsUsed`` and a soft ``WordCount``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _checks import ToolsUsed, WordCount
from _support_desk import SupportDesk

from agenteval import BaseEvaluator
from agenteval.assertions import (
    MatchesRegex,
    StringContainsAll,
    StringContainsAny,
    StringDistance,
)
from agenteval.datasets import YamlDataset

DATASETS = Path(__file__).parent / "datasets"


class RefundPolicyEvaluator(BaseEvaluator):
    name = "Refund policy"
    description = "Refund verdicts per order and the general policy, against reference answers."
    tags = ("support", "refunds")

    def set_up(self) -> None:
        self.desk = SupportDesk()

    def get_dataset(self) -> YamlDataset:
        return YamlDataset(DATASETS / "refund_policy.yaml")

    def run(self, item: dict[str, Any]) -> dict[str, Any]:
        reply = self.desk.ask(item["input"])
        return {"answer": reply.text, "tools": list(reply.tools)}

    def evaluate(self, output: dict[str, Any], item: dict[str, Any]) -> None:
        answer = output["answer"]
        self.assert_that(ToolsUsed(item["tools"]), output["tools"])
        self.assert_that(StringContainsAny(item["any_of"]), answer)
        self.assert_that(StringContainsAll(item["mentions"]), answer)
        self.assert_that(StringDistance(item["reference"], threshold=0.75, max_distance=80), answer)
        if "pattern" in item:
            self.assert_that(MatchesRegex(item["pattern"]), answer)
        self.assert_that(WordCount(max_words=50), answer, soft=True)
