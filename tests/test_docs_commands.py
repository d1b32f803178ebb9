"""Every `agenteval` command shown in a ```console block of the docs parses.

The command lines in docs are checked against the real CLI: the command exists and every
option it uses is one the command accepts, with a value where one is needed. (What the
commands print is checked where the pages' examples are run: tests/test_examples.py.)
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from agenteval._cli._app import _normalise_resume, app

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
_BLOCK = re.compile(r"^```console[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
_PLACEHOLDER = re.compile(r"\[[^\]]*\]|\b[A-Z_]{3,}\b|\.\.\.")


def _commands(page: Path) -> list[str]:
    found = []
    for block in _BLOCK.findall(page.read_text(encoding="utf-8")):
        lines = block.splitlines()
        for n, line in enumerate(lines):
            line = line.strip()
            following = lines[n + 1].strip() if n + 1 < len(lines) else ""
            if following.startswith("agenteval: error: Invalid value"):
                continue  # shown on purpose as an invalid command
            if line.startswith("$ "):
                line = line[2:]
            if not line.startswith("agenteval ") or " · " in line:
                continue  # output, not a command
            command = line.split(" #", 1)[0].split("&&", 1)[0].strip()
            if _PLACEHOLDER.search(command.removeprefix("agenteval ")):
                continue  # a synopsis such as `agenteval run [PATH...] [OPTIONS]`
            found.append(command)
    return found


CASES = [(page.name, command) for page in PAGES for command in _commands(page)]


def test_docs_show_commands() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize(("page", "command"), CASES)
def test_docs_command_parses(page: str, command: str) -> None:
    args = _normalise_resume(shlex.split(command)[1:])
    group = typer.main.get_command(app)  # a click group (typer vendors click)
    try:
        _parse(group, args, page, command)
    except typer.Exit as done:  # --version / --help: parsed, and asked to stop
        assert done.exit_code == 0


def _parse(group: Any, args: list[str], page: str, command: str) -> None:
    if not args or args[0].startswith("-"):
        group.make_context("agenteval", list(args))
        return
    name, *rest = args
    sub = group.get_command(None, name)
    assert sub is not None, f"{page}: unknown command {name!r} in {command!r}"
    if hasattr(sub, "get_command"):  # a sub-group such as `cache`
        name, *rest = rest
        sub = sub.get_command(None, name)
        assert sub is not None, f"{page}: unknown command {name!r} in {command!r}"
    sub.make_context(name, list(rest))
