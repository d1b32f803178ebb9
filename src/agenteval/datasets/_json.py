"""``JsonDataset`` (one JSON document) and ``JsonlDataset`` (one JSON object per line)."""

from __future__ import annotations

import itertools
import json
import re
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

from agenteval._errors import DatasetError
from agenteval.datasets._base import StrPath, preview
from agenteval.datasets._file import (
    BOM,
    DuplicateKey,
    FileDataset,
    ParsedFileDataset,
    json_kind,
    nested_too_deeply,
    number_too_long,
    unique_keys,
)


class JsonDataset(ParsedFileDataset):
    """A dataset read from a JSON file: an array of objects, or an object with ``"cases"``.

    Use it for datasets of up to some tens of thousands of items (the whole file is parsed,
    once, on first use; for bigger ones use :class:`JsonlDataset`). Both layouts work::

        [{"input": "Hi", "reference": "help"}]
        {"description": "refund questions", "cases": [{"input": "Hi", "reference": "help"}]}

    Other keys beside ``"cases"`` are ignored. The file is decoded as UTF-8 (a byte order
    mark is accepted); a relative path is read from the current directory, so build it
    from the evaluator's folder::

        def get_dataset(self):
            return JsonDataset(Path(__file__).parent / "datasets" / "refunds.json")

    Raises:
        DatasetError: when built, if the file does not exist or is a directory; on first
            use, if it cannot be read or decoded, is not valid JSON, or does not hold a list
            of objects. The message names the file, the line and the item.
    """

    def _item_lines(self, text: str) -> list[int] | None:
        return _item_lines(text)

    def _parse(self, text: str) -> list[dict[str, Any]]:
        src = self.source
        try:
            data = json.loads(text, object_pairs_hook=unique_keys)
        except RecursionError:
            raise nested_too_deeply(src) from None
        except DuplicateKey as exc:
            raise exc.error(src, _line_of(text, exc.key)) from None
        except json.JSONDecodeError as exc:
            if not text.strip():
                raise DatasetError(
                    f"Dataset file {src!r} is empty: write a JSON array of objects, "
                    'such as [{"input": "Hi", "reference": "help"}]'
                ) from None
            hint = ""
            if exc.msg == "Extra data":
                hint = "; a file with one JSON object per line is JSON Lines: " + (
                    "read it with JsonlDataset (or load_dataset)"
                    if str(src).lower().endswith(".jsonl")
                    else "name it .jsonl or use JsonlDataset"
                )
            raise DatasetError(
                f"Invalid JSON in {src!r} at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}"
            ) from None
        except ValueError:  # an integer of more digits than Python reads
            raise number_too_long(src, text) from None
        if type(data) is list:
            items: list[Any] = data
        elif type(data) is dict:
            if "cases" not in data:
                keys = ", ".join(repr(k) for k in list(data)[:5]) + (
                    ", ..." if len(data) > 5 else ""
                )
                raise DatasetError(
                    f'{src!r} holds an object without a "cases" key (keys: {keys}): write '
                    'a top-level array of objects, or put the items in a "cases" array'
                )
            items = data["cases"]
            if type(items) is not list:
                raise DatasetError(
                    f'{src!r} has "cases" but it is {json_kind(items)}, not an array: '
                    f'{preview(items)}; make "cases" an array of objects'
                )
        else:
            raise DatasetError(
                f"{src!r} holds {json_kind(data)}, not an array of objects: "
                f"{preview(data)}; write a top-level array of objects, or an object with "
                'a "cases" array'
            )
        for index, item in enumerate(items):
            if type(item) is not dict:
                where = self._where(text, index)
                raise DatasetError(
                    f"{src!r} {where} is {json_kind(item)}, not an object: {preview(item)}; "
                    'make every item an object such as {"input": ...}'
                )
        return items


