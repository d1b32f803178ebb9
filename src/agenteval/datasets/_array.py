"""``ArrayDataset``: items given directly in Python."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agenteval._errors import DatasetError
from agenteval.datasets._base import Dataset, StrPath, preview


class ArrayDataset(Dataset):
    """A dataset of items written in Python: a list of dicts.

    Use it for small datasets kept next to the evaluator, or for items you build or load
    yourself (``source`` then names where they came from in messages)::

        def get_dataset(self):
            return ArrayDataset([
                {"input": "Hi", "reference": "help"},
                {"input": "Where is my order?", "reference": "order"},
            ])

    The items are checked when the dataset is built and are yielded as given (not
    copied). ``base_dir`` is the folder :meth:`resolve` resolves file paths against.

    Raises:
        DatasetError: ``items`` is not a list, or one of them is not a dict.
    """

    def __init__(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        source: str = "<array>",
        base_dir: StrPath | None = None,
    ) -> None:
        self.source = source
        self._base_dir = None if base_dir is None else Path(os.path.abspath(base_dir))
        label = "ArrayDataset" if source == "<array>" else repr(source)
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
            raise DatasetError(
                f"ArrayDataset expects a list of dicts, got {type(items).__name__}: "
                f"{preview(items)}; wrap a single item in a list: ArrayDataset([item])"
            )
        self._items: list[Mapping[str, Any]] = list(items)
        for index, item in enumerate(self._items):
            if type(item) is not dict and not isinstance(item, Mapping):
                kind = type(item).__name__
                article = "an" if kind[0] in "aeiouAEIOU" else "a"
                raise DatasetError(
                    f"{label} item #{index} is {article} {kind}, not a dict: "
                    f"{preview(item)}; make every item a dict such as {{'input': ...}}"
                )

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def base_dir(self) -> Path | None:
        """The ``base_dir`` given, made absolute, or ``None``."""
        return self._base_dir

    def __repr__(self) -> str:
        return f"ArrayDataset(<{len(self._items)} items>)"
