"""Judged items in processes of their own: what a timed-out item spent is kept, and what
one item learns of a server the items forked after it know."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agenteval.testing import FakeProvider
from cli_support import CliResult

TWO_JUDGES = """
import os

from agenteval import BaseEvaluator
from agenteval.judges import CorrectnessJudge
from agenteval.llm import OpenAIModel, RetryPolicy


class TwoJudges(BaseEvaluator):
    def set_up(self):
        model = OpenAIModel(
            "g", api_key="sk-test", base_url=os.environ["FAKE_URL"], timeout=30,
            retry=RetryPolicy(max_attempts=1),
        )
        self.first = CorrectnessJudge(model, expected="Paris")
        self.second = CorrectnessJudge(model, expected="HANG")

    def get_dataset(self):
        return [{"id": "stuck"}, {"id": "fine"}]

    async def run(self, item):
        return "Paris"

    async def evaluate(self, output, item):
        await self.aassert_that(self.first, output)
        if item["id"] == "stuck":
            await self.aassert_that(self.second, output)  # the provider never answers
"""


def _reply(request: Any) -> Any:
    if "HANG" in json.dumps(request.json):
        return FakeProvider.hang()
    return FakeProvider.structured({"reasoning": "Same city.", "score": 1.0})


@pytest.mark.parametrize(
    "how", [("-c", "2"), ("-c", "2", "--isolation", "worker"), ("--executor", "async", "-c", "2")]
)
def test_a_timed_out_item_keeps_the_usage_of_its_judge_calls(
    how: tuple[str, ...], run_on_fake: Callable[..., CliResult], tmp_path: Path
) -> None:
    result = run_on_fake(
        "two_judges.py",
        TWO_JUDGES,
        *how,
        "--timeout",
        "2",
        "--output-json",
        "report.json",
        responder=_reply,
    )

    assert result.code == 2, result
    report = json.loads((tmp_path / "report.json").read_text())
    items = {i["id"]: i for i in report["evaluators"][0]["items"]}
    assert (items["stuck"]["status"], items["fine"]["status"]) == ("timeout", "passed")
    for item in items.values():  # one answered call each (10 in, 5 out from the fake)
        usage = item["usage"]
        assert (usage["judge_calls"], usage["judge"]["input_tokens"]) == (1, 10), item["id"]
    assert report["run"]["usage"]["judge_calls"] == 2


STRICT_SERVER_JUDGE = """
import os

from agenteval import BaseEvaluator
from agenteval.judges import CorrectnessJudge
from agenteval.llm import OpenAIModel


class OnAStrictServer(BaseEvaluator):
    def set_up(self):
        model = OpenAIModel("g", api_key="sk-test", base_url=os.environ["FAKE_URL"])
        self.judge = CorrectnessJudge(model, expected="Paris")

    def get_dataset(self):
        return [{"id": i} for i in range(8)]

    def run(self, item):
        return f"Paris ({item['id']})"

    def evaluate(self, output, item):
        self.assert_that(self.judge, output)
"""


def _strict(request: Any) -> Any:
    if "response_format" in request.json:
        return FakeProvider.error(400, "response_format is not supported")
    return FakeProvider.text('{"reasoning": "Same city.", "score": 1.0}')


def test_what_one_forked_item_learns_of_a_server_the_next_ones_know(
    fake_provider: FakeProvider, run_on_fake: Callable[..., CliResult]
) -> None:
    # a server that rejects response_format: the first items learn it, the rest are forked
    # knowing it and ask for JSON in the prompt at once
    result = run_on_fake("strict_eval.py", STRICT_SERVER_JUDGE, "-c", "2", responder=_strict)

    assert result.code == 0, result
    rejected = [r for r in fake_provider.requests if "response_format" in r.json]
    assert 1 <= len(rejected) <= 2  # those in flight before the first lesson came back
    assert len(fake_provider.requests) == 8 + len(rejected)


@pytest.mark.parametrize("how", [("-c", "2"), ("--executor", "async", "-c", "2")])
def test_an_item_cut_off_by_an_interrupt_keeps_the_usage_of_its_judge_calls(
    how: tuple[str, ...], fake_provider: FakeProvider, write: Any, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import time

    from cli_support import AGENTEVAL

    fake_provider.respond_with(_reply)
    write("two_judges.py", TWO_JUDGES)
    env = {**os.environ, "FAKE_URL": fake_provider.openai_base_url}
    args = [AGENTEVAL, "run", "two_judges.py", *how, "--grace", "1", "--no-cache"]
    proc = subprocess.Popen(
        [*args, "--output-json", "report.json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE
    )
    deadline = time.monotonic() + 30
    while len(fake_provider.requests) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # both first calls answered, "stuck"'s second one hanging
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)

    assert proc.returncode == 130
    report = json.loads((tmp_path / "report.json").read_text())
    items = {i["id"]: i for i in report["evaluators"][0]["items"]}
    assert items["stuck"]["status"] == "cancelled"
    assert items["stuck"]["usage"]["judge_calls"] == 1
    assert report["run"]["usage"]["judge_calls"] == 2


AGENT_THAT_STOPS = """
import os

