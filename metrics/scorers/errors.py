"""Errors a scorer raises; each message is one clear line for the user."""

from workbench.exceptions import DomainError


class MetricError(DomainError):
    """Base class for every scorer error."""


class UnknownMetric(MetricError):
    pass


class OptionError(MetricError):
    """An option name or value the metric does not accept."""


class InputError(MetricError):
    """Inputs of the wrong shape (e.g. references missing for a reference-based metric)."""


class ModelNotAvailable(MetricError):
    """A model that is not on this machine; nothing is ever downloaded."""
