"""A small, real tool-calling agent to evaluate, and the ``@tool`` decorator for its tools."""

from agenteval.agents._tool import Tool, ToolArgumentsError, tool
from agenteval.agents._tool_agent import ToolAgent

__all__ = ["Tool", "ToolAgent", "ToolArgumentsError", "tool"]
