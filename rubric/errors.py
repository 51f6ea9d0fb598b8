"""One error hierarchy for the whole project.

Each class also inherits the matching built-in (as scikit-learn does), so callers that
catch ``ValueError`` or ``ImportError`` keep working.
"""

__all__ = [
    "RubricError",
    "ConfigError",
    "InputError",
    "LimitError",
    "UnknownNameError",
    "BackendUnavailableError",
    "EngineError",
    "BatchMismatchError",
    "ProvenanceError",
    "FailureBudgetError",
]


class RubricError(Exception):
    """Base class of every error raised on purpose by lfqa-rubric."""


class ConfigError(RubricError, ValueError):
    """A configuration value is invalid (raised at construction, never mid-run)."""


class InputError(RubricError, ValueError):
    """An input file cannot be read at all (a row-level problem becomes a reject instead)."""


class LimitError(InputError):
    """A service request is over one of the service's limits (body size, items per request); the
    message names the limit and the option that sets it."""


class UnknownNameError(RubricError, KeyError):
    """A registry lookup failed; the message lists what exists."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class BackendUnavailableError(RubricError, ImportError):
    """A backend's package or model is missing; the message says how to install it."""


class EngineError(RubricError, RuntimeError):
    """An engine failed as a whole (dead process, out of memory): re-raised, never swallowed."""


class BatchMismatchError(RubricError, RuntimeError):
    """A scorer returned a different number of results than it was given items."""


class ProvenanceError(RubricError, ValueError):
    """Results made in different ways (rubric version, backend, model, template, rescaling) would be
    combined: a table mixes provenances, or a model is applied to a table made differently from the
    one it was fitted on. The message lists every difference, field by field."""


class FailureBudgetError(RubricError, RuntimeError):
    """More rows of a rubric (or judge) failed than the run's failure budget (``--max-failed``) allows.
    The run published what it made first; ``lines`` holds one line per name over the budget."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)
