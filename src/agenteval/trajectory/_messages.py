"""The neutral message model shared by models, agents, conversations and trajectories."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._usage import Usage

Role = Literal["system", "user", "assistant", "tool"]

INVALID_JSON = "_invalid_json_arguments"
"""The one input of a tool call whose arguments were not valid JSON: the raw text."""


def json_arguments(raw: str) -> dict[str, Any]:
    """A tool call's inputs from its JSON ``arguments`` text. Models sometimes emit invalid
    JSON, or JSON that is no object: kept visible (``{INVALID_JSON: raw}``, ``{"_arguments":
    value}``) rather than failing the call."""
    import json

    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {INVALID_JSON: raw}
    return value if isinstance(value, dict) else {"_arguments": value}


ApprovalState = Literal["pending", "approved", "rejected"]


class ToolCall(BaseModel):
    """One tool call an assistant made, with its outcome once known.

    ``approval`` is ``None`` for tools that need no approval; otherwise the human decision
    (``pending`` until made) and ``approval_reason`` the reason given with a rejection.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    is_error: bool = False
    approval: ApprovalState | None = None
    approval_reason: str | None = None


class Message(BaseModel):
    """One message of a conversation.

    An assistant message may carry ``tool_calls``; a ``tool`` message carries the result of
    the call named by ``tool_call_id`` in ``content`` (``is_error`` when the tool failed).
    """

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    is_error: bool = False
    usage: Usage | None = None

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls,
        content: str = "",
        tool_calls: list[ToolCall] | None = None,
        usage: Usage | None = None,
    ) -> Message:
        """An assistant message, optionally with tool calls and token usage."""
        return cls(role="assistant", content=content, tool_calls=tool_calls or [], usage=usage)

    @classmethod
    def tool(cls, tool_call_id: str, content: str, is_error: bool = False) -> Message:
        """The result of a tool call."""
        return cls(role="tool", content=content, tool_call_id=tool_call_id, is_error=is_error)
