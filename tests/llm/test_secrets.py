"""Secrets handed to agenteval in code, and in URLs, never reach a report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agenteval.llm import AnthropicModel, OpenAIEmbeddings, OpenAIModel
from agenteval.llm._client import shown_url
from cli_support import CliResult


def test_a_url_shows_no_password_and_no_secret_parameter() -> None:
    url = "https://gw:hunter2-PASSWORD@gateway.example:8443/v1?api-key=sk-q-123456789&api-version=2"
    assert shown_url(url) == ("https://gateway.example:8443/v1?api-key=[REDACTED]&api-version=2")
    model = OpenAIModel("g", api_key="sk-test", base_url=url)
    for shown in (model.name, repr(model)):
        assert "hunter2" not in shown and "sk-q-" not in shown, shown
    assert OpenAIEmbeddings("e", api_key="sk-test", base_url=url).name.endswith("api-version=2")


def test_what_a_url_holds_is_masked_as_written_and_as_meant() -> None:
    from agenteval._redact import handed

    assert shown_url("http://h/v1?access_token") == "http://h/v1?access_token"  # no value
    shown_url("http://tok-user-only-12345@127.0.0.1:9/v1?api-key=sk%2Bplus%2Bsecret&x=1")
    text = "tok-user-only-12345 sk%2Bplus%2Bsecret sk+plus+secret"
    assert handed(text) == "[REDACTED] [REDACTED] [REDACTED]"


def test_a_dummy_key_for_a_local_server_is_no_secret() -> None:
    from agenteval._redact import handed

    OpenAIModel("g", api_key="anything", base_url="http://127.0.0.1:9/v1")
    assert handed("Is there anything else?") == "Is there anything else?"


def test_a_secret_with_quotes_is_found_and_masked_in_json_and_in_values() -> None:
    import json

    from agenteval._redact import Redactor

    secret = 'Tr0ub4dor"&3\\xkcd'
    redact = Redactor([secret])
    record = {"output": f"pw {secret}", "input": {secret: 1}}
    text = json.dumps(record)
    assert redact.in_json(text)
    assert json.loads(redact.json(text)) == {"output": "pw [REDACTED]", "input": {"[REDACTED]": 1}}
    assert redact.values(record) == {"output": "pw [REDACTED]", "input": {"[REDACTED]": 1}}


def test_an_anthropic_model_on_another_server_is_named_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the judge cache is keyed by name: two servers must not share their verdicts
    assert AnthropicModel("c", api_key="sk-ant-test").name == "anthropic:c"
    proxy = AnthropicModel("c", api_key="sk-ant-test", base_url="http://127.0.0.1:9")
    assert proxy.name == "anthropic:c@http://127.0.0.1:9"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8")
    assert AnthropicModel("c", api_key="sk-ant-test").name == "anthropic:c@http://127.0.0.1:8"


ECHOED = """
import os

from agenteval import BaseEvaluator
from agenteval.judges import CorrectnessJudge
from agenteval.llm import ModelRequest, OpenAIModel
from agenteval.trajectory import Message

KEY = "sk-handed-in-code-0123456789"


class Echoed(BaseEvaluator):
    def set_up(self):
        if os.environ["WHERE"] == "set_up":
            self.judge = CorrectnessJudge(_model(), expected="Paris")

    def get_dataset(self):
        return [{"id": 1}, {"id": 2}]

    def run(self, item):
        if os.environ["WHERE"] != "set_up":  # in the item's own process, with -c
            self.judge = CorrectnessJudge(_model(), expected="Paris")
        if os.environ["WHERE"] == "run-and-crash":  # the record is built by the parent
            print(_model().complete(ModelRequest(messages=[Message.user("hi")])).text)
            os._exit(3)
        return "Paris"

    def evaluate(self, output, item):
        self.assert_that(self.judge, output)


def _model():
    return OpenAIModel("g", api_key=KEY, base_url=os.environ["FAKE_URL"])
"""


@pytest.mark.parametrize(
    ("where", "how"),
    [("set_up", ()), ("set_up", ("-c", "2")), ("run", ("-c", "2")), ("run-and-crash", ("-c", "2"))],
)
def test_a_key_handed_in_code_and_echoed_by_a_server_is_masked_everywhere(
    where: str,
    how: tuple[str, ...],
    run_on_fake: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    result = run_on_fake(
        "echoed_eval.py",
        ECHOED,
        *how,
        "--output-json",
        "report.json",
        # a broken gateway that answers with the request's headers instead of a verdict
        responder=lambda request: f"Your header was Bearer {request.api_key}",
        env={"WHERE": where},
    )

    assert result.code == 2, result  # the judge could not read a verdict, or it crashed
    report = json.loads((tmp_path / "report.json").read_text())
    shown = result.stdout if where != "run-and-crash" else json.dumps(report)
    assert "Your header was Bearer [REDACTED]" in shown
    files = [tmp_path / "report.json", *tmp_path.glob(".agenteval/runs/*/*")]
    for text in [result.stdout, result.stderr, *(f.read_text() for f in files)]:
        assert "sk-handed-in-code" not in text
    assert report["run"]["totals"]["errored"] == 2
