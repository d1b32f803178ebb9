"""docs/agents.md: every python block runs, and prints exactly the text block after it."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
BLOCK = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def test_agents_docs_examples_print_what_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("AGENTEVAL_")]:
        monkeypatch.delenv(key)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    printed: str | None = None
    checked = 0
    for lang, body in BLOCK.findall(DOC.read_text(encoding="utf-8")):
        if lang == "python":
            assert printed is None, "a python block printed output that the page does not show"
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(body, str(DOC), "exec"), namespace)
            printed = out.getvalue() or None
        elif lang == "text" and printed is not None:
            assert printed == body
            printed = None
            checked += 1
    assert printed is None
    assert checked == 12
