"""Driving agents through multi-turn conversations: scripted turns, approvals, simulated users."""

from agenteval.conversation._conversation import Conversation
from agenteval.conversation._protocol import Action, ApprovalRequest, ConversationalAgent
from agenteval.conversation._simulator import SimulatedTurn, UserSimulator

__all__ = [
    "Action",
    "ApprovalRequest",
    "Conversation",
    "ConversationalAgent",
    "SimulatedTurn",
    "UserSimulator",
]
