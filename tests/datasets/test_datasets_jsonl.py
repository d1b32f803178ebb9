from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from agenteval._errors import DatasetError
from agenteval.datasets import JsonlDataset

Write = Callable[[str, "str | bytes"], Path]  # the `write` fixture, from conftest.py


def test_jsonl_dataset_reads_one_object_per_line(write: Write) -> None:
    write("cases.jsonl", '{"input": "Hi"}\n{"input": "Bye", "tags": ["a"]}\n')
    assert list(JsonlDataset("cases.jsonl")) == [
        {"input": "Hi"},
        {"input": "Bye", "tags": ["a"]},
    ]


def test_jsonl_dataset_skips_blank_lines(write: Write) -> None:
    write("cases.jsonl", '\n{"n": 1}\n   \n\t\n{"n": 2}\n\n')
    assert [item["n"] for item in JsonlDataset("cases.jsonl")] == [1, 2]


def test_jsonl_dataset_accepts_bom_crlf_and_no_final_newline(write: Write) -> None:
    write("cases.jsonl", b'\xef\xbb\xbf{"input": "caf\xc3\xa9"}\r\n\r\n{"n": 2}')
    assert list(JsonlDataset("cases.jsonl")) == [{"input": "café"}, {"n": 2}]


def test_jsonl_dataset_empty_file_has_no_items(write: Write) -> None:
    write("cases.jsonl", "")
    dataset = JsonlDataset("cases.jsonl")
    assert list(dataset) == []
    assert dataset.length_hint() == 0


def test_jsonl_dataset_can_be_iterated_again(write: Write) -> None:
    write("cases.jsonl", '{"n": 1}\n{"n": 2}\n')
    dataset = JsonlDataset("cases.jsonl")
    assert next(iter(dataset)) == {"n": 1}
    assert [item["n"] for item in dataset] == [1, 2]
    assert [item["n"] for item in dataset] == [1, 2]


def test_jsonl_dataset_has_no_len(write: Write) -> None:
    write("cases.jsonl", '{"n": 1}\n')
    with pytest.raises(TypeError):
        len(JsonlDataset("cases.jsonl"))  # type: ignore[arg-type]


def test_jsonl_dataset_reads_lazily_up_to_the_line_reached(write: Write) -> None:
    write("cases.jsonl", '{"n": 1}\n{"n": 2}\nnot json\n')
    items = iter(JsonlDataset("cases.jsonl"))
    assert next(items) == {"n": 1}
    assert next(items) == {"n": 2}
    with pytest.raises(DatasetError, match="at line 3, column 1"):
        next(items)


def test_jsonl_dataset_streams_a_big_file_in_little_memory(write: Write) -> None:
    line = '{"input": "%06d", "reference": "help me with my order please"}\n'
    write("big.jsonl", "".join(line % i for i in range(20_000)))  # about 1.3 MB
    dataset = JsonlDataset("big.jsonl")
    tracemalloc.start()
    try:
        count = 0
        for item in dataset:
            count += 1
            last = item
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 20_000
    assert last == {"input": "019999", "reference": "help me with my order please"}
    assert peak < 300_000, f"peak {peak} bytes: the file was not streamed"


def test_jsonl_dataset_invalid_json_names_line_and_column(write: Write) -> None:
    write("cases.jsonl", '{"n": 1}\n\n{"n": 2,}\n')
    with pytest.raises(DatasetError) as info:
        list(JsonlDataset("cases.jsonl"))
    assert str(info.value) == (
        "Invalid JSON in 'cases.jsonl' at line 3, column 9: Expecting property name "
        "enclosed in double quotes; write one JSON object per line"
    )


def test_jsonl_dataset_pretty_printed_object_is_an_error(write: Write) -> None:
    write("cases.jsonl", '{\n  "n": 1\n}\n')
    with pytest.raises(DatasetError) as info:
        list(JsonlDataset("cases.jsonl"))
    assert str(info.value) == (
        "Invalid JSON in 'cases.jsonl' at line 1, column 2: Expecting property name "
        "enclosed in double quotes; write one JSON object per line"
    )


