"""Order lookups through the desk's JSON API.

Dataset: ``datasets/order_lookup.jsonl`` (one JSON object per line, read lazily). The desk's
``ask_json`` returns a JSON document (``intent``, ``order_id``, ``tools``, ``order``,
``answer``); this evaluator checks that it is valid JSON, that the structured fields are
right and that the sentence agrees with them.

Shows: a JSONL dataset, ``IsValidJson`` as a gate before parsing, ``MatchesRegex``,
``StringStartsWith``, ``StringContains``, ``StringContainsAll`` and a soft
``StringLengthBetween``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from _checks import ToolsUsed
from _support_desk import SupportDesk

from agenteval import BaseEvaluator
from agenteval.assertions import (
    IsValidJson,
    MatchesRegex,
    StringContains,
    StringContainsAll,
    StringEndsWith,
    StringLengthBetween,
    StringStartsWith,
)
from agenteval.datasets import JsonlDataset

DATASETS = Path(__file__).parent / "datasets"
ISO_DATE = r"^\d{4}-\d{2}-\d{2}$"


class OrderLookupEvaluator(BaseEvaluator):
    name = "Order lookup (JSON API)"
    description = "The JSON API finds orders, reports their status and tracking number."
    tags = ("support", "orders", "json")

    def set_up(self) -> None:
        self.desk = SupportDesk()

    def get_dataset(self) -> JsonlDataset:
        return JsonlDataset(DATASETS / "order_lookup.jsonl")

    def run(self, item: dict[str, Any]) -> str:
        return self.desk.ask_json(item["input"])

    def evaluate(self, output: str, item: dict[str, Any]) -> None:
        # Everything below reads the parsed document: stop here if it is not JSON.
        if not self.assert_that(IsValidJson(), output).passed:
            return
        data = json.loads(output)
        answer = data.get("answer")
        self.assert_that(ToolsUsed(item["tools"]), data.get("tools"))
        self.assert_that(StringStartsWith(item["answer_starts_with"]), answer)
        self.assert_that(StringContainsAll(item["mentions"]), answer)
        self.assert_that(StringEndsWith("."), answer)
        self.assert_that(StringLengthBetween(40, 200), answer, soft=True)
        if "status" not in item:
            return
        order = data.get("order") or {}
        status = item["status"]
        self.assert_that(MatchesRegex(f"^{re.escape(status)}$"), order.get("status"))
        if "tracking_format" in item:
            self.assert_that(MatchesRegex(item["tracking_format"]), order.get("tracking"))
        if status == "shipped":
            # The sentence must quote the same tracking number and a machine-readable ETA.
            self.assert_that(StringContains(str(order.get("tracking"))), answer)
            self.assert_that(MatchesRegex(ISO_DATE), order.get("eta"))
