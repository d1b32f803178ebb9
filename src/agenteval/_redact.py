"""Redacting secret values (API keys, tokens) found in the environment, by value."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.I)
_MIN_LEN = 8
MASK = "[REDACTED]"


class Redactor:
    """Replaces every occurrence of known secret values with ``[REDACTED]``."""

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= _MIN_LEN}, key=len, reverse=True)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        """Secrets are the values of variables whose names look like keys or tokens."""
        env = os.environ if environ is None else environ
        return cls([v for k, v in env.items() if _SECRET_NAME.search(k)])

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __bool__(self) -> bool:
        return bool(self.secrets)
