"""The one exception type of reconrisk."""

from __future__ import annotations


class ReconRiskError(ValueError):
    """Raised when an argument is outside its valid range.

    The message names the parameter, the value found and what was expected,
    e.g. ``noise_multiplier must be > 0; found -1.0``.
    """


ReconRiskError.__module__ = "reconrisk.errors"  # its public path (tracebacks and pickles name it there)


class PLDRangeError(ReconRiskError):
    """The PLD accountant's grid cannot hold a release's privacy-loss range (ε is enormous there); the RDP
    accountant still answers. Raised by :func:`reconrisk._src.accounting.epsilon.pld_epsilon` (and the analyses that
    ask it), so that a caller falling back to RDP asks the type, not the message."""


class ParameterError(ReconRiskError):
    """A :class:`ReconRiskError` that names the parameters it is about (``parameters``: their Python names), so a
    front end can add its own spelling (the CLI its flags) without reading the message."""

    def __init__(self, message: str, parameters: tuple[str, ...]) -> None:
        super().__init__(message)
        self.parameters = tuple(parameters)


class SyntaxInvalid(ReconRiskError):
    """A text is not valid JSON or TOML (:func:`reconrisk._src._io.parse_text`): a reader that may try another format
    (an Opacus file: JSON, else torch's weights-only loader) asks this type."""
