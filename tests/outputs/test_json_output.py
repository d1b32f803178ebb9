"""JsonOutput: the public results document, validated against its JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import agenteval
from agenteval import BaseEvaluator, run_evaluations
from agenteval.assertions import StringContains
from agenteval.datasets import ArrayDataset
from agenteval.outputs import JsonOutput

SCHEMA = json.loads(
    (Path(agenteval.__file__).parent / "outputs" / "results.schema.json").read_text()
)


class Unserialisable:
    def __repr__(self) -> str:
        return "<Unserialisable thing>"


class MixedEvaluator(BaseEvaluator):
    def get_dataset(self) -> ArrayDataset:
        return ArrayDataset(
            [
                {"id": "dict", "input": "ok refund"},
                {"id": "obj", "input": "object"},
                {"id": "fail", "input": "nothing"},
                {"id": "err", "input": "boom"},
            ]
        )

    def run(self, item: dict[str, str]) -> object:
        if item["input"] == "boom":
            raise ValueError("boom")
        if item["input"] == "object":
            return {"answer": "refund", "obj": Unserialisable()}
        return {"answer": item["input"]}

    def evaluate(self, output: dict[str, object], item: dict[str, str]) -> None:
        self.assert_that(StringContains("refund"), str(output["answer"]))


def _run(tmp_path: Path) -> dict[str, object]:
    out = tmp_path / "results.json"
    summary = run_evaluations([MixedEvaluator], outputs=[JsonOutput(out)], journal=False)
    doc = json.loads(out.read_text())
    assert doc["run"]["exit_code"] == summary.exit_code == 2
    return doc


def test_json_output_matches_schema(tmp_path: Path) -> None:
    doc = _run(tmp_path)
    jsonschema.validate(doc, SCHEMA)
    assert doc["schema_version"] == 1


def _keys_against_schema(value: object, schema: dict[str, object], where: str) -> list[str]:
    """Where ``value`` has a key the schema does not list, or the schema lists one as
    optional: every key is part of the contract, so the schema must name each one."""
    if "$ref" in schema:
        schema = SCHEMA["$defs"][str(schema["$ref"]).rsplit("/", 1)[1]]
    for option in schema.get("oneOf", []):  # type: ignore[attr-defined]
        if isinstance(value, dict) == (option.get("type") != "null"):
            return _keys_against_schema(value, option, where)
    problems: list[str] = []
    if isinstance(value, dict) and "properties" in schema:
        props: dict[str, dict[str, object]] = schema["properties"]  # type: ignore[assignment]
        if sorted(value) != sorted(props) or sorted(schema["required"]) != sorted(props):  # type: ignore[arg-type]
            problems.append(f"{where}: {sorted(value)} vs {sorted(props)}")
        for key, sub in props.items():
            problems += _keys_against_schema(value.get(key), sub, f"{where}.{key}")
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, sub in value.items():
            problems += _keys_against_schema(sub, schema["additionalProperties"], f"{where}.{key}")  # type: ignore[arg-type]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, sub in enumerate(value):
            problems += _keys_against_schema(sub, schema["items"], f"{where}[{i}]")  # type: ignore[arg-type]
    return problems


def test_the_schema_requires_every_key_a_document_has(tmp_path: Path) -> None:
    doc = _run(tmp_path)
    assert _keys_against_schema(doc, SCHEMA, "document") == []


def test_json_output_items_keep_outputs_as_json_values(tmp_path: Path) -> None:
    doc = _run(tmp_path)
    items = {i["id"]: i for i in doc["evaluators"][0]["items"]}  # type: ignore[index]
    assert items["dict"]["output"] == {"answer": "ok refund"}
    assert items["obj"]["output"]["obj"] == {
        "unserializable": f"{__name__}.Unserialisable",
        "repr": "<Unserialisable thing>",
    }
    assert items["obj"]["status"] == "passed"
    assert items["fail"]["assertions"][0]["message"] == "Expected 'nothing' to contain 'refund'"
    assert items["fail"]["assertions"][0]["file"].endswith("test_json_output.py")
    assert items["err"]["error"]["type"] == "ValueError"
    assert items["err"]["output"] is None


def test_json_output_summary_keys(tmp_path: Path) -> None:
    ev = _run(tmp_path)["evaluators"][0]  # type: ignore[index]
    assert ev["name"] == "MixedEvaluator" and ev["status"] == "error"
    s = ev["summary"]
    assert (s["total"], s["passed"], s["failed"], s["errored"]) == (4, 2, 1, 1)
    assert s["success_rate"] == 0.5
    assert s["assertions"] == {"total": 3, "passed": 2, "failed": 1, "success_rate": 2 / 3}


def test_json_output_is_atomic_and_leaves_no_temp_file(tmp_path: Path) -> None:
    _run(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_json_output_through_a_symlink_writes_where_it_points(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    link = tmp_path / "results.json"
    link.symlink_to(tmp_path / "reports" / "latest.json")  # dangling until the first run
    for _ in range(2):
        run_evaluations([MixedEvaluator], outputs=[JsonOutput(link)], journal=False)
        assert link.is_symlink()
        assert json.loads((tmp_path / "reports" / "latest.json").read_text())["schema_version"]


def test_json_output_into_a_pipe_writes_into_it(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    output = JsonOutput(fifo)
    summary = run_evaluations([MixedEvaluator], outputs=[output], journal=False)
    reader.join(10)
    assert json.loads(received[0])["schema_version"] == 1
    output.finish_run(summary)  # written again (a signal came meanwhile): not into a stream
    assert len(received) == 1
    assert fifo.is_fifo()  # not replaced by a regular file (as /dev/stdout must not be)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.fifo"]


def test_json_output_into_a_pipe_nobody_reads_fails_instead_of_blocking_for_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import time

    from agenteval.outputs import _json

    monkeypatch.setattr(_json, "FIFO_WAIT", 0.3)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    summary = run_evaluations([MixedEvaluator], outputs=[JsonOutput(fifo)], journal=False)
    assert time.monotonic() - started < 5
    (failure,) = summary.driver_errors
    assert f"no process read the named pipe {str(fifo)!r} within 0.3 s" in failure
    assert summary.exit_code == 2


def test_a_report_that_cannot_be_written_at_the_end_names_its_file_and_the_journal(
    tmp_path: Path,
) -> None:
    # the folder was fine when the run began, and a file took its place meanwhile
    from agenteval import RunSummary

    driver = JsonOutput(tmp_path / "gone" / "r.json")
    (tmp_path / "gone").write_text("a file now")
    run = RunSummary(
        id="run-1",
        started_at="t",
        duration_s=1,
        agenteval_version="0",
        evaluators=[],
        run_dir=".agenteval/runs/run-1",
    )
    with pytest.raises(OSError) as info:
        driver.finish_run(run)
    assert str(info.value) == (
        f"could not write {tmp_path / 'gone' / 'r.json'}: {tmp_path / 'gone'} is a file, not a "
        f"folder: the results are in .agenteval/runs/run-1, and resuming run run-1 writes the "
        f"report again"
    )
    assert list(tmp_path.iterdir()) == [tmp_path / "gone"]


def test_one_json_output_into_stdout_writes_a_document_for_each_run(tmp_path: Path) -> None:
    # the second run of the same driver into a stream wrote nothing, and said nothing
    import subprocess
    import sys

    script = tmp_path / "twice.py"
    script.write_text(
        "from agenteval import BaseEvaluator, run_evaluations\n"
        "from agenteval.outputs import JsonOutput\n"
        "class Ok(BaseEvaluator):\n"
        "    def get_dataset(self):\n"
        "        return [{'id': 1}]\n"
        "    def run(self, item):\n"
        "        return 'x'\n"
        "    def evaluate(self, output, item):\n"
        "        pass\n"
        "report = JsonOutput('/dev/stdout')\n"
        "for _ in range(2):\n"
        "    run_evaluations([Ok], outputs=[report], journal=False)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    documents = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [d["run"]["totals"]["passed"] for d in documents] == [1, 1]