from agenteval import BaseEvaluator
from agenteval.agents import ToolAgent, tool
from agenteval.llm import OpenAIModel, RetryPolicy


@tool
def search_orders(order_id: str) -> dict:
    \"\"\"Look an order up.\"\"\"
    return {"order_id": order_id, "status": "shipped"}


class AgentThatStops(BaseEvaluator):
    def set_up(self):
        self.model = OpenAIModel(
            "agent", api_key="sk-test", base_url=os.environ["FAKE_URL"], timeout=30,
            retry=RetryPolicy(max_attempts=1),
        )

    def get_dataset(self):
        return [{"id": "stuck"}, {"id": "answers"}]

    def run(self, item):
        agent = ToolAgent(self.model, tools=[search_orders])
        return agent.chat(f"where is order {item['id']}?")  # the text: no trajectory

    def evaluate(self, output, item):
        pass
"""


def _agent_reply(request: Any) -> Any:
    messages = request.json["messages"]
    if "stuck" not in json.dumps(messages):
        return FakeProvider.text("It has shipped.", input_tokens=7, output_tokens=3)
    if any(m["role"] == "tool" for m in messages):
        return FakeProvider.hang()  # the second model call never ends
    return FakeProvider.tool_call("search_orders", {"order_id": "1"})


@pytest.mark.parametrize("how", [("-c", "2"), ("-c", "2", "--isolation", "worker")])
def test_an_agent_that_never_returns_its_trajectory_keeps_its_usage(
    how: tuple[str, ...], run_on_fake: Callable[..., CliResult], tmp_path: Path
) -> None:
    # timed out mid-conversation, or returning the answer's text: what its model calls
    # spent is the item's agent usage all the same
    args = (*how, "--timeout", "2", "--output-json", "report.json")
    result = run_on_fake("agent_stops.py", AGENT_THAT_STOPS, *args, responder=_agent_reply)
    assert result.code == 2, result
    report = json.loads((tmp_path / "report.json").read_text())
    items = {i["id"]: i for i in report["evaluators"][0]["items"]}
    assert (items["stuck"]["status"], items["answers"]["status"]) == ("timeout", "passed")
    spent = {
        k: (v["usage"]["agent"]["input_tokens"], v["usage"]["agent"]["output_tokens"])
        for k, v in items.items()
    }
    assert spent == {"stuck": (10, 5), "answers": (7, 3)}
    assert report["run"]["usage"]["agent"]["input_tokens"] == 17


BUILT_BEFORE_THE_FORK = """
from agenteval import BaseEvaluator
from agenteval.assertions import StringContains
from agenteval.judges import CorrectnessJudge  # (a judge may be made without a model)


class Built(BaseEvaluator):
    def get_dataset(self):
        return [{"id": 0}, {"id": 1}]

    def run(self, item):
        from agenteval.llm import _factory

        return f"built in the parent: {bool(_factory._from_env_built)}"

    def evaluate(self, output, item):
        self.assert_that(StringContains("built in the parent: True"), output)
"""


def test_the_judge_model_named_in_the_environment_is_built_before_items_fork(
    fake_provider: FakeProvider, cli: Callable[..., CliResult], write: Callable[[str, str], Path]
) -> None:
    # a judge made without a model, in evaluate, would otherwise build it (and import the
    # SDK, and make its first calls) in every item's process
    write("built_eval.py", BUILT_BEFORE_THE_FORK)
    judge = f"openai-compatible:g@{fake_provider.openai_base_url}"
    result = cli("run", "built_eval.py", "-c", "2", env={"AGENTEVAL_JUDGE_MODEL": judge})
    assert result.code == 0, result
    # a setting that cannot be built is left to the items that use it
    broken = cli("run", "built_eval.py", "-c", "2", env={"AGENTEVAL_JUDGE_MODEL": "nonsense"})
    assert broken.code == 1, broken
    assert "built in the parent: False" in broken.stdout
    # an evaluator whose file names no judge is spared the model's cost
    unjudged = "\n".join(line for line in BUILT_BEFORE_THE_FORK.splitlines() if "Judge" not in line)
    write("unjudged_eval.py", unjudged)
    spared = cli("run", "unjudged_eval.py", "-c", "2", env={"AGENTEVAL_JUDGE_MODEL": judge})
    assert spared.code == 1, spared
    assert "built in the parent: False" in spared.stdout
