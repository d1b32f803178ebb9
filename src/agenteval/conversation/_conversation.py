"""``Conversation``: drive an agent through scripted or simulated turns and approvals."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agenteval._errors import EvaluationError, UsageError
from agenteval.conversation._protocol import (
    ApprovalRequest,
    ConversationalAgent,
    Decision,
    normalize_decisions,
)
from agenteval.conversation._simulator import SimulatedTurn, UserSimulator
from agenteval.trajectory._messages import Message
from agenteval.trajectory._trajectory import Trajectory, Turn

ApprovalPolicy = Callable[[ApprovalRequest, Trajectory], Mapping[str, Any]]
"""Decides a suspension: ``policy(request, trajectory_so_far) -> {action_id: decision}``."""

MAX_SUSPENSIONS_PER_TURN = 100
"""An agent that suspends more often than this within one turn is stuck: an error."""


class Conversation:
    """Drives a :class:`ConversationalAgent` through a multi-turn exchange; returns its trajectory.

    Use it in an evaluator's ``run``: you run a Conversation, you evaluate its
    :class:`~agenteval.trajectory.Trajectory`. Each turn is delivered only after the
    previous one completed. When the agent suspends for approval — at any point, in any
    turn, as often as it does — the approval policy decides; there is deliberately no
    "approve everything" default::

        def run(self, item):
            return (
                Conversation.make(build_agent())
                .with_turns(item["turns"])
                .with_approvals(lambda request, so_far: {
                    action.id: "approve" for action in request.pending
                })
                .run()
            )

    Two honesty rules raise :class:`~agenteval.EvaluationError` (the item becomes an
    error): the agent suspends and no policy is configured, or the policy's payload misses
    a decision for a pending action. A conversation is scripted (:meth:`with_turns`) or
    simulated (:meth:`with_user`), not both. :meth:`send` delivers one turn at a time for
    conversations you drive yourself.
    """

    def __init__(self, agent: ConversationalAgent) -> None:
        for method in ("chat", "resume", "messages"):
            if not callable(getattr(agent, method, None)):
                raise UsageError(
                    f"Conversation.make: {type(agent).__name__} has no {method}() method: an "
                    f"agent must implement chat(message), resume(decisions) and messages() "
                    f"(see ConversationalAgent)"
                )
        self.agent = agent
        self._turns: list[str | Message] | None = None
        self._simulator: UserSimulator | None = None
        self._max_turns: int | None = None
        self._policy: ApprovalPolicy | None = None
        self._delivered = 0
        self.stop_reason: str | None = None
        """Why a simulated conversation ended: the simulator's reason, or the turn cap."""

    @classmethod
    def make(cls, agent: ConversationalAgent) -> Conversation:
        """A conversation with ``agent`` (Neuron's ``Conversation::make``)."""
        return cls(agent)

    def with_turns(self, turns: Iterable[str | Message]) -> Conversation:
        """Script the user's turns: strings or user messages, delivered in order."""
        if self._simulator is not None:
            raise UsageError(
                "Conversation.with_turns: this conversation already has a simulated user "
                "(with_user): a conversation is either scripted or simulated, not both"
            )
        if isinstance(turns, (str, Message)):
            raise UsageError(
                f"Conversation.with_turns: expected a list of turns, got a single "
                f"{type(turns).__name__} ({turns!r}): wrap it in a list"
            )
        if isinstance(turns, Mapping):  # the whole item, say: its keys would be the turns
            keys = ", ".join(repr(k) for k in list(turns)[:5])
            raise UsageError(
                f"Conversation.with_turns: expected a list of turns, got a "
                f"{type(turns).__name__} (keys: {keys}): pass the list it holds, e.g. "
                f"item['turns']"
            )
        checked: list[str | Message] = []
        for i, turn in enumerate(turns):
            if isinstance(turn, str) or (isinstance(turn, Message) and turn.role == "user"):
                checked.append(turn)
            else:
                raise UsageError(
                    f"Conversation.with_turns: turn #{i} is {turn!r}: each turn must be a "
                    f"string or a user Message (Message.user(...))"
                )
        if not checked:  # a dataset's turns missing, say: nothing would run, and pass
            raise UsageError(
                "Conversation.with_turns: no turns given (an empty list): a conversation "
                "needs at least one user turn; check where the turns come from"
            )
        self._turns = checked
        return self

    def with_user(self, simulator: UserSimulator, *, max_turns: int) -> Conversation:
        """Let ``simulator`` play the user, for at most ``max_turns`` user turns.

        Replaces :meth:`with_turns`. Reaching ``max_turns`` ends the conversation normally;
        whether an unfinished conversation is a failure is for your assertions to judge.
        Any object with ``next_turn(trajectory) -> SimulatedTurn`` can play the user (a
        rule-based user, say).
        """
        if self._turns is not None:
            raise UsageError(
                "Conversation.with_user: this conversation already has scripted turns "
                "(with_turns): a conversation is either scripted or simulated, not both"
            )
        if not callable(getattr(simulator, "next_turn", None)):
            raise UsageError(
                f"Conversation.with_user: expected a UserSimulator (or an object with "
                f"next_turn(trajectory)), got {type(simulator).__name__}"
            )
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise UsageError(
                f"Conversation.with_user: max_turns must be a positive integer, got "
                f"{max_turns!r}: there is no unlimited default"
            )
        self._simulator = simulator
        self._max_turns = max_turns
        return self

    def with_approvals(self, policy: ApprovalPolicy) -> Conversation:
        """Decide suspensions with ``policy(request, trajectory_so_far) -> {id: decision}``.

        A decision is ``"approve"`` or ``("reject", reason)`` (``["reject", reason]`` from a
        JSON dataset works too). The policy is positionless: it is called whenever the
        agent suspends, whatever the turn.
        """
        if not callable(policy):
            raise UsageError(
                f"Conversation.with_approvals: expected a callable "
                f"policy(request, trajectory_so_far), got {type(policy).__name__}"
            )
        try:
            inspect.signature(policy).bind(None, None)
        except TypeError:
            raise UsageError(
                f"Conversation.with_approvals: the policy is called as policy(request, "
                f"trajectory_so_far), with two arguments, and "
                f"{getattr(policy, '__name__', type(policy).__name__)} cannot take them: "
                f"write it as lambda request, so_far: ..."
            ) from None
        except ValueError:  # no signature to read (a builtin): it will tell when called
            pass
        self._policy = policy
        return self

    def trajectory(self) -> Trajectory:
        """The conversation so far, read from the agent's messages."""
        return Trajectory.from_messages(self.agent.messages())

    def messages(self) -> list[Message]:
        """The agent's messages so far (so a Conversation converts to a trajectory too)."""
        return list(self.agent.messages())

    def send(self, message: str | Message) -> Turn:
        """Deliver one user message and run the agent until it answers; return the turn.

        Suspensions are decided by the approval policy. Everything accumulates: the
        :meth:`trajectory` after several sends holds every turn.
        """
        text = message.content if isinstance(message, Message) else message
        start = len(self.agent.messages())
        result = self.agent.chat(message)
        suspensions = 0
        while isinstance(result, ApprovalRequest):
            suspensions += 1
            if suspensions > MAX_SUSPENSIONS_PER_TURN:
                raise EvaluationError(
                    f"Conversation: the agent suspended {MAX_SUSPENSIONS_PER_TURN} times in "
                    f"turn #{self._delivered + 1} without finishing: it looks stuck"
                )
            result = self.agent.resume(self._decide(result))
        if not isinstance(result, str):
            raise EvaluationError(
                f"Conversation: {type(self.agent).__name__}.chat()/resume() returned "
                f"{type(result).__name__}: a ConversationalAgent returns its reply text or an "
                f"ApprovalRequest"
            )
        index = self._delivered
        self._delivered += 1
        history = self.agent.messages()
        return Turn(index=index, message=text, trajectory=Trajectory(history=history[start:]))

    def run(self) -> Trajectory:
        """Deliver every scripted turn, or let the simulated user talk; return the trajectory."""
        if self._simulator is not None and self._max_turns is not None:
            self._run_simulated(self._simulator, self._max_turns)
        elif self._turns is not None:
            for turn in self._turns:
                self.send(turn)
        else:
            raise UsageError(
                "Conversation.run: nothing to say: script the user with with_turns([...]) or "
                "simulate it with with_user(simulator, max_turns=N)"
            )
        return self.trajectory()

    def _run_simulated(self, simulator: UserSimulator, max_turns: int) -> None:
        for _ in range(max_turns):
            step = simulator.next_turn(self.trajectory())
            if not isinstance(step, SimulatedTurn):
                raise EvaluationError(
                    f"Conversation: {type(simulator).__name__}.next_turn() returned "
                    f"{type(step).__name__} {step!r:.100}; it must return a SimulatedTurn("
                    f"action='send', message=...) or SimulatedTurn(action='stop', reason=...)"
                )
            if step.action == "stop":
                self.stop_reason = step.reason or "the simulated user stopped"
                return
            self.send(step.message)
        self.stop_reason = f"max_turns ({max_turns}) reached"

    def _decide(self, request: ApprovalRequest) -> dict[str, Decision]:
        pending = ", ".join(f"{a.name} ({a.id})" for a in request.pending)
        if self._policy is None:
            raise EvaluationError(
                f"Conversation: the agent suspended for approval of {pending or 'an action'} "
                f"but no approval policy is configured: call with_approvals(policy) — there is "
                f"no approve-everything default"
            )
        payload = self._policy(request, self.trajectory())
        return normalize_decisions(request, payload, source="The approval policy")
