"""reconrisk: how likely is a reconstruction of a training example from a DP-SGD release?

Theory (certified bounds, accounting, calibration) imports only numpy/scipy;
the simulation layer (DP-SGD simulator, attacks) needs the ``sim`` extra (JAX)
and is imported lazily.
"""

from .errors import ReconRiskError
from .release import Release, Segment

__version__ = "0.1.0"

__all__ = ["ReconRiskError", "Release", "Segment", "__version__"]
