"""Shared fixtures: running the real CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agenteval.testing import fake_provider as fake_provider  # the FakeProvider fixture
from cli_support import AGENTEVAL, CliResult


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., CliResult]:
    """Run ``agenteval ARGS`` in ``tmp_path`` (piped, so plain text), return its result."""

    def run(
        *args: str, cwd: Path | None = None, timeout: float = 60, env: dict[str, str] | None = None
    ) -> CliResult:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTEVAL_")}
        environ.update(env or {})
        proc = subprocess.run(
            [AGENTEVAL, *args],
            cwd=cwd or tmp_path,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environ,
        )
        return CliResult(proc)

    return run


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a dedented file under ``tmp_path`` and return its path."""

    def _write(relative: str, text: str) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    return _write


@pytest.fixture
def run_on_fake(
    fake_provider: Any, cli: Callable[..., CliResult], write: Callable[[str, str], Path]
) -> Callable[..., CliResult]:
    """Write an evaluator file and ``agenteval run`` it (``--no-cache``) with ``FAKE_URL``
    set to the fake provider's OpenAI base URL, which answers with ``responder``."""

    def run(
        name: str,
        source: str,
        *args: str,
        responder: Callable[[Any], Any],
        env: dict[str, str] | None = None,
    ) -> CliResult:
        fake_provider.respond_with(responder)
        write(name, source)
        url = fake_provider.openai_base_url
        return cli("run", name, *args, "--no-cache", env={"FAKE_URL": url, **(env or {})})

    return run
