"""Support code for tests that run the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

AGENTEVAL = str(Path(sys.executable).parent / "agenteval")
"""The CLI of the interpreter running the tests."""


class CliResult:
    """Exit code and output of one CLI run."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def __repr__(self) -> str:
        return f"CliResult(code={self.code}, stdout={self.stdout!r}, stderr={self.stderr!r})"
