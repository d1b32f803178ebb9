"""The exceptions agenteval raises, and when.

Two roots, because two different things can go wrong::

    AgentEvalError            agenteval was misused: the CLI prints one line, exit code 2
    ├── UsageError            a bad command-line option or API argument
    ├── ConfigError           evaluation.py / --config / --bootstrap could not be used
    ├── DiscoveryError        a path to evaluate is missing, fails to import, or holds nothing
    ├── DatasetError          a dataset file is missing, unreadable or malformed
    ├── JournalError          a run folder cannot be read, or --resume would mix changed inputs
    └── MissingDependencyError  an optional package is not installed

    EvaluationError           an item could not be evaluated honestly: the item is an *error*
    ├── JudgeError            an LLM judge gave no valid verdict after its corrective retry
    └── ProviderError         a model provider call failed for good
        ├── ProviderAuthError     401/403 or a missing API key: never retried
        ├── ProviderRequestError  400/404 and other client errors: never retried
        ├── ProviderQuotaError    the account is out of quota: never retried
        └── ProviderUnavailableError  retries were exhausted (429, 5xx, overloaded, timeouts)

    SkipEvaluator             raised from ``set_up`` to skip an evaluator with a reason

An assertion that *fails* never raises: it returns ``AssertionResult(passed=False)``.
"""

from __future__ import annotations


class AgentEvalError(Exception):
    """agenteval was misused: bad config, unreadable dataset, nothing to run.

    The message is one line naming the file, the row or key, and the fix.
    """


class UsageError(AgentEvalError):
    """A command-line option or API argument is invalid."""


class ConfigError(AgentEvalError):
    """The config file, the bootstrap file, or an entry in them cannot be used."""


class DiscoveryError(AgentEvalError):
    """A path to evaluate does not exist, fails to import, or contains no evaluator."""


class DatasetError(AgentEvalError):
    """A dataset is missing, unreadable, malformed, or has duplicate item ids."""


class JournalError(AgentEvalError):
    """A run folder cannot be read, or resuming it would mix results of changed inputs."""


class MissingDependencyError(AgentEvalError):
    """An optional dependency is not installed; the message says what to install."""


class EvaluationError(Exception):
    """An item cannot be evaluated honestly; raising it makes the item an error.

    Raised, for example, by :class:`~agenteval.conversation.Conversation` when an agent
    suspends for approval and no approval policy was configured.
    """


class JudgeError(EvaluationError):
    """An LLM judge did not return a valid verdict, even after one corrective retry."""


class ProviderError(EvaluationError):
    """A call to a model provider failed and will not be retried further.

    ``retries`` is how many times the call was retried before it failed for good (set by
    the retry loop; reports add it to the item's retries).
    """

    retries: int = 0


class ProviderAuthError(ProviderError):
    """Authentication failed (401/403) or no API key is available."""


class ProviderRequestError(ProviderError):
    """The provider rejected the request itself (400, 404, ...)."""


class ProviderQuotaError(ProviderError):
    """The provider account has exhausted its quota or credit."""


class ProviderUnavailableError(ProviderError):
    """Transient provider failures (429, 5xx, overloaded, timeouts) outlasted every retry."""


class SkipEvaluator(Exception):
    """Raise from ``set_up`` to skip the whole evaluator, with a reason.

    Skipped evaluators are shown in reports with their reason and do not fail the run::

        def set_up(self) -> None:
            if not os.environ.get("AGENTEVAL_JUDGE_MODEL"):
                raise SkipEvaluator("no judge model configured (set AGENTEVAL_JUDGE_MODEL)")
    """

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


def described(exc: BaseException) -> str:
    """``ValueError: bad input``, or just ``KeyboardInterrupt`` when there is no message."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
