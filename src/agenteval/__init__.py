"""agenteval: evaluate LLM agents — their answers, tool calls, approvals and budgets.

Names are imported on first use (PEP 562) so that ``import agenteval`` and
``agenteval --help`` stay fast: pydantic alone costs more than the CLI's whole start-up
budget. Type checkers see ordinary imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names

if TYPE_CHECKING:
    from ._errors import (
        AgentEvalError,
        ConfigError,
        DatasetError,
        DiscoveryError,
        EvaluationError,
        JournalError,
        JudgeError,
        MissingDependencyError,
        ProviderAuthError,
        ProviderError,
        ProviderQuotaError,
        ProviderRequestError,
        ProviderUnavailableError,
        SkipEvaluator,
        UsageError,
    )
    from ._evaluator import BaseEvaluator
    from ._results import (
        AssertionRecord,
        AssertionResult,
        ErrorInfo,
        EvaluatorSummary,
        ItemResult,
        RunSummary,
    )
    from ._runner import run_evaluations
    from ._version import __version__

_WHERE = {
    "AgentEvalError": "._errors",
    "AssertionRecord": "._results",
    "AssertionResult": "._results",
    "BaseEvaluator": "._evaluator",
    "ConfigError": "._errors",
    "DatasetError": "._errors",
    "DiscoveryError": "._errors",
    "ErrorInfo": "._results",
    "EvaluationError": "._errors",
    "EvaluatorSummary": "._results",
    "ItemResult": "._results",
    "JournalError": "._errors",
    "JudgeError": "._errors",
    "MissingDependencyError": "._errors",
    "ProviderAuthError": "._errors",
    "ProviderError": "._errors",
    "ProviderQuotaError": "._errors",
    "ProviderRequestError": "._errors",
    "ProviderUnavailableError": "._errors",
    "RunSummary": "._results",
    "SkipEvaluator": "._errors",
    "UsageError": "._errors",
    "__version__": "._version",
    "run_evaluations": "._runner",
}

__all__ = [
    "AgentEvalError",
    "AssertionRecord",
    "AssertionResult",
    "BaseEvaluator",
    "ConfigError",
    "DatasetError",
    "DiscoveryError",
    "ErrorInfo",
    "EvaluationError",
    "EvaluatorSummary",
    "ItemResult",
    "JournalError",
    "JudgeError",
    "MissingDependencyError",
    "ProviderAuthError",
    "ProviderError",
    "ProviderQuotaError",
    "ProviderRequestError",
    "ProviderUnavailableError",
    "RunSummary",
    "SkipEvaluator",
    "UsageError",
    "__version__",
    "run_evaluations",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
