"""Loading ``evaluation.py`` (the config file) and running ``--bootstrap`` files.

Both are Python and run as code, by design: they configure output drivers, load
environment variables or boot a framework. Only run files you trust.
"""

from __future__ import annotations

import hashlib
import runpy
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _interrupt
from ._errors import ConfigError, described
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
    from ._item import ProcessExit, guarding_exit

    folder = str(path.resolve().parent)  # its sibling modules import, as under `python FILE`
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        with guarding_exit():
            return runpy.run_path(str(path), run_name=run_name)
    except SyntaxError as exc:
        line = f":{exc.lineno}" if exc.lineno else ""
        raise ConfigError(f"{role} {str(path)!r}{line}: SyntaxError: {exc.msg}") from None
    except ProcessExit as exc:
        raise ConfigError(
            f"{role} {str(path)!r}{_line_in(exc, path)} called os._exit({exc.status}): it must "
            f"not end the process; raise an exception to report a problem"
        ) from None
    except SystemExit as exc:
        raise ConfigError(
            f"{role} {str(path)!r} called sys.exit({exc.code!r}): it must not exit; "
            f"raise an exception to report a problem"
        ) from None
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt) and _interrupt.seen():
            raise  # Ctrl-C: the command is interrupted, the file did nothing wrong
        raise ConfigError(
            f"{role} {str(path)!r}{_line_in(exc, path)} raised {described(exc)}"
        ) from None


def run_bootstrap(path: str | Path) -> None:
    """Run a bootstrap file before discovery (env vars, framework setup, paths)."""
    file = _existing(path, "Bootstrap file", "--bootstrap")
    _run_file(file, "Bootstrap file", "__agenteval_bootstrap__")


def _existing(path: str | Path, role: str, option: str) -> Path:
    file = Path(path)
    if file.is_dir():
        raise ConfigError(f"{role} {str(path)!r} is a folder: give {option} a Python file")
    if file.exists() and not file.is_file():
        raise ConfigError(
            f"{role} {str(path)!r} is not a regular file (a device or a pipe): give {option} "
            f"a Python file"
        )
    if not file.is_file():
        raise ConfigError(f"{role} {str(path)!r} does not exist: check the {option} path")
    return file


def drivers_from(raw: Any, where: str, name: str) -> list[OutputDriver]:
    """Drivers from what a config's ``output`` (or ``run_evaluations(outputs=...)``) holds:
    one driver or a list, of instances or classes (built with no arguments)."""
    if isinstance(raw, (OutputDriver, type)):
        raw = [raw]
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ConfigError(
            f"{where}: '{name}' must be a list of output drivers, got {type(raw).__name__}"
        )
    return [_driver(e, f"{where}: {name}[{i}]") for i, e in enumerate(raw)]


def _driver(entry: Any, where: str) -> OutputDriver:
    if isinstance(entry, OutputDriver):
        return _complete(entry, where)
    if isinstance(entry, type) and issubclass(entry, OutputDriver):
        try:
            return _complete(entry(), where)
        except ConfigError:
            raise
        except Exception as exc:
            hint = (
                f"; list an instance with its arguments instead, e.g. {entry.__name__}(...)"
                if isinstance(exc, TypeError)
                else ""
            )
            raise ConfigError(
                f"{where}: {entry.__name__}() raised {described(exc)}{hint}"
            ) from None
    raise ConfigError(
        f"{where} is {entry!r} ({type(entry).__name__}): use an OutputDriver class or "
        f"instance, e.g. ConsoleOutput or JsonOutput(path='results.json')"
    )


def _complete(driver: OutputDriver, where: str) -> OutputDriver:
    """A driver that can take what a run gives it: ``output`` is its one required method."""
    if type(driver).output is OutputDriver.output:
        name = type(driver).__name__
        raise ConfigError(
            f"{where}: {name} does not implement output(summary), which every driver must"
        )
    from .outputs._json import JsonOutput, unwritable

    if isinstance(driver, JsonOutput) and (problem := unwritable(driver.path)):
        raise ConfigError(f"{where}: JsonOutput: {problem}")  # found now, not after the run
    return driver


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
        file = _existing(path, "Config file", "--config")
    data = file.read_bytes()
    namespace = _run_file(file, "Config file", "__agenteval_config__")
    shown = str(file)
    _check_names(namespace, shown)
    raw = namespace.get("output")
    outputs = default_outputs() if raw is None else drivers_from(raw, shown, "output")
    from .llm._pricing import check_prices

    raw_prices = namespace.get("prices")
    prices = check_prices({} if raw_prices is None else raw_prices, f"{shown}: prices")
    return Config(
        outputs=outputs,
        prices=prices,
        path=shown,
        sha256=hashlib.sha256(data).hexdigest(),
    )


_SETTINGS = ("output", "prices")


def _check_names(namespace: dict[str, Any], shown: str) -> None:
    """A setting misspelt (``outputs = [...]``, ``Output``) would be ignored, and the report
    it meant to write lost without a word. (Modules, functions and classes are helpers.)"""
    import types

    from rapidfuzz.distance import OSA

    annotated = namespace.get("__annotations__")
    annotated = annotated if isinstance(annotated, Mapping) else {}
    for name in _SETTINGS:  # ``output: [...]``, a colon for the '=': annotated, not set
        if name in annotated and name not in namespace:
            raise ConfigError(
                f"{shown}: {name!r} is annotated but never assigned (a ':' where '=' was "
                f"meant?): write {name} = ..."
            )
    for name, value in namespace.items():
        if name.startswith("_") or name in _SETTINGS or isinstance(value, types.ModuleType):
            continue
        # a typo: one letter off, or two swapped (ouptut), or another case (Output)
        close = [s for s in _SETTINGS if OSA.distance(name.lower(), s) <= 1]
        # holding what the setting would: OUTPUT_DIR = "reports" is a helper of yours
        meant = close and (
            isinstance(value, Mapping)
            if close[0] == "prices"
            else isinstance(value, (OutputDriver, Sequence, type)) and not isinstance(value, str)
        )
        if meant and close[0] not in namespace:
            raise ConfigError(
                f"{shown}: {name!r} is not a setting: did you mean {close[0]!r}? (a config "
                f"file sets 'output' and 'prices'; give a helper of yours a leading '_')"
            )
