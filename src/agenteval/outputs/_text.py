"""Making untrusted text (agent outputs, messages) safe and short for a terminal."""

from __future__ import annotations

import re
from typing import Any

# ANSI escape sequences, C0/C1 controls, and the invisible Unicode characters that reorder
# or break lines (bidi overrides and isolates, line/paragraph separators) or hide between
# letters (zero-width space, word joiner, byte order mark)
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff]"
)


def _escape(match: re.Match[str]) -> str:
    return "".join(
        f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in match.group(0)
    )


def safe(text: str, limit: int | None = None) -> str:
    """Neutralise control characters and ANSI escapes; shorten to ``limit`` with '…'."""
    text = _CONTROL.sub(_escape, text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def one_line(text: str, limit: int = 300, *, keep_end: bool = False) -> str:
    """``text`` on one line (line breaks shown as ⏎), made safe, shortened to ``limit`` —
    from its middle with ``keep_end`` (an error message ends in how to fix it)."""
    flat = text.rstrip("\r\n").replace("\r\n", "\n").replace("\n", " ⏎ ")
    if not keep_end:
        return safe(flat, limit)
    flat = safe(flat)
    if len(flat) <= limit:
        return flat
    tail = limit // 3
    return f"{flat[: limit - tail - 3]} … {flat[-tail:]}"


def printable(text: str, stream: Any) -> str:
    """``text`` as ``stream`` can take it: what its encoding cannot hold (a lone
    surrogate, CJK text on cp1252) replaced, not a write that raises."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        return text.encode(encoding, "replace").decode(encoding)
    except LookupError:  # an encoding Python does not know
        return text
