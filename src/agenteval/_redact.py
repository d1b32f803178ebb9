"""Redacting secret values (API keys, tokens) found in the environment, by value."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.I)
_MIN_LEN = 8
MASK = "[REDACTED]"


def secret_name(name: str) -> bool:
    """Whether a variable or parameter of this name holds a secret by the look of it."""
    return _SECRET_NAME.search(name) is not None


_HANDED: list[str] = []
"""Secrets handed to agenteval in code (``api_key=...``, a password in a ``base_url``), in
this process: redacted like those of the environment, by every Redactor."""


def remember(secret: str | None) -> None:
    """Redact ``secret`` wherever a report, record or error would show it."""
    if secret and len(secret) >= _MIN_LEN and secret not in _HANDED:
        _HANDED.append(secret)


class Redactor:
    """Replaces every occurrence of known secret values with ``[REDACTED]``: its own, and
    those handed to agenteval in code (:func:`remember`), also after it was made."""

    def __init__(self, secrets: list[str]) -> None:
        self._own = {s for s in secrets if len(s) >= _MIN_LEN}
        self._handed = -1  # how many of _HANDED ``secrets`` holds
        self._secrets: list[str] = []

    @property
    def secrets(self) -> list[str]:
        """Every secret, longest first (one inside another is masked whole)."""
        if self._handed != len(_HANDED):
            self._handed = len(_HANDED)
            self._secrets = sorted(self._own.union(_HANDED), key=len, reverse=True)
        return self._secrets

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        """Secrets are the values of variables whose names look like keys or tokens."""
        env = os.environ if environ is None else environ
        return cls([v for k, v in env.items() if secret_name(k)])

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __bool__(self) -> bool:
        return bool(self.secrets)


handed = Redactor([])
"""Masks the secrets handed to agenteval in code alone (a forked child's records)."""
