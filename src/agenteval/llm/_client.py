"""API keys and fork-safe, lazily built SDK clients shared by the provider models."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .. import _loops
from .._errors import ConfigError
from .._redact import remember

if TYPE_CHECKING:
    from ._retry import RetryPolicy

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
        remember(key)  # (from the environment it would be masked anyway)
        return key
    if base_url:
        return NO_KEY
    raise ConfigError(f"No API key for {owner}: set {env_var} or pass api_key=")


def resolve_base_url(base_url: str | None, env_var: str, owner: str) -> str | None:
    """The server to call: ``base_url``, else ``env_var``, else ``None`` for the provider's
    own. An empty ``env_var`` is unset (the SDK would take it for a URL, and fail every
    call), and a URL without ``http://`` or ``https://`` fails here rather than at each call.

    Raises:
        ConfigError: the URL is not an ``http://`` or ``https://`` URL with a host.
    """
    from urllib.parse import urlsplit

    url = base_url or os.environ.get(env_var, "").strip() or None
    if url is None:
        return None
    where = f"{owner}(base_url={url!r})" if base_url else f"{env_var}={url!r}"
    if not url.lower().startswith(("http://", "https://")):
        raise ConfigError(
            f"{where} does not start with http:// or https://: write the whole URL, like "
            f"'http://{url.split('://', 1)[-1]}'"
        )
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ConfigError(f"{where} has a space or a control character in it: remove it")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises for a port that is not a number)
        (parts.hostname or "").encode("idna")  # (raises for an empty label, as in 'a..b')
    except (UnicodeError, ValueError) as exc:
        raise ConfigError(f"{where} is not a valid URL ({exc}): check the host and port") from None
    if not parts.hostname:
        raise ConfigError(f"{where} names no host: write it like 'http://localhost:8000/v1'")
    return url


def shown_url(url: str) -> str:
    """``url`` as a model's name shows it: without a user and password, and with the values
    of query parameters that look like secrets (``?api-key=...``) masked. Those secrets are
    remembered, so that an error that quotes the whole URL is masked too."""
    from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

    from .._redact import MASK, SHORTEST_SECRET, secret_name

    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, netloc = netloc.rpartition("@")
        for secret in userinfo.split(":", 1):  # a password, or a token as the user name
            remember(secret, SHORTEST_SECRET)
            remember(unquote(secret), SHORTEST_SECRET)
    shown = []
    for pair in parts.query.split("&") if parts.query else []:
        name, equals, value = pair.partition("=")
        if equals and secret_name(unquote_plus(name)):
            remember(value, SHORTEST_SECRET)  # as it is written, and as it is meant
            remember(unquote_plus(value), SHORTEST_SECRET)
            value = MASK
        shown.append(f"{name}{equals}{value}")
    return urlunsplit(parts._replace(netloc=netloc, query="&".join(shown)))


def openai_name(model: str, base_url: str | None) -> str:
    """The name of a model of OpenAI's API: ``"openai:<model>"``, or on another server
    ``"openai-compatible:<model>@<base_url>"``."""
    return f"openai-compatible:{model}@{shown_url(base_url)}" if base_url else f"openai:{model}"


class ForkSafeClient(Generic[C]):
    """Builds an SDK client on first use and again in every forked child.

    The parallel executor forks one child per item after ``set_up`` built (and maybe used)
    the model; a child must not share the parent's connection pool, so a client is only
    reused by the process that built it.
    """

    def __init__(self, factory: Callable[[], C]) -> None:
        self.factory = factory
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
                self._client = self.factory()
            return self._client

    def close(self) -> None:
        """Close the client if this process built one."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and self._pid == os.getpid():
            client.close()


_ALL: weakref.WeakSet[ForkSafeClient[Any]] = weakref.WeakSet()


def warm_for_fork(asynchronous: bool = False) -> list[str]:
    """Before items are forked: rehearse here the calls the items' models will make (the
    async ones for an async evaluator; ``llm/_rehearsal``), so that every child inherits
    what the SDK loads, caches and builds on its first calls instead of doing it all
    again. The children still build clients of their own (``ForkSafeClient``).

    Returns a notice for each model class whose rehearsal failed."""
    from ._rehearsal import Failure, rehearse

    models = [getattr(clients.factory, "__self__", None) for clients in list(_ALL)]
    outcome = rehearse([model for model in models if isinstance(model, SdkClients)], asynchronous)
    return [
        f"the rehearsal of {name}'s calls before forking failed ({why}): each item's "
        f"process makes its first model call cold, which costs it more CPU (results are "
        f"not affected; AGENTEVAL_REHEARSAL=0 turns rehearsals off)"
        for name, why in outcome.items()
        if isinstance(why, Failure)
    ]


