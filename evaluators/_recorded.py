"""Replaying recorded model replies, so the conversation evaluators run offline.

The files in ``fixtures/`` hold **recorded fixture data**: the replies a model gave to the
agents of ``refund_conversation_evaluator.py`` and ``returns_conversation_evaluator.py``,
one list per dataset case. They are not produced live: :func:`recorded_model` replays them
through a :class:`~agenteval.testing.ScriptedModel` when ``AGENTEVAL_AGENT_MODEL`` is not
set, so ``agenteval run evaluators/`` needs no network and no key.

Each entry may say what it was recorded after (``"after"``: the role of the last message
the agent sent, and text it contained). The replay checks it, so an agent that now behaves
differently — skips a tool, loses the approver's decision, mangles a tool result — makes the
item an error instead of silently receiving a reply that no longer fits.

The file name starts with ``_``, so ``agenteval run`` does not treat it as an evaluator
file; the evaluators import it as a sibling module.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agenteval import EvaluationError
from agenteval.llm import Model, ModelRequest, default_agent_model
from agenteval.testing import ScriptedModel

FIXTURES = Path(__file__).parent / "fixtures"


def agent_model(fixture: str, case: str) -> Model:
    """The model the agent runs on: ``AGENTEVAL_AGENT_MODEL`` if set, else the recording."""
    return _live_model() or recorded_model(FIXTURES / fixture, case)


@functools.cache
def _live_model() -> Model | None:
    # One client per process for every conversation, rather than one per dataset item.
    return default_agent_model()


def recorded_model(path: Path, case: str) -> ScriptedModel:
    """A scripted model replaying the replies recorded for ``case`` in ``path``."""
    cases = json.loads(path.read_text(encoding="utf-8"))["cases"]
    if case not in cases:
        raise EvaluationError(
            f"{path.name} has no recorded replies for case {case!r} (recorded: "
            f"{sorted(cases)!r}): record them, or set AGENTEVAL_AGENT_MODEL to run live"
        )
    entries = cases[case]
    return ScriptedModel(
        [_replay(path.name, case, n, entry) for n, entry in enumerate(entries, 1)],
        name=f"recorded:{path.stem}/{case}",
    )


def _replay(file: str, case: str, n: int, entry: dict[str, Any]) -> Callable[[ModelRequest], Any]:
    after = entry.get("after", {})
    reply = entry["reply"]

    def respond(request: ModelRequest) -> Any:
        last = request.messages[-1]
        role, text = after.get("role", last.role), after.get("contains", "")
        if last.role != role or text not in last.content:
            raise EvaluationError(
                f"{file}, case {case!r}, reply #{n} was recorded after a {role} message "
                f"containing {text!r}, but the agent sent a {last.role} message "
                f"{last.content[:120]!r}: the agent no longer behaves as recorded"
            )
        return reply

    return respond
