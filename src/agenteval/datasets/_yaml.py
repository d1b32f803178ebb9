"""``YamlDataset``: a YAML list of cases, or a mapping with ``cases:``."""

from __future__ import annotations

import datetime
import functools
import re
from typing import Any

from agenteval._errors import DatasetError
from agenteval.datasets._base import preview
from agenteval.datasets._file import (
    DuplicateKey,
    ParsedFileDataset,
    nested_too_deeply,
    number_too_long,
)


class YamlDataset(ParsedFileDataset):
    """A dataset read from a YAML file: a list of mappings, or a mapping with ``cases:``.

    Use it for hand-written datasets, where YAML's block strings make long inputs and
    references easy to read. Both layouts work (the second is RubyLLM's)::

        - input: Hi
          reference: help

        cases:
          - name: sale_item_followup
            input: I bought an unopened item two weeks ago. Can I return it?
            reference: 30 days

    The file is loaded with ``yaml.safe_load`` (through libyaml's C parser when
    available): tags that build Python objects (``!!python/object``...) are rejected. It
    is parsed once, on first use.

    Raises:
        DatasetError: when built, if the file does not exist or is a directory; on first
            use, if it cannot be read or decoded, is not valid YAML, or does not hold a list
            of mappings. The message names the file, the line and the item.
    """

    def _item_lines(self, text: str) -> list[int] | None:
        return _item_lines(text)

    def _parse(self, text: str) -> list[dict[str, Any]]:
        import yaml

        src = self.source
        try:
            data = _safe_load(text)
            aliased = _aliased_values(data)
        except RecursionError:
            raise nested_too_deeply(src) from None
        except DuplicateKey as exc:
            raise exc.error(src) from None
        except yaml.YAMLError as exc:
            raise self._syntax_error(text, exc) from None
        except ValueError as exc:  # a value YAML's grammar takes but Python cannot hold
            raise _unreadable_value(src, text, exc) from None
        if aliased > MAX_ALIASED_VALUES:
            raise DatasetError(
                f"{src!r} expands to {aliased:,} more values through its aliases (*name) "
                f"than it writes out, above the limit of {MAX_ALIASED_VALUES:,}: each alias "
                "copies what its anchor holds into every report and record; write the "
                "values out, or nest fewer aliases"
            )
        if isinstance(data, list):
            items: list[Any] = data
        elif isinstance(data, dict):
            if "cases" not in data:
                keys = ", ".join(repr(k) for k in list(data)[:5]) + (
                    ", ..." if len(data) > 5 else ""
                )
                raise DatasetError(
                    f"{src!r} holds a mapping without a 'cases' key (keys: {keys}): write "
                    "a list of cases, or put them in a list under 'cases:'"
                )
            items = data["cases"]
            if not isinstance(items, list):
                raise DatasetError(
                    f"{src!r} has 'cases:' but it is {_yaml_kind(items)}, not a list: "
                    f"{preview(items)}; make 'cases:' a list of mappings ('- input: ...')"
                )
        elif data is None:
            raise DatasetError(
                f"Dataset file {src!r} is empty: write a list of cases ('- input: ...'), "
                "or a mapping with a 'cases:' list"
            )
        else:
            raise DatasetError(
                f"{src!r} holds {_yaml_kind(data)}, not a list of mappings: {preview(data)}; "
                "write a list of cases ('- input: ...'), or a mapping with a 'cases:' list"
            )
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                where = self._where(text, index)
                raise DatasetError(
                    f"{src!r} {where} is {_yaml_kind(item)}, not a mapping: {preview(item)}; "
                    "make every case a mapping of keys to values ('- input: ...')"
                )
        return items

    def _syntax_error(self, text: str, exc: Exception) -> DatasetError:
        import yaml

        src = self.source
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None)
        if isinstance(exc, yaml.reader.ReaderError):
            before = text[: exc.position]
            line = before.count("\n") + 1
            column = exc.position - (before.rfind("\n") + 1) + 1
            reason = f"unacceptable character #x{exc.character:04x}: {exc.reason}"
            return DatasetError(
                f"Invalid YAML in {src!r} at line {line}, column {column}: {reason}; "
                "remove it, or write it as an escape in a double-quoted string"
            )
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        tag = re.search(r"constructor for the tag '([^']*)'", problem or "")
        if isinstance(exc, yaml.constructor.ConstructorError) and tag:
            name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
            return DatasetError(
                f"Unsupported YAML tag {name!r} in {src!r}{where}: datasets are loaded with "
                "yaml.safe_load, which builds no Python objects; use plain YAML values"
            )
        context = getattr(exc, "context", None)
        if problem is None:
            what = " ".join(str(exc).split())
        else:
            what = f"{context}, {problem}" if context else problem
        return DatasetError(f"Invalid YAML in {src!r}{where}: {what}")


