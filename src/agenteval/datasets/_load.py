"""``load_dataset``: open a dataset file, choosing its format by suffix."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeAlias

from agenteval._errors import DatasetError
from agenteval.datasets._base import StrPath, display_path
from agenteval.datasets._file import FileDataset
from agenteval.datasets._json import JsonDataset, JsonlDataset
from agenteval.datasets._yaml import YamlDataset

DatasetFormat: TypeAlias = Literal["json", "jsonl", "yaml"]

_BY_FORMAT: dict[str, type[FileDataset]] = {
    "json": JsonDataset,
    "jsonl": JsonlDataset,
    "yaml": YamlDataset,
}
_BY_SUFFIX: dict[str, type[FileDataset]] = {
    ".json": JsonDataset,
    ".jsonl": JsonlDataset,
    ".ndjson": JsonlDataset,
    ".yaml": YamlDataset,
    ".yml": YamlDataset,
}


def load_dataset(path: StrPath, format: DatasetFormat | None = None) -> FileDataset:
    """Open a dataset file, choosing the dataset class by the file's suffix.

    Use it when the file name decides the format (``.json``: :class:`JsonDataset`,
    ``.jsonl`` or ``.ndjson``: :class:`JsonlDataset`, ``.yaml`` or ``.yml``:
    :class:`YamlDataset`; any case), or pass ``format`` for another name::

        dataset = load_dataset(Path(__file__).parent / "datasets" / "refunds.yaml")
        dataset = load_dataset("cases.txt", format="jsonl")

    Raises:
        DatasetError: the format cannot be inferred or is unknown, or the file does not
            exist or is a directory.
    """
    given = Path(path)
    if format is not None:
        cls = _BY_FORMAT.get(format)
        if cls is None:
            raise DatasetError(
                f"Unknown dataset format {format!r} for {display_path(given)!r}: "
                "pass format='json', 'jsonl' or 'yaml'"
            )
        return cls(given)
    if given.is_dir():
        raise DatasetError(
            f"Dataset path {display_path(given)!r} is a directory, not a file: "
            "point it at a .json, .jsonl or .yaml file"
        )
    cls = _BY_SUFFIX.get(given.suffix.lower())
    if cls is None:
        raise DatasetError(
            f"Could not infer dataset format for {display_path(given)!r}: use .json, .jsonl, "
            ".yaml or .yml, or pass format='json', 'jsonl' or 'yaml'"
        )
    return cls(given)
