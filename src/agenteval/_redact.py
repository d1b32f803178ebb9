"""Redacting secret values (API keys, tokens) found in the environment, by value."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any

from . import _lessons

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|WEBHOOK)", re.I)
_URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:([^@\s/]+)@", re.I)
"""The password of a URL with credentials (``postgres://app:PASSWORD@db/app``)."""
SHORTEST_SECRET = 8
"""Shortest secret masked (a password in a URL, say): shorter ones are common words."""
_MIN_HANDED = 16
"""Shortest key handed in code that is masked: a local server's dummy key ("anything",
"ollama", "EMPTY") is no secret, and masking it would garble outputs."""
MASK = "[REDACTED]"


def secret_name(name: str) -> bool:
    """Whether a variable or parameter of this name holds a secret by the look of it."""
    return _SECRET_NAME.search(name) is not None


_HANDED: list[str] = []
"""Secrets handed to agenteval in code (``api_key=...``, a password in a ``base_url``), in
this process: redacted like those of the environment, by every Redactor."""


def remember(secret: str | None, shortest: int = _MIN_HANDED) -> None:
    """Redact ``secret`` (of ``shortest`` characters or more) wherever a report, record or
    error would show it — also in the process a forked item's process reports to."""
    if secret and len(secret) >= shortest and secret not in _HANDED:
        _HANDED.append(secret)
        _lessons.learned(_LESSON, secret)


_LESSON = "secret"


def _taught(secret: object) -> None:
    if isinstance(secret, str):
        remember(secret, SHORTEST_SECRET)  # (the child chose it)


class Redactor:
    """Replaces every occurrence of known secret values with ``[REDACTED]``: its own, and
    those handed to agenteval in code (:func:`remember`), also after it was made."""

    def __init__(self, secrets: list[str]) -> None:
        self._own = {s for s in secrets if len(s) >= SHORTEST_SECRET}
        self._handed = -1  # how many of _HANDED ``secrets`` holds
        self._secrets: list[str] = []
        self._in_json: list[str] = []

    @property
    def secrets(self) -> list[str]:
        """Every secret, longest first (one inside another is masked whole)."""
        return self._current()[0]

    def _current(self) -> tuple[list[str], list[str]]:
        """The secrets, and each as JSON text holds it (a quote or a backslash escaped)."""
        if self._handed != len(_HANDED):
            self._handed = len(_HANDED)
            self._secrets = sorted(self._own.union(_HANDED), key=len, reverse=True)
            self._in_json = [json.dumps(s, ensure_ascii=False)[1:-1] for s in self._secrets]
        return self._secrets, self._in_json

    def in_json(self, text: str) -> bool:
        """Whether JSON ``text`` holds a secret."""
        return any(secret in text for secret in self._current()[1])

    def json(self, text: str) -> str:
        """JSON ``text`` with every secret in it masked, the text staying valid JSON."""
        for secret in self._current()[1]:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        """Secrets are the values of variables whose names look like keys or tokens, and
        the passwords of URLs in any variable (``DATABASE_URL``, a DSN)."""
        from urllib.parse import unquote

        env = os.environ if environ is None else environ
        secrets = [v for k, v in env.items() if secret_name(k)]
        for value in env.values():
            for password in _URL_PASSWORD.findall(value):
                secrets.extend((password, unquote(password)))
        return cls(secrets)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def values(self, data: Any) -> Any:
        """JSON-like ``data`` with every text in it masked, keys included."""
        if isinstance(data, str):
            return self(data)
        if isinstance(data, dict):
            return {self(key): self.values(value) for key, value in data.items()}
        if isinstance(data, list):
            return [self.values(value) for value in data]
        return data

    def __bool__(self) -> bool:
        return bool(self.secrets)


class RedactingStream:
    """Stands in for ``sys.stdout`` or ``sys.stderr`` while items run in agenteval's
    process: what they print reaches the console with every secret masked, as their
    records do. (A secret split across two writes is not seen; bytes written to
    ``sys.stdout.buffer``, and what a subprocess writes to the descriptor, do not pass
    here.)"""

    def __init__(self, stream: Any, redact: Redactor) -> None:
        self.proxied = stream
        self._redact = redact

    def write(self, text: str) -> int:
        if isinstance(text, str):
            try:
                self.proxied.write(self._redact(text))
            except BrokenPipeError:  # (``agenteval run ... | head``: not the item's fault)
                self._reader_gone()
            return len(text)
        return int(self.proxied.write(text))  # (the stream's own error for bytes)

    def flush(self) -> None:
        try:
            self.proxied.flush()
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        """Whoever read the stream went away: what items print from now on goes nowhere,
        as the console's own lines do, rather than failing the items."""
        to_devnull(self.proxied)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding, ...
        return getattr(self.proxied, name)


def to_devnull(stream: Any) -> None:
    """Point ``stream``'s descriptor at /dev/null: its reader went away (``agenteval run ...
    | head``), and what is still written (or buffered, flushed at exit) must not fail."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


handed = Redactor([])
"""Masks the secrets handed to agenteval in code alone (a forked child's records)."""

_lessons.taught_by(_LESSON, _taught)
