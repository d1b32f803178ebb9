"""Before forking items, the parent rehearses its models' calls against a local fake server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agenteval.llm import ModelRequest, ModelResponse, OpenAIModel, _rehearsal
from agenteval.llm._client import warm_for_fork
from agenteval.testing import FakeProvider
from cli_support import CliResult

# A fresh interpreter each time: rehearsals happen once per model class and process, and
# this one may have loaded the SDKs already.
REHEARSE = """
import json, os, sys, threading
from agenteval.llm import AnthropicModel, OpenAIEmbeddings, OpenAIModel
from agenteval.llm import _rehearsal
from agenteval.llm._client import warm_for_fork

models = [
    OpenAIModel("g", api_key="sk-real-openai", base_url="http://127.0.0.1:9/v1"),
    AnthropicModel("c", api_key="sk-real-anthropic"),
    OpenAIEmbeddings("e", api_key="sk-real-openai"),
]
outcomes = []
rehearse = _rehearsal.rehearse
_rehearsal.rehearse = lambda *a: outcomes.append(rehearse(*a)) or outcomes[-1]
before = "openai.resources.chat" in sys.modules
warm_for_fork()
warm_for_fork()  # a second evaluator's set_up: nothing left to rehearse
warm_for_fork(asynchronous=True)  # an async evaluator: its calls are the async ones
print(json.dumps({
    "outcomes": outcomes,
    "loaded_before": before,
    "loaded_after": "openai.resources.chat" in sys.modules,
    "threads": [t.name for t in threading.enumerate()],
    "clients_built": [m._clients.pid is not None for m in models],
}))
"""


def test_each_sdk_model_class_rehearses_once_against_a_local_server() -> None:
    # a proxy that does not exist: the rehearsal goes straight to 127.0.0.1 all the same
    env = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    out = subprocess.run(
        [sys.executable, "-c", REHEARSE],
        capture_output=True,
        text=True,
        env={**_environ(), **env},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)

    everything = {"OpenAIModel": None, "AnthropicModel": None, "OpenAIEmbeddings": None}
    assert report["outcomes"] == [everything, {}, everything]
    assert (report["loaded_before"], report["loaded_after"]) == (False, True)
    assert report["threads"] == ["MainThread"]  # the fake server is stopped before any fork
    assert report["clients_built"] == [False, False, False]  # the models' own are untouched


def test_a_rehearsal_that_fails_leaves_the_run_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: object, asynchronous: bool) -> None:
        raise RuntimeError("no rehearsal today")

    monkeypatch.setattr(_rehearsal, "_rehearsed", set())
    monkeypatch.setattr(OpenAIModel, "_rehearse", broken)
    model = OpenAIModel("g", api_key="sk-test")

    assert _rehearsal.rehearse([model]) == {"OpenAIModel": "RuntimeError: no rehearsal today"}
    assert _rehearsal.rehearse([model]) == {}  # tried once: each fork run does not pay again


def test_a_failed_rehearsal_is_a_notice_of_the_run(
    cli: Callable[..., CliResult], write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    write(
        "boot.py",
        """
        from agenteval.llm import OpenAIModel

        def broken(self, asynchronous):
            raise RuntimeError("no rehearsal today")

        OpenAIModel._rehearse = broken
        """,
    )
    write(
        "modelled_eval.py",
        """
        from agenteval import BaseEvaluator
        from agenteval.assertions import StringContains
        from agenteval.llm import OpenAIModel

        class Modelled(BaseEvaluator):
            def set_up(self):
                self.model = OpenAIModel("g", api_key="sk-test", base_url="http://127.0.0.1:9")

            def get_dataset(self):
                return [{"id": i} for i in range(3)]

            def run(self, item):
                return "ok"

            def evaluate(self, output, item):
                self.assert_that(StringContains("ok"), output)
        """,
    )

    result = cli(
        "run", "modelled_eval.py", "-c", "2", "--bootstrap", "boot.py", "--output-json", "r.json"
    )

    assert result.code == 0, result  # the items are not affected
    notice = (
        "the rehearsal of OpenAIModel's calls before forking failed "
        "(RuntimeError: no rehearsal today)"
    )
    assert notice in result.stdout.replace("\n", " ")
    run = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["run"]
    assert [n for n in run["notices"] if n.startswith(notice)]
    # sequentially there is nothing to rehearse, and nothing to say
    assert "rehearsal" not in cli("run", "modelled_eval.py", "--bootstrap", "boot.py").stdout


def test_without_a_local_server_there_is_no_rehearsal_and_no_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_bind(self: object) -> None:
        raise OSError(99, "Cannot assign requested address")

    monkeypatch.setattr(_rehearsal, "_rehearsed", set())
    monkeypatch.setattr(FakeProvider, "start", no_bind)

    assert _rehearsal.rehearse([OpenAIModel("g", api_key="sk-test")]) == {
        "OpenAIModel": "OSError: [Errno 99] Cannot assign requested address"
    }


def test_no_rehearsal_when_turned_off_or_when_the_sdk_is_instrumented(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import openai.resources.chat.completions as chat

    monkeypatch.setattr(_rehearsal, "_rehearsed", set())
    monkeypatch.setenv("AGENTEVAL_REHEARSAL", "0")
    assert _rehearsal.rehearse([OpenAIModel("g", api_key="sk-test")]) == {
        "OpenAIModel": "turned off (AGENTEVAL_REHEARSAL=0)"
    }

    # a tracing package wraps the SDK's method: it would report the rehearsal as calls
    monkeypatch.setattr(_rehearsal, "_rehearsed", set())
    monkeypatch.delenv("AGENTEVAL_REHEARSAL")
    create = chat.Completions.create
    monkeypatch.setattr(chat.Completions, "create", lambda *a, **k: create(*a, **k))
    assert _rehearsal.rehearse([OpenAIModel("g", api_key="sk-test")]) == {
        "OpenAIModel": "skipped: openai.resources.chat.completions.Completions.create is "
        "not the SDK's own (instrumented?)"
    }


def test_a_rehearsal_runs_none_of_the_code_of_a_users_subclass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[object] = []

    class Logged(OpenAIModel):
        def complete(self, request: ModelRequest) -> ModelResponse:
            seen.append(request)  # say, to the user's own telemetry
            return super().complete(request)

        def __getstate__(self) -> dict[str, object]:
            raise AssertionError("the user's own code")

    monkeypatch.setattr(_rehearsal, "_rehearsed", set())
    model = Logged("g", api_key="sk-test")

    assert _rehearsal.rehearse([model, OpenAIModel("h", api_key="sk-test")]) == {
        "OpenAIModel": None
    }
    assert seen == []


def test_the_models_own_calls_after_a_rehearsal_go_to_their_own_server(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_rehearsal, "_rehearsed", set())
    fake_provider.respond_with(lambda request: "ok")
    model = OpenAIModel("g", api_key="sk-test-123456", base_url=fake_provider.openai_base_url)

    warm_for_fork()
    reply = model.complete(_rehearsal.chat_requests()[0])
    model.close()

    assert reply.text == "ok"
    assert [r.api_key for r in fake_provider.requests] == ["sk-test-123456"]


JUDGED = """
import os
from agenteval import BaseEvaluator
from agenteval.datasets import ArrayDataset
from agenteval.judges import CorrectnessJudge
from agenteval.llm import OpenAIModel

