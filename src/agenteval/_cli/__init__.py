"""The ``agenteval`` command line."""

from __future__ import annotations


def main() -> None:
    """Entry point of the ``agenteval`` console script."""
    import atexit

    from .. import _interrupt

    _interrupt.watch()
    atexit.register(_interrupt.ignore_late)  # (first registered: run last)
    try:
        from ._app import main as _main
    except KeyboardInterrupt:  # Ctrl-C while the command line loads
        import sys

        sys.stderr.write("agenteval: error: interrupted\n")
        raise SystemExit(130) from None
    _main()
