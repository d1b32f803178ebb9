"""Loading ``evaluation.py`` (the config file) and running ``--bootstrap`` files.

Both are Python and run as code, by design: they configure output drivers, load
environment variables or boot a framework. Only run files you trust.
"""

from __future__ import annotations

import hashlib
import runpy
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import ConfigError
from .outputs._base import OutputDriver

DEFAULT_CONFIG = "evaluation.py"


@dataclass(frozen=True)
class Config:
    """What a config file provides: the output drivers and an optional price table."""

    outputs: list[OutputDriver]
    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    path: str | None = None
    sha256: str | None = None


def _line_in(exc: BaseException, path: Path) -> str:
    target = str(path.resolve())
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if str(Path(frame.filename).resolve()) == target:
            line = frame.lineno
    return f":{line}" if line else ""


def _run_file(path: Path, role: str, run_name: str) -> dict[str, Any]:
    try:
        return runpy.run_path(str(path), run_name=run_name)
    except SyntaxError as exc:
        raise ConfigError(f"{role} {str(path)!r}:{exc.lineno}: SyntaxError: {exc.msg}") from None
    except SystemExit as exc:
        raise ConfigError(
            f"{role} {str(path)!r} called sys.exit({exc.code!r}): it must not exit; "
            f"raise an exception to report a problem"
        ) from None
    except BaseException as exc:
        raise ConfigError(
            f"{role} {str(path)!r}{_line_in(exc, path)} raised {type(exc).__name__}: {exc}"
        ) from None


def run_bootstrap(path: str | Path) -> None:
    """Run a bootstrap file before discovery (env vars, framework setup, paths)."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(
            f"Bootstrap file {str(path)!r} does not exist: check the --bootstrap path"
        )
    _run_file(file, "Bootstrap file", "__agenteval_bootstrap__")


def _driver(entry: Any, where: str) -> OutputDriver:
    if isinstance(entry, OutputDriver):
        return entry
    if isinstance(entry, type) and issubclass(entry, OutputDriver):
        try:
            return entry()
        except Exception as exc:
            raise ConfigError(
                f"{where}: {entry.__name__}() raised {type(exc).__name__}: {exc}; "
                f"list an instance with its arguments instead, e.g. {entry.__name__}(...)"
            ) from None
    raise ConfigError(
        f"{where} is {entry!r} ({type(entry).__name__}): use an OutputDriver class or "
        f"instance, e.g. ConsoleOutput or JsonOutput(path='results.json')"
    )


def default_outputs() -> list[OutputDriver]:
    """The drivers used when no config file exists: the console alone."""
    from .outputs._console import ConsoleOutput

    return [ConsoleOutput()]


def load_config(path: str | Path | None = None) -> Config:
    """Load ``path`` (must exist), or ``./evaluation.py`` when present, else the defaults."""
    if path is None:
        candidate = Path(DEFAULT_CONFIG)
        if not candidate.is_file():
            return Config(outputs=default_outputs())
        file = candidate
    else:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"Config file {str(path)!r} does not exist: check the --config path")
    data = file.read_bytes()
    namespace = _run_file(file, "Config file", "__agenteval_config__")
    shown = str(file)
    raw = namespace.get("output")
    if raw is None:
        outputs = default_outputs()
    else:
        if isinstance(raw, (OutputDriver, type)):
            raw = [raw]
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise ConfigError(
                f"{shown}: 'output' must be a list of output drivers, got {type(raw).__name__}"
            )
        outputs = [_driver(e, f"{shown}: output[{i}]") for i, e in enumerate(raw)]
    from .llm._pricing import check_prices

    prices = check_prices(namespace.get("prices") or {}, f"{shown}: prices")
    return Config(
        outputs=outputs,
        prices=prices,
        path=shown,
        sha256=hashlib.sha256(data).hexdigest(),
    )
