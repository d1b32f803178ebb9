from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agenteval._errors import DatasetError
from agenteval.datasets import JsonDataset

Write = Callable[[str, "str | bytes"], Path]  # the `write` fixture, from conftest.py


def test_json_dataset_reads_top_level_array(write: Write) -> None:
    write("cases.json", '[{"input": "Hi", "reference": "help"}, {"input": "Bye"}]')
    dataset = JsonDataset("cases.json")
    assert list(dataset) == [{"input": "Hi", "reference": "help"}, {"input": "Bye"}]
    assert len(dataset) == 2
    assert dataset.length_hint() == 2


def test_json_dataset_reads_cases_object_and_ignores_other_keys(write: Write) -> None:
    write("cases.json", '{"description": "refunds", "cases": [{"input": "Hi"}]}')
    assert list(JsonDataset("cases.json")) == [{"input": "Hi"}]


def test_json_dataset_accepts_path_objects(write: Write) -> None:
    path = write("sub/cases.json", '[{"n": 1}]')
    dataset = JsonDataset(Path.cwd() / path)
    assert list(dataset) == [{"n": 1}]
    assert dataset.source == "sub/cases.json"  # shown relative to the current directory
    assert dataset.path == Path.cwd() / "sub" / "cases.json"


def test_json_dataset_can_be_iterated_again(write: Write) -> None:
    write("cases.json", '[{"n": 1}, {"n": 2}]')
    dataset = JsonDataset("cases.json")
    first = iter(dataset)
    assert next(first) == {"n": 1}
    assert [item["n"] for item in dataset] == [1, 2]
    assert [item["n"] for item in dataset] == [1, 2]


def test_json_dataset_accepts_bom_and_crlf(write: Write) -> None:
    write("cases.json", b'\xef\xbb\xbf[\r\n  {"input": "caf\xc3\xa9"},\r\n  {"n": 2}\r\n]\r\n')
    assert list(JsonDataset("cases.json")) == [{"input": "café"}, {"n": 2}]


def test_json_dataset_empty_array_is_allowed(write: Write) -> None:
    write("cases.json", "[]")
    assert list(JsonDataset("cases.json")) == []


def test_json_dataset_invalid_json_names_line_and_column(write: Write) -> None:
    write("cases.json", '[\n  {"input": "Hi"}\n  {"input": "Bye"}\n]')
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.json"))
    assert str(info.value) == (
        "Invalid JSON in 'cases.json' at line 3, column 3: Expecting ',' delimiter"
    )


def test_json_dataset_json_lines_content_gets_a_hint(write: Write) -> None:
    write("cases.json", '{"input": "Hi"}\n{"input": "Bye"}\n')
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.json"))
    assert str(info.value) == (
        "Invalid JSON in 'cases.json' at line 2, column 1: Extra data; a file with one "
        "JSON object per line is JSON Lines: name it .jsonl or use JsonlDataset"
    )


@pytest.mark.parametrize("content", ["", "  \r\n", "\ufeff"])
def test_json_dataset_empty_file_is_an_error(write: Write, content: str) -> None:
    write("cases.json", content)
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.json"))
    assert str(info.value) == (
        "Dataset file 'cases.json' is empty: write a JSON array of objects, such as "
        '[{"input": "Hi", "reference": "help"}]'
    )


@pytest.mark.parametrize(
    ("content", "kind", "shown"),
    [
        ('"hello"', "a string", "'hello'"),
        ("42", "a number", "42"),
        ("true", "a boolean", "True"),
        ("null", "null", "None"),
    ],
)
def test_json_dataset_top_level_scalar_is_an_error(
    write: Write, content: str, kind: str, shown: str
) -> None:
    write("cases.json", content)
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.json"))
    assert str(info.value) == (
        f"'cases.json' holds {kind}, not an array of objects: {shown}; write a top-level "
        'array of objects, or an object with a "cases" array'
    )


def test_json_dataset_object_without_cases_is_an_error(write: Write) -> None:
    write("cases.json", '{"input": "Hi", "reference": "help"}')
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.json"))
    assert str(info.value) == (
        "'cases.json' holds an object without a \"cases\" key (keys: 'input', "
        "'reference'): write a top-level array of objects, or put the items in a "
        '"cases" array'
    )


