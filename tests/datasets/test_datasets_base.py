from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agenteval._errors import DatasetError
from agenteval.datasets import ArrayDataset, Dataset, JsonDataset


class Countdown(Dataset):
    """A custom source: n items, generated on each iteration."""

    source = "countdown"

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self.n, 0, -1):
            yield {"input": i}


class Sized(Countdown):
    def __len__(self) -> int:
        return self.n


class NoSource(Dataset):
    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield {"input": 1}


def test_dataset_subclass_must_implement_iter() -> None:
    class Incomplete(Dataset):
        pass

    with pytest.raises(TypeError, match="abstract method"):
        Incomplete()  # type: ignore[abstract]


def test_dataset_custom_subclass_iterates_from_the_start_each_time() -> None:
    dataset = Countdown(3)
    assert list(dataset) == [{"input": 3}, {"input": 2}, {"input": 1}]
    assert list(dataset) == [{"input": 3}, {"input": 2}, {"input": 1}]


def test_dataset_length_hint_is_none_without_len() -> None:
    assert Countdown(3).length_hint() is None


def test_dataset_length_hint_uses_len_when_defined() -> None:
    assert Sized(4).length_hint() == 4


def test_dataset_describe_names_source_and_index() -> None:
    assert Countdown(3).describe(2) == "countdown item #2"


def test_dataset_source_defaults_to_class_name() -> None:
    assert NoSource().source == "<NoSource>"
    assert NoSource().describe(0) == "<NoSource> item #0"


def test_dataset_source_can_be_set_on_an_instance() -> None:
    dataset = NoSource()
    dataset.source = "tickets table"
    assert dataset.describe(5) == "tickets table item #5"


def test_dataset_resolve_without_folder_is_an_error() -> None:
    with pytest.raises(DatasetError) as info:
        NoSource().resolve("a.txt")
    assert str(info.value) == (
        "<NoSource> has no folder to resolve 'a.txt' against: load the dataset from a "
        "file, or pass base_dir= to ArrayDataset"
    )


@pytest.fixture
def dataset_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "data"
    (folder / "files").mkdir(parents=True)
    (folder / "files" / "t.txt").write_text("transcript", encoding="utf-8")
    (folder / "cases.json").write_text('[{"file": "files/t.txt"}]', encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    return folder


def test_dataset_resolve_finds_file_inside_folder(dataset_dir: Path) -> None:
    dataset = JsonDataset("data/cases.json")
    item = next(iter(dataset))
    resolved = dataset.resolve(item["file"])
    assert resolved == (dataset_dir / "files" / "t.txt").resolve()
    assert resolved.read_text(encoding="utf-8") == "transcript"


def test_dataset_resolve_rejects_parent_escape(dataset_dir: Path) -> None:
    dataset = JsonDataset("data/cases.json")
    with pytest.raises(DatasetError) as info:
        dataset.resolve("files/../../secret.txt")
    assert str(info.value) == (
        f"'data/cases.json' refers to 'files/../../secret.txt', which is outside the "
        f"dataset's folder {str(dataset_dir)!r}: keep the files a dataset refers to "
        "inside its folder"
    )


def test_dataset_resolve_rejects_absolute_path(dataset_dir: Path) -> None:
    dataset = JsonDataset("data/cases.json")
    target = str(dataset_dir / "files" / "t.txt")
    with pytest.raises(DatasetError) as info:
        dataset.resolve(target)
    assert str(info.value) == (
        f"'data/cases.json' refers to the absolute path {target!r}: use a path relative "
        f"to the dataset's folder {str(dataset_dir)!r}"
    )


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_dataset_resolve_rejects_symlink_leaving_folder(dataset_dir: Path) -> None:
    (dataset_dir / "link.txt").symlink_to(dataset_dir.parent / "secret.txt")
    dataset = JsonDataset("data/cases.json")
    with pytest.raises(DatasetError, match="which is outside the dataset's folder"):
        dataset.resolve("link.txt")


def test_dataset_resolve_allows_dotdot_that_stays_inside(dataset_dir: Path) -> None:
    dataset = JsonDataset("data/cases.json")
    assert dataset.resolve("files/../files/t.txt") == (dataset_dir / "files/t.txt").resolve()


def test_array_dataset_resolve_uses_base_dir(dataset_dir: Path) -> None:
    dataset = ArrayDataset([{"file": "files/t.txt"}], base_dir="data")
    assert dataset.base_dir == dataset_dir
    assert dataset.resolve("files/t.txt") == (dataset_dir / "files" / "t.txt").resolve()
    with pytest.raises(DatasetError, match="outside the dataset's folder"):
        dataset.resolve("../secret.txt")
