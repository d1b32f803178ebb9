"""An on-disk response cache for judge, simulator and embedding calls.

Responses are stored in one SQLite file (``responses.sqlite3``) under the cache folder,
``.agenteval/cache/`` in the working directory unless configured otherwise. The key is a
SHA-256 of the call's kind, the model's ``name`` and the full request JSON (for embeddings:
the text), so any change to the prompt, schema, temperature or model is a miss.

Only responses that the caller accepted are stored (``validate``), so an invalid judge reply
is never replayed. A hit comes back with ``cached=True`` and ``retries=0``.

A model (or embeddings) whose ``cacheable`` attribute is False is never cached: its calls
bypass the cache both ways. In-process doubles such as
:class:`~agenteval.testing.ScriptedModel` say so, because what they reply (their script) is
not part of the key: a re-run with a changed script would otherwise replay old replies.

The cache is **off** unless :func:`configure_cache` turns it on. ``agenteval run`` and
``run_evaluations(cache=True)`` turn it on for the length of the run (``--no-cache`` /
``cache=False`` keep it off) and restore the previous setting afterwards; library code and
unit tests are otherwise never served a reply recorded by an earlier run, and write no files
into the working directory.

Many processes may read and write one cache at once (the parallel executor forks one child
per item): the database is in WAL mode with a busy timeout, every statement is its own short
transaction, and each process opens its own connection lazily. No connection crosses a
``fork``: the parent closes its connections just before ``os.fork`` (and reopens on next
use), and a process that finds itself with a different pid opens a new one. A cache that
cannot be read or written (locked for too long, read-only, corrupt) is logged and bypassed:
it never fails an item.

Every call made through :func:`complete_cached`, :func:`acomplete_cached` and
:func:`embed_cached` is accounted to the running item (``current_item().add_judge_call``),
under the model's configured ``name`` (which price tables are keyed by), including a call
that failed with a :class:`~agenteval.ProviderError` (its retries); callers must not account
it again.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from .._cache_settings import DB_NAME, DEFAULT_CACHE_DIR, cache_settings, resolve_directory
from .._context import current_item
from .._errors import ConfigError, ProviderError
from .._usage import Usage
from ._types import Embeddings, EmbeddingsResult, Model, ModelRequest, ModelResponse

_KEY_VERSION = "agenteval-cache-v1"
_BUSY_TIMEOUT_S = 30.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY,"
    " kind TEXT NOT NULL,"
    " model TEXT NOT NULL,"
    " value TEXT NOT NULL,"
    " created_at REAL NOT NULL)"
)

Validator = Callable[[ModelResponse], bool]
"""Decides whether a response may be stored (and whether a stored one may be served)."""

log = logging.getLogger("agenteval.cache")


_connections: dict[Path, sqlite3.Connection] = {}
_abandoned: list[sqlite3.Connection] = []
_lock = threading.Lock()
_pid = os.getpid()


def clear_cache(directory: Path | str | None = None) -> int | None:
    """Remove every cached response; return how many were removed, or ``None`` when the
    cache file was damaged (nothing in it could be read) and was removed whole.

    Clears the configured cache folder (or ``./.agenteval/cache``) unless ``directory`` is
    given. Used by ``agenteval cache clear``. A folder with no cache in it gives 0.
    """
    given = directory is not None
    if directory is None:
        directory = cache_settings().directory
    folder = resolve_directory(directory)
    shown = str(directory if directory is not None else DEFAULT_CACHE_DIR)
    if folder.exists() and not folder.is_dir():
        fix = "check --dir" if given else "move the file away, or pass --dir"
        raise ConfigError(f"{shown!r} is a file, not a cache folder: {fix}")
    path = folder / DB_NAME
    if not path.exists():
        return 0
    if not path.is_file():
        raise ConfigError(f"{str(path)!r} is not agenteval's cache file: remove it by hand")
    try:
        with _connection(path) as conn:
            removed = conn.execute("DELETE FROM responses").rowcount
    except sqlite3.OperationalError as exc:  # locked, read-only, ...: the file may be sound
        _drop(path)
        fix = (
            "another process (a run still going?) is using it: clear it once that ends"
            if "locked" in str(exc)
            else f"make it writable, or delete the folder {str(path.parent)!r} by hand"
        )
        raise ConfigError(
            f"Could not clear the response cache {str(path)!r}: {exc}; {fix}"
        ) from None
    except sqlite3.DatabaseError:  # not a database at all, say: holds nothing usable
        _drop(path)
        for damaged in (path, *(path.with_name(f"{path.name}-{end}") for end in ("wal", "shm"))):
            try:
                damaged.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise ConfigError(
                    f"The response cache {str(path)!r} is damaged and could not be removed: "
                    f"{exc.strerror or exc}; delete the folder {str(path.parent)!r} by hand"
                ) from None
        return None
    except sqlite3.Error as exc:
        _drop(path)
        raise ConfigError(
            f"Could not clear the response cache {str(path)!r}: {exc}; "
            f"delete the folder {str(path.parent)!r} by hand"
        ) from exc
    return max(removed, 0)


def request_key(model_name: str, request: ModelRequest) -> str:
    """The cache key of a completion: SHA-256 of the model name and the full request JSON."""
    return _digest("complete", model_name, request.model_dump_json())


def embedding_key(embeddings_name: str, text: str) -> str:
    """The cache key of one text's embedding."""
    return _digest("embed", embeddings_name, text)


