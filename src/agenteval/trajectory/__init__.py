"""What an agent did: neutral messages and the :class:`Trajectory` evaluations assert on."""

from agenteval._usage import Usage
from agenteval.trajectory._messages import Message, ToolCall
from agenteval.trajectory._trajectory import Trajectory, Turn, as_trajectory

__all__ = ["Message", "ToolCall", "Trajectory", "Turn", "Usage", "as_trajectory"]
