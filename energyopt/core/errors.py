"""The errors that the core contract raises; every family raises these, never its own."""

from __future__ import annotations


class InstanceError(ValueError):
    """Invalid instance data; the message names the source, the field and the value."""


class EvaluationMismatchError(AssertionError):
    """A solver's own objective disagrees with the family's evaluator: a modelling bug."""


class OutputPathError(ValueError):
    """An output file or folder cannot be written; the message names the path and why."""