@pytest.mark.parametrize(
    ("line", "kind", "shown"),
    [("[1, 2]", "an array", "[1, 2]"), ('"x"', "a string", "'x'"), ("3.5", "a number", "3.5")],
)
def test_jsonl_dataset_line_not_an_object_is_an_error(
    write: Write, line: str, kind: str, shown: str
) -> None:
    write("cases.jsonl", '{"n": 1}\r\n' + line + "\r\n")
    with pytest.raises(DatasetError) as info:
        list(JsonlDataset("cases.jsonl"))
    assert str(info.value) == (
        f"'cases.jsonl' line 2 is {kind}, not an object: {shown}; write one JSON object "
        'per line, such as {"input": ...}'
    )


def test_jsonl_dataset_invalid_utf8_names_line_and_column(write: Write) -> None:
    write("cases.jsonl", b'{"n": 1}\n{"n": "\xff"}\n')
    items = iter(JsonlDataset("cases.jsonl"))
    assert next(items) == {"n": 1}
    with pytest.raises(DatasetError) as info:
        next(items)
    assert str(info.value) == (
        "'cases.jsonl' line 2 is not valid UTF-8: byte 0xff at column 8; re-save the file as UTF-8"
    )


def test_jsonl_dataset_utf16_file_is_named_as_such(write: Write) -> None:
    write("cases.jsonl", '{"n": 1}\n'.encode("utf-16"))
    with pytest.raises(DatasetError) as info:
        list(JsonlDataset("cases.jsonl"))
    assert str(info.value) == (
        "Dataset file 'cases.jsonl' is UTF-16, not UTF-8: re-save it as UTF-8"
    )


def test_jsonl_dataset_file_removed_before_iteration(write: Write) -> None:
    path = write("cases.jsonl", '{"n": 1}\n')
    dataset = JsonlDataset("cases.jsonl")
    path.unlink()
    with pytest.raises(DatasetError, match=r"^Dataset file 'cases\.jsonl' does not exist"):
        list(dataset)


def test_jsonl_dataset_length_hint_counts_non_blank_lines(write: Write) -> None:
    write("cases.jsonl", '\ufeff\n{"n": 1}\r\n\r\n{"n": 2}\n{"n": 3}')
    assert JsonlDataset("cases.jsonl").length_hint() == 3


def test_jsonl_dataset_length_hint_follows_file_changes(write: Write) -> None:
    path = write("cases.jsonl", '{"n": 1}\n')
    dataset = JsonlDataset("cases.jsonl")
    assert dataset.length_hint() == 1
    path.write_text('{"n": 1}\n{"n": 2}\n', encoding="utf-8")
    assert dataset.length_hint() == 2


def test_jsonl_dataset_describe_gives_the_line_despite_blank_lines(write: Write) -> None:
    write("cases.jsonl", '\n{"n": 0}\n{"n": 1}\n\n\n{"n": 2}\n{"n": 3}\n\n{"n": 4}\n')
    dataset = JsonlDataset("cases.jsonl")
    assert [dataset.describe(i) for i in range(5)] == [
        "cases.jsonl line 2",
        "cases.jsonl line 3",
        "cases.jsonl line 6",
        "cases.jsonl line 7",
        "cases.jsonl line 9",
    ]
    assert dataset.describe(5) == "cases.jsonl item #5"
    assert dataset.describe(-1) == "cases.jsonl item #-1"


def test_jsonl_dataset_describe_never_raises(write: Write) -> None:
    path = write("cases.jsonl", '{"n": 0}\n')
    dataset = JsonlDataset("cases.jsonl")
    path.unlink()
    assert dataset.describe(0) == "cases.jsonl item #0"


def test_jsonl_dataset_abandoned_iteration_closes_the_file(write: Write) -> None:
    write("cases.jsonl", '{"n": 1}\n{"n": 2}\n')
    items = iter(JsonlDataset("cases.jsonl"))
    assert next(items) == {"n": 1}
    del items  # filterwarnings=error turns an unclosed file's ResourceWarning into a failure
