"""``Trajectory``: what an agent did during a conversation, ready to be asserted on."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agenteval._usage import Usage
from agenteval.trajectory._messages import Message, Role, ToolCall, json_arguments

SCHEMA_VERSION = 1

_OPENAI_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}


class Trajectory(BaseModel):
    """The recorded messages of a conversation, with the questions evaluations ask of them.

    Use it to assert on the *path* an agent took — the tools it called, with which
    arguments, what the approver decided, what it finally said and what it cost — instead
    of its last reply alone. :meth:`Conversation.run
    <agenteval.conversation.Conversation.run>` returns one; build one yourself from any chat
    history with :meth:`from_messages`, :meth:`from_openai` or :meth:`from_anthropic`::

        trajectory = Trajectory.from_openai([
            {"role": "user", "content": "Where is order 123?"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "c1", "type": "function",
                "function": {"name": "search_orders", "arguments": '{"order_id": "123"}'},
            }]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
            {"role": "assistant", "content": "Order 123 has shipped."},
        ])
        trajectory.tool_calls("search_orders")[0].inputs   # {'order_id': '123'}
        trajectory.final_answer()                         # 'Order 123 has shipped.'

    A tool call that appears more than once in the history (the pending snapshot when the
    agent proposed it, then the final outcome) is reported once, the later snapshot's fields
    winning. Two snapshots are one call when they share an id and the first is still
    waiting for its result, or they have the same tool and arguments; a call that reuses
    the id of a finished call with other arguments is a separate call. A trajectory is
    plain JSON (``model_dump_json`` / ``model_validate_json``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    history: list[Message] = Field(default_factory=list)

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def from_messages(cls, messages: Iterable[Message]) -> Trajectory:
        """A trajectory over agenteval's neutral :class:`~agenteval.trajectory.Message` list."""
        history = list(messages)
        for i, message in enumerate(history):
            if not isinstance(message, Message):
                raise TypeError(
                    f"Trajectory.from_messages: item #{i} is a {type(message).__name__}, "
                    f"not a Message: use Trajectory.from_openai or from_anthropic for "
                    f"provider-style dicts"
                )
        return cls(history=history)

    @classmethod
    def from_openai(cls, messages: Iterable[Any]) -> Trajectory:
        """A trajectory from an OpenAI chat-completions message list.

        Assistant messages carry ``tool_calls`` (``function.arguments`` is a JSON string)
        and each result is a ``{"role": "tool", "tool_call_id": ...}`` message. Messages
        may be dicts or SDK objects. OpenAI has no error flag or approval state: an optional
        ``is_error`` key on a tool message, ``approval`` / ``approval_reason`` keys on a tool
        call and a ``usage`` key on an assistant message are read when present. As for
        :class:`~agenteval.llm.OpenAIModel`, the cached part of ``prompt_tokens`` is counted
        as ``cache_read_tokens`` only, not as input tokens too. The legacy
        ``function_call`` and ``{"role": "function", "name": ...}`` result are read too
        (a result goes with the latest call of its function). An assistant message without
        content but with a ``refusal`` has the refusal as its text.
        """
        history: list[Message] = []
        legacy: dict[str, str] = {}  # function name -> the id of its latest function_call
        unnamed: list[str] = []  # the ids given to calls that came without one, unanswered
        for i, m in enumerate(messages):
            raw = _plain(m)
            if isinstance(raw, Mapping) and raw.get("role") == "function":
                name = raw.get("name")
                if name not in legacy:
                    raise ValueError(
                        f"Trajectory.from_openai: message #{i} is the result of function "
                        f"{name!r}, which no earlier function_call called"
                    )
                where = f"Trajectory.from_openai: message #{i}"
                history.append(Message.tool(legacy[name], _parts_text(raw.get("content"), where)))
                continue
            message = _from_openai(raw, i)
            if message.role == "tool" and not message.tool_call_id and unnamed:
                # a result without the id its call lacked too: the first such call's
                message = message.model_copy(update={"tool_call_id": unnamed.pop(0)})
            legacy.update({c.name: c.id for c in message.tool_calls if c.id.endswith("_function")})
            unnamed.extend(  # (given the id _from_openai makes for a call without one)
                c.id for j, c in enumerate(message.tool_calls) if c.id == f"call_{i}_{j}"
            )
            history.append(message)
        return cls(history=history)

    @classmethod
    def from_anthropic(cls, messages: Iterable[Any], system: str | None = None) -> Trajectory:
        """A trajectory from an Anthropic Messages API message list.

        Assistant content blocks ``tool_use`` become tool calls; ``tool_result`` blocks in
        user messages become tool results (``is_error`` kept). Server tools
        (``server_tool_use`` and its ``web_search_tool_result``, in the assistant's message)
        are tool calls too; the assistant's text blocks are joined as they are. ``system`` (given to the API
        separately) becomes a leading system message. Messages may be dicts or SDK objects;
        an optional ``usage`` key on an assistant message and ``approval`` /
        ``approval_reason`` keys on a ``tool_use`` block are read when present.
        """
        history: list[Message] = []
        if system:
            history.append(Message(role="system", content=system))
        for i, message in enumerate(messages):
            history.extend(_from_anthropic(_plain(message), i))
        return cls(history=history)

    # -- questions --------------------------------------------------------------------------

    def messages(self) -> list[Message]:
        """The underlying messages, in order and at full fidelity (a new list)."""
        return list(self.history)

    def tool_calls(self, name: str | None = None) -> list[ToolCall]:
        """Every tool call in execution order, merged with its result; optionally one tool's."""
        calls = _merge(self.history).calls
        if name is None:
            return calls
        return [call for call in calls if call.name == name]

    def last_tool_call(self, name: str | None = None) -> ToolCall | None:
        """The most recent tool call (of tool ``name`` if given), or ``None``."""
        calls = self.tool_calls(name)
        return calls[-1] if calls else None

    def final_answer(self) -> str:
        """The text of the agent's last message; ``''`` if there is none.

        A conversation that ended waiting for approval, or on a bare tool call, has no
        final answer: its last assistant message carries no text, or proposes a call still
        waiting for its approval (whatever it says, "Your refund has been issued.", did not
        happen yet).
        """
        for message in reversed(self.history):
            if message.role == "assistant":
                if any(call.approval == "pending" for call in message.tool_calls):
                    return ""
                return message.content
        return ""

    def user_messages(self) -> list[Message]:
        """The user side of the conversation (tool results are not user messages)."""
        return [m for m in self.history if m.role == "user"]

    def assistant_messages(self) -> list[Message]:
        """The agent's messages, including snapshots that only repeat earlier tool calls."""
        return [m for m in self.history if m.role == "assistant"]

    def step_count(self) -> int:
        """Number of agent steps: assistant messages, each one model call.

        A message that only repeats tool calls already seen (the final snapshot of a call
        recorded after its pending one: no text, no usage, every call merged into an earlier
        one) is not a new step.
        """
        return len(self._steps())

    def _steps(self) -> list[Message]:
        merged = _merge(self.history)
        return [
            message
            for i, message in enumerate(self.history)
            if message.role == "assistant" and not merged.only_repeats(i, message)
        ]

    def usage(self) -> Usage:
        """Token usage of the whole conversation: the sum over every message that has one."""
        total = Usage()
        for message in self.history:
            if message.usage is not None:
                total = total + message.usage
        return total

    def steps_without_usage(self) -> int:
        """How many agent steps (see :meth:`step_count`) record no token usage."""
        return sum(1 for message in self._steps() if message.usage is None)

    def turns(self) -> list[Turn]:
        """The conversation split into user turns, each with its own slice of messages.

        A turn starts at a user message and runs until the next one; messages before the
        first user message (a system prompt) belong to no turn.
        """
        starts = [i for i, m in enumerate(self.history) if m.role == "user"]
        out: list[Turn] = []
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(self.history)
            out.append(
                Turn(
                    index=n,
                    message=self.history[start].content,
                    trajectory=Trajectory(history=self.history[start:end]),
                )
            )
        return out

    def with_digested_payloads(self) -> Trajectory:
        """A copy whose tool payloads are digests: for traces that must not store them verbatim.

        Every tool call's arguments and result, and every tool message's content, become
        ``{"sha256": ..., "bytes": ..., "shape": ...}`` (the shape shows keys and types, never
        values). Tool names, call ids and order, error flags and approval decisions stay in
        the clear, so the trajectory assertions that need no argument values still work.
        """
        history = []
        for message in self.history:
            update: dict[str, Any] = {}
            if message.tool_calls:
                update["tool_calls"] = [
                    call.model_copy(
                        update={
                            "inputs": {"_digest": _digest(call.inputs)},
                            "result": None if call.result is None else _digest(call.result),
                        }
                    )
                    for call in message.tool_calls
                ]
            if message.role == "tool":
                update["content"] = json.dumps(_digest(message.content), sort_keys=True)
            history.append(message.model_copy(update=update) if update else message)
        return Trajectory(history=history)

    def to_transcript(self) -> str:
        """The conversation as readable text: what LLM judges read.

        Lists every turn, each tool call with its arguments, the approver's decision with its
        reason, and each tool result (marked when it is an error).
        """
        merged = _merge(self.history)
        answered = set(merged.result_of.values())
        shown: set[int] = set()
        lines: list[str] = []
        for i, message in enumerate(self.history):
            if message.role == "tool":
                k = merged.result_of.get(i)
                name = "unknown tool" if k is None else merged.calls[k].name
                label = "Tool error" if message.is_error else "Tool result"
                lines.append(f"{label} [{name}]: {message.content}")
                continue
            if message.role != "assistant":
                lines.append(f"{message.role.capitalize()}: {message.content}")
                continue
            if message.content or not message.tool_calls:
                lines.append(f"Assistant: {message.content}")
            for j in range(len(message.tool_calls)):
                k = merged.snapshot_of[(i, j)]
                if k in shown:  # a later snapshot of a call already shown, merged
                    continue
                shown.add(k)
                call = merged.calls[k]
                lines.append(f"Tool call [{call.name}] {_json(call.inputs)}")
                if call.approval is not None:
                    reason = f" (reason: {call.approval_reason})" if call.approval_reason else ""
                    lines.append(f"Approval [{call.name}]: {call.approval}{reason}")
                if k not in answered and call.result is not None:
                    label = "Tool error" if call.is_error else "Tool result"
                    lines.append(f"{label} [{call.name}]: {_text(call.result)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Turn:
    """One user turn and everything the agent did in response to it.

    ``index`` counts from 0, ``message`` is the text the user sent and ``trajectory`` the
    turn's own slice of the conversation (starting with that user message).
    """

    index: int
    message: str
    trajectory: Trajectory

    def reply(self) -> str:
        """The agent's last reply in this turn (``''`` if it gave none)."""
        return self.trajectory.final_answer()

    def tool_calls(self, name: str | None = None) -> list[ToolCall]:
        """The tool calls made during this turn."""
        return self.trajectory.tool_calls(name)


def as_trajectory(value: object) -> Trajectory | None:
    """``value`` as a :class:`Trajectory` when it holds a conversation, else ``None``.

    Accepts a ``Trajectory``; an object with a ``to_trajectory()`` method returning one
    (the hook for your own result objects); anything with a callable ``messages()``
    (a :class:`~agenteval.agents.ToolAgent`, any
    :class:`~agenteval.conversation.ConversationalAgent`, a
    :class:`~agenteval.conversation.Conversation`) or a ``messages`` list attribute (a
    stored chat record); a message list — of :class:`~agenteval.trajectory.Message`, or of
    OpenAI-style or Anthropic-style dicts, whose style is detected (see
    :meth:`Trajectory.from_openai` and :meth:`Trajectory.from_anthropic`); one message
    alone (which holds only its own tool calls); or the JSON form of a trajectory (a dict
    with ``history``). Strings are text, never paths: they give ``None``, as does anything
    it cannot convert (a list mixing both styles, a malformed message). The conversation is
    read as it stands — nothing is run or continued.

    Example::

        history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}]
        as_trajectory(history).final_answer()   # 'hey'
    """
    if isinstance(value, Trajectory):
        return value
    if value is None or isinstance(value, (str, bytes, bytearray, int, float, bool, type)):
        return None
    to_trajectory = getattr(value, "to_trajectory", None)
    if callable(to_trajectory):
        converted = to_trajectory()
        return converted if isinstance(converted, Trajectory) else None
    if isinstance(value, Message):
        # A message alone: only its own tool calls, not the rest of its conversation.
        return Trajectory(history=[value])
    if isinstance(value, (list, tuple)):
        return _from_message_list(value)
    if isinstance(value, Mapping):
        if "history" not in value:
            return None
        try:
            return Trajectory.model_validate(value)
        except ValidationError:
            return None
    messages = getattr(value, "messages", None)
    produced = messages() if callable(messages) else messages
    if isinstance(produced, Trajectory):
        return produced
    if isinstance(produced, (list, tuple)):
        return _from_message_list(produced)
    return None


def _from_message_list(values: Sequence[object]) -> Trajectory | None:
    if all(isinstance(v, Message) for v in values):
        return Trajectory(history=[v for v in values if isinstance(v, Message)])
    if any(isinstance(v, Message) for v in values):
        return None
    read = _read_provider_messages(values)
    return read if isinstance(read, Trajectory) else None


def unreadable_message_list(value: object) -> str | None:
    """Why ``value``, a list of provider-style message dicts, could not be read as a
    conversation; ``None`` when it is no such list, or was read."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    read = _read_provider_messages(value)
    return read if isinstance(read, str) else None


def _read_provider_messages(values: Sequence[object]) -> Trajectory | str | None:
    """A list of OpenAI- or Anthropic-style message dicts as a trajectory; why not (a
    message that is malformed, a mix of styles); or None, when it is no such list."""
    raw = [_plain(v) for v in values]
    if not all(isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in raw):
        return None
    if all(m.keys() == _MESSAGE_FIELDS for m in raw):  # agenteval's own, dumped
        try:
            return Trajectory(history=[Message.model_validate(m) for m in raw])
        except ValidationError as exc:
            return f"a message of agenteval's own form is malformed: {exc.errors()[0]['msg']}"
    style = _style(raw)
    if style is None:
        return "it mixes OpenAI-style and Anthropic-style messages"
    try:
        return (Trajectory.from_openai if style == "openai" else Trajectory.from_anthropic)(raw)
    except (TypeError, ValueError) as exc:  # a malformed message
        return str(exc)


_MESSAGE_FIELDS = Message.model_fields.keys()


def _style(messages: Sequence[Mapping[str, Any]]) -> Literal["openai", "anthropic"] | None:
    """``"openai"`` or ``"anthropic"`` from the marks only one of them leaves; ``None`` if mixed.

    OpenAI has ``tool`` and ``developer`` roles and ``tool_calls`` keys; Anthropic has
    ``tool_use`` and ``tool_result`` content blocks, and those of the server's own tools
    (``server_tool_use``, ``web_search_tool_result``, ...). A text-only conversation reads
    the same either way.
    """
    openai = anthropic = False
    for message in messages:
        if message.get("role") in ("tool", "developer", "function") or any(
            message.get(key) is not None for key in ("tool_calls", "tool_call_id", "function_call")
        ):
            openai = True
        content = message.get("content")
        if isinstance(content, (list, tuple)):
            kinds = {str(_field(_plain(block), "type")) for block in content}
            anthropic = anthropic or any(
                kind.endswith(("tool_use", "tool_result")) for kind in kinds
            )
    if openai and anthropic:
        return None
    return "anthropic" if anthropic else "openai"


# -- merging ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Merged:
    """The tool calls of a history, and which snapshot and result message belong to which."""

    calls: list[ToolCall]
    first_seen: list[int]  # per call: the index of the message that first showed it
    snapshot_of: dict[tuple[int, int], int]  # (message, position in it) -> call
    result_of: dict[int, int]  # tool message -> call

    def only_repeats(self, i: int, message: Message) -> bool:
        """Whether message ``i`` is a bare snapshot of calls shown earlier, not a model call."""
        return (
            bool(message.tool_calls)
            and not message.content
            and message.usage is None
            and all(
                self.first_seen[self.snapshot_of[(i, j)]] < i
                for j in range(len(message.tool_calls))
            )
        )


def _same_call(earlier: ToolCall, later: ToolCall, result_follows: bool) -> bool:
    """Whether ``later`` is a new snapshot of ``earlier`` (same id), not a new call reusing it.

    A call still waiting for its result may be updated (approved, edited); once it has a
    result, only a snapshot with the same tool and arguments is the same call, and only if
    no result for the id follows (``result_follows``): a call the provider made again
    under the same id gets a result of its own.
    """
    if earlier.result is None:
        return True
    return not result_follows and earlier.name == later.name and earlier.inputs == later.inputs


def _merge(history: Sequence[Message]) -> _Merged:
    """Tool calls in order of first appearance; later snapshots and results of a call win.

    Providers may reuse a call id across turns, so an id alone does not make two snapshots
    one call (see :func:`_same_call`), and calls within one message are always distinct.
    """
    calls: list[ToolCall] = []
    first_seen: list[int] = []
    snapshot_of: dict[tuple[int, int], int] = {}
    result_of: dict[int, int] = {}
    latest: dict[str, int] = {}  # call id -> the most recent call with it
    last_result = {m.tool_call_id: i for i, m in enumerate(history) if m.role == "tool"}
    for i, message in enumerate(history):
        if message.role == "assistant":
            in_message: set[int] = set()
            for j, call in enumerate(message.tool_calls):
                k = latest.get(call.id)
                follows = last_result.get(call.id, -1) > i
                if k is not None and k not in in_message and _same_call(calls[k], call, follows):
                    calls[k] = calls[k].model_copy(update=_said(call))
                else:
                    k = len(calls)
                    calls.append(call)
                    first_seen.append(i)
                    latest[call.id] = k
                in_message.add(k)
                snapshot_of[(i, j)] = k
        elif message.role == "tool" and message.tool_call_id in latest:
            k = latest[message.tool_call_id]
            calls[k] = calls[k].model_copy(
                update={"result": message.content, "is_error": message.is_error}
            )
            result_of[i] = k
    return _Merged(calls, first_seen, snapshot_of, result_of)


def _said(call: ToolCall) -> dict[str, Any]:
    """What a later snapshot of a call says: the fields it sets to other than their
    defaults (a trajectory loaded from JSON sets every field, a decision's ``None`` too,
    which must not undo the decision an earlier snapshot recorded)."""
    fields = ToolCall.model_fields
    return {
        name: value
        for name in call.model_fields_set
        if (value := getattr(call, name)) != fields[name].get_default(call_default_factory=True)
    }


def _digest(value: Any) -> dict[str, Any]:
    import hashlib

    data = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr).encode()
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "shape": _shape(value)}


def _shape(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _shape(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return f"list[{len(value)}]"
    return type(value).__name__


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


# -- provider formats --------------------------------------------------------------------------


def _plain(message: Any) -> Any:
    """An SDK message object (a pydantic model) as a dict; dicts pass through."""
    dump: Callable[..., Any] | None = getattr(message, "model_dump", None)
    if dump is not None and not isinstance(message, Mapping):
        return dump(exclude_none=False)
    return message


def _field(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _usage(raw: Any, where: str) -> Usage | None:
    if raw is None:
        return None
    raw = _plain(raw)
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: 'usage' must be an object, got {raw!r}")

    details = _plain(raw.get("prompt_tokens_details"))
    if not isinstance(details, Mapping):
        details = {}

    measured = False

    def count(source: Mapping[str, Any], *keys: str) -> int:
        nonlocal measured
        for key in keys:
            value = source.get(key)
            if value is None:
                continue
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    f"{where}: usage {key!r} must be a whole number of tokens, got {value!r}"
                )
            measured = True
            return value
        return 0

    cache_read = count(raw, "cache_read_tokens", "cache_read_input_tokens") or count(
        details, "cached_tokens"
    )
    cache_write = count(raw, "cache_write_tokens", "cache_creation_input_tokens") or count(
        details, "cache_write_tokens"
    )
    if "input_tokens" in raw or "prompt_tokens" not in raw:
        input_tokens = count(raw, "input_tokens")
    else:
        # OpenAI's prompt_tokens include the cached ones; the four counts must not overlap.
        input_tokens = max(count(raw, "prompt_tokens") - cache_read - cache_write, 0)
    output_tokens = count(raw, "output_tokens", "completion_tokens")
    if not measured:  # ({}, or counts under names of another library's: unmeasured, not 0)
        return None
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def _parts_text(content: Any, where: str) -> str:
    """Text of a content that is a string, ``None`` or a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            part = _plain(part)
            kind = _field(part, "type")
            if isinstance(part, str):
                texts.append(part)
            elif kind in ("text", "input_text", "output_text"):
                texts.append(str(_field(part, "text", "")))
            elif kind == "refusal":
                texts.append(str(_field(part, "refusal", "")))
            elif kind in ("thinking", "redacted_thinking"):
                continue
            else:
                texts.append(f"[{kind or 'content'}]")
        return "\n".join(t for t in texts if t)
    raise ValueError(f"{where}: 'content' must be a string or a list of parts, got {content!r}")


def _approval(raw: Any) -> dict[str, Any]:
    approval = _field(raw, "approval")
    out: dict[str, Any] = {}
    if approval is not None:
        if approval not in ("pending", "approved", "rejected"):
            raise ValueError(
                f"tool call {_field(raw, 'id')!r}: approval must be 'pending', 'approved' or "
                f"'rejected', got {approval!r}"
            )
        out["approval"] = approval
    reason = _field(raw, "approval_reason")
    if reason is not None:
        out["approval_reason"] = str(reason)
    return out


def _arguments(raw: Any, where: str) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        return json_arguments(raw)  # (as OpenAIModel reads them)
    raise ValueError(f"{where}: 'arguments' must be a JSON string or an object, got {raw!r}")


def _from_openai(raw: Any, i: int) -> Message:
    where = f"Trajectory.from_openai: message #{i}"
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a dict, got {type(raw).__name__}")
    role = _OPENAI_ROLES.get(str(raw.get("role")))
    if role is None:
        raise ValueError(
            f"{where} has role {raw.get('role')!r}: expected system, developer, user, "
            f"assistant, tool or function"
        )
    content = _parts_text(raw.get("content"), where)
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str):
            raise ValueError(f"{where} is a tool result without a 'tool_call_id'")
        return Message.tool(call_id, content, is_error=bool(raw.get("is_error", False)))
    if role != "assistant":
        return Message(role=role, content=content)
    refusal = raw.get("refusal")
    if not content and isinstance(refusal, str):
        content = refusal  # a refusal is what the assistant said (as OpenAIModel reads it)
    calls: list[ToolCall] = []
    for j, call in enumerate(raw.get("tool_calls") or []):
        call = _plain(call)
        function = _plain(_field(call, "function")) or {}
        name = _field(function, "name")
        if not isinstance(name, str):
            raise ValueError(f"{where}, tool call #{j} has no function name")
        fields: dict[str, Any] = {
            "id": str(_field(call, "id") or f"call_{i}_{j}"),
            "name": name,
            "inputs": _arguments(_field(function, "arguments"), f"{where}, tool call #{j}"),
        }
        fields.update(_approval(call))
        calls.append(ToolCall(**fields))
    legacy = raw.get("function_call")
    if legacy:
        legacy = _plain(legacy)
        calls.append(
            ToolCall(
                id=f"call_{i}_function",
                name=str(_field(legacy, "name")),
                inputs=_arguments(_field(legacy, "arguments"), where),
            )
        )
    return Message.assistant(content, calls, _usage(raw.get("usage"), where))


def _from_anthropic(raw: Any, i: int) -> list[Message]:
    where = f"Trajectory.from_anthropic: message #{i}"
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a dict, got {type(raw).__name__}")
    role = raw.get("role")
    content = raw.get("content")
    if role not in ("user", "assistant", "system"):
        raise ValueError(f"{where} has role {role!r}: expected user or assistant (or system)")
    if isinstance(content, str) or content is None:
        if role == "assistant":
            return [Message.assistant(content or "", None, _usage(raw.get("usage"), where))]
        return [Message(role=role, content=content or "")]
    if not isinstance(content, Sequence):
        raise ValueError(f"{where}: 'content' must be a string or a list of blocks")
    blocks = [_plain(b) for b in content]
    if role == "assistant":
        return _anthropic_reply(blocks, raw, i)
    out: list[Message] = []
    others = []
    for block in blocks:
        if _field(block, "type") == "tool_result":
            call_id = _field(block, "tool_use_id")
            if not isinstance(call_id, str):
                raise ValueError(f"{where}: a tool_result block has no 'tool_use_id'")
            result = _parts_text(_field(block, "content"), where)
            out.append(Message.tool(call_id, result, bool(_field(block, "is_error") or False)))
        else:
            others.append(block)
    if others:
        out.append(Message(role=role, content=_parts_text(others, where)))
    return out


def _anthropic_reply(blocks: list[Any], raw: Any, i: int) -> list[Message]:
    """An assistant message's blocks: its text (blocks joined as they are: cited text
    comes in several), its tool calls, then the results of the server's own tools
    (``server_tool_use`` and ``web_search_tool_result`` and their kin, in the same message)."""
    where = f"Trajectory.from_anthropic: message #{i}"
    runs: list[list[str]] = [[]]  # runs of text blocks, one after another
    calls: list[ToolCall] = []
    results: list[Message] = []
    for j, block in enumerate(blocks):
        kind = str(_field(block, "type"))
        if kind == "tool_use" or kind.endswith("_tool_use"):
            fields: dict[str, Any] = {
                "id": str(_field(block, "id") or f"toolu_{i}_{j}"),
                "name": str(_field(block, "name")),
                "inputs": _arguments(_field(block, "input"), f"{where}, block #{j}"),
            }
            fields.update(_approval(block))
            calls.append(ToolCall(**fields))
        elif kind.endswith("_tool_result") and isinstance(_field(block, "tool_use_id"), str):
            content = _plain(_field(block, "content"))
            failed = _field(block, "is_error") or str(_field(content, "type", "")).endswith(
                "_error"
            )
            results.append(
                Message.tool(str(_field(block, "tool_use_id")), _text(content), bool(failed))
            )
        if kind == "text":
            runs[-1].append(str(_field(block, "text", "")))
        elif runs[-1]:  # text on either side of a tool: two lines
            runs.append([])
    text = "\n".join("".join(run) for run in runs if run)
    reply = Message.assistant(text, calls, _usage(raw.get("usage"), where))
    return [reply, *results]