class JsonlDataset(FileDataset):
    """A dataset read from a JSON Lines file: one JSON object per line, read lazily.

    Use it for big datasets: the file is streamed, one line at a time, every time the
    dataset is iterated, so a file of a million lines never has to fit in memory. Blank
    lines are skipped; CRLF line ends and a UTF-8 byte order mark are accepted::

        {"input": "Hi", "reference": "help"}
        {"input": "Where is my order?", "reference": "order"}

    ``len()`` is not defined (the size is not known without reading the file);
    :meth:`length_hint` counts the non-blank lines in one quick pass, without parsing them.

    Raises:
        DatasetError: when built, if the file does not exist or is a directory; while
            iterating, when the line reached cannot be read, decoded or parsed, or is not
            an object. The message names the file and the line.
    """

    def __init__(self, path: StrPath) -> None:
        super().__init__(path)
        # Cache of _line_index(), valid while the file's (size, mtime) stay the same.
        self._index: tuple[tuple[int, int], int, list[int], list[int]] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        src = self.source
        loads = json.JSONDecoder(object_pairs_hook=unique_keys).decode  # (one for every line)
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - closed by the with below
        except OSError as exc:
            raise self._os_error(exc) from None
        with f:
            for lineno, raw in enumerate(f, 1):
                if lineno == 1 and raw.startswith(BOM):
                    raw = raw[len(BOM) :]
                if not raw or raw.isspace():
                    continue
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise self._decode_error(lineno, raw, exc) from None
                try:
                    item = loads(line)
                except RecursionError:
                    raise nested_too_deeply(src, f" (line {lineno})") from None
                except DuplicateKey as exc:
                    raise exc.error(src, f" (line {lineno})") from None
                except json.JSONDecodeError as exc:
                    # The line end is part of `line`: an error there is at its last column.
                    column = min(exc.pos, len(line.rstrip("\r\n"))) + 1
                    raise DatasetError(
                        f"Invalid JSON in {src!r} at line {lineno}, column {column}: "
                        f"{exc.msg}; write one JSON object per line"
                    ) from None
                except ValueError:
                    raise number_too_long(src, line, f" (line {lineno})") from None
                if type(item) is not dict:
                    raise DatasetError(
                        f"{src!r} line {lineno} is {json_kind(item)}, not an object: "
                        f'{preview(item)}; write one JSON object per line, such as {{"input": ...}}'
                    )
                yield item

    def length_hint(self) -> int | None:
        """The number of non-blank lines, counted in one pass without parsing them."""
        return self._line_index()[1]

    def describe(self, index: int) -> str:
        """``refunds.jsonl line 12``: the line the item at ``index`` was read from."""
        try:
            _, count, starts, lines = self._line_index()
        except DatasetError:
            return super().describe(index)
        if not 0 <= index < count:
            return super().describe(index)
        run = bisect_right(starts, index) - 1
        return f"{self.source} line {lines[run] + index - starts[run]}"

    def _line_index(self) -> tuple[tuple[int, int], int, list[int], list[int]]:
        """(size, mtime), item count, and per run of consecutive non-blank lines the index
        of its first item and that item's line number: enough to map any index to a line
        in memory proportional to the number of blank-line gaps, not of lines.
        """
        try:
            st = self.path.stat()
        except OSError as exc:
            raise self._os_error(exc) from None
        key = (st.st_size, st.st_mtime_ns)
        if self._index is not None and self._index[0] == key:
            return self._index
        count = 0
        previous = -1
        starts: list[int] = []
        lines: list[int] = []
        try:
            with open(self.path, "rb") as f:
                for lineno, raw in enumerate(f, 1):
                    if lineno == 1 and raw.startswith(BOM):
                        raw = raw[len(BOM) :]
                    if not raw or raw.isspace():
                        continue
                    if lineno != previous + 1:
                        starts.append(count)
                        lines.append(lineno)
                    previous = lineno
                    count += 1
        except OSError as exc:
            raise self._os_error(exc) from None
        self._index = (key, count, starts, lines)
        return self._index

    def _decode_error(self, lineno: int, raw: bytes, exc: UnicodeDecodeError) -> DatasetError:
        if lineno == 1 and raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            return DatasetError(
                f"Dataset file {self.source!r} is UTF-16, not UTF-8: re-save it as UTF-8"
            )
        return DatasetError(
            f"{self.source!r} line {lineno} is not valid UTF-8: byte 0x{raw[exc.start]:02x} "
            f"at column {exc.start + 1}; re-save the file as UTF-8"
        )


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _line_of(text: str, key: object) -> str:
    """`` (line N)``: where ``key`` comes a second time in one object, found by reading the
    text again (``json`` keeps no positions): after the value of one ``"key":``, the next
    comes before any brace. "" if not found."""
    decoder = json.JSONDecoder()
    given = list(re.finditer(re.escape(json.dumps(key)) + r"\s*:", text))
    for first, second in itertools.pairwise(given):
        blank = _WHITESPACE.match(text, first.end())
        try:
            _, end = decoder.raw_decode(text, blank.end() if blank else first.end())
        except ValueError:
            continue
        if not re.search(r"[{}]", text[end : second.start()]):
            return f" (line {text.count(chr(10), 0, second.start()) + 1})"
    return ""


def _item_lines(text: str) -> list[int] | None:
    """The line on which each item of a parsed JSON dataset starts, or None if unknown.

    Only called to explain an error, so it re-scans the text: ``json`` keeps no positions.
    """
    decoder = json.JSONDecoder()

    def skip(i: int) -> int:
        match = _WHITESPACE.match(text, i)
        return match.end() if match else i

    try:
        i = skip(0)
        if text.startswith("{", i):
            cases = None
            i = skip(i + 1)
            while not text.startswith("}", i):
                key, i = decoder.raw_decode(text, i)
                i = skip(skip(i) + 1)  # past the ':'
                if key == "cases":
                    cases = i  # (a key given twice was refused by _parse)
                _, i = decoder.raw_decode(text, i)
                i = skip(i)
                if text.startswith(",", i):
                    i = skip(i + 1)
            if cases is None:
                return None
            i = cases
        if not text.startswith("[", i):
            return None
        offsets: list[int] = []
        i = skip(i + 1)
        while not text.startswith("]", i):
            offsets.append(i)
            _, i = decoder.raw_decode(text, i)
            i = skip(i)
            if text.startswith(",", i):
                i = skip(i + 1)
    except ValueError:
        return None
    lines: list[int] = []
    line, position = 1, 0
    for offset in offsets:
        line += text.count("\n", position, offset)
        position = offset
        lines.append(line)
    return lines
