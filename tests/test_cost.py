"""Token usage split into agent and judge spend, and priced with the config's table."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agenteval import BaseEvaluator, run_evaluations
from agenteval.judges import CorrectnessJudge
from agenteval.testing import ScriptedModel
from agenteval.trajectory import Message, Trajectory, Usage


class JudgedEvaluator(BaseEvaluator):
    def set_up(self) -> None:
        verdict = {
            "text": '{"reasoning": "matches", "score": 0.9}',
            "usage": {"input_tokens": 1_000_000, "output_tokens": 100_000},
            "model": "judge-x",
        }
        self.judge = ScriptedModel([verdict, verdict], name="scripted:judge-x")

    def get_dataset(self) -> list[dict[str, str]]:
        return [{"id": "a", "q": "refund?"}, {"id": "b", "q": "refund!"}]

    def run(self, item: dict[str, str]) -> Trajectory:
        return Trajectory.from_messages(
            [
                Message.user(item["q"]),
                Message.assistant(
                    "Refunds take 30 days.", usage=Usage(input_tokens=500_000, output_tokens=0)
                ),
            ]
        )

    def evaluate(self, output: Trajectory, item: dict[str, str]) -> None:
        self.assert_that(CorrectnessJudge(self.judge, expected="30 days"), output.final_answer())


def test_usage_is_split_and_priced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evaluation.py").write_text(
        "from agenteval.outputs import ConsoleOutput, JsonOutput\n"
        "output = [JsonOutput('out.json')]\n"
        "prices = {'scripted:judge-x': {'input': 1.0, 'output': 10.0}, 'agent': {'input': 2.0, 'output': 0.0}}\n"
    )
    stream = io.StringIO()
    from agenteval.outputs import ConsoleOutput, JsonOutput

    summary = run_evaluations(
        [JudgedEvaluator],
        outputs=[ConsoleOutput(stream=stream), JsonOutput("out.json")],
        config="evaluation.py",
        journal=False,
        cache=False,
    )
    assert summary.exit_code == 0
    usage = summary.usage
    assert usage.agent == Usage(input_tokens=1_000_000)
    assert usage.judge == Usage(input_tokens=2_000_000, output_tokens=200_000)
    assert usage.judge_calls == 2
    assert summary.cost is not None
    assert summary.cost.judge == pytest.approx(2.0 + 2.0)
    assert summary.cost.agent == pytest.approx(2.0)
    lines = stream.getvalue().splitlines()
    assert "cost: $6.0000 · agent $2.0000 · judge $4.0000" in lines
    assert (
        "tokens: agent 1,000,000 in / 0 out · judge 2,000,000 in / 200,000 out (2 calls, 0 cached)"
        in lines
    )
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["run"]["cost"]["total"] == pytest.approx(6.0)
    item = doc["evaluators"][0]["items"][0]
    assert item["usage"]["judge"]["input_tokens"] == 1_000_000
    assert item["usage"]["agent"]["input_tokens"] == 500_000


def test_agent_tokens_without_an_agent_price_are_said_to_have_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # they were left out of the cost without a word, as if the agent had cost nothing
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evaluation.py").write_text(
        "prices = {'scripted:judge-x': {'input': 1.0, 'output': 10.0}}\n"
    )
    stream = io.StringIO()
    from agenteval.outputs import ConsoleOutput

    summary = run_evaluations(
        [JudgedEvaluator],
        outputs=[ConsoleOutput(stream=stream)],
        config="evaluation.py",
        journal=False,
        cache=False,
    )
    assert summary.cost is not None
    assert (summary.cost.agent, summary.cost.unpriced_models) == (None, ["agent"])
    assert "cost: $4.0000 · judge $4.0000 · no price for agent" in stream.getvalue().splitlines()


@pytest.mark.parametrize("name", ["Agent", "agent ", "AGENT"])
def test_an_agent_entry_spelled_otherwise_is_a_config_error(name: str) -> None:
    from agenteval._errors import ConfigError
    from agenteval.llm._pricing import check_prices

    with pytest.raises(ConfigError) as error:
        check_prices({name: {"input": 3.0, "output": 15.0}})
    assert str(error.value) == f"prices[{name!r}]: the agent's prices go under 'agent', just so"
