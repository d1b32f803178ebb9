from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "assertions.md"
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)


def test_assertions_docs_examples_print_what_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    printed: str | None = None
    checked = 0
    for lang, body in BLOCK.findall(DOC.read_text(encoding="utf-8")):
        if lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(body, str(DOC), "exec"), namespace)
            printed = out.getvalue()
        elif lang == "text" and printed is not None:
            assert printed == body
            printed = None
            checked += 1

    assert checked >= 10
