"""The small protocol any agent implements to be driven by a ``Conversation``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from agenteval._errors import EvaluationError
from agenteval.trajectory._messages import ApprovalState, Message

Decision = Literal["approve"] | tuple[Literal["reject"], str]
"""An approver's decision on one action: ``"approve"`` or ``("reject", reason)``."""


@dataclass(frozen=True)
class Action:
    """One tool call the agent wants to make, as shown to the approver.

    ``approval`` is ``"pending"`` for an action waiting for a decision and ``None`` for one
    that needs no approval (it runs once the pending ones are decided).
    """

    id: str
    name: str
    inputs: dict[str, Any] = field(default_factory=dict)
    approval: ApprovalState | None = "pending"
    description: str = ""

    @property
    def is_pending(self) -> bool:
        """True when this action waits for the approver's decision."""
        return self.approval == "pending"


@dataclass(frozen=True)
class ApprovalRequest:
    """What an agent returns instead of a reply when it suspends for human approval.

    ``actions`` lists the tool calls of the suspended step; decide every one whose
    :attr:`Action.is_pending` is true (:attr:`pending` lists them).
    """

    actions: tuple[Action, ...]
    message: str = ""

    def __init__(self, actions: Sequence[Action], message: str = "") -> None:
        object.__setattr__(self, "actions", tuple(actions))
        object.__setattr__(self, "message", message)

    @property
    def pending(self) -> list[Action]:
        """The actions waiting for a decision."""
        return [a for a in self.actions if a.is_pending]


@runtime_checkable
class ConversationalAgent(Protocol):
    """What an agent provides so that :class:`~agenteval.conversation.Conversation` can drive it.

    Three methods: ``chat`` sends one user message (a string, or a user
    :class:`~agenteval.trajectory.Message`) and returns the agent's reply text — or an
    :class:`ApprovalRequest` when the agent suspends before a gated tool; ``resume``
    continues a suspended agent with ``{action_id: "approve" | ("reject", reason)}`` and
    returns the same kinds of result; ``messages`` returns the whole history as neutral
    messages. :class:`~agenteval.agents.ToolAgent` is the reference implementation;
    ``docs/agents.md`` shows how to wrap an agent from another framework.
    """

    def chat(self, message: str | Message) -> str | ApprovalRequest:
        """Send a user message; return the reply or an approval request."""
        ...

    def resume(self, decisions: Mapping[str, Decision]) -> str | ApprovalRequest:
        """Continue after a suspension with one decision per pending action."""
        ...

    def messages(self) -> list[Message]:
        """The conversation so far, as neutral messages."""
        ...


def normalize_decisions(
    request: ApprovalRequest, decisions: object, *, source: str
) -> dict[str, Decision]:
    """Check a decision payload against ``request``; return it as ``{id: Decision}``.

    Raises :class:`~agenteval.EvaluationError` when the payload is not a dict, names an
    action that is not in the request, holds an invalid decision, or misses a pending
    action — silence is never consent. Decisions on actions that are not pending are
    accepted and ignored.
    """
    if not isinstance(decisions, Mapping):
        raise EvaluationError(
            f"{source} returned {type(decisions).__name__}, not a dict: return "
            f"{{action.id: 'approve' | ('reject', reason)}} for every pending action"
        )
    by_id = {a.id: a for a in request.actions}
    if len(by_id) < len(request.actions):  # a decision would be taken for two actions
        shared = sorted(
            {a.id for a in request.actions if [b.id for b in request.actions].count(a.id) > 1}
        )
        raise EvaluationError(
            f"{source}: the approval request's actions share the id(s) {shared!r}, so a "
            f"decision keyed by id could not tell them apart: give each action an id of its own"
        )
    unknown = [key for key in decisions if key not in by_id]
    if unknown:
        names = {a.name for a in request.actions}
        hint = (
            " (keys are action ids, action.id, not tool names)"
            if any(k in names for k in unknown)
            else ""
        )
        raise EvaluationError(
            f"{source} decided unknown action id(s) {unknown!r}{hint}: the request's actions "
            f"are {sorted(by_id)!r}"
        )
    out: dict[str, Decision] = {}
    for key, value in decisions.items():
        if by_id[key].is_pending:
            out[key] = parse_decision(value, f"{source}, action {key!r} ({by_id[key].name})")
    missing = [a for a in request.pending if a.id not in out]
    if missing:
        listed = ", ".join(f"{a.id!r} ({a.name})" for a in missing)
        raise EvaluationError(
            f"{source} gave no decision for pending action(s) {listed}: return 'approve' or "
            f"('reject', reason) for every pending action — silence is never consent"
        )
    return out


def parse_decision(value: object, where: str) -> Decision:
    """``value`` as a :data:`Decision`; accepts ``["reject", reason]`` lists from JSON."""
    if value == "approve":
        return "approve"
    if value == "reject":
        return ("reject", "")
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and value[0] == "reject"
        and isinstance(value[1], str)
    ):
        return ("reject", value[1])
    raise EvaluationError(
        f"{where}: invalid decision {value!r}: use 'approve' or ('reject', 'the reason')"
    )
