"""LLM judges: a model grades an output or a whole conversation against criteria.

``AgentJudge`` takes your own criteria; the presets come with calibrated ones. All of them
return a score from 0 to 1 with the judge's reasoning and pass at ``score >= threshold``.
"""

from ._judge import AgentJudge
from ._presets import (
    CorrectnessJudge,
    FaithfulnessJudge,
    HelpfulnessJudge,
    RelevanceJudge,
    TaskCompletionJudge,
)

__all__ = [
    "AgentJudge",
    "CorrectnessJudge",
    "FaithfulnessJudge",
    "HelpfulnessJudge",
    "RelevanceJudge",
    "TaskCompletionJudge",
]
