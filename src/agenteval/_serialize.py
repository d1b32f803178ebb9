"""Turning arbitrary user values into JSON-safe data before they leave the item."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import math
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
        text = text[: _REPR_LIMIT - 1] + "…"
    return {"unserializable": f"{cls.__module__}.{cls.__qualname__}", "repr": text}


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
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass")) + 2
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass"))  # a lone surrogate counts, not fails
