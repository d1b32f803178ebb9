"""The ``Dataset`` base class, and the helpers the built-in datasets share."""

from __future__ import annotations

import os
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeAlias

from agenteval._errors import DatasetError

StrPath: TypeAlias = "str | os.PathLike[str]"


class Dataset(ABC):
    """Base class of a dataset: a re-iterable source of items, each a dict.

    Subclass it to read items from your own source (a database, an API, a CSV file).
    Implement ``__iter__`` so that *every* call starts again from the first item — the
    runner may iterate a dataset more than once (for example when resuming a run).
    Define ``__len__`` only when the size is known cheaply; otherwise override
    :meth:`length_hint`, or leave it returning ``None`` (progress then shows no total).

    Set ``source`` (a file path, a table name) so that error messages and
    :meth:`describe` say where an item came from::

        class TicketDataset(Dataset):
            source = "tickets.csv"

            def __iter__(self):
                with open(self.source, newline="", encoding="utf-8") as f:
                    yield from csv.DictReader(f)
    """

    @abstractmethod
    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        """Yield the items from the first one, on every call."""

    @property
    def source(self) -> str:
        """Where the items come from, for messages: a file path, or ``<ClassName>``."""
        stored = self.__dict__.get("_source")
        return stored if isinstance(stored, str) else f"<{type(self).__name__}>"

    @source.setter
    def source(self, value: str) -> None:
        self.__dict__["_source"] = value

    @property
    def base_dir(self) -> Path | None:
        """The folder that files referred to by items are resolved against, if any."""
        return None

    def length_hint(self) -> int | None:
        """The number of items if known (used for progress), else ``None``.

        The default is ``len(self)`` when the class defines ``__len__``.
        """
        if hasattr(type(self), "__len__"):
            return len(self)  # type: ignore[arg-type]
        return None

    def describe(self, index: int) -> str:
        """Say where the item at 0-based ``index`` came from, e.g. ``cases.jsonl line 12``.

        Used in error messages; never raises.
        """
        return f"{self.source} item #{index}"

    def resolve(self, path: StrPath) -> Path:
        """Resolve a file path found in an item against the dataset's folder.

        Use it for attachments, transcripts or fixtures that items refer to. The path must
        be relative and must stay inside :attr:`base_dir` (symbolic links are followed), so
        a dataset cannot make an evaluator read files from elsewhere::

            transcript = dataset.resolve(item["transcript"]).read_text(encoding="utf-8")

        Raises:
            DatasetError: the dataset has no folder, or the path leaves it.
        """
        base = self.base_dir
        if base is None:
            raise DatasetError(
                f"{self.source} has no folder to resolve {os.fspath(path)!r} against: "
                "load the dataset from a file, or pass base_dir= to ArrayDataset"
            )
        relative = Path(path)
        if relative.is_absolute():
            raise DatasetError(
                f"{self.source!r} refers to the absolute path {os.fspath(path)!r}: "
                f"use a path relative to the dataset's folder {str(base)!r}"
            )
        root = base.resolve()
        target = (root / relative).resolve()
        if not target.is_relative_to(root):
            raise DatasetError(
                f"{self.source!r} refers to {os.fspath(path)!r}, which is outside the "
                f"dataset's folder {str(base)!r}: keep the files a dataset refers to "
                "inside its folder"
            )
        return target


_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxset = 4
_repr.maxdict = 4
_repr.maxlevel = 2


def preview(value: object) -> str:
    """A short ``repr`` of ``value`` for an error message."""
    return _repr.repr(value)


def display_path(path: Path) -> str:
    """``path`` as shown in messages: relative to the current directory when inside it."""
    if not path.is_absolute():
        return str(path)
    try:
        return str(path.relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)
