"""Turning arbitrary user values into JSON-safe data before they leave the item."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import hashlib
import json
import math
import re
import sys
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

_REPR_LIMIT = 200
_PLAIN = frozenset({str, bool, type(None)})
"""Types that are JSON as they are (checked inline: most item values are these, or ints
no longer than ``_INT_BITS``)."""

_INT_BITS = 14_000
"""Bits of the largest int kept as a number: JSON readers, Python's among them, refuse
numbers of more than 4,300 digits (about 14,300 bits)."""


_MAX_DEPTH = 50
"""Levels of nesting kept; what is deeper becomes a placeholder."""


def placeholder(value: object, text: str | None = None) -> dict[str, str]:
    """The stand-in for a value that cannot be represented as JSON (``text``: what to say
    instead of its ``repr``)."""
    cls = type(value)
    try:
        text = repr(value) if text is None else text
    except Exception as exc:  # a broken __repr__ must not lose the item
        text = f"<repr failed: {type(exc).__name__}>"
    if len(text) > _REPR_LIMIT:
        # what is cut off still tells two inputs apart (a resume compares placeholders):
        # bytes by their content, anything else by its repr without memory addresses
        whole = (
            bytes(value)
            if isinstance(value, (bytes, bytearray))
            else without_addresses(text).encode(errors="replace")
        )
        tail = f"… (sha256 {hashlib.sha256(whole).hexdigest()[:16]})"
        text = text[: _REPR_LIMIT - len(tail)] + tail
    return {"unserializable": f"{_module_name(cls)}.{cls.__qualname__}", "repr": text}


def _module_name(cls: type) -> str:
    """The module a class is in, as its user knows it: an evaluator file's by its name
    (``ser_evaluator``), not the name discovery imported it under."""
    name = cls.__module__
    if name.startswith("_agenteval_eval_"):
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            return PurePath(file).stem
    return name


def without_addresses(text: str) -> str:
    """A ``repr`` without the memory addresses in it (``<Agent at 0x7f…>``), which differ
    from one process to the next."""
    return _ADDRESS.sub("", text)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """``value`` as JSON-safe data; what cannot be converted becomes a :func:`placeholder`.

    Pydantic models and dataclasses become objects, tuples and sets become lists, dates
    become ISO strings, non-finite floats become placeholders (JSON has no NaN).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if value.bit_length() <= _INT_BITS:
            return value
        return placeholder(value, f"<an int of {value.bit_length():,} bits>")
    if isinstance(value, float):
        return value if math.isfinite(value) else placeholder(value)
    if _depth > _MAX_DEPTH:
        return placeholder(value, f"<nested more than {_MAX_DEPTH} levels deep>")
    try:
        return _converted(value, _depth)
    except Exception:  # a mapping whose items() raises, a dataclass field never set, ...
        return placeholder(value)


def _converted(value: Any, _depth: int) -> Any:
    """:func:`to_jsonable` of a value that is not a plain one (which may raise)."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                text = _key(k)
                # 1 and "1" in one mapping: both kept
                k = (
                    text
                    if text not in out and text not in value
                    else f"{text} ({type(k).__name__})"
                )
            plain = type(v) in _PLAIN or (type(v) is int and v.bit_length() <= _INT_BITS)
            out[k] = v if plain else to_jsonable(v, _depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [
            v
            if type(v) in _PLAIN or (type(v) is int and v.bit_length() <= _INT_BITS)
            else to_jsonable(v, _depth + 1)
            for v in value
        ]
    if isinstance(value, (set, frozenset)):
        items = [to_jsonable(v, _depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, BaseModel):
        try:
            return value.model_dump(mode="json")
        except Exception:
            return placeholder(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(getattr(value, f.name), _depth + 1)
            for f in dataclasses.fields(value)
        }
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, _depth + 1)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, PurePath):
        return str(value)
    return placeholder(value)


def _key(key: object) -> str:
    """A mapping key as a JSON object key (a broken ``__str__`` must not lose the item)."""
    try:
        return str(key)
    except Exception:
        return placeholder(key)["repr"]


def json_size(value: Any) -> int:
    """Bytes of ``value`` (already JSON-safe) as compact UTF-8 JSON."""
    if isinstance(value, str) and value.isprintable() and '"' not in value and "\\" not in value:
        return len(value.encode()) + 2  # nothing to escape (the usual text): 20 times faster
    return _size(value)


def shrink(value: Any, limit: int) -> Any:
    """``value`` (JSON-safe, larger than ``limit`` by :func:`json_size`) cut down to at
    most ``limit`` bytes of compact JSON (escapes counted), staying the kind of value it
    was: text keeps its start, a list its first elements and an object its first keys, the
    last of them cut down in turn. Nothing is made up: an element of which nothing fits is
    left out, and a placeholder is kept whole or not at all. (Under two bytes, ``""``,
    ``[]`` or ``{}`` is what is left.)"""
    kept = _fit(value, limit, measured=True)
    return type(value)() if kept is _NOTHING else kept


_NOTHING = object()


def _size(value: Any) -> int:
    """Bytes of compact UTF-8 JSON, escapes included (a lone surrogate counts, not fails)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass"))


