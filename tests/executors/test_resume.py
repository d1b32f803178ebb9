"""``--resume`` and ``--retry-errors`` against the journal of a real earlier run."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agenteval._journal import find_run, latest_records

RESUME_EVALUATOR = """
import json
import os
from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains
from agenteval.datasets import JsonDataset


def log_start(item_id):
    fd = os.open("starts.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (str(item_id) + "\\n").encode())
    os.close(fd)


class Resumable(BaseEvaluator):
    def get_dataset(self):
        return JsonDataset(Path(__file__).parent / "cases.json")

    def run(self, item):
        log_start(item["id"])
        marker = Path("markers", item["id"])
        first_time = not marker.exists()
        marker.parent.mkdir(exist_ok=True)
        marker.touch()
        if first_time and item["kind"] == "flaky":
            raise ConnectionError("provider hiccup")
        if first_time and item["kind"] == "crashy":
            os._exit(1)
        return item["kind"]

    def evaluate(self, output, item):
        if output == "fails":
            self.assert_that(StringContains("never there"), output)
"""

CASES = [
    {"id": "a", "kind": "ok"},
    {"id": "b", "kind": "ok"},
    {"id": "c", "kind": "ok"},
    {"id": "d", "kind": "ok"},
]
ARGS = ("resume.py", "-c", "2", "--no-progress", "--output-json")


def setup_project(cli: Any, cases: list[dict[str, str]]) -> None:
    cli.write("resume.py", RESUME_EVALUATOR)
    (cli.root / "cases.json").write_text(json.dumps(cases))


def starts(cli: Any) -> list[str]:
    path = cli.root / "starts.log"
    return sorted(path.read_text().splitlines()) if path.exists() else []


def drop_last_records(run_dir: Path, count: int) -> list[str]:
    """Forget the last ``count`` records, as if the run had been killed before them."""
    lines = (run_dir / "records.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "records.jsonl").write_text("".join(lines[:-count]))
    return sorted(json.loads(line)["id"] for line in lines[-count:])


def changed_evaluator(cli: Any) -> dict[str, Any]:
    setup_project(cli, CASES)
    first = cli.run(*ARGS, "first.json")
    (run_dir,) = cli.run_dirs()
    missing = drop_last_records(run_dir, 2)
    cli.write("resume.py", RESUME_EVALUATOR + "\n# a later edit\n")
    refused = cli.run(*ARGS, "refused.json", "--resume")
    starts_after_refusal = starts(cli)
    forced = cli.run(*ARGS, "forced.json", "--resume", "--force")
    after = cli.run(*ARGS, "after.json", "--resume")
    return {
        "cli": cli,
        "first": first,
        "after": after,
        "run_id": run_dir.name,
        "missing": missing,
        "refused": refused,
        "starts_after_refusal": starts_after_refusal,
        "forced": forced,
    }


def changed_dataset(cli: Any) -> dict[str, Any]:
    setup_project(cli, CASES)
    cli.run(*ARGS, "first.json")
    (run_dir,) = cli.run_dirs()
    drop_last_records(run_dir, 1)
    (cli.root / "cases.json").write_text(json.dumps([*CASES, {"id": "e", "kind": "ok"}]))
    refused = cli.run(*ARGS, "refused.json", "--resume", run_dir.name)
    return {"cli": cli, "run_id": run_dir.name, "refused": refused}


def reordered_dataset(cli: Any) -> dict[str, Any]:
    """Resumed with --force after rows were added, removed, moved and changed."""
    setup_project(cli, CASES)
    cli.run(*ARGS, "first.json")
    (run_dir,) = cli.run_dirs()
    missing = drop_last_records(run_dir, 1)
    starts_first = starts(cli)
    cases = [
        {"id": "n", "kind": "ok"},  # new
        {"id": "c", "kind": "ok"},  # moved
        {"id": "b", "kind": "fails"},  # changed
        {"id": "a", "kind": "ok"},  # moved; d removed
    ]
    (cli.root / "cases.json").write_text(json.dumps(cases))
    forced = cli.run(*ARGS, "forced.json", "--resume", "--force")
    starts_forced = starts(cli)
    again = cli.run(*ARGS, "again.json", "--resume")  # --force accepted the edits for good
    starts_again = starts(cli)
    fresh = cli.run(*ARGS, "fresh.json", "--runs-dir", "elsewhere")
    return {
        "cli": cli,
        "run_id": run_dir.name,
        "missing": missing,
        "starts_first": starts_first,
        "forced": forced,
        "starts_forced": starts_forced,
        "again": again,
        "starts_again": starts_again,
        "fresh": fresh,
    }


OPAQUE_EVALUATOR = """
import os

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains
from agenteval.datasets import ArrayDataset

os.environ["SERVICE_TOKEN"] = "s3cret-token-value"  # redacted from what is journaled


def log_start(item_id):
    with open("starts.log", "a") as fh:
        fh.write(item_id + "\\n")


class Tool:  # its repr holds an address, other in each run
    pass


class Opaque(BaseEvaluator):
    def get_dataset(self):
        return ArrayDataset([
            {
                "id": i,
                "token": os.environ["SERVICE_TOKEN"],
                "tool": Tool(),
                "pair": (1, 2.5),
                "text": "\\ud83d",  # a lone surrogate: journaled as U+FFFD
            }
            for i in "abcd"
        ])

    def run(self, item):
        log_start(item["id"])
        return "ok"

    def evaluate(self, output, item):
        self.assert_that(StringContains("ok"), output)
"""


def opaque_inputs(cli: Any) -> dict[str, Any]:
    """Resumed items whose journaled input cannot be the item's own JSON, byte for byte."""
    cli.write("opaque.py", OPAQUE_EVALUATOR)
    cli.run("opaque.py", "-c", "2", "--no-progress")
    (run_dir,) = cli.run_dirs()
    missing = drop_last_records(run_dir, 1)
    resumed = cli.run("opaque.py", "-c", "2", "--no-progress", "--resume")
    return {"cli": cli, "run_dir": run_dir, "missing": missing, "resumed": resumed}


def retry_errors(cli: Any) -> dict[str, Any]:
    cases = [
        {"id": "ok", "kind": "ok"},
        {"id": "flaky", "kind": "flaky"},
        {"id": "crashy", "kind": "crashy"},
        {"id": "fails", "kind": "fails"},
    ]
    setup_project(cli, cases)
    first = cli.run(*ARGS, "first.json")
    (run_dir,) = cli.run_dirs()
    starts_first = starts(cli)
    retried = cli.run(*ARGS, "retried.json", "--retry-errors", run_dir.name)
    again = cli.run(*ARGS, "again.json", "--retry-errors", run_dir.name)  # all fixed now
    return {
        "cli": cli,
        "run_dir": run_dir,
        "first": first,
        "starts_first": starts_first,
        "retried": retried,
        "again": again,
    }


def torn_last_line(cli: Any) -> dict[str, Any]:
    setup_project(cli, CASES)
    cli.run(*ARGS, "first.json")
    (run_dir,) = cli.run_dirs()
    path = run_dir / "records.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    torn_id = json.loads(lines[-1])["id"]
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    resumed = cli.run(*ARGS, "resumed.json", "--resume")
    return {"cli": cli, "run_dir": run_dir, "torn_id": torn_id, "resumed": resumed}


def by_folder(cli: Any) -> dict[str, Any]:
    """Two runs, the first resumed by the path of its folder (as `ls` shows it)."""
    setup_project(cli, CASES)
    cli.run(*ARGS, "first.json")
    cli.run(*ARGS, "second.json")
    latest = find_run(cli.root / ".agenteval" / "runs", None)
    (first,) = [run_dir for run_dir in cli.run_dirs() if run_dir != latest]
    drop_last_records(first, 1)
    folder = f"{first.relative_to(cli.root)}/"
    return {
        "first": first.name,
        "resumed": cli.run(*ARGS, "resumed.json", "--resume", folder),
        "retried": cli.run(*ARGS, "retried.json", "--retry-errors", str(first)),
    }


def unknown_run(cli: Any) -> dict[str, Any]:
    setup_project(cli, CASES)
    return {"cli": cli, "refused": cli.run(*ARGS, "refused.json", "--resume", "no-such-run")}


SCENARIOS = {
    "changed-evaluator": changed_evaluator,
    "changed-dataset": changed_dataset,
    "reordered-dataset": reordered_dataset,
    "retry-errors": retry_errors,
    "opaque-inputs": opaque_inputs,
    "torn-last-line": torn_last_line,
    "unknown-run": unknown_run,
    "by-folder": by_folder,
}


@pytest.fixture(scope="module")
def resumed(cli_factory: Any) -> dict[str, Any]:
    with ThreadPoolExecutor(len(SCENARIOS)) as pool:
        return {name: pool.submit(fn, cli_factory(name)) for name, fn in SCENARIOS.items()}


def test_resume_refuses_when_evaluator_file_changed(resumed: dict[str, Any]) -> None:
    got = resumed["changed-evaluator"].result()
    assert got["first"].returncode == 0
    refused = got["refused"]
    assert refused.returncode == 2
    assert refused.stderr == (
        f"agenteval: error: Cannot resume run {got['run_id']!r}: resume.py changed since it "
        f"ran. Start a new run, or pass --force to resume anyway\n"
    )
    assert got["starts_after_refusal"] == ["a", "b", "c", "d"]  # nothing ran


def test_resume_force_runs_only_the_missing_items(resumed: dict[str, Any]) -> None:
    got = resumed["changed-evaluator"].result()
    cli, forced = got["cli"], got["forced"]
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert starts(cli) == sorted(["a", "b", "c", "d", *got["missing"]])
    assert cli.statuses(cli.json("forced.json")) == dict.fromkeys("abcd", "passed")
    # the edit was accepted: a later resume is not refused for it again, and runs nothing
    after = got["after"]
    assert after.returncode == 0, after.stdout + after.stderr
    assert starts(cli) == sorted(["a", "b", "c", "d", *got["missing"]])


def test_resume_refuses_when_a_dataset_is_gone(cli: Any) -> None:
    setup_project(cli, CASES)
    cli.run(*ARGS, "first.json")
    (run_dir,) = cli.run_dirs()
    (cli.root / "cases.json").unlink()
    refused = cli.run(*ARGS, "refused.json", "--resume")
    assert refused.returncode == 2
    assert refused.stderr == (
        f"agenteval: error: Cannot resume run {run_dir.name!r}: dataset cases.json is gone "
        f"since it ran. Start a new run, or pass --force to resume anyway\n"
    )


def test_resume_refuses_when_dataset_changed(resumed: dict[str, Any]) -> None:
    got = resumed["changed-dataset"].result()
    refused = got["refused"]
    assert refused.returncode == 2
    # recorded relative to the working directory, so a moved checkout still resumes
    assert refused.stderr == (
        f"agenteval: error: Cannot resume run {got['run_id']!r}: dataset cases.json changed "
        f"since it ran. Start a new run, or pass --force to resume anyway\n"
    )


def test_resume_force_after_dataset_edits_reports_the_dataset_as_it_is(
    resumed: dict[str, Any],
) -> None:
    got = resumed["reordered-dataset"].result()
    cli, forced = got["cli"], got["forced"]
    assert forced.returncode == 1, forced.stdout + forced.stderr
    report = cli.json("forced.json")
    items = cli.items_of(report)
    # dataset order, each item once at its new index; b ran again on its new input
    assert [(i["index"], i["id"], i["status"]) for i in items] == [
        (0, "n", "passed"),
        (1, "c", "passed"),
        (2, "b", "failed"),
        (3, "a", "passed"),
    ]
    assert items[2]["input"] == {"id": "b", "kind": "fails"}
    reran = {"n", "b"} | ({got["missing"][0]} & {"a", "c"})
    assert got["starts_forced"] == sorted([*got["starts_first"], *reran])
    assert (
        f"notice: 1 item of Resumable differed from what run {got['run_id']} recorded "
        f"(another input under the same id): run again"
    ) in forced.stdout.splitlines()
    # what the report says is what the journal says: equal to a fresh run of the dataset
    assert cli.comparable(report) == cli.comparable(cli.json("fresh.json"))
    again = got["again"]
    assert again.returncode == 1
    assert got["starts_again"] == got["starts_forced"]  # nothing ran again
    assert cli.comparable(cli.json("again.json")) == cli.comparable(report)
    assert "differed" not in again.stdout


def test_resume_keeps_records_of_redacted_and_unserializable_inputs(
    resumed: dict[str, Any],
) -> None:
    got = resumed["opaque-inputs"].result()
    cli, run = got["cli"], got["resumed"]
    assert run.returncode == 0, run.stdout + run.stderr
    assert "differed" not in run.stdout
    assert starts(cli) == sorted(["a", "b", "c", "d", *got["missing"]])
    (record, *_) = cli.records(got["run_dir"])
    assert record["input"]["token"] == "[REDACTED]"
    assert record["input"]["tool"]["unserializable"].endswith(".Tool")
    assert record["input"]["text"] == "\ufffd"


def test_resume_unknown_run_id_is_a_usage_error(resumed: dict[str, Any]) -> None:
    refused = resumed["unknown-run"].result()["refused"]
    assert refused.returncode == 2
    assert refused.stderr == (
        "agenteval: error: No run 'no-such-run' in '.agenteval/runs': list runs with "
        "`ls .agenteval/runs`\n"
    )


def test_retry_errors_reruns_only_error_timeout_crashed_items(resumed: dict[str, Any]) -> None:
    got = resumed["retry-errors"].result()
    cli = got["cli"]
    assert got["first"].returncode == 2
    assert cli.statuses(cli.json("first.json")) == {
        "ok": "passed",
        "flaky": "error",
        "crashy": "crashed",
        "fails": "failed",
    }
    retried = got["retried"]
    assert retried.returncode == 1, retried.stdout + retried.stderr  # only "fails" is left
    assert retried.stdout.splitlines()[0].endswith(" · retrying errors")
    assert cli.statuses(cli.json("retried.json")) == {
        "ok": "passed",
        "flaky": "passed",
        "crashy": "passed",
        "fails": "failed",
    }
    assert starts(cli) == sorted([*got["starts_first"], "flaky", "crashy"])


def test_retry_errors_of_a_run_without_errors_says_none_was_retried(
    resumed: dict[str, Any],
) -> None:
    got = resumed["retry-errors"].result()
    again, retried = got["again"], got["retried"]
    notice = f"notice: no item of run {got['run_dir'].name} had errored, timed out or crashed"
    assert notice not in retried.stdout
    assert f"{notice}: none was retried" in again.stdout.splitlines(), again.stdout


def test_retry_errors_after_set_up_failed_runs_the_items_and_says_nothing_of_none(
    cli: Any,
) -> None:
    # the run recorded no item (set_up raised): the retry runs them all, so the notice that
    # nothing was retried would be false
    cli.write(
        "setup.py",
        """
        import os
        from agenteval import BaseEvaluator
        from agenteval.assertions import StringContains

        class Flaky(BaseEvaluator):
            def set_up(self):
                if os.environ.get("BREAK") == "1":
                    raise RuntimeError("setup failed")

            def get_dataset(self):
                return [{"id": "a"}, {"id": "b"}]

            def run(self, item):
                return "refund"

            def evaluate(self, output, item):
                self.assert_that(StringContains("refund"), output)
        """,
    )
    first = cli.run("setup.py", "--no-progress", env={"BREAK": "1"})
    assert first.returncode == 2, first.stdout + first.stderr
    (run_dir,) = cli.run_dirs()
    retried = cli.run("setup.py", "--no-progress", "--retry-errors", run_dir.name)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "none was retried" not in retried.stdout, retried.stdout
    assert sorted(r["id"] for r in cli.records(run_dir)) == ["a", "b"]


def test_force_without_resume_or_retry_is_a_usage_error(cli: Any) -> None:
    setup_project(cli, CASES)
    result = cli.run(*ARGS, "r.json", "--force")
    assert result.returncode == 2
    assert result.stderr == (
        "agenteval: error: --force only applies to --resume or --retry-errors: drop it, or "
        "add one of them\n"
    )


def test_retry_errors_appends_to_the_same_journal(resumed: dict[str, Any]) -> None:
    got = resumed["retry-errors"].result()
    records = got["cli"].records(got["run_dir"])
    assert [r["id"] for r in records[4:]] in (["flaky", "crashy"], ["crashy", "flaky"])
    latest = latest_records(got["run_dir"])
    assert {key[1]: r.status for key, r in latest.items()} == {
        "ok": "passed",
        "flaky": "passed",
        "crashy": "passed",
        "fails": "failed",
    }


def test_resume_tolerates_torn_last_line(resumed: dict[str, Any]) -> None:
    got = resumed["torn-last-line"].result()
    cli, resumed_run = got["cli"], got["resumed"]
    assert resumed_run.returncode == 0, resumed_run.stdout + resumed_run.stderr
    assert starts(cli) == sorted(["a", "b", "c", "d", got["torn_id"]])
    assert cli.statuses(cli.json("resumed.json")) == dict.fromkeys("abcd", "passed")


def test_resume_after_torn_line_keeps_journal_complete(resumed: dict[str, Any]) -> None:
    got = resumed["torn-last-line"].result()
    latest = latest_records(got["run_dir"])
    assert {key[1]: r.status for key, r in latest.items()} == dict.fromkeys("abcd", "passed")


def test_resume_and_retry_take_the_folder_of_a_run(resumed: dict[str, Any]) -> None:
    got = resumed["by-folder"].result()
    for result in (got["resumed"], got["retried"]):
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.splitlines()[0].startswith(f"agenteval · run {got['first']} · ")


SLOW_EVALUATOR = """
import time

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Slow(BaseEvaluator):
    def get_dataset(self):
        return [{"id": n} for n in range(6)]

    def run(self, item):
        time.sleep(0.5)
        return "answer"

    def evaluate(self, output, item):
        self.assert_that(StringContains("answer"), output)
"""


def test_a_run_still_going_cannot_be_resumed_meanwhile(cli: Any) -> None:
    cli.write("slow.py", SLOW_EVALUATOR)
    live = cli.start("slow.py", "-c", "2", "--no-progress")
    assert cli.wait_until(lambda: bool(cli.run_dirs()) and bool(cli.records()), 20)
    (run_dir,) = cli.run_dirs()
    refused = cli.run("slow.py", "--no-progress", "--resume")
    assert refused.returncode == 2
    assert refused.stderr == (
        f"agenteval: error: Run {run_dir.name!r} is still running (process {live.pid}): wait "
        f"for it to end, or start a new run\n"
    )
    assert cli.finish(live, 0, timeout=30).returncode == 0
    assert sorted(r["id"] for r in cli.records()) == list(range(6))  # each ran once
    after = cli.run("slow.py", "--no-progress", "--resume", "--output-json", "after.json")
    assert after.returncode == 0, after.stdout + after.stderr
    assert len(cli.records()) == 6  # nothing ran again


def test_resume_from_another_folder_says_where_the_run_ran(cli: Any) -> None:
    cli.write("project/slow.py", SLOW_EVALUATOR.replace("range(6)", "range(1)"))
    result = cli.run("slow.py", "--no-progress", cwd=cli.root / "project")
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = cli.run_dirs("project/.agenteval/runs")
    refused = cli.run("project/slow.py", "--no-progress", "--resume", str(run_dir))
    assert refused.returncode == 2
    assert refused.stderr == (
        f"agenteval: error: Cannot resume run {run_dir.name!r}: project/slow.py::Slow was not "
        f"in it (new since, or not selected then: select what it ran, with its -k or --tag) "
        f"(it ran in {cli.root / 'project'}: evaluators are known by their path from there, so "
        f"resume it from that folder). Start a new run, or pass --force to resume anyway\n"
    )


def test_a_refused_resume_lets_the_run_go(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # refused in this process (the Python API, as in a notebook): another may resume it
    from agenteval import run_evaluations
    from agenteval._errors import JournalError

    setup_project(cli, CASES)
    assert cli.run(*ARGS, "first.json").returncode == 0
    (run_dir,) = cli.run_dirs()
    drop_last_records(run_dir, 1)
    cli.write("resume.py", RESUME_EVALUATOR + "\n# a later edit\n")
    monkeypatch.chdir(cli.root)
    with pytest.raises(JournalError, match=r"resume\.py changed since it ran"):
        run_evaluations(["resume.py"], resume=True, outputs=[])
    forced = cli.run(*ARGS, "forced.json", "--resume", "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr


def test_resume_without_an_id_takes_the_latest_run_of_the_selected_evaluators(cli: Any) -> None:
    quick = SLOW_EVALUATOR.replace("time.sleep(0.5)", "pass").replace("range(6)", "range(2)")
    cli.write("a.py", quick)
    cli.write("b.py", quick.replace("class Slow", "class Other"))
    assert cli.run("a.py", "--no-progress").returncode == 0
    first = cli.run_dirs()
    assert cli.run("b.py", "--no-progress").returncode == 0  # a later run, of another file
    (of_a,) = first

    resumed = cli.run("a.py", "--no-progress", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert len(cli.records(of_a)) == 2  # the run of a.py, whose items had all finished


OPAQUE_ROWS = """
import decimal, os
from agenteval import BaseEvaluator


class Opaque(BaseEvaluator):
    def get_dataset(self):  # rows agenteval cannot fingerprint: from code, not a file
        return [
            # (past the 200 characters of a placeholder's repr)
            {"id": "blob", "input": b"x" * 300 + os.environ["BLOB"].encode()},
            {"id": "price", "input": decimal.Decimal(os.environ["PRICE"])},
            {"id": "agent", "input": object()},  # (its repr holds an address)
        ]

    def run(self, item):
        return repr(item["input"])

    def evaluate(self, output, item):
        assert "v2" not in output and "2.00" not in output, output
"""


def test_resume_runs_again_rows_whose_input_without_json_form_changed(cli: Any) -> None:
    # bytes and Decimal were taken as unchanged whatever their value, and a long one
    # whatever came after its first 200 characters: the old results stayed
    cli.write("opaque.py", OPAQUE_ROWS)
    first = cli.run("opaque.py", "--no-progress", env={"BLOB": "v1", "PRICE": "1.00"})
    assert first.returncode == 0, first.stdout + first.stderr
    changed = cli.run(
        "opaque.py",
        "--no-progress",
        "--resume",
        "--output-json",
        "r.json",
        env={"BLOB": "v2", "PRICE": "2.00"},
    )
    assert "notice: 2 items of Opaque differed" in changed.stdout, changed.stdout
    assert cli.statuses(cli.json("r.json")) == {
        "blob": "error",
        "price": "error",
        "agent": "passed",
    }


TWO_EVALUATORS = """
from agenteval import BaseEvaluator


class First(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}]

    def run(self, item):
        return "ok"

    def evaluate(self, output, item):
        pass


class Second(First):
    pass
"""


def _run_id(result: Any) -> str:
    return result.stdout.split(" · ")[1].removeprefix("run ")


def test_resume_without_an_id_takes_the_right_run_or_says_why_not(cli: Any) -> None:
    import shutil

    cli.write("two.py", TWO_EVALUATORS)
    runs = cli.root / ".agenteval" / "runs"
    both = _run_id(cli.run("two.py", "--no-progress"))
    shutil.copytree(runs / both, runs / "baseline")  # a copy kept under another name
    only_first = _run_id(cli.run("two.py", "-k", "First", "--no-progress"))
    # both evaluators selected: the latest run of both, not the later one of First alone,
    # nor the copy (resumed only when named)
    resumed = cli.run("two.py", "--resume", "--no-progress")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _run_id(resumed) == both
    assert _run_id(cli.run("two.py", "-k", "First", "--resume", "--no-progress")) == only_first
    # a run whose manifest cannot be read might be the one: never skipped in silence
    (runs / only_first / "manifest.json").write_text('{"schema": 1, "evalu')
    refused = cli.run("two.py", "--resume", "--no-progress")
    assert refused.returncode == 2
    assert f"The manifest of run {only_first!r} cannot be read or is damaged" in refused.stderr


def test_resume_refuses_when_an_evaluator_of_the_run_is_gone(cli: Any) -> None:
    # its file deleted: the run it holds never finished, and nothing was left out with -k
    cli.write("evals/first.py", TWO_EVALUATORS.replace("class Second(First):\n    pass\n", ""))
    cli.write("evals/second.py", SLEEPS_ONCE)
    started = time.monotonic()
    proc = cli.start("evals", "--no-progress", "--grace", "0")
    assert cli.wait_until(lambda: (cli.root / "second-started").exists(), 20)
    os.kill(proc.pid, signal.SIGINT)
    assert cli.finish(proc, started).returncode == 130
    (cli.root / "evals" / "second.py").unlink()
    refused = cli.run("evals", "--no-progress", "--resume")
    assert refused.returncode == 2
    assert (
        "evals/second.py::Second is gone (its file was removed, or no longer defines it)"
        in refused.stderr
    ), refused.stderr
    forced = cli.run("evals", "--no-progress", "--resume", "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    # with -k, leaving it out is what was asked
    assert cli.run("evals", "-k", "First", "--no-progress", "--resume").returncode == 0


SLEEPS_ONCE = """
import time
from pathlib import Path
from agenteval import BaseEvaluator


class Second(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "slow"}]

    def run(self, item):
        Path("second-started").touch()
        time.sleep(30)
        return "ok"

    def evaluate(self, output, item):
        pass
"""


def test_a_forced_resume_adds_the_evaluators_it_let_in_to_the_run(cli: Any) -> None:
    cli.write("two.py", TWO_EVALUATORS)
    run_id = _run_id(cli.run("two.py", "--no-progress"))
    cli.write("two.py", TWO_EVALUATORS.replace("class Second(", "class Renamed("))
    forced = cli.run("two.py", "--no-progress", "--resume", run_id, "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    # the renamed evaluator's records are in the run: a resume selecting it finds it there
    again = cli.run("two.py", "-k", "Renamed", "--no-progress", "--resume", run_id)
    assert again.returncode == 0, again.stdout + again.stderr


def test_resuming_some_of_the_classes_passed_in_code_is_a_selection(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # run_evaluations([A, B]), then a resume of [A]: B is not selected, not gone
    from agenteval import run_evaluations

    cli.write("two.py", TWO_EVALUATORS)
    monkeypatch.chdir(cli.root)
    monkeypatch.syspath_prepend(str(cli.root))
    import two  # type: ignore[import-not-found]

    first = run_evaluations([two.First, two.Second], outputs=[])
    resumed = run_evaluations([two.First], resume=first.id, outputs=[])
    assert resumed.exit_code == 0
    assert any("only the selected evaluators are resumed" in n for n in resumed.notices)


CHANGES_ITS_ITEMS = """
import os
from pathlib import Path

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Doc:  # an input with no JSON form, whose repr is long
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"Doc({self.text!r})"


class Chats(BaseEvaluator):
    def get_dataset(self):
        tail = os.environ.get("TAIL", "v1")
        return [
            {"id": "chat", "messages": ["hi"]},
            {"id": "odd \\ud800 id", "input": "a"},  # a lone surrogate (a file name, say)
            {"id": "doc", "doc": Doc("a" * 300 + tail)},
        ]

    def run(self, item):
        with open("ran.log", "a") as log:
            log.write(item["id"].encode(errors="replace").decode() + "\\n")
        if "messages" in item:
            item["messages"].append("the agent's reply")  # an agent extends its conversation
        return item["doc"].text if "doc" in item else "v1"

    def evaluate(self, output, item):
        self.assert_that(StringContains("v1"), output)
"""


@pytest.mark.parametrize("executor", [(), ("-c", "2"), ("-c", "2", "--isolation", "worker")])
def test_resume_runs_again_only_items_whose_input_changed(
    cli: Any, executor: tuple[str, ...]
) -> None:
    # an item changed in place by run, an id UTF-8 cannot hold and a change past the
    # 200 characters of a long repr: each was run again on every resume, or never
    cli.write("chats.py", CHANGES_ITS_ITEMS)
    log = cli.root / "ran.log"
    first = cli.run("chats.py", "--no-progress", *executor)
    assert first.returncode == 0, first.stdout + first.stderr
    assert sorted(log.read_text().splitlines()) == ["chat", "doc", "odd ? id"]
    log.unlink()
    again = cli.run("chats.py", "--no-progress", "--resume", *executor)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "differed" not in again.stdout, again.stdout
    assert not log.exists(), log.read_text()
    changed = cli.run("chats.py", "--no-progress", "--resume", *executor, env={"TAIL": "v2"})
    assert changed.returncode == 1, changed.stdout + changed.stderr  # its new result
    assert "notice: 1 item of Chats differed" in changed.stdout, changed.stdout
    assert log.read_text().splitlines() == ["doc"]


def test_a_run_id_too_long_for_a_file_name_is_no_run(cli: Any) -> None:
    cli.write("chats.py", CHANGES_ITS_ITEMS)
    for option in ("--resume", "--retry-errors"):
        result = cli.run("chats.py", option, "a" * 300)
        assert result.returncode == 2
        assert result.stderr.startswith(f"agenteval: error: No run '{'a' * 300}' in "), result


USES_A_HELPER = """
from _agent import answer

from agenteval import BaseEvaluator
from agenteval.assertions import StringContains


class Helped(BaseEvaluator):
    def get_dataset(self):
        return [{"id": 1}, {"id": 2}]

    def run(self, item):
        return answer()

    def evaluate(self, output, item):
        self.assert_that(StringContains("x"), output)
"""


def test_resume_refuses_when_a_module_the_evaluators_import_changed(cli: Any) -> None:
    # the agent's code beside the evaluator: resumed, old and new answers would mix
    cli.write("evals/helped.py", USES_A_HELPER)
    cli.write("evals/_agent.py", "def answer():\n    return 'x'\n")
    cli.write("_report.py", "from agenteval.outputs import ConsoleOutput\n")
    cli.write("evaluation.py", "from _report import ConsoleOutput\noutput = [ConsoleOutput]\n")
    first = cli.run("evals", "--no-progress")
    assert first.returncode == 0, first.stdout + first.stderr
    (run_dir,) = cli.run_dirs()
    cli.write("_report.py", "from agenteval.outputs import ConsoleOutput  # edited\n")
    cli.write("evals/_agent.py", "def answer():\n    return 'y'\n")
    refused = cli.run("evals", "--resume")  # (for the agent's code, not the config's import)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"agenteval: error: Cannot resume run {run_dir.name!r}: evals/_agent.py (imported by "
        f"the evaluators) changed since it ran. Start a new run, or pass --force to resume "
        f"anyway\n"
    )
    assert cli.run("evals", "--resume", "--force").returncode == 0
    cli.write(
        "evaluation.py", "from _report import ConsoleOutput\noutput = [ConsoleOutput]  # edited\n"
    )
    later = cli.run("evals", "--resume", "--no-progress")  # the forced change was accepted
    assert later.returncode == 0, later.stdout + later.stderr
    assert (
        f"notice: the config (evaluation.py) changed since run {run_dir.name} began: the "
        f"items it finished ran under the one before"
    ) in later.stdout.splitlines()


HANGS_ON_THREE = """
import time
from pathlib import Path
from agenteval import BaseEvaluator


class Ten(BaseEvaluator):
    def get_dataset(self):
        return [{"id": str(n)} for n in range(10)]

    def run(self, item):
        if not Path("fixed").exists():
            raise ValueError("broken")
        if item["id"] in ("3", "5") and Path("hang").exists():
            Path(f"reached-{item['id']}").touch()
            time.sleep(30)
        return "ok"

    def evaluate(self, output, item):
        assert output == "ok"
"""


def _interrupt_at_three(cli: Any, *args: str) -> Any:
    (cli.root / "reached-3").unlink(missing_ok=True)
    started = time.monotonic()
    proc = cli.start("ten.py", "--no-progress", "--grace", "0", *args)
    assert cli.wait_until(lambda: (cli.root / "reached-3").exists(), 20)
    os.kill(proc.pid, signal.SIGINT)
    got = cli.finish(proc, started)
    assert got.returncode == 130, got.stdout + got.stderr
    return got


@pytest.mark.parametrize("how", ["--resume", "--retry-errors"])
def test_an_interrupted_resume_or_retry_reports_the_records_it_did_not_reach(
    cli: Any, how: str
) -> None:
    # what the run holds of items the interrupt kept it from reaching is still its result
    # (the resume reaches 4, the item after the next one to run, but not 6 to 9)
    cli.write("ten.py", HANGS_ON_THREE)
    if how == "--resume":  # 3 and 5 cancelled, the rest passed
        (cli.root / "fixed").touch()
        (cli.root / "hang").touch()
        proc = cli.start("ten.py", "--no-progress", "--grace", "0", "-c", "3")
        assert cli.wait_until(lambda: len(cli.records()) == 8 if cli.run_dirs() else False, 20)
        os.kill(proc.pid, signal.SIGINT)
        assert cli.finish(proc, time.monotonic()).returncode == 130
        expected = {str(n): "passed" for n in range(10)} | {"3": "cancelled", "5": "cancelled"}
    else:  # every item errored
        assert cli.run("ten.py", "--no-progress").returncode == 2
        (cli.root / "fixed").touch()
        (cli.root / "hang").touch()
        expected = {str(n): "passed" if n < 3 else "error" for n in range(10)} | {"3": "cancelled"}
    (run_dir,) = cli.run_dirs()
    _interrupt_at_three(cli, "--output-json", "again.json", how, run_dir.name)
    assert cli.statuses(cli.json("again.json")) == expected
    # and what is still to do is done by the next one
    (cli.root / "hang").unlink()
    final = cli.run("ten.py", "--no-progress", "--output-json", "final.json", how, run_dir.name)
    assert final.returncode == 0, final.stdout + final.stderr
    assert set(cli.statuses(cli.json("final.json")).values()) == {"passed"}


FIRST_AND_SLOW_TO_LOAD = """
import time
from pathlib import Path
from agenteval import BaseEvaluator


class First(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "a"}]

    def run(self, item):
        return "ok"

    def evaluate(self, output, item):
        pass


class Second(BaseEvaluator):
    def get_dataset(self):
        if Path("slow").exists():  # a dataset fetched from a service, say
            Path("loading").touch()
            time.sleep(1.5)  # (it comes within the grace period)
        return [{"id": "b0"}, {"id": "b1"}, {"id": "b2"}]

    def run(self, item):
        if item["id"] == "b1" and not Path("slow").exists():
            Path("reached-b1").touch()
            time.sleep(30)
        return "ok"

    def evaluate(self, output, item):
        pass
"""


def test_an_interrupted_resume_keeps_the_records_of_an_evaluator_it_was_loading(
    cli: Any,
) -> None:
    # a resume interrupted while the next evaluator's dataset loaded reported it with 0 items,
    # though the journal held some
    cli.write("two.py", FIRST_AND_SLOW_TO_LOAD)
    proc = cli.start("two.py", "--no-progress", "--grace", "0")
    assert cli.wait_until(lambda: (cli.root / "reached-b1").exists(), 20)
    os.kill(proc.pid, signal.SIGINT)
    assert cli.finish(proc, time.monotonic()).returncode == 130
    (cli.root / "slow").touch()
    proc = cli.start("two.py", "--no-progress", "--output-json", "again.json", "--resume")
    assert cli.wait_until(lambda: (cli.root / "loading").exists(), 20)
    os.kill(proc.pid, signal.SIGINT)
    got = cli.finish(proc, time.monotonic())
    assert got.returncode == 130, got.stdout + got.stderr
    assert cli.statuses(cli.json("again.json")) == {
        "a": "passed",
        "b0": "passed",
        "b1": "cancelled",
    }


ONE_ERRS = """
from agenteval import BaseEvaluator


class Fine(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "f"}]

    def run(self, item):
        return "ok"

    def evaluate(self, output, item):
        pass


class Errs(BaseEvaluator):
    def get_dataset(self):
        return [{"id": "e"}]

    def run(self, item):
        raise ValueError("broken")

    def evaluate(self, output, item):
        pass
"""


def test_retry_errors_of_a_selection_without_errors_says_none_was_retried(cli: Any) -> None:
    # only counted over the whole run: the selection's nothing to retry went unsaid
    cli.write("two.py", ONE_ERRS)
    assert cli.run("two.py", "--no-progress").returncode == 2
    (run_dir,) = cli.run_dirs()
    got = cli.run("two.py", "--no-progress", "--retry-errors", run_dir.name, "-k", "Fine")
    assert got.returncode == 0, got.stdout + got.stderr
    assert (
        f"notice: no item of run {run_dir.name} of the evaluators selected had errored, timed "
        "out or crashed: none was retried"
    ) in got.stdout.splitlines(), got.stdout


SKIPS_WITHOUT_A_KEY = """
import os

from agenteval import BaseEvaluator, SkipEvaluator
from agenteval.assertions import StringContains


class Judged(BaseEvaluator):
    def set_up(self):
        if not os.environ.get("JUDGE_KEY"):
            raise SkipEvaluator("no judge model configured")

    def get_dataset(self):
        return [{"id": "a"}, {"id": "b"}]

    def run(self, item):
        if item["id"] == "b":
            raise ValueError("broken")
        return "x"

    def evaluate(self, output, item):
        self.assert_that(StringContains("y"), output)
"""


@pytest.mark.parametrize("how", ["--resume", "--retry-errors"])
def test_an_evaluator_that_skips_itself_on_resume_keeps_its_recorded_verdict(
    cli: Any, how: str
) -> None:
    # a second CI job without the secret: "SKIPPED", exit 0, the failures hidden
    cli.write("judged.py", SKIPS_WITHOUT_A_KEY)
    first = cli.run("judged.py", "--no-progress", env={"JUDGE_KEY": "k"})
    assert first.returncode == 2, first.stdout + first.stderr
    (run_dir,) = cli.run_dirs()
    again = cli.run("judged.py", "--no-progress", "--output-json", "again.json", how, run_dir.name)
    assert again.returncode == 2, again.stdout + again.stderr
    assert cli.statuses(cli.json("again.json")) == {"a": "failed", "b": "error"}
    assert "ERROR   Judged  judged.py" in again.stdout.splitlines()
    assert (
        "  skipped this time (no judge model configured): its items below are those the run "
        "had recorded" in again.stdout.splitlines()
    )


def test_resume_in_another_checkout_of_a_changed_file_says_only_what_changed(cli: Any) -> None:
    # (a CI retry job in a fresh checkout: it blamed the folder, which is not the problem)
    import shutil

    cli.write("job1/cases.json", '[{"id": "a"}]')
    cli.write(
        "job1/e.py",
        "from agenteval import BaseEvaluator\nfrom agenteval.datasets import JsonDataset\n"
        "class E(BaseEvaluator):\n"
        "    def get_dataset(self):\n        return JsonDataset('cases.json')\n"
        "    def run(self, item):\n        return 'x'\n"
        "    def evaluate(self, output, item):\n        pass\n",
    )
    assert cli.run("e.py", "--no-progress", cwd=cli.root / "job1").returncode == 0
    shutil.copytree(cli.root / "job1", cli.root / "job2")
    (cli.root / "job2" / "cases.json").write_text('[{"id": "a"}, {"id": "b"}]')
    (run_dir,) = cli.run_dirs("job2/.agenteval/runs")
    refused = cli.run("e.py", "--no-progress", "--resume", cwd=cli.root / "job2")
    assert refused.stderr == (
        f"agenteval: error: Cannot resume run {run_dir.name!r}: dataset cases.json changed "
        f"since it ran. Start a new run, or pass --force to resume anyway\n"
    )
