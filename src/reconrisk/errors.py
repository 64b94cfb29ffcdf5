"""The one exception type of reconrisk, :class:`ReconRiskError` (a ``ValueError``), at its public path."""
# reconrisk's public face: the class is defined in reconrisk._src.errors (its __module__ says reconrisk.errors)

from ._src.errors import ReconRiskError

__all__ = ["ReconRiskError"]
