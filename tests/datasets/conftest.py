from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str | bytes], Path]:
    """Write a file into a fresh current directory and return its relative path.

    Text is written as UTF-8 bytes exactly as given (no newline translation).
    """
    monkeypatch.chdir(tmp_path)

    def _write(name: str, content: str | bytes) -> Path:
        data = content.encode("utf-8") if isinstance(content, str) else content
        path = Path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    return _write
