"""The one exception type of reconrisk."""

from __future__ import annotations


class ReconRiskError(ValueError):
    """Raised when an argument is outside its valid range.

    The message names the parameter, the value found and what was expected,
    e.g. ``noise_multiplier must be > 0; found -1.0``.
    """


ReconRiskError.__module__ = "reconrisk.errors"  # its public path (tracebacks and pickles name it there)
