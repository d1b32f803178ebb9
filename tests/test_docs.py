"""Every ```python block in docs/ and README.md runs (``py`` blocks are only compiled).

Blocks of one page share a namespace and run in order, in a fresh temporary folder.
"""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
_BLOCK = re.compile(r"^```(python|py)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def _blocks(page: Path) -> list[tuple[str, str, int]]:
    text = page.read_text(encoding="utf-8")
    return [
        (m.group(1), m.group(2), text.count("\n", 0, m.start()) + 2) for m in _BLOCK.finditer(text)
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_docs_code_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("AGENTEVAL_")]:
        monkeypatch.delenv(key)
    # a real module, so dataclasses and pickling find the classes a page defines
    module = types.ModuleType(f"docs_{page.stem.replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for kind, code, line in _blocks(page):
        compiled = compile(code, f"{page.name}:{line}", "exec")
        if kind == "python":
            exec(compiled, module.__dict__)
