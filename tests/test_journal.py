"""The run journal: manifest first, one flushed line per record, torn lines tolerated."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from agenteval._errors import JournalError
from agenteval._journal import (
    Journal,
    atomic_write,
    find_run,
    fingerprint,
    latest_records,
    new_run_id,
    read_manifest,
    read_records,
    read_records_at,
)
from agenteval._results import ItemResult


def record(item_id: str, status: str = "passed", evaluator: str = "e.py::E") -> ItemResult:
    return ItemResult.model_validate(
        {"evaluator": evaluator, "id": item_id, "index": 0, "status": status}
    )


def write_journal(tmp_path: Path, *records: ItemResult) -> Journal:
    journal = Journal.create(tmp_path / "runs", "run-1", {"run_id": "run-1"})
    for r in records:
        journal.append(r.model_dump_json())
    journal.close()
    return journal


def test_new_run_id_is_a_sortable_timestamp_with_random_suffix() -> None:
    first, second = new_run_id(), new_run_id()
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", first)
    assert first != second
    assert first[:15] <= second[:15]


def test_fingerprint_is_sha256_of_content(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_bytes(b"[1, 2]")
    assert fingerprint(path) == hashlib.sha256(b"[1, 2]").hexdigest()
    assert fingerprint(tmp_path / "missing.json") is None


def test_journal_create_writes_manifest_first(tmp_path: Path) -> None:
    journal = Journal.create(tmp_path / "runs", "run-1", {"run_id": "run-1", "argv": ["x"]})
    # (and the lock that says a process runs it: its pid)
    assert sorted(p.name for p in journal.dir.iterdir()) == ["lock", "manifest.json"]
    assert (journal.dir / "lock").read_text() == f"{os.getpid()}\n"
    assert read_manifest(journal.dir) == {"run_id": "run-1", "argv": ["x"]}


def test_journal_create_refuses_an_existing_run_folder(tmp_path: Path) -> None:
    Journal.create(tmp_path / "runs", "run-1", {})
    with pytest.raises(JournalError) as info:
        Journal.create(tmp_path / "runs", "run-1", {})
    assert str(info.value) == (
        f"Could not create run folder {str(tmp_path / 'runs' / 'run-1')!r}: File exists"
    )


def test_journal_append_writes_one_line_per_record(tmp_path: Path) -> None:
    journal = write_journal(tmp_path, record("a"), record("b", "failed"))
    lines = (journal.dir / "records.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "b"]
    assert [r.status for r in read_records(journal.dir)] == ["passed", "failed"]


def test_journal_append_many_writes_records_that_finished_together_at_once(
    tmp_path: Path,
) -> None:
    journal = Journal.create(tmp_path / "runs", "run-1", {})
    first = journal.append(record("a").model_dump_json())
    places = journal.append_many([record(i).model_dump_json() for i in ("b", "é", "d")])
    assert journal.append_many([]) == []
    journal.close()
    data = (journal.dir / "records.jsonl").read_bytes()
    assert [first[0], *(offset for offset, _ in places)] == [
        m.start() for m in re.finditer(rb"^", data, re.M) if m.start() < len(data)
    ]
    for (offset, length), item_id in zip([first, *places], "abéd", strict=True):
        assert json.loads(data[offset : offset + length])["id"] == item_id
    assert [(r.id, offset, length) for r, offset, length in read_records_at(journal.dir)] == [
        (item_id, offset, length)
        for item_id, (offset, length) in zip("abéd", [first, *places], strict=True)
    ]


def test_journal_append_is_flushed_before_close(tmp_path: Path) -> None:
    journal = Journal.create(tmp_path / "runs", "run-1", {})
    journal.append(record("a").model_dump_json())
    try:
        assert [r.id for r in read_records(journal.dir)] == ["a"]
    finally:
        journal.close()


def test_read_records_skips_a_torn_last_line(tmp_path: Path) -> None:
    journal = write_journal(tmp_path, record("a"), record("b"))
    path = journal.dir / "records.jsonl"
    text = path.read_text()
    path.write_text(text[:-10])  # the second line lost its end
    assert [r.id for r in read_records(journal.dir)] == ["a"]


def test_read_records_skips_a_complete_last_line_without_newline(tmp_path: Path) -> None:
    journal = write_journal(tmp_path, record("a"), record("b"))
    path = journal.dir / "records.jsonl"
    path.write_text(path.read_text().rstrip("\n"))  # a write cut right before its newline
    assert [r.id for r in read_records(journal.dir)] == ["a"]


def test_read_records_skips_a_corrupt_middle_line(tmp_path: Path) -> None:
    journal = write_journal(tmp_path, record("a"))
    path = journal.dir / "records.jsonl"
    path.write_text(
        path.read_text() + '{"not": "a record"}\n' + record("c").model_dump_json() + "\n"
    )
    assert [r.id for r in read_records(journal.dir)] == ["a", "c"]


def test_read_records_of_a_run_without_records_is_empty(tmp_path: Path) -> None:
    journal = write_journal(tmp_path)
    assert list(read_records(journal.dir)) == []


def test_journal_append_after_torn_line_starts_a_new_line(tmp_path: Path) -> None:
    journal = write_journal(tmp_path, record("a"), record("b"))
    path = journal.dir / "records.jsonl"
    path.write_text(path.read_text()[:-10])
    reopened = Journal.reopen(journal.dir)
    reopened.append(record("b").model_dump_json())
    reopened.append(record("c").model_dump_json())
    reopened.close()
    assert [r.id for r in read_records(journal.dir)] == ["a", "b", "c"]


def test_journal_reopen_of_complete_file_adds_no_blank_line(tmp_path: Path) -> None:
    journal = write_journal(tmp_path, record("a"))
    reopened = Journal.reopen(journal.dir)
    reopened.append(record("b").model_dump_json())
    reopened.close()
    lines = (journal.dir / "records.jsonl").read_text().split("\n")
    assert [json.loads(line)["id"] for line in lines[:-1]] == ["a", "b"]
    assert lines[-1] == ""


def test_latest_records_keeps_the_last_record_per_item(tmp_path: Path) -> None:
    journal = write_journal(
        tmp_path, record("a", "error"), record("b"), record("a"), record("a", evaluator="f.py::F")
    )
    latest = latest_records(journal.dir)
    assert {k: r.status for k, r in latest.items()} == {
        ("e.py::E", "a", 0): "passed",
        ("e.py::E", "b", 0): "passed",
        ("f.py::F", "a", 0): "passed",
    }


def test_read_manifest_of_a_missing_run(tmp_path: Path) -> None:
    with pytest.raises(JournalError) as info:
        read_manifest(tmp_path / "nope")
    assert str(info.value) == f"No run at {str(tmp_path / 'nope')!r}: manifest.json is missing"


@pytest.mark.parametrize("text", ["[1]", "{}"])  # ({}: "Cannot resume run None" followed)
def test_read_manifest_that_is_not_a_manifest(tmp_path: Path, text: str) -> None:
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(JournalError) as info:
        read_manifest(tmp_path)
    assert str(info.value) == (
        f"{str(tmp_path / 'manifest.json')!r} is not a run manifest (damaged?): start a new run"
    )


def test_a_run_folder_without_its_manifest_says_so(tmp_path: Path) -> None:
    (tmp_path / "runs" / "20261202-120000-abcdef").mkdir(parents=True)
    (tmp_path / "runs" / "20261202-120000-abcdef" / "lock").write_text("1\n")
    with pytest.raises(JournalError) as info:
        find_run(tmp_path / "runs", "20261202-120000-abcdef")
    assert "has no manifest.json (removed, or never written)" in str(info.value)


def test_read_manifest_that_is_not_json(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{")
    with pytest.raises(JournalError) as info:
        read_manifest(tmp_path)
    assert str(info.value).startswith(f"Could not read {str(tmp_path / 'manifest.json')!r}: ")


def test_find_run_by_id_and_latest(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for run_id in ("20260101-000000-aaaaaa", "20260102-000000-bbbbbb"):
        Journal.create(runs, run_id, {"run_id": run_id})
    (runs / "20270101-000000-cccccc").mkdir()  # no manifest: not a run
    assert find_run(runs, None) == runs / "20260102-000000-bbbbbb"
    assert find_run(runs, "20260101-000000-aaaaaa") == runs / "20260101-000000-aaaaaa"


def test_find_run_unknown_id(tmp_path: Path) -> None:
    Journal.create(tmp_path, "run-1", {})
    with pytest.raises(JournalError) as info:
        find_run(tmp_path, "run-2")
    assert str(info.value) == f"No run 'run-2' in {str(tmp_path)!r}: list runs with `ls {tmp_path}`"


def test_find_run_without_any_run(tmp_path: Path) -> None:
    with pytest.raises(JournalError) as info:
        find_run(tmp_path / "runs", None)
    assert str(info.value) == f"No previous run in {str(tmp_path / 'runs')!r} to resume"


def test_save_manifest_replaces_atomically(tmp_path: Path) -> None:
    journal = Journal.create(tmp_path / "runs", "run-1", {"run_id": "run-1"})
    journal.manifest["evaluators"] = {"e.py::E": {"datasets": {"d.json": "0" * 64}}}
    journal.save_manifest()
    assert read_manifest(journal.dir)["evaluators"] == {
        "e.py::E": {"datasets": {"d.json": "0" * 64}}
    }
    assert sorted(p.name for p in journal.dir.iterdir()) == ["lock", "manifest.json"]


def test_atomic_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    atomic_write(target, "one")
    atomic_write(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_find_run_latest_within_one_second_is_the_last_started(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = Journal.create(runs, "20260101-000000-ffffff", {}).dir
    second = Journal.create(runs, "20260101-000000-000000", {}).dir
    os.utime(first / "manifest.json", ns=(1_000_000_000, 1_000_000_000))
    os.utime(second / "manifest.json", ns=(2_000_000_000, 2_000_000_000))
    assert find_run(runs, None) == second


def test_journal_goes_without_a_lock_where_the_filesystem_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import fcntl

    def no_locks(fd: int, how: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")  # NFS without a lock daemon

    monkeypatch.setattr(fcntl, "lockf", no_locks)
    journal = Journal.create(tmp_path / "runs", "run-1", {"run_id": "run-1"})
    again = Journal.reopen(journal.dir)  # not taken for a run still going
    again.close()
    journal.close()


def test_journal_create_under_a_file_says_to_keep_runs_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "runs").write_text("not a folder")
    with pytest.raises(JournalError) as info:
        Journal.create(tmp_path / "runs", "run-1", {})
    assert str(info.value) == (
        f"Could not create run folder {str(tmp_path / 'runs' / 'run-1')!r}: Not a directory; "
        "keep runs elsewhere with --runs-dir"
    )