def _longest(count: int, size: Any, budget: int) -> int:
    """The largest ``n`` in ``0..count`` with ``size(n) <= budget``, given ``size(0)`` fits
    and grows with ``n``: sizes grow about in proportion, so guesses interpolate (every
    other one halves, so that odd sizes cost no more than a binary search)."""
    low, high = 0, count + 1  # size(low) fits, size(high) does not (or is past the end)
    low_size, high_size = size(0), None
    halve = False
    while high - low > 1:
        if halve or high_size is None or high_size <= low_size:
            guess = (low + high) // 2
        else:
            guess = low + (budget - low_size) * (high - low) // (high_size - low_size)
            guess = min(max(guess, low + 1), high - 1)
        halve = not halve
        measured = size(guess)
        if measured <= budget:
            low, low_size = guess, measured
        else:
            high, high_size = guess, measured
    return low


_STRETCH = 4096
"""Elements of a list or object measured together, at most (see ``_fit``)."""


def _fit(value: Any, budget: int, *, measured: bool = False) -> Any:
    """As much of ``value`` as fits in ``budget`` bytes of compact JSON, or ``_NOTHING``
    (``measured``: it is known not to fit whole)."""
    if not measured and _size(value) <= budget:
        return value
    if budget < 2 or not isinstance(value, (str, list, dict)) or _is_placeholder(value):
        return _NOTHING  # a number (or what stands for a value) is kept whole or not at all
    if isinstance(value, str):  # (a character takes a byte at least)
        return value[: _longest(min(len(value), budget), lambda n: _size(value[:n]), budget)]
    pairs = list(value.items()) if isinstance(value, dict) else value
    build: Any = dict if isinstance(value, dict) else list
    # the whole elements that fit, measured a stretch at a time (growing while they fit,
    # one by one where a stretch does not),
    # then as much of the next one as the room left holds
    # (not all of them fit, so the last one need not be measured: if all before it fit, it
    # is the one cut down)
    last = len(pairs) - 1
    used, whole, stretch = 2, 0, 1  # the brackets; elements kept; to measure next
    while whole < last:
        end = min(whole + stretch, last)
        more = _size(build(pairs[whole:end])) - 2 + (1 if whole else 0)
        if used + more <= budget:
            used, whole, stretch = used + more, end, min(2 * stretch, _STRETCH)
        elif stretch > 1:
            stretch = 1
        else:
            break
    kept = build(pairs[:whole])
    room = budget - used - (1 if whole else 0)  # a comma before the next
    if isinstance(value, dict):
        key, rest = pairs[whole]
        part = _fit(rest, room - _size(key) - 1, measured=True)  # its key and a colon
        if part is not _NOTHING and part not in ("", [], {}):
            kept[key] = part
    else:
        part = _fit(pairs[whole], room, measured=True)
        if part is not _NOTHING and part not in ("", [], {}):
            kept.append(part)
    return kept


def _is_placeholder(value: Any) -> bool:
    """Whether ``value`` is a :func:`placeholder` (cut, it would name a made-up type)."""
    return isinstance(value, dict) and value.keys() == {"unserializable", "repr"}
