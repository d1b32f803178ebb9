"""Token usage, shared by trajectories, model responses and reports."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """Token counts reported by a provider for one call, a turn, or a whole run.

    Add usages with ``+``; ``total`` is input plus output tokens.
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @classmethod
    def sum(cls, usages: Iterable[Usage]) -> Usage:
        """The total of many usages."""
        i = o = r = w = 0
        for u in usages:
            i += u.input_tokens
            o += u.output_tokens
            r += u.cache_read_tokens
            w += u.cache_write_tokens
        return cls(input_tokens=i, output_tokens=o, cache_read_tokens=r, cache_write_tokens=w)

    def __bool__(self) -> bool:
        return bool(
            self.input_tokens
            or self.output_tokens
            or self.cache_read_tokens
            or self.cache_write_tokens
        )


ZERO_USAGE = Usage()
"""No tokens: the shared default (usages are frozen)."""
