"""``UserSimulator``: a language model that plays the user in a conversation."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from agenteval._errors import EvaluationError
from agenteval.llm._structured import parse_reply
from agenteval.llm._types import Model, ModelRequest, ModelResponse, reply_text
from agenteval.trajectory._messages import Message
from agenteval.trajectory._trajectory import Trajectory

USER_TURN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["send", "stop"]},
        "message": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["action", "message", "reason"],
    "additionalProperties": False,
}
"""The structured output the simulator asks its model for at every step."""

_SYSTEM = """\
You are playing the USER in a conversation with an AI assistant, in order to test it.
Stay in character: write only what this user would type to the assistant, in their voice.

Persona: {persona}
Goal: {goal}

At each step you read the conversation so far and decide:
- "send": write the user's next message (in "message"), pursuing the goal; or
- "stop": end the conversation, because the goal has been achieved, or because it clearly
  cannot be achieved and a real user would give up. Leave "message" empty.
Always explain your decision briefly in "reason".

Never write the assistant's part. Never approve or reject the assistant's tool actions:
approvals are decided by someone else, not by you.
Reply with one JSON object only: {{"action": "send" | "stop", "message": "...", "reason": "..."}}.\
"""

_CORRECTION = (
    "Your reply could not be used: {problem}. Reply again with one JSON object only, "
    'exactly {{"action": "send" or "stop", "message": "...", "reason": "..."}}.'
)


@dataclass(frozen=True)
class SimulatedTurn:
    """One decision of a :class:`UserSimulator`: send ``message``, or stop, with a reason."""

    action: Literal["send", "stop"]
    message: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        if self.action not in ("send", "stop"):
            raise ValueError(f"SimulatedTurn: action must be 'send' or 'stop', got {self.action!r}")
        for name in ("message", "reason"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(
                    f"SimulatedTurn: {name} must be a str, got {type(value).__name__} {value!r}"
                )
        if self.action == "send" and not self.message.strip():
            raise ValueError(
                "SimulatedTurn: action 'send' needs a message (an empty user turn); "
                "to end the conversation, use action 'stop'"
            )


@dataclass(frozen=True)
class UserSimulator:
    """A model that plays the user, so a conversation can react to what the agent says.

    Give it a persona and a goal; at every step it reads the conversation so far (the
    messages both sides can see — not the agent's tool calls) and either sends the next
    user message or stops, because the goal is met or it gives up. It decides on its own
    when to stop; use it with :meth:`Conversation.with_user
    <agenteval.conversation.Conversation.with_user>`, which requires a ``max_turns`` cap.
    It never answers approval requests: those stay with ``with_approvals``.

    Its model calls go through the response cache and count as judge-side usage of the
    item. A reply that is not valid structured output gets one corrective retry, then the
    item is an error (:class:`~agenteval.EvaluationError`)::

        simulator = (
            UserSimulator(model)
            .with_persona("An impatient customer who gives short answers")
            .with_goal("Get a refund for order #123")
        )
        trajectory = Conversation.make(agent).with_user(simulator, max_turns=6).run()
    """

    model: Model
    persona: str = "A typical user of this assistant."
    goal: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.model, Model):  # a model's name, say: it would fail at use
            raise TypeError(
                f"UserSimulator: model must be a Model (e.g. agenteval.llm.model("
                f"'anthropic:...')), got {type(self.model).__name__} {self.model!r}"
            )

    def with_persona(self, persona: str) -> UserSimulator:
        """A copy that plays ``persona`` (who the user is, how they write)."""
        return replace(self, persona=_require_text("with_persona", persona))

    def with_goal(self, goal: str) -> UserSimulator:
        """A copy that pursues ``goal`` (what the user wants from the conversation)."""
        return replace(self, goal=_require_text("with_goal", goal))

    def request(self, trajectory: Trajectory) -> ModelRequest:
        """The model request for the next step after ``trajectory`` (stateless, cacheable)."""
        if not self.goal:
            raise EvaluationError(
                "UserSimulator has no goal: call .with_goal('what the user wants') before "
                "using it in a conversation"
            )
        return ModelRequest(
            system=_SYSTEM.format(persona=self.persona, goal=self.goal),
            messages=[Message.user(_visible_conversation(trajectory))],
            json_schema=USER_TURN_SCHEMA,
            schema_name="user_turn",
        )

    def next_turn(self, trajectory: Trajectory) -> SimulatedTurn:
        """Read the conversation so far and decide the user's next move."""
        from agenteval.llm._cache import complete_cached

        request = self.request(trajectory)
        response = complete_cached(self.model, request, _valid)
        turn, problem = _parse(response)
        if turn is not None:
            return turn
        retry = request.model_copy(
            update={
                "messages": [
                    *request.messages,
                    Message.assistant(reply_text(response)),
                    Message.user(_CORRECTION.format(problem=problem)),
                ]
            }
        )
        response = complete_cached(self.model, retry, _valid)
        turn, problem = _parse(response)
        if turn is not None:
            return turn
        raise EvaluationError(
            f"UserSimulator (model {self.model.name!r}) gave no valid reply after one "
            f"corrective retry: {problem}; last reply: {_shorten(reply_text(response))!r}"
        )


def _require_text(method: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"UserSimulator.{method}: expected a non-empty string, got {value!r}")
    return value


def _visible_conversation(trajectory: Trajectory) -> str:
    lines = []
    for message in trajectory.messages():
        if message.role == "user":
            lines.append(f"User: {message.content}")
        elif message.role == "assistant" and message.content:
            lines.append(f"Assistant: {message.content}")
    if not lines:
        return "The conversation has not started yet. Write the user's first message."
    return "The conversation so far:\n\n" + "\n\n".join(lines) + "\n\nDecide the user's next move."


def _valid(response: ModelResponse) -> bool:
    return _parse(response)[0] is not None


def _parse(response: ModelResponse) -> tuple[SimulatedTurn | None, str]:
    data: Any = response.structured
    if data is None:
        try:
            data = parse_reply(response.text, USER_TURN_SCHEMA)  # (bare, fenced, among prose)
        except ValueError:
            return None, "the reply is not JSON"
    if not isinstance(data, dict):
        return None, f"expected a JSON object, got {type(data).__name__}"
    action = data.get("action")
    if action not in ("send", "stop"):
        return None, f"'action' must be 'send' or 'stop', got {action!r}"
    message = data.get("message", "")
    reason = data.get("reason", "")
    if not isinstance(message, str) or not isinstance(reason, str):
        return None, "'message' and 'reason' must be strings"
    if action == "send" and not message.strip():
        return None, "'message' is empty but 'action' is 'send'"
    return SimulatedTurn(action=action, message=message, reason=reason), ""


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