class Judged(BaseEvaluator):
    def set_up(self):
        self.model = OpenAIModel("g", api_key="sk-test-123456", base_url=os.environ["FAKE_URL"])

    def get_dataset(self):
        return ArrayDataset([{"id": i, "input": f"q{i}"} for i in range(6)])

    def run(self, item):
        return f"Paris ({item['id']})"

    def evaluate(self, output, item):
        self.assert_that(CorrectnessJudge(self.model, expected="Paris"), output)
"""
ASYNC_JUDGED = (
    JUDGED.replace("    def run", "    async def run")
    .replace("    def evaluate", "    async def evaluate")
    .replace("self.assert_that(", "await self.aassert_that(")
)


@pytest.mark.parametrize(
    ("source", "how"),
    [
        (JUDGED, ("-c", "3")),
        (JUDGED, ("-c", "3", "--isolation", "worker")),
        (ASYNC_JUDGED, ("-c", "1")),
        (ASYNC_JUDGED, ("-c", "3")),
        (ASYNC_JUDGED, ("-c", "3", "--executor", "async")),
    ],
)
def test_judged_runs_count_only_the_items_calls_and_leave_nothing_open(
    source: str,
    how: tuple[str, ...],
    fake_provider: FakeProvider,
    run_on_fake: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    result = run_on_fake(
        "judged_eval.py",
        source,
        *how,
        "--output-json",
        "report.json",
        responder=lambda request: {"reasoning": "Same city.", "score": 0.9},
        env={"PYTHONWARNINGS": "always"},
    )

    assert result.code == 0, result
    assert "Warning" not in result.stderr and "Exception ignored" not in result.stderr
    run = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["run"]
    assert run["totals"]["passed"] == 6
    assert len(fake_provider.requests) == 6  # the rehearsal went to a server of its own
    usage = run["usage"]
    assert usage["judge_calls"] == 6
    assert (usage["judge"]["input_tokens"], usage["judge"]["output_tokens"]) == (60, 30)
    assert list(usage["judge_by_model"]) == [f"openai-compatible:g@{fake_provider.openai_base_url}"]


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("AGENTEVAL_", "HTTP"))}


@pytest.mark.parametrize(("budget", "calls"), [(60.0, 3 * 4), (0.0, 4)])
def test_a_rehearsal_stops_starting_rounds_once_its_time_is_up(
    budget: float, calls: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[ModelRequest] = []
    complete = OpenAIModel.complete

    def counting(self: OpenAIModel, request: ModelRequest) -> ModelResponse:
        made.append(request)
        return complete(self, request)

    monkeypatch.setattr(_rehearsal, "_rehearsed", set())
    monkeypatch.setattr(_rehearsal, "BUDGET", budget)
    monkeypatch.setattr(OpenAIModel, "complete", counting)

    assert _rehearsal.rehearse([OpenAIModel("g", api_key="sk-test")]) == {"OpenAIModel": None}
    assert len(made) == calls