def test_json_dataset_object_without_cases_lists_at_most_five_keys(write: Write) -> None:
    write("cases.json", json.dumps({k: 1 for k in "abcdefg"}))
    with pytest.raises(DatasetError, match=r"\(keys: 'a', 'b', 'c', 'd', 'e', \.\.\.\)"):
        list(JsonDataset("cases.json"))


def test_json_dataset_cases_not_a_list_is_an_error(write: Write) -> None:
    write("cases.json", '{"cases": {"input": "Hi"}}')
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.json"))
    assert str(info.value) == (
        "'cases.json' has \"cases\" but it is an object, not an array: {'input': 'Hi'}; "
        'make "cases" an array of objects'
    )


def test_json_dataset_item_not_an_object_names_line_and_index(write: Write) -> None:
    write("cases.json", '[\n  {"input": "Hi"},\n\n  {"input": "Bye"},\n  "oops"\n]\n')
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.json"))
    assert str(info.value) == (
        "'cases.json' line 5 (item #2) is a string, not an object: 'oops'; make every "
        'item an object such as {"input": ...}'
    )


def test_json_dataset_item_error_in_cases_form_names_line(write: Write) -> None:
    content = (
        '{"meta": {"cases": "ignored"},\r\n'
        ' "cases": [\r\n  {"a": [1, {"b": "]"}]},\r\n  [1, 2]\r\n]}'
    )
    write("cases.json", content)
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.json"))
    assert str(info.value) == (
        "'cases.json' line 4 (item #1) is an array, not an object: [1, 2]; make every "
        'item an object such as {"input": ...}'
    )


def test_json_dataset_describe_gives_line_of_each_item(write: Write) -> None:
    write("cases.json", '[{"n": 0},\n\n {"n": 1}, {"n": 2},\n {"n": 3}]')
    dataset = JsonDataset("cases.json")
    assert [dataset.describe(i) for i in range(4)] == [
        "cases.json line 1 (item #0)",
        "cases.json line 3 (item #1)",
        "cases.json line 3 (item #2)",
        "cases.json line 4 (item #3)",
    ]
    assert dataset.describe(4) == "cases.json item #4"


def test_json_dataset_describe_never_raises(write: Write) -> None:
    path = write("cases.json", '[{"n": 0}]')
    dataset = JsonDataset("cases.json")
    path.unlink()
    assert dataset.describe(0) == "cases.json item #0"


def test_json_dataset_is_parsed_once(write: Write, monkeypatch: pytest.MonkeyPatch) -> None:
    write("cases.json", '[{"n": 1}]')
    dataset = JsonDataset("cases.json")
    calls: list[str] = []
    real_loads = json.loads

    def counting_loads(text: str, **options: Any) -> object:
        calls.append(text)
        return real_loads(text, **options)

    monkeypatch.setattr(json, "loads", counting_loads)
    assert dataset.length_hint() == 1
    assert list(dataset) == list(dataset) == [{"n": 1}]
    assert len(calls) == 1


def test_json_dataset_repr_names_source(write: Write) -> None:
    write("cases.json", "[]")
    assert repr(JsonDataset("cases.json")) == "JsonDataset('cases.json')"


@pytest.mark.parametrize("content", ['{"items": []}', '"text"', "[1, 2", '{"cases": 3}'])
def test_json_dataset_describe_without_items_falls_back_to_index(
    write: Write, content: str
) -> None:
    write("cases.json", content)
    assert JsonDataset("cases.json").describe(0) == "cases.json item #0"


def test_json_dataset_on_a_jsonl_file_says_which_class_reads_it(write: Write) -> None:
    # "name it .jsonl" about a file named .jsonl already
    write("cases.jsonl", '{"input": "Hi"}\n{"input": "Bye"}\n')
    with pytest.raises(DatasetError) as info:
        list(JsonDataset("cases.jsonl"))
    assert str(info.value).endswith(
        "JSON object per line is JSON Lines: read it with JsonlDataset (or load_dataset)"
    )
