from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from agenteval._errors import DatasetError
from agenteval.datasets import YamlDataset

Write = Callable[[str, "str | bytes"], Path]  # the `write` fixture, from conftest.py


def test_yaml_dataset_reads_a_list(write: Write) -> None:
    write("cases.yaml", "- input: Hi\n  reference: help\n- input: Bye\n")
    dataset = YamlDataset("cases.yaml")
    assert list(dataset) == [{"input": "Hi", "reference": "help"}, {"input": "Bye"}]
    assert len(dataset) == 2
    assert dataset.length_hint() == 2


def test_yaml_dataset_reads_rubyllm_cases_mapping(write: Write) -> None:
    write(
        "cases.yml",
        "description: returns\n"
        "cases:\n"
        "  - name: sale_item_followup\n"
        "    inputs:\n"
        "      - I bought an unopened item two weeks ago. Can I return it?\n"
        "      - I forgot to mention that it was on sale. Does that change things?\n"
        "    expected_output: Sale items cannot be returned, even within 30 days.\n"
        "  - name: refund_request_42\n"
        "    inputs: 42\n",
    )
    items = list(YamlDataset("cases.yml"))
    assert [item["name"] for item in items] == ["sale_item_followup", "refund_request_42"]
    assert len(items[0]["inputs"]) == 2
    assert items[1]["inputs"] == 42


def test_yaml_dataset_can_be_iterated_again(write: Write) -> None:
    write("cases.yaml", "- n: 1\n- n: 2\n")
    dataset = YamlDataset("cases.yaml")
    assert next(iter(dataset)) == {"n": 1}
    assert [item["n"] for item in dataset] == [1, 2]
    assert [item["n"] for item in dataset] == [1, 2]


def test_yaml_dataset_accepts_bom_and_crlf(write: Write) -> None:
    write("cases.yaml", b"\xef\xbb\xbfcases:\r\n  - input: caf\xc3\xa9\r\n  - n: 2\r\n")
    assert list(YamlDataset("cases.yaml")) == [{"input": "café"}, {"n": 2}]


def test_yaml_dataset_rejects_python_object_tags(write: Write) -> None:
    write("cases.yaml", "- input: Hi\n- !!python/object/apply:os.system [echo hacked]\n")
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        "Unsupported YAML tag '!!python/object/apply:os.system' in 'cases.yaml' at line 2, "
        "column 3: datasets are loaded with yaml.safe_load, which builds no Python "
        "objects; use plain YAML values"
    )


def test_yaml_dataset_invalid_yaml_names_line_and_column(write: Write) -> None:
    write("cases.yaml", "- input: Hi\n  reference: a: b\n")
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        "Invalid YAML in 'cases.yaml' at line 2, column 15: mapping values are not allowed here"
    )


def test_yaml_dataset_invalid_yaml_includes_context(write: Write) -> None:
    write("cases.yaml", "- input: [Hi\n")
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        "Invalid YAML in 'cases.yaml' at line 2, column 1: while parsing a flow sequence, "
        "expected ',' or ']', but got '<stream end>'"
    )


def test_yaml_dataset_two_documents_is_an_error(write: Write) -> None:
    write("cases.yaml", "- n: 1\n---\n- n: 2\n")
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        "Invalid YAML in 'cases.yaml' at line 2, column 1: expected a single document in "
        "the stream, but found another document"
    )


def test_yaml_dataset_control_character_names_line_and_column(write: Write) -> None:
    write("cases.yaml", "- n: 1\n- n: a\x07b\n")
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        "Invalid YAML in 'cases.yaml' at line 2, column 7: unacceptable character #x0007: "
        "special characters are not allowed; remove it, or write it as an escape in a "
        "double-quoted string"
    )


@pytest.mark.parametrize("content", ["", "\n# only a comment\n", "~\n"])
def test_yaml_dataset_empty_file_is_an_error(write: Write, content: str) -> None:
    write("cases.yaml", content)
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        "Dataset file 'cases.yaml' is empty: write a list of cases ('- input: ...'), or a "
        "mapping with a 'cases:' list"
    )