def complete_cached(
    model: Model, request: ModelRequest, validate: Validator | None = None
) -> ModelResponse:
    """``model.complete(request)`` through the cache, accounted to the running item.

    On a hit (the cache is on, the model is ``cacheable``, the request was seen, and
    ``validate`` accepts the stored response) no call is made and the response has
    ``cached=True``. Otherwise the model is called and the response is stored when
    ``validate`` (default: accept all) returns True.
    """
    name = model.name
    cacheable = _cacheable(model)
    key = request_key(name, request)
    hit = _lookup(key, validate) if cacheable else None
    if hit is not None:
        _account(name, hit)
        return hit
    with _accounting_failures(name):
        response = model.complete(request)
    if cacheable:
        _store(key, "complete", name, response, validate)
    _account(name, response)
    return response


async def acomplete_cached(
    model: Model, request: ModelRequest, validate: Validator | None = None
) -> ModelResponse:
    """Async :func:`complete_cached`: awaits ``model.acomplete`` on a miss."""
    name = model.name
    cacheable = _cacheable(model)
    key = request_key(name, request)
    hit = _lookup(key, validate) if cacheable else None
    if hit is not None:
        _account(name, hit)
        return hit
    with _accounting_failures(name):
        response = await model.acomplete(request)
    if cacheable:
        _store(key, "complete", name, response, validate)
    _account(name, response)
    return response


def embed_cached(embeddings: Embeddings, texts: Sequence[str]) -> list[list[float]]:
    """``embeddings.embed(texts)`` through the cache, one entry per text.

    The texts not in the cache are embedded together in one call (none when all are
    cached). The call is accounted to the running item as one (possibly cached) call, with
    the usage and retries reported by embeddings that have an ``embed_with_usage`` method
    (as :class:`~agenteval.llm.OpenAIEmbeddings` has).
    """
    texts = list(texts)
    if not texts:
        return []
    name = embeddings.name
    use_cache = cache_settings().enabled and _cacheable(embeddings)
    keys = [embedding_key(name, t) for t in texts]
    vectors: list[list[float] | None] = [None] * len(texts)
    if use_cache:
        for i, key in enumerate(keys):
            vectors[i] = _decode_vector(_get(key))
    missing = [i for i, v in enumerate(vectors) if v is None]
    usage, retries = Usage(), 0
    if missing:
        with _accounting_failures(name):
            fresh, usage, retries = _embed(embeddings, [texts[i] for i in missing])
        try:
            count = len(fresh)
        except TypeError:
            count = None
        if count != len(missing):
            got = f"{count} vectors" if count is not None else type(fresh).__name__
            raise ValueError(
                f"Embeddings {name!r} returned {got} for {len(missing)} texts; embed() must "
                f"return one vector (a list of numbers) per text"
            )
        for i, vector in zip(missing, fresh, strict=True):
            try:
                floats = [float(x) for x in vector]
            except (TypeError, ValueError):
                raise ValueError(
                    f"Embeddings {name!r} returned a vector that is not a flat list of "
                    f"numbers: {str(vector)[:80]}"
                ) from None
            vectors[i] = floats
            if use_cache:
                _put(keys[i], "embed", name, _encode_vector(floats))
    ctx = current_item()
    if ctx is not None:
        ctx.add_judge_call(usage, cached=not missing, retries=retries, model=name)
    return [v for v in vectors if v is not None]


def _embed(embeddings: Embeddings, texts: list[str]) -> tuple[list[list[float]], Usage, int]:
    """The vectors of ``texts``, with usage and retries when the embeddings report them."""
    with_usage = getattr(embeddings, "embed_with_usage", None)
    if with_usage is None:
        return embeddings.embed(texts), Usage(), 0
    result: EmbeddingsResult = with_usage(texts)
    return result.vectors, result.usage, result.retries


def _cacheable(model: Model | Embeddings) -> bool:
    # In-process doubles opt out: their replies are not part of the key.
    return bool(getattr(model, "cacheable", True))


@contextmanager
def _accounting_failures(name: str) -> Iterator[None]:
    """Account a provider call that failed for good (its retries) to the item, then re-raise."""
    try:
        yield
    except ProviderError as exc:
        ctx = current_item()
        if ctx is not None:
            ctx.add_judge_call(Usage(), cached=False, retries=exc.retries, model=name)
        raise


def _digest(kind: str, name: str, payload: str) -> str:
    h = hashlib.sha256()
    for part in (_KEY_VERSION, kind, name, payload):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def _account(name: str, response: ModelResponse) -> None:
    # The configured name, not response.model (the provider's dated snapshot name, such as
    # claude-3-5-haiku-20241022): price tables are keyed by the names users configure.
    ctx = current_item()
    if ctx is not None:
        ctx.add_judge_call(
            response.usage, cached=response.cached, retries=response.retries, model=name
        )


