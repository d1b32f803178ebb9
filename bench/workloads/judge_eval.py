"""Judged items: ``run`` returns at once and ``evaluate`` asks an LLM judge, over the
``openai`` SDK, at the fake provider ``BENCH_JUDGE_URL`` (``judge_server.py``), whose
latency stands for a real provider's. ``BENCH_N`` items (default 200). Each output differs,
so no two judge requests are the same (run with ``--no-cache`` all the same).

``JudgedItems`` is sync, for the fork executor; ``AsyncJudgedItems`` (``BENCH_ASYNC=1``)
awaits the judge, for ``--executor async``.
"""

from __future__ import annotations

import os
from typing import Any

from agenteval import BaseEvaluator
from agenteval.datasets import ArrayDataset
from agenteval.judges import CorrectnessJudge
from agenteval.llm import OpenAIModel


class _Judged(BaseEvaluator):
    __abstract__ = True

    def set_up(self) -> None:
        self.judge = OpenAIModel(
            "gpt-4o-mini", api_key="sk-bench", base_url=os.environ["BENCH_JUDGE_URL"]
        )

    def get_dataset(self) -> ArrayDataset:
        n = int(os.environ.get("BENCH_N", "200"))
        return ArrayDataset([{"id": i, "input": f"Capital of France? ({i})"} for i in range(n)])


if os.environ.get("BENCH_ASYNC"):

    class AsyncJudgedItems(_Judged):
        """``async def run`` / ``evaluate``: awaits the judge."""

        async def run(self, item: dict[str, Any]) -> str:
            return f"Paris (item {item['id']})"

        async def evaluate(self, output: str, item: dict[str, Any]) -> None:
            await self.aassert_that(CorrectnessJudge(self.judge, expected="Paris"), output)

else:

    class JudgedItems(_Judged):
        """Sync ``run`` / ``evaluate``: calls the judge."""

        def run(self, item: dict[str, Any]) -> str:
            return f"Paris (item {item['id']})"

        def evaluate(self, output: str, item: dict[str, Any]) -> None:
            self.assert_that(CorrectnessJudge(self.judge, expected="Paris"), output)