@pytest.mark.parametrize(
    ("content", "kind", "shown"),
    [
        ("hello\n", "a string", "'hello'"),
        ("42\n", "a number", "42"),
        ("yes\n", "a boolean", "True"),
    ],
)
def test_yaml_dataset_top_level_scalar_is_an_error(
    write: Write, content: str, kind: str, shown: str
) -> None:
    write("cases.yaml", content)
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        f"'cases.yaml' holds {kind}, not a list of mappings: {shown}; write a list of "
        "cases ('- input: ...'), or a mapping with a 'cases:' list"
    )


def test_yaml_dataset_mapping_without_cases_is_an_error(write: Write) -> None:
    write("cases.yaml", "input: Hi\nreference: help\n")
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        "'cases.yaml' holds a mapping without a 'cases' key (keys: 'input', 'reference'): "
        "write a list of cases, or put them in a list under 'cases:'"
    )


@pytest.mark.parametrize(
    ("value", "kind", "shown"),
    [("\n  input: Hi", "a mapping", "{'input': 'Hi'}"), ("", "null", "None")],
)
def test_yaml_dataset_cases_not_a_list_is_an_error(
    write: Write, value: str, kind: str, shown: str
) -> None:
    write("cases.yaml", f"cases:{value}\n")
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        f"'cases.yaml' has 'cases:' but it is {kind}, not a list: {shown}; make 'cases:' "
        "a list of mappings ('- input: ...')"
    )


def test_yaml_dataset_item_not_a_mapping_names_line_and_index(write: Write) -> None:
    write("cases.yaml", "cases:\n  - input: Hi\n    reference: help\n\n  - just text\n")
    with pytest.raises(DatasetError) as info:
        list(YamlDataset("cases.yaml"))
    assert str(info.value) == (
        "'cases.yaml' line 5 (item #1) is a string, not a mapping: 'just text'; make every "
        "case a mapping of keys to values ('- input: ...')"
    )


def test_yaml_dataset_date_item_is_named(write: Write) -> None:
    write("cases.yaml", "- 2024-01-31\n")
    with pytest.raises(DatasetError, match=r"^'cases.yaml' line 1 \(item #0\) is a date, "):
        list(YamlDataset("cases.yaml"))


def test_yaml_dataset_describe_gives_line_of_each_case(write: Write) -> None:
    write("cases.yaml", "cases:\n  - n: 0\n    x: 1\n  - n: 1\n\n  - n: 2\n")
    dataset = YamlDataset("cases.yaml")
    assert [dataset.describe(i) for i in range(3)] == [
        "cases.yaml line 2 (item #0)",
        "cases.yaml line 4 (item #1)",
        "cases.yaml line 6 (item #2)",
    ]
    assert dataset.describe(3) == "cases.yaml item #3"


def test_yaml_dataset_describe_never_raises(write: Write) -> None:
    path = write("cases.yaml", "- n: 0\n")
    dataset = YamlDataset("cases.yaml")
    path.unlink()
    assert dataset.describe(0) == "cases.yaml item #0"


def test_yaml_dataset_without_libyaml_loads_the_same(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    content = "cases:\n  - input: Hi\n    when: 2024-01-31\n    tags: [a, b]\n  - n: 2\n"
    write("cases.yaml", content)
    with_c = list(YamlDataset("cases.yaml"))
    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    assert list(YamlDataset("cases.yaml")) == with_c
    assert with_c[0]["when"] == datetime.date(2024, 1, 31)


def test_yaml_dataset_without_libyaml_rejects_python_tags(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    write("cases.yaml", "- !!python/object:os.system {}\n")
    with pytest.raises(DatasetError, match=r"^Unsupported YAML tag '!!python/object:os\.system'"):
        list(YamlDataset("cases.yaml"))


@pytest.mark.parametrize("content", ["text\n", "- [a\n", "items: []\n"])
def test_yaml_dataset_describe_without_items_falls_back_to_index(
    write: Write, content: str
) -> None:
    write("cases.yaml", content)
    assert YamlDataset("cases.yaml").describe(0) == "cases.yaml item #0"