def _lookup(key: str, validate: Validator | None) -> ModelResponse | None:
    if not cache_settings().enabled:
        return None
    raw = _get(key)
    if raw is None:
        return None
    try:
        response = ModelResponse.model_validate_json(raw)
    except ValidationError:
        log.warning("ignoring an unreadable cache entry %s", key)
        return None
    if validate is not None and not validate(response):
        return None
    return response.model_copy(update={"cached": True, "retries": 0})


def _store(
    key: str, kind: str, name: str, response: ModelResponse, validate: Validator | None
) -> None:
    if not cache_settings().enabled or (validate is not None and not validate(response)):
        return
    clean = response.model_copy(update={"cached": False, "retries": 0}).model_dump_json()
    from .._redact import Redactor

    if Redactor.from_environ().in_json(clean):  # a secret never reaches the disk
        return  # (masked, a replay would differ from the reply: it is asked again instead)
    _put(key, kind, name, clean)


def _encode_vector(vector: list[float]) -> str:
    return "[" + ",".join(repr(x) for x in vector) + "]"


def _decode_vector(raw: str | None) -> list[float] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(x, (int, float)) for x in value):
        return None
    return [float(x) for x in value]


def _open(path: Path) -> sqlite3.Connection:
    """A new connection to ``path``, the file created and in WAL mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ignore = path.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# agenteval response cache\n*\n", encoding="utf-8")
    # Autocommit: each statement is its own short transaction, so writers from many
    # processes hold the write lock only for the length of one INSERT.
    conn = sqlite3.connect(
        path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    try:
        # Several processes creating the file at once can see "locked" here even with the
        # busy timeout; journal_mode is stored in the file, so this settles quickly.
        for attempt in range(20):
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_SCHEMA)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def _connection(path: Path) -> Iterator[sqlite3.Connection]:
    """This process's connection to ``path`` (opened on first use), held exclusively."""
    global _pid
    with _lock:
        if os.getpid() != _pid:
            # Forked without os.fork's hooks (so _before_fork did not run): never use or
            # close a connection inherited from the parent; keep it referenced instead.
            _abandoned.extend(_connections.values())
            _connections.clear()
            _pid = os.getpid()
        conn = _connections.get(path)
        if conn is None:
            conn = _connections[path] = _open(path)
        yield conn


def _close_all() -> None:
    for conn in _connections.values():
        conn.close()
    _connections.clear()


def _before_fork() -> None:
    # No connection may cross a fork (SQLite's rule), so the parent closes its own and
    # reopens on next use; holding the lock keeps other threads out meanwhile.
    _lock.acquire()
    _close_all()


def _after_fork_in_parent() -> None:
    _lock.release()


def _after_fork_in_child() -> None:
    global _lock, _pid
    _lock = threading.Lock()
    _pid = os.getpid()


def close_connections() -> None:
    """Close this process's cache connections (they reopen on next use)."""
    with _lock:
        _close_all()


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)
atexit.register(close_connections)


def _get(key: str) -> str | None:
    path = cache_settings().path
    if not path.exists():
        return None
    try:
        with _connection(path) as conn:
            row = conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
    except (sqlite3.Error, OSError) as exc:
        _drop(path)
        if not _set_aside(path, exc):
            _bypassing(path, "read", exc)
        return None
    return None if row is None else str(row[0])


def _put(key: str, kind: str, name: str, value: str) -> None:
    path = cache_settings().path
    try:
        with _connection(path) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO responses (key, kind, model, value, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, kind, name, value, time.time()),
            )
    except (sqlite3.Error, OSError) as exc:
        _drop(path)
        if not _set_aside(path, exc):
            _bypassing(path, "written", exc)


_warned: set[tuple[Path, str, str]] = set()


def _bypassing(path: Path, done: str, exc: BaseException) -> None:
    """Warn that the cache is bypassed, once per process for each way it failed (every
    judge call of a run against a broken cache would say it again)."""
    said = (path, done, str(exc))
    level = logging.DEBUG if said in _warned else logging.WARNING
    _warned.add(said)
    log.log(level, "response cache %s could not be %s, bypassing it: %s", path, done, exc)


def _set_aside(path: Path, exc: BaseException) -> bool:
    """Move a cache file that is no database (damaged, or cut short: one restored from an
    earlier CI job, say) out of the way, so that the next call starts a new one, rather
    than every call of every later run bypassing it; whether it was. A cache that is
    locked or read-only (``OperationalError``) may be sound: it is kept."""
    if type(exc) is not sqlite3.DatabaseError:
        return False
    try:
        for part in (path, *(path.with_name(f"{path.name}-{end}") for end in ("wal", "shm"))):
            if part.exists():
                part.replace(part.with_name(part.name + ".damaged"))
    except OSError:
        return False
    log.warning(
        "response cache %s was damaged (%s): set aside as %s.damaged; a new one is started",
        path,
        exc,
        path.name,
    )
    return True


def _drop(path: Path) -> None:
    """Forget (and close) the connection to ``path`` after an error, to retry afresh."""
    with _lock:
        conn = _connections.pop(path, None)
        if conn is not None:
            conn.close()
