"""Structured output as JSON in text: the prompt instruction and a lenient parser."""

from __future__ import annotations

import json
import re
from typing import Any

_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def json_instruction(schema: dict[str, Any]) -> str:
    """The instruction that asks for a JSON reply when the server cannot enforce a schema."""
    return (
        "Reply with one JSON object that matches this JSON schema, and nothing else "
        "(no prose, no code fences):\n" + json.dumps(schema, sort_keys=True)
    )


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text``: the whole text, else the first object found in it.

    Local models often wrap JSON in prose, code fences or ``<think>`` blocks; anything that
    is not a JSON *object* gives ``None``.
    """
    stripped = text.strip()
    try:
        value = json.loads(stripped)
    except ValueError:
        pass
    else:
        return value if isinstance(value, dict) else None
    visible = _THINKING.sub("", stripped)
    # a chat template that opens the thinking itself sends only its end: all before it is
    # the model's thinking (drafts of the answer among it)
    end = visible.lower().rfind("</think>")
    if end >= 0:
        visible = visible[end + len("</think>") :]
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", visible):
        try:
            value, _ = decoder.raw_decode(visible, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None