MAX_ALIASED_VALUES = 1_000_000
"""Values a YAML dataset's aliases may add once expanded: a few nested aliases in a few
hundred bytes ("billion laughs") would otherwise fill reports and the journal with
gigabytes. Datasets without aliases are never refused, however large."""


def _aliased_values(data: Any) -> int:
    """How many values the aliases in ``data`` add: its values with each shared list or
    mapping counted every time it appears, less those with each counted once. Linear in
    the distinct parts."""
    sizes: dict[int, int] = {}
    once = 1

    def size(value: Any) -> int:
        nonlocal once
        if not isinstance(value, (list, dict)):
            return 1
        known = sizes.get(id(value))
        if known is None:
            children = list(value.values() if isinstance(value, dict) else value)
            once += len(children)
            sizes[id(value)] = 1  # (a recursive alias: counted once)
            known = sizes[id(value)] = 1 + sum(size(c) for c in children)
        return known

    return size(data) - once


def _unreadable_value(source: str, text: str, exc: ValueError) -> DatasetError:
    """The error for a value the YAML resolver typed but Python refused: an integer of
    too many digits, or a timestamp that is none (``2024-02-30``, ``25:00``), with the line
    of the value (the text is read again, each timestamp on its own)."""
    if "digits" in str(exc):
        return number_too_long(source, text)
    import yaml

    class Dates(yaml.SafeLoader):
        """The safe loader, telling where a timestamp it cannot build is."""

    def timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        try:
            return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
        except ValueError as why:
            raise _NoDate(node.start_mark.line + 1, str(why)) from None

    Dates.add_constructor("tag:yaml.org,2002:timestamp", timestamp)
    where, why = "", str(exc)
    try:
        yaml.load(text, Loader=Dates)  # (the safe loader, with one constructor wrapped)
    except _NoDate as found:
        where, why = f" (line {found.line})", found.why
    except Exception:  # (the first reading's message stands)
        pass
    return DatasetError(
        f"Dataset file {source!r}{where} has a date that is not one ({why}): correct it, "
        "or quote it to keep it as text"
    )


class _NoDate(Exception):
    def __init__(self, line: int, why: str) -> None:
        super().__init__(why)
        self.line, self.why = line, why


def _safe_load(text: str) -> Any:
    """``yaml.safe_load``, through libyaml's C parser when PyYAML has it (about 10x faster).

    ``CSafeLoader`` is the same safe loader (``SafeConstructor``: no Python objects), with
    the parsing done in C. On an error the text is parsed again by the pure-Python
    ``safe_load``, whose messages and positions are the ones we report.
    """
    import yaml

    fast, slow = _loaders()
    if fast is not None:
        try:
            return yaml.load(text, Loader=fast)  # CSafeLoader: safe, as said above
        except yaml.YAMLError:
            pass  # parsed again below, for the message
    return yaml.load(text, Loader=slow)  # SafeLoader: safe_load's own


@functools.cache
def _loaders() -> tuple[Any, Any]:
    """The safe loaders (libyaml's, when PyYAML has it, and the pure-Python one), refusing
    a key given twice in one mapping, which YAML readers otherwise let the last win."""
    import yaml

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # (<<: keys a mapping may override)
                continue
            key = loader.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
            except TypeError:  # unhashable: SafeConstructor says so itself
                continue
            if repeated:
                raise DuplicateKey(key, key_node.start_mark.line + 1)
            seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    def unique(base: Any) -> Any:
        return type(f"Unique{base.__name__}", (base,), {"construct_mapping": construct_mapping})

    fast = getattr(yaml, "CSafeLoader", None)
    return (unique(fast) if fast is not None else None), unique(yaml.SafeLoader)


_YAML_KINDS: dict[type, str] = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
    datetime.date: "a date",
    datetime.datetime: "a timestamp",
    bytes: "binary data",
    set: "a set",
}


def _yaml_kind(value: object) -> str:
    return _YAML_KINDS.get(type(value), f"a {type(value).__name__}")


def _item_lines(text: str) -> list[int] | None:
    """The line on which each case starts, from the YAML node tree; None if unknown.

    Only called to explain an error: ``safe_load`` keeps no positions.
    """
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if isinstance(node, yaml.MappingNode):
        cases = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "cases"]
        node = cases[-1] if cases else None
    if not isinstance(node, yaml.SequenceNode):
        return None
    return [child.start_mark.line + 1 for child in node.value]
