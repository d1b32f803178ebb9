"""Whether the response cache is on, and where it lives: the part of the cache every run
needs, kept apart from the cache itself (``llm/_cache``, which loads SQLite and the model
layer) so that a run without judges, simulators or embeddings never imports those."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CACHE_DIR = Path(".agenteval") / "cache"
"""Where the cache lives, relative to the working directory, unless configured."""

DB_NAME = "responses.sqlite3"
"""The SQLite file inside the cache folder."""


@dataclass(frozen=True)
class CacheSettings:
    """The process-wide cache configuration set by :func:`configure_cache`."""

    enabled: bool = False
    directory: Path | None = None

    @property
    def path(self) -> Path:
        """The SQLite file these settings point at."""
        return resolve_directory(self.directory) / DB_NAME


_settings = CacheSettings()


def configure_cache(enabled: bool = True, directory: Path | str | None = None) -> None:
    """Turn the response cache on or off for this process (and the children it forks).

    ``agenteval run`` calls it before running anything; call it yourself to cache judge
    calls in library code. ``directory`` defaults to ``.agenteval/cache`` in the current
    working directory (resolved now, so a later ``chdir`` does not move it)::

        configure_cache()                          # on, under ./.agenteval/cache
        configure_cache(directory="/tmp/evals")    # on, elsewhere
        configure_cache(enabled=False)             # off, as with --no-cache
    """
    global _settings
    _settings = CacheSettings(enabled=enabled, directory=resolve_directory(directory))


@contextmanager
def using_cache(
    enabled: bool = True, directory: Path | str | None = None
) -> Iterator[CacheSettings]:
    """:func:`configure_cache` for the length of a ``with`` block, then the previous settings.

    Use it where the cache should not stay on after a call returns (a runner invoked from a
    library or a test)::

        with using_cache(directory=tmp_path):
            judge.evaluate(output)
    """
    global _settings
    previous = _settings
    configure_cache(enabled, directory)
    try:
        yield _settings
    finally:
        _settings = previous


def cache_settings() -> CacheSettings:
    """The current cache configuration."""
    return _settings


def resolve_directory(directory: Path | str | None) -> Path:
    """``directory`` as an absolute path; ``None`` is ``./.agenteval/cache``."""
    path = Path(directory) if directory is not None else DEFAULT_CACHE_DIR
    return path.expanduser().absolute()
