"""``ToolAgent``: a small, real tool-calling agent over any ``Model``."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from agenteval._context import current_item
from agenteval._errors import EvaluationError, ProviderError, UsageError
from agenteval._serialize import to_jsonable
from agenteval._usage import Usage
from agenteval.agents._tool import Tool, ToolArgumentsError, as_tool
from agenteval.conversation._protocol import (
    Action,
    ApprovalRequest,
    Decision,
    normalize_decisions,
)
from agenteval.llm._types import Model, ModelRequest
from agenteval.trajectory._messages import Message, ToolCall
from agenteval.trajectory._trajectory import Trajectory

StopReason = Literal["answered", "suspended", "max_steps"]


class ToolAgent:
    """A tool-calling agent: model → tool calls → results, until the model answers.

    The reference :class:`~agenteval.conversation.ConversationalAgent`, and what the
    examples evaluate. Tools are plain functions (decorate them with
    :func:`~agenteval.agents.tool`); a tool that raises, or that the model calls with bad
    arguments, gives the model an error result instead of crashing. Tools named in
    ``require_approval`` suspend the agent: :meth:`chat` returns an
    :class:`~agenteval.conversation.ApprovalRequest`, and :meth:`resume` runs the approved
    calls and tells the model the reasons of the rejected ones. ``max_steps`` caps the model
    calls per user turn; reaching it ends the turn with the last text the model gave::

        agent = ToolAgent(
            model,
            tools=[search_orders, refund_order],
            instructions="You are a support agent for an online shop.",
            require_approval=["refund_order"],
        )
        reply = agent.chat("I want a refund for order #123")

    Each assistant message records its token usage, and the model's retries are added to
    the running item's retry count; :meth:`messages` returns the whole history as neutral
    messages. Build one agent per conversation: it keeps its history.
    """

    def __init__(
        self,
        model: Model,
        tools: Iterable[Tool | Any] = (),
        *,
        instructions: str | None = None,
        require_approval: Iterable[str] = (),
        max_steps: int = 10,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if not callable(getattr(model, "complete", None)):
            raise UsageError(
                f"ToolAgent: model must implement the Model protocol (complete(request)), "
                f"got {type(model).__name__}"
            )
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise UsageError(f"ToolAgent: max_steps must be a positive integer, got {max_steps!r}")
        self.model = model
        self.instructions = instructions
        self.max_steps = max_steps
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.tools: dict[str, Tool] = {}
        for value in tools:
            t = as_tool(value)
            if t.name in self.tools:
                raise UsageError(
                    f"ToolAgent: two tools are named {t.name!r}; tool names must be unique"
                )
            self.tools[t.name] = t
        if isinstance(require_approval, str):
            raise UsageError(
                f"ToolAgent: require_approval must be a list of tool names, got the string "
                f"{require_approval!r}: write [{require_approval!r}]"
            )
        self.require_approval = frozenset(require_approval)
        unknown = sorted(self.require_approval - self.tools.keys())
        if unknown:
            raise UsageError(
                f"ToolAgent: require_approval names {unknown!r}, which are not among the tools "
                f"{sorted(self.tools)!r}"
            )
        self.stop_reason: StopReason | None = None
        """Why the last turn ended: ``answered``, ``suspended`` or ``max_steps``."""
        self._history: list[Message] = []
        self._suspended: tuple[int, ApprovalRequest] | None = None
        self._steps = 0

    # -- the ConversationalAgent protocol ------------------------------------------------------

    def chat(self, message: str | Message) -> str | ApprovalRequest:
        """Send a user message; return the reply, or an approval request if a gated tool is due."""
        if self._suspended is not None:
            pending = ", ".join(a.id for a in self._suspended[1].pending)
            raise EvaluationError(
                f"ToolAgent.chat: the agent is waiting for approval of {pending}; call "
                f"resume(decisions) before sending another message"
            )
        if isinstance(message, Message):
            if message.role != "user":
                raise UsageError(
                    f"ToolAgent.chat: expected a user message, got a {message.role!r} message"
                )
            self._history.append(message)
        elif isinstance(message, str):
            self._history.append(Message.user(message))
        else:
            raise UsageError(
                f"ToolAgent.chat: expected a string or a user Message, got {type(message).__name__}"
            )
        self._steps = 0
        return self._loop()

    def resume(self, decisions: Mapping[str, Decision]) -> str | ApprovalRequest:
        """Continue after a suspension with ``{action_id: "approve" | ("reject", reason)}``."""
        if self._suspended is None:
            raise EvaluationError(
                "ToolAgent.resume: the agent is not waiting for approval; resume() only "
                "follows a chat() or resume() that returned an ApprovalRequest"
            )
        index, request = self._suspended
        checked = normalize_decisions(request, decisions, source="ToolAgent.resume")
        self._suspended = None
        self._run_calls(index, checked)
        return self._loop()

    def messages(self) -> list[Message]:
        """The conversation so far as neutral messages (a new list)."""
        return list(self._history)

    # -- conveniences -------------------------------------------------------------------------

    def to_trajectory(self) -> Trajectory:
        """The conversation so far as a :class:`~agenteval.trajectory.Trajectory`."""
        return Trajectory.from_messages(self._history)

    @property
    def pending_approval(self) -> ApprovalRequest | None:
        """The approval request the agent is waiting on, if it is suspended."""
        return None if self._suspended is None else self._suspended[1]

    # -- the loop -----------------------------------------------------------------------------

    def _request(self) -> ModelRequest:
        return ModelRequest(
            messages=list(self._history),
            system=self.instructions,
            tools=[t.spec for t in self.tools.values()],
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )

    def _loop(self) -> str | ApprovalRequest:
        while True:
            if self._steps >= self.max_steps:
                self.stop_reason = "max_steps"
                return self._last_text()
            try:
                response = self.model.complete(self._request())
            except ProviderError as exc:  # failed for good: its retries count all the same
                if (failed := current_item()) is not None:
                    failed.add_agent_call(Usage(), exc.retries)
                raise
            self._steps += 1
            item = current_item()
            if item is not None:
                # its usage and retries count for the item (kept should run() then fail);
                # its model call is not a judge call
                item.add_agent_call(response.usage, response.retries)
            calls = [
                call.model_copy(update={"approval": "pending"})
                if call.name in self.require_approval
                else call
                for call in self._unique_ids(response.tool_calls)
            ]
            # A response without token counts records none, so budgets can tell "unmeasured" from 0.
            usage = response.usage if response.usage else None
            self._history.append(Message.assistant(response.text, calls, usage))
            index = len(self._history) - 1
            if not calls:
                self.stop_reason = "answered"
                return response.text
            if any(call.approval == "pending" for call in calls):
                request = ApprovalRequest(
                    [
                        Action(
                            id=call.id,
                            name=call.name,
                            inputs=dict(call.inputs),
                            approval=call.approval,
                            description=getattr(self.tools.get(call.name), "description", ""),
                        )
                        for call in calls
                    ],
                    message=response.text,
                )
                self._suspended = (index, request)
                self.stop_reason = "suspended"
                return request
            self._run_calls(index, {})

    def _last_text(self) -> str:
        """The last text the model gave in this turn (its steps end in tool results)."""
        for message in reversed(self._history):
            if message.role == "user":
                break
            if message.role == "assistant" and message.content:
                return message.content
        return ""

    def _unique_ids(self, calls: list[ToolCall]) -> list[ToolCall]:
        """The calls, each with an id of its own in the whole conversation: a provider may
        send none, blank ones or one id twice, and results, approvals and the trajectory's
        calls are matched by id (the history sent back carries the new ids, so the
        provider sees each result with its own call)."""
        taken = {c.id for m in self._history for c in m.tool_calls}
        unique = []
        for j, call in enumerate(calls):
            if not call.id or call.id in taken:
                new = f"call_{self._steps}_{j}"
                while new in taken:
                    new += "_"
                call = call.model_copy(update={"id": new})
            taken.add(call.id)
            unique.append(call)
        return unique

    def _run_calls(self, index: int, decisions: Mapping[str, Decision]) -> None:
        message = self._history[index]
        decided: list[ToolCall] = []
        results: list[Message] = []
        for call in message.tool_calls:
            if call.approval == "pending":
                decision = decisions[call.id]
                if decision != "approve":
                    reason = decision[1]
                    decided.append(
                        call.model_copy(update={"approval": "rejected", "approval_reason": reason})
                    )
                    text = f"The approver rejected this call to {call.name!r}"
                    text += f": {reason}" if reason else " (no reason given)"
                    results.append(Message.tool(call.id, text + ". It was not run.", True))
                    continue
                call = call.model_copy(update={"approval": "approved"})
            decided.append(call)
            content, is_error = self._run_one(call)
            results.append(Message.tool(call.id, content, is_error))
        self._history[index] = message.model_copy(update={"tool_calls": decided})
        self._history.extend(results)

    def _run_one(self, call: ToolCall) -> tuple[str, bool]:
        t = self.tools.get(call.name)
        if t is None:
            return (
                f"Unknown tool {call.name!r}; the available tools are {sorted(self.tools)!r}",
                True,
            )
        try:
            result = t.invoke(call.inputs)
        except ToolArgumentsError as exc:
            return str(exc), True
        # a failing tool is fed back to the model, like a real agent; one wrapping argparse
        # or click raises SystemExit on arguments it refuses
        except (Exception, SystemExit) as exc:
            return f"{type(exc).__name__}: {exc}", True
        if inspect.isawaitable(result):  # an async def behind a plain decorator: never run
            close = getattr(result, "close", None)
            if callable(close):
                close()  # (no "never awaited" warning)
            return (
                f"the tool {call.name!r} returned an awaitable ({type(result).__name__}); "
                f"async tools are not supported: it was not run"
            ), True
        return _render(result), False


def _render(result: Any) -> str:
    if isinstance(result, str):
        return result
    return json.dumps(to_jsonable(result), ensure_ascii=False)
