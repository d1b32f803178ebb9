"""The agenteval workloads, written for pydantic-evals; run by the benchmarks in its own env.

Usage: ``python pydantic_evals_workload.py MODE N CONCURRENCY REPORT.json`` with MODE one of

* ``instant`` — a sync task that returns the input at once;
* ``instant-async`` — the same as an ``async def`` task (pydantic-evals' fast path);
* ``sleep`` — a sync task that ``time.sleep(0.1)``\\ s (run in anyio worker threads);
* ``asleep`` — an async task that ``await asyncio.sleep(0.1)``\\ s;
* ``judge`` — ``judge_eval.py``'s items: an async task that answers at once, graded by an
  ``LLMJudge`` at the fake provider ``BENCH_JUDGE_URL`` (needs ``pydantic-ai-slim[openai]``).

Every case gets the three checks of ``instant_eval.py`` as dataset-level evaluators, the
report is written to REPORT.json, and one JSON line with in-process timings is printed.
This file imports pydantic-evals, so it never runs in the project's own environment.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Evaluator, EvaluatorContext
from pydantic_evals.reporting import EvaluationReportAdapter

SLEEP = 0.1


@dataclass
class ContainsReference(Evaluator[str, str, dict[str, Any]]):
    """agenteval's ``StringContains(item["reference"])``: case-folded substring."""

    def evaluate(self, ctx: EvaluatorContext[str, str, dict[str, Any]]) -> bool:
        return str(ctx.expected_output).casefold() in ctx.output.casefold()


@dataclass
class StartsWithPrefix(Evaluator[str, str, dict[str, Any]]):
    """agenteval's ``StringStartsWith(item["prefix"])``."""

    def evaluate(self, ctx: EvaluatorContext[str, str, dict[str, Any]]) -> bool:
        return ctx.output.startswith((ctx.metadata or {})["prefix"])


@dataclass
class LengthBetween(Evaluator[str, str, dict[str, Any]]):
    """agenteval's ``StringLengthBetween(1, 200)``."""

    def evaluate(self, ctx: EvaluatorContext[str, str, dict[str, Any]]) -> bool:
        return 1 <= len(ctx.output) <= 200


def echo(inputs: str) -> str:
    return inputs


async def aecho(inputs: str) -> str:
    return inputs


def sleep(inputs: str) -> str:
    time.sleep(SLEEP)
    return inputs


async def asleep(inputs: str) -> str:
    await asyncio.sleep(SLEEP)
    return inputs


async def answer(inputs: str) -> str:
    return f"Paris ({inputs})"


TASKS = {
    "instant": echo,
    "instant-async": aecho,
    "sleep": sleep,
    "asleep": asleep,
    "judge": answer,
}


def judged_dataset(n: int) -> Dataset[str, str, dict[str, Any]]:
    """``judge_eval.py``'s items: an ``LLMJudge`` over pydantic-ai's OpenAI model, pointed at
    the fake provider ``BENCH_JUDGE_URL`` (``judge_server.py``)."""
    import os

    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_evals.evaluators import LLMJudge

    provider = OpenAIProvider(base_url=os.environ["BENCH_JUDGE_URL"], api_key="sk-bench")
    judge = LLMJudge(
        rubric="The answer names Paris as the capital of France.",
        model=OpenAIChatModel("gpt-4o-mini", provider=provider),
    )
    return Dataset[str, str, dict[str, Any]](
        name="judged",
        cases=[Case(name=str(i), inputs=f"Capital of France? ({i})") for i in range(n)],
        evaluators=[judge],
    )


def main() -> None:
    mode, n, concurrency, report_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    t0 = time.perf_counter()
    dataset = (
        judged_dataset(n)
        if mode == "judge"
        else Dataset[str, str, dict[str, Any]](
            name="bench",
            cases=[
                Case(
                    name=str(i),
                    inputs=f"Hello, I need help with my order #{i}",
                    expected_output="order",
                    metadata={"prefix": "Hello"},
                )
                for i in range(n)
            ],
            evaluators=[ContainsReference(), StartsWithPrefix(), LengthBetween()],
        )
    )
    t1 = time.perf_counter()
    report = dataset.evaluate_sync(TASKS[mode], max_concurrency=concurrency, progress=False)
    t2 = time.perf_counter()
    with open(report_path, "wb") as fh:
        fh.write(EvaluationReportAdapter.dump_json(report))
    t3 = time.perf_counter()
    failed = sum(
        1
        for case in report.cases
        if not case.assertions or not all(a.value for a in case.assertions.values())
    )
    print(
        json.dumps(
            {
                "build_s": t1 - t0,
                "evaluate_s": t2 - t1,
                "report_s": t3 - t2,
                "cases": len(report.cases),
                "failed": failed,
                "errors": len(report.failures),
            }
        )
    )


if __name__ == "__main__":
    main()
