"""API keys and fork-safe, lazily built SDK clients shared by the provider models."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from .._errors import ConfigError

NO_KEY = "agenteval-no-key"
"""Sent to an explicit ``base_url`` when no key is configured: local servers need none."""


class _Closable(Protocol):
    def close(self) -> object: ...


C = TypeVar("C", bound=_Closable)


def resolve_api_key(api_key: str | None, env_var: str, owner: str, base_url: str | None) -> str:
    """The key to use: the argument, else ``env_var``, else a dummy one for a custom server.

    Raises:
        ConfigError: no key is available and no ``base_url`` was given.
    """
    key = api_key or os.environ.get(env_var)
    if key:
        return key
    if base_url:
        return NO_KEY
    raise ConfigError(f"No API key for {owner}: set {env_var} or pass api_key=")


class ForkSafeClient(Generic[C]):
    """Builds an SDK client on first use and again in every forked child.

    The parallel executor forks one child per item after ``set_up`` built (and maybe used)
    the model; a child must not share the parent's connection pool, so a client is only
    reused by the process that built it.
    """

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._client: C | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        _ALL.add(self)

    @property
    def pid(self) -> int | None:
        """The process the current client was built in (``None`` before the first use)."""
        return self._pid if self._client is not None else None

    def get(self) -> C:
        """The client for this process, built if needed."""
        pid = os.getpid()
        if pid != self._pid:
            # A forked child: the lock may have been held at fork time, and the parent's
            # client (its sockets) belongs to the parent. Drop both without closing them.
            self._lock = threading.Lock()
            self._client = None
            self._pid = pid
        with self._lock:
            if self._client is None:
                self._client = self._factory()
            return self._client

    def close(self) -> None:
        """Close the client if this process built one."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and self._pid == os.getpid():
            client.close()


_ALL: weakref.WeakSet[ForkSafeClient[Any]] = weakref.WeakSet()

_LAZY = ("chat.completions", "messages", "embeddings")
"""What the SDKs import on first use: each forked child would import it again."""


def warm_for_fork() -> None:
    """Before items are forked: build each model's client here once and touch what its SDK
    imports on first use, so that every child inherits it all instead of importing it again
    (about 0.15 s of CPU per child and SDK). The children still build clients of their own
    (``ForkSafeClient``); building one opens no connection."""
    sdks = set()
    for clients in list(_ALL):
        try:
            client: Any = clients.get()
            sdks.add(_sdk(type(client)))
            for path in _LAZY:
                part: Any = client
                for name in path.split("."):
                    part = getattr(part, name, None)
        except Exception:  # a model that cannot build its client: its own call will say so
            continue
    for sdk in sdks:
        _complete_models(sdk)


def _complete_models(sdk: Any) -> None:
    """Build the response models the SDK defers (pydantic's ``defer_build``): all of them
    take about 0.1 s, once, where each child would build those it meets."""
    import pydantic

    for package in (
        getattr(sdk, "types", None),
        getattr(getattr(sdk, "types", None), "chat", None),
    ):
        for value in list(vars(package).values()) if package is not None else ():
            if (
                isinstance(value, type)
                and issubclass(value, pydantic.BaseModel)
                and not value.__pydantic_complete__
            ):
                with contextlib.suppress(Exception):
                    value.model_rebuild()


class SdkClients:
    """What every SDK-backed model shares: building clients, closing, pickling.

    Subclasses set ``_client_class`` (and ``_async_client_class`` when they have an async
    path), ``_api_key``, ``_base_url``, ``_timeout`` and ``_clients = ForkSafeClient(
    self._new_client)``. SDK retries are always off: agenteval owns retries.
    """

    _client_class: Any
    _async_client_class: Any
    _api_key: str
    _base_url: str | None
    _timeout: float
    _clients: ForkSafeClient[Any]

    def close(self) -> None:
        """Close the HTTP connections of this process's client."""
        self._clients.close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_clients")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clients = ForkSafeClient(self._new_client)

    def _client_options(self) -> dict[str, Any]:
        return {
            "api_key": self._api_key,
            "base_url": self._base_url,
            "timeout": self._timeout,
            "max_retries": 0,
        }

    def _new_client(self) -> Any:
        http = _sdk(self._client_class).DefaultHttpxClient(verify=shared_ssl_context())
        return self._client_class(**self._client_options(), http_client=http)

    def _new_async_client(self) -> Any:
        http = _sdk(self._async_client_class).DefaultAsyncHttpxClient(verify=shared_ssl_context())
        return self._async_client_class(**self._client_options(), http_client=http)


def _sdk(client_class: type) -> Any:
    """The SDK package a client class comes from (``openai``, ``anthropic``)."""
    return sys.modules[client_class.__module__.partition(".")[0]]


_ssl_context: Any = None


def shared_ssl_context() -> Any:
    """One TLS context for every client this process (and the children it forks) builds.

    Building one loads the certificate bundle, about 40 ms of CPU: per client, that is
    paid by each async call (a client per call, since clients belong to an event loop) and
    by each forked child's first call, which on a fast provider is most of an item's cost.
    The context holds settings and certificates only, no connection, so children can share
    the one they inherit.
    """
    global _ssl_context
    if _ssl_context is None:  # (no lock: one a forked child inherited held could never go)
        import httpx

        make = getattr(httpx, "create_ssl_context", None)
        if make is not None:  # httpx 0.28+: its own default, SSL_CERT_FILE included
            _ssl_context = make()
        else:
            import ssl

            import certifi

            _ssl_context = ssl.create_default_context(cafile=certifi.where())
    return _ssl_context
