"""What datasets read from a file share: path checks, reading, decoding, messages."""

from __future__ import annotations

import os
import re
import stat
import sys
from abc import abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agenteval._errors import DatasetError
from agenteval.datasets._base import Dataset, StrPath, display_path

BOM = b"\xef\xbb\xbf"


class FileDataset(Dataset):
    """A dataset read from one file; the file must exist when the dataset is built."""

    def __init__(self, path: StrPath) -> None:
        given = Path(path)
        # Made absolute now, so a later change of directory cannot change the file read.
        self.path = Path(os.path.abspath(given))
        self.source = str(given) if not given.is_absolute() else display_path(self.path)
        self._relative = None if given.is_absolute() else given
        self._check_exists()

    @property
    def base_dir(self) -> Path:
        """The folder holding the dataset file."""
        return self.path.parent

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"

    def _check_exists(self) -> None:
        try:
            mode = self.path.stat().st_mode
        except OSError as exc:
            raise self._os_error(exc) from None
        if stat.S_ISDIR(mode):
            raise self._directory_error()
        if not stat.S_ISREG(mode):  # a pipe with no writer would never end the read
            raise DatasetError(
                f"Dataset path {self.source!r} is not a regular file (a pipe or a device): "
                "write the dataset to a file and give its path"
            )

    def _read_bytes(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise self._os_error(exc) from None

    def _read_text(self) -> str:
        return decode_utf8(self._read_bytes(), self.source)

    def _os_error(self, exc: OSError) -> DatasetError:
        src = self.source
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
            if self._relative is None:
                return DatasetError(f"Dataset file {src!r} does not exist: fix the path")
            return DatasetError(
                f"Dataset file {src!r} does not exist (looked for {str(self.path)!r}): "
                "fix the path; relative paths are read from the current directory, so "
                "build it from the evaluator's folder: "
                f"Path(__file__).parent / {self._relative.as_posix()!r}"
            )
        if isinstance(exc, IsADirectoryError):
            return self._directory_error()
        if isinstance(exc, PermissionError):
            return DatasetError(
                f"Cannot read dataset file {src!r}: permission denied; "
                "make it readable by this user (chmod u+r)"
            )
        reason = exc.strerror or str(exc)
        return DatasetError(
            f"Cannot read dataset file {src!r}: {reason}; check that it is a readable file"
        )

    def _directory_error(self) -> DatasetError:
        return DatasetError(
            f"Dataset path {self.source!r} is a directory, not a file: "
            "point it at a .json, .jsonl or .yaml file"
        )


class ParsedFileDataset(FileDataset):
    """A dataset file parsed whole, once, on first use; later iterations reuse the items."""

    def __init__(self, path: StrPath) -> None:
        super().__init__(path)
        self._items: list[dict[str, Any]] | None = None
        self._lines: list[int] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def describe(self, index: int) -> str:
        """``cases.json line 12 (item #3)``, or ``cases.json item #3`` if the line is unknown."""
        if self._lines is None:
            try:
                self._lines = self._item_lines(self._read_text()) or []
            except DatasetError:
                self._lines = []
        if 0 <= index < len(self._lines):
            return f"{self.source} line {self._lines[index]} (item #{index})"
        return super().describe(index)

    def _load(self) -> list[dict[str, Any]]:
        if self._items is None:
            self._items = self._parse(self._read_text())
        return self._items

    def _where(self, text: str, index: int) -> str:
        """Where item ``index`` of ``text`` is, for a message: ``line 12 (item #3)``."""
        lines = self._item_lines(text)
        if lines is not None and 0 <= index < len(lines):
            return f"line {lines[index]} (item #{index})"
        return f"item #{index}"

    @abstractmethod
    def _parse(self, text: str) -> list[dict[str, Any]]:
        """The items of the file's text; raises DatasetError."""

    def _item_lines(self, text: str) -> list[int] | None:
        """The line on which each item starts, if the format can tell (errors only)."""
        return None


def nested_too_deeply(source: str, where: str = "") -> DatasetError:
    """Python's parser ran out of stack on the file (thousands of nested levels)."""
    return DatasetError(
        f"Dataset file {source!r}{where} is nested too deeply to read (thousands of levels "
        "of lists or objects): flatten the data"
    )


def number_too_long(source: str, text: str, where: str = "") -> DatasetError:
    """Python refused to read an integer of more digits than its limit (4,300 by default,
    against denial of service); ``where`` is given, or found in ``text``."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
    found = re.search(rf"(?<!\d)\d{{{limit + 1},}}", text) if limit else None
    if found and not where:
        where = f" (line {text.count(chr(10), 0, found.start()) + 1})"
    return DatasetError(
        f"Dataset file {source!r}{where} holds a number of more than {limit:,} digits, "
        "more than Python reads as an integer: write it as a string (in quotes)"
    )


class DuplicateKey(Exception):
    """A mapping of the file gives one key twice (its readers keep only the last)."""

    def __init__(self, key: object, line: int | None = None) -> None:
        super().__init__(key)
        self.key, self.line = key, line

    def error(self, source: str, where: str = "") -> DatasetError:
        at = where or (f" (line {self.line})" if self.line else "")
        fix = (
            "merge them into one list"
            if self.key == "cases"
            else "keep one (a reader keeps only the last, silently)"
        )
        return DatasetError(
            f"Dataset file {source!r}{at} gives the key {self.key!r} twice in one mapping: {fix}"
        )


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook``: the object, unless a key comes twice."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return obj


def decode_utf8(data: bytes, source: str) -> str:
    """Decode a whole file as UTF-8, with or without a byte order mark."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise DatasetError(
                f"Dataset file {source!r} is UTF-16, not UTF-8: re-save it as UTF-8"
            ) from None
        # utf-8-sig reports offsets after the byte order mark it removed.
        start = exc.start + (len(BOM) if data.startswith(BOM) else 0)
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise DatasetError(
            f"Dataset file {source!r} is not valid UTF-8: byte 0x{data[start]:02x} at "
            f"line {line}, column {column}; re-save the file as UTF-8"
        ) from None


_JSON_KINDS: dict[type, str] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def json_kind(value: object) -> str:
    """What ``value`` is, in JSON's words: ``an array``, ``a string``, ``null``..."""
    return _JSON_KINDS.get(type(value), f"a {type(value).__name__}")
