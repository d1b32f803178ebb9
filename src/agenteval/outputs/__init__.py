"""Output drivers: where results go (console, JSON, your own)."""

from ._base import OutputDriver, RunInfo
from ._console import ConsoleDriver, ConsoleOutput
from ._json import JsonDriver, JsonOutput

__all__ = [
    "ConsoleDriver",
    "ConsoleOutput",
    "JsonDriver",
    "JsonOutput",
    "OutputDriver",
    "RunInfo",
]
