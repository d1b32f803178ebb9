"""The ``agenteval`` command line."""

from __future__ import annotations


def main() -> None:
    """Entry point of the ``agenteval`` console script."""
    from ._app import main as _main

    _main()
