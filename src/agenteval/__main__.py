"""``python -m agenteval``: the ``agenteval`` command."""

from agenteval._cli import main

main()
