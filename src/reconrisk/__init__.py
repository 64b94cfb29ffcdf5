"""reconrisk: how likely is a reconstruction of a training example from a DP-SGD release?

Theory (certified bounds, accounting, calibration) imports only numpy/scipy;
the simulation layer (DP-SGD simulator, attacks) needs the ``sim`` extra (JAX)
and is imported lazily.
"""

from .api import calibrate_noise, epsilon, noise_multiplier_for_epsilon, rero_bound
from .bounds.rero import ReroBound
from .errors import ReconRiskError
from .priors import kappa_from_points, kappa_from_samples, kappa_uniform, log_kappa_coordinate_match
from .release import Release, Segment

__version__ = "0.1.0"

__all__ = [
    "ReconRiskError",
    "Release",
    "ReroBound",
    "Segment",
    "calibrate_noise",
    "epsilon",
    "kappa_from_points",
    "kappa_from_samples",
    "kappa_uniform",
    "log_kappa_coordinate_match",
    "noise_multiplier_for_epsilon",
    "rero_bound",
    "__version__",
]
