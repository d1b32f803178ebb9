"""Structured output as JSON in text: the prompt instruction and a lenient parser."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def json_instruction(schema: dict[str, Any]) -> str:
    """The instruction that asks for a JSON reply when the server cannot enforce a schema."""
    return (
        "Reply with one JSON object that matches this JSON schema, and nothing else "
        "(no prose, no code fences):\n" + json.dumps(schema, sort_keys=True)
    )


def extract_json_object(
    text: str, schema: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The JSON object a reply gives: the whole text, else the last object in it outside
    any ``<think>`` block that holds every key ``schema`` requires (the last object, should
    none hold them all).

    Local models wrap JSON in prose, code fences or thinking. A reply that reasons first,
    or quotes an object it was shown (a verdict planted in the output it grades), gives its
    own answer last. An object inside another is part of it, never the answer. A reply that
    holds no JSON *object* gives ``None``.
    """
    stripped = text.strip()
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    else:
        return value if isinstance(value, dict) else None
    visible = _THINKING.sub("", stripped)
    # a chat template that opens the thinking itself sends only its end: all before it is
    # the model's thinking (drafts of the answer among it)
    end = visible.lower().rfind("</think>")
    if end >= 0:
        visible = visible[end + len("</think>") :]
    required = _required(schema)
    decoder = json.JSONDecoder()
    last: dict[str, Any] | None = None
    holding: dict[str, Any] | None = None
    inside = 0  # where the last object found ends: braces before it are its own
    # the end of a long reply: where its answer is (and a verdict planted in a long quoted
    # output, at its start, is not)
    for brace in _OBJECT_START.finditer(visible, max(0, len(visible) - _SCANNED)):
        if brace.start() < inside:
            continue
        try:
            value, inside = decoder.raw_decode(visible, brace.start())
        except (ValueError, RecursionError):  # (prose braces; nested thousands deep)
            continue
        last = value
        if all(key in value for key in required):
            holding = value
    return holding if holding is not None else last


def parse_reply(text: str, schema: Mapping[str, Any] | None = None) -> object:
    """The JSON value of a reply asked to follow ``schema``: the whole text, whatever JSON it
    is (so that a check can say what it got), else :func:`extract_json_object`'s.

    Raises:
        ValueError: the reply holds no JSON.
    """
    try:
        return json.loads(text.strip())
    except (ValueError, RecursionError):
        found = extract_json_object(text, schema)
    if found is None:
        raise ValueError("the reply is not JSON")
    return found


_OBJECT_START = re.compile(r'\{\s*["}]')
"""Where a JSON object may start: a brace before a key, or an empty object."""

_SCANNED = 65_536
"""How much of a reply, at its end, is searched for objects among other text."""


def _required(schema: Mapping[str, Any] | None) -> tuple[str, ...]:
    required = (schema or {}).get("required")
    if not isinstance(required, (list, tuple)):
        return ()
    return tuple(key for key in required if isinstance(key, str))