class SdkClients:
    """What every SDK-backed model shares: building clients, closing, pickling.

    Subclasses set ``_client_class`` (and ``_async_client_class`` when they have an async
    path), ``_api_key``, ``_base_url``, ``_timeout``, ``_retry`` and ``_clients =
    ForkSafeClient(self._new_client)``. SDK retries are always off: agenteval owns retries.
    """

    _client_class: Any
    _async_client_class: Any
    _api_key: str
    _base_url: str | None  # None: the provider's own, ``_default_base_url``
    _default_base_url: str
    _timeout: float
    _clients: ForkSafeClient[Any]
    _retry: RetryPolicy
    _sdk_name: str  # the SDK's package: "openai", "anthropic"
    _name: str  # set by the constructor (see ``name``)
    _trust_env = True  # False for a rehearsal: no proxy between it and 127.0.0.1

    @property
    def name(self) -> str:
        """``"anthropic:<model>"``, ``"openai:<model>"``, or on another server than the
        provider's own ``"anthropic:<model>@<base_url>"`` / ``"openai-compatible:<model>@
        <base_url>"`` (no credentials shown): reports name the model so, price tables key
        it so, and its cached replies are its own."""
        return self._name

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
        remember(self._api_key)  # masked in the process it was unpickled in, too

    def _client_options(self) -> dict[str, Any]:
        return {
            "api_key": self._api_key,
            # always given: the SDK would read an empty *_BASE_URL variable as the URL ""
            "base_url": self._base_url or self._default_base_url,
            "timeout": self._timeout,
            "max_retries": 0,
        }

    def _new_client(self) -> Any:
        http = _sdk(self._client_class).DefaultHttpxClient(
            verify=shared_ssl_context(), trust_env=self._trust_env
        )
        return self._client_class(**self._client_options(), http_client=http)

    def _async_client(self) -> _CallClient:
        """The async client for one call (``async with``): on a loop agenteval runs, one
        this model shares with other calls on that loop; elsewhere one for this call alone
        (see ``agenteval._loops``)."""
        return _CallClient(self)

    def _new_async_client(self) -> Any:
        http = _sdk(self._async_client_class).DefaultAsyncHttpxClient(
            verify=shared_ssl_context(), trust_env=self._trust_env
        )
        return self._async_client_class(**self._client_options(), http_client=http)

    def _twin(self, server: str) -> SdkClients:
        """A model of agenteval's own class with this one's settings, sent to ``server``
        with a dummy key and no retries: what a rehearsal calls (``llm/_rehearsal``)."""
        raise NotImplementedError

    def _rehearse(self, asynchronous: bool) -> None:
        """Make the calls a rehearsal makes (the async ones if ``asynchronous``)."""
        raise NotImplementedError


SHARED_CALLS = 64
"""Calls in flight on one shared async client at most; more calls get more clients. A
connection pool looks through its connections for each request, so one client for
hundreds of calls costs more CPU per call than a client each, and the SDKs cap a client
at 1,000 connections."""


@dataclass
class _Shared:
    client: Any
    calls: int = 0


_loop_clients: weakref.WeakKeyDictionary[Any, dict[int, tuple[SdkClients, list[_Shared]]]] = (
    weakref.WeakKeyDictionary()
)
"""The async clients shared on each loop agenteval runs, by ``id`` of their model (kept
alive with them, so the id stays its own)."""


class _CallClient:
    """``async with model._async_client() as client``: a shared client, or the call's own."""

    def __init__(self, model: SdkClients) -> None:
        self._model = model
        self._shared: _Shared | None = None
        self._own: Any = None

    async def __aenter__(self) -> Any:
        import asyncio

        loop = asyncio.get_running_loop()
        if not _loops.owned(loop):
            self._own = self._model._new_async_client()
            return self._own
        model = self._model
        pool = _loop_clients.setdefault(loop, {}).setdefault(id(model), (model, []))[1]
        shared = next((s for s in pool if s.calls < SHARED_CALLS), None)
        if shared is None:
            shared = _Shared(model._new_async_client())
            pool.append(shared)
        shared.calls += 1
        self._shared = shared
        return shared.client

    async def __aexit__(self, *exc_info: object) -> None:
        if self._shared is not None:
            self._shared.calls -= 1
        elif self._own is not None:
            await self._own.close()


async def close_loop_clients() -> None:
    """Close the clients shared on the running loop (``agenteval._loops.release``)."""
    import asyncio

    for _, pool in _loop_clients.pop(asyncio.get_running_loop(), {}).values():
        for shared in pool:
            with contextlib.suppress(Exception):  # a connection already gone: no matter
                await shared.client.close()


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
