"""agenteval configuration for this repository (``agenteval run evaluators/``).

Loaded from the working directory before the evaluators are discovered. See
``evaluation.py.example`` for every option, and docs/configuration.md.
"""

from evaluators._drivers import SqliteOutput  # the example custom driver (docs/outputs.md)

from agenteval.outputs import ConsoleOutput, JsonOutput

output = [
    ConsoleOutput,
    JsonOutput(path="evaluation-results.json"),
    SqliteOutput(path=".agenteval/results.sqlite"),
]
