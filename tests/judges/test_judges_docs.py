from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agenteval import _cache_settings
from agenteval._cache_settings import CacheSettings
from agenteval.llm import _cache

DOC = Path(__file__).resolve().parents[2] / "docs" / "judges.md"
BLOCK = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


@pytest.fixture(autouse=True)
def _cache_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_cache_settings, "_settings", CacheSettings())
    yield
    _cache.close_connections()


def test_judges_docs_examples_print_what_the_page_shows(
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
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(body, str(DOC), "exec"), namespace)
            printed = out.getvalue()
        elif lang == "text":
            assert printed == body
            printed = None
            checked += 1

    assert checked == 8
    assert list(tmp_path.iterdir()) == []  # the cache stayed off: nothing written
