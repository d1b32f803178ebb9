from __future__ import annotations

from typing import Any

import pytest

from agenteval._errors import DatasetError
from agenteval.datasets import ArrayDataset


def test_array_dataset_yields_items_in_order() -> None:
    items = [{"input": "Hi", "reference": "help"}, {"input": "Bye"}]
    dataset = ArrayDataset(items)
    assert list(dataset) == items
    assert len(dataset) == 2
    assert dataset.length_hint() == 2


def test_array_dataset_can_be_iterated_again() -> None:
    dataset = ArrayDataset(iter([{"n": 1}, {"n": 2}]))  # a one-shot iterator is copied
    assert [item["n"] for item in dataset] == [1, 2]
    assert [item["n"] for item in dataset] == [1, 2]


def test_array_dataset_empty_is_allowed() -> None:
    dataset = ArrayDataset([])
    assert list(dataset) == []
    assert len(dataset) == 0


def test_array_dataset_source_and_describe() -> None:
    dataset = ArrayDataset([{"n": 1}])
    assert dataset.source == "<array>"
    assert dataset.describe(0) == "<array> item #0"
    assert dataset.base_dir is None


def test_array_dataset_custom_source_is_used() -> None:
    dataset = ArrayDataset([{"n": 1}], source="cases.csv")
    assert dataset.describe(0) == "cases.csv item #0"


@pytest.mark.parametrize(
    ("bad", "kind", "shown"),
    [
        ("text", "a str", "'text'"),
        (7, "an int", "7"),
        (None, "a NoneType", "None"),
        (["a", "b"], "a list", "['a', 'b']"),
    ],
)
def test_array_dataset_item_not_a_dict_names_index_and_type(
    bad: Any, kind: str, shown: str
) -> None:
    with pytest.raises(DatasetError) as info:
        ArrayDataset([{"ok": 1}, {"ok": 2}, bad])
    assert str(info.value) == (
        f"ArrayDataset item #2 is {kind}, not a dict: {shown}; "
        "make every item a dict such as {'input': ...}"
    )


def test_array_dataset_item_error_names_custom_source() -> None:
    with pytest.raises(DatasetError) as info:
        ArrayDataset([1], source="cases.csv")
    assert str(info.value) == (
        "'cases.csv' item #0 is an int, not a dict: 1; make every item a dict such as "
        "{'input': ...}"
    )


def test_array_dataset_rejects_a_single_dict() -> None:
    with pytest.raises(DatasetError) as info:
        ArrayDataset({"input": "Hi"})  # type: ignore[arg-type]
    assert str(info.value) == (
        "ArrayDataset expects a list of dicts, got dict: {'input': 'Hi'}; wrap a single "
        "item in a list: ArrayDataset([item])"
    )


def test_array_dataset_rejects_a_string() -> None:
    with pytest.raises(DatasetError, match=r"^ArrayDataset expects a list of dicts, got str"):
        ArrayDataset("input")  # type: ignore[arg-type]


def test_array_dataset_long_values_are_shortened_in_messages() -> None:
    with pytest.raises(DatasetError) as info:
        ArrayDataset(["x" * 1000])
    message = str(info.value)
    assert len(message) < 200
    assert "..." in message


def test_array_dataset_repr_counts_items() -> None:
    assert repr(ArrayDataset([{"n": 1}, {"n": 2}])) == "ArrayDataset(<2 items>)"
