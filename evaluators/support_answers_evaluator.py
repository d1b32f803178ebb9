"""Support desk answers: routing and wording across every kind of question.

Dataset: ``datasets/support_answers.json`` (a top-level JSON array). Each case gives the
question, the tools the desk must call (in order), facts the answer must mention and, when it
is not a full stop, how the answer must end.

Shows: ``set_up``, a JSON dataset, ``StringContainsAll``, ``StringEndsWith``,
``StringLengthBetween``, a custom assertion (``ToolsUsed``) and a soft one (``WordCount``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _checks import ToolsUsed, WordCount
from _support_desk import SupportDesk

from agenteval import BaseEvaluator
from agenteval.assertions import StringContainsAll, StringEndsWith, StringLengthBetween
from agenteval.datasets import JsonDataset

DATASETS = Path(__file__).parent / "datasets"


class SupportAnswersEvaluator(BaseEvaluator):
    name = "Support desk answers"
    description = "Routes every kind of customer question to the right tools and answers it."
    tags = ("support", "smoke")

    def set_up(self) -> None:
        self.desk = SupportDesk()

    def get_dataset(self) -> JsonDataset:
        return JsonDataset(DATASETS / "support_answers.json")

    def run(self, item: dict[str, Any]) -> dict[str, Any]:
        reply = self.desk.ask(item["input"])
        return {"answer": reply.text, "intent": reply.intent, "tools": list(reply.tools)}

    def evaluate(self, output: dict[str, Any], item: dict[str, Any]) -> None:
        answer = output["answer"]
        self.assert_that(ToolsUsed(item["tools"]), output["tools"])
        self.assert_that(StringContainsAll(item["mentions"]), answer)
        self.assert_that(StringEndsWith(item.get("ends_with", ".")), answer)
        self.assert_that(StringLengthBetween(40, 300), answer)
        # Short answers read better in a chat widget, but a long one is not wrong: soft.
        self.assert_that(WordCount(max_words=45), answer, soft=True)
