"""The ReRo bound for DP-SGD: γ = B_κ(μ_{T,σ,q}, ν_{T,σ}) (Hayes, Mahloujifar & Balle 2023, Cor. 4).

B_κ(μ, ν) = sup{P_μ[E] : P_ν[E] ≤ κ} is the blow-up function (Hayes, Mahloujifar & Balle 2023,
Eq. 3); μ is the T-fold product of (1−q)N(0,σ²) + qN(1,σ²) and ν = N(0,σ²I_T).
The bound depends only on (σ, q, T, κ) — not on the clip norm, the model or
the data. Replace-one releases (fixed-size batches, shuffling) report, for ``pld`` and ``closed_form``,
the smaller of this bound for the never-sampled reference (the pair at σ/2) and the zero-out
reference's (:mod:`reconrisk._src.measures.rero_zeroout`), ``details["reference"]`` naming the one that won.

This module holds what the bound is a function of — (σ, q, T, κ): the closed forms, the loss cap, the formulas,
the analytic bracket and the grid choices it re-exports. The questions' bodies — the refinement loops that ask a
release's analysis for its composed distributions, every method's dispatch, the Monte Carlo's start — live
beside the analysis (:mod:`reconrisk._src.analysis.privacy_rero`); their old names here still read, deprecated.
Methods:

``closed_form``
    q = 1: B = Φ(Φ⁻¹(κ) + √T/σ) (μ_GDP = √T/σ Gaussian DP; for a schedule,
    μ² = Σ T_i/σ_i²). T = 1, any q: the likelihood ratio is monotone, so
    B = (1−q)κ + qΦ(Φ⁻¹(κ) + 1/σ). Exact; ``lower == upper``.
``pld`` (default)
    A certified bracket from pessimistic and optimistic privacy-loss
    distributions (:mod:`reconrisk._src.accounting.pld`):
    B_κ = inf_ε [e^ε κ + δ_{μ‖ν}(ε)], the infimum taken exactly over ε
    (not on a grid). The discretisation is refined until the bracket's
    *relative* width (upper − lower)/upper is ≤ ``rel_tol`` (default 1 %;
    an absolute ``tol`` may be given instead), so tiny κ keep meaningful
    digits. A bracket that stops short (atom or time budget) is still
    certified and says so: ``converged`` is False. For q = 1 the exact
    closed form is used.
``mc``
    Hayes, Mahloujifar & Balle 2023, Algorithm 1, corrected (:mod:`reconrisk._src.measures.montecarlo`), with
    a confidence interval at level ``confidence``.
``rdp``
    The Rényi-DP baseline (:mod:`reconrisk._src.measures.conversions`): an upper bound only
    (``lower`` is ``None``).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .._deprecated import moved_names
from ..errors import ReconRiskError
from ..release import Release
from ..results import Bound
from ..accounting.gaussian import release_gdp_mu
from .rero_analytic import (  # noqa: F401  (re-exported)
    SAMPLED_GDP_MAX_MEAN, _sampled_gdp_upper, analytic_bracket, symmetric_step_power)
from .rero_grid import (  # noqa: F401  (re-exported: the grid and tilt choices)
    DEFAULT_REL_TOL, H_FINEST_REL, H_START, MAX_REFINED_ATOMS, TILT_GRID_MAX, TILT_GROUP_SD, _atoms_per_step,
    _loss_spread, _loss_spread_min, _refinement_factor, _tilt_grid_factor, _tilt_groups, _tilt_tail,
    first_discretization, start_discretization)

METHODS = ("pld", "closed_form", "mc", "rdp")
#: Default absolute target width (None: the relative target alone decides).
DEFAULT_TOL = None


#: The result of every ReRo method: a :class:`reconrisk._src.results.Bound` with ``quantity="reconstruction"``
#: (κ, the prior size and the method's details in ``details``; ``b.kappa`` reads them).
ReroBound = Bound

FORMULAS = {
    "pld": "B_kappa(mu, nu) = inf_eps [e^eps kappa + delta(eps)], bracketed by the pessimistic and optimistic PLDs "
           "(Hayes, Mahloujifar & Balle 2023, Cor. 4)",
    "closed_form": "q = 1: Phi(Phi^-1(kappa) + mu_GDP), mu_GDP = sqrt(sum T_i/sigma_i^2); T = 1: "
                   "(1-q) kappa + q Phi(Phi^-1(kappa) + 1/sigma) (Hayes, Mahloujifar & Balle 2023, Cor. 4)",
    "mc": "complement estimator of Hayes, Mahloujifar & Balle 2023, Alg. 1 (corrected) with a DKW + Clopper-Pearson "
          "interval",
    "rdp": "min over orders a of (kappa e^eps_a)^((a-1)/a) (Hayes, Mahloujifar & Balle 2023, Eq. 2)",
}


def closed_form(release: Release, kappa: np.ndarray, *, symmetric: bool = False) -> np.ndarray:
    """Exact B_κ where a closed form exists (all q = 1, or a single step).

    ``symmetric``: 1 − C(κ) of the symmetrised curve (the pair view of a fixed-batch release,
    :func:`reconrisk._src.measures.rero_analytic.symmetric_step_power`); q = 1 is the same Gaussian-DP curve.
    """
    segs = release.segments
    if release.full_batch:
        return special.ndtr(special.ndtri(kappa) + release_gdp_mu(release))
    if len(segs) == 1 and segs[0].steps == 1:
        s = segs[0]
        if symmetric:
            return symmetric_step_power(s.noise_multiplier, s.sample_rate, np.asarray(kappa, dtype=float))[0]
        q = s.sample_rate
        return (1 - q) * kappa + q * special.ndtr(special.ndtri(kappa) + 1.0 / s.noise_multiplier)
    raise ReconRiskError(
        "method 'closed_form' needs sample_rate == 1 (full batch) or steps == 1; "
        f"found sample_rate={[s.sample_rate for s in segs]}, steps={release.steps}"
    )


def has_closed_form(release: Release) -> bool:
    segs = release.segments
    return release.full_batch or (len(segs) == 1 and segs[0].steps == 1)


#: Noise multipliers outside [SIGMA_PLD_MIN, SIGMA_PLD_MAX] get the analytic bracket only
#: (σ² must neither underflow nor overflow; at both ends that bracket is exact to float precision).
SIGMA_PLD_MIN = 1e-100
SIGMA_PLD_MAX = 1e100


def _pld_feasible(release: Release) -> bool:
    return all(SIGMA_PLD_MIN <= s.noise_multiplier <= SIGMA_PLD_MAX for s in release.segments)


def loss_cap(kappa: np.ndarray) -> float:
    """Largest privacy loss represented: log(1/κ_min) + 40.

    Atoms above it hold ν-mass below κ·e^{-40}, so they sit inside the
    Neyman–Pearson set whether they are moved to +∞ (upper end) or onto the
    cap (lower end); capping keeps huge compositions (large T, small σ) cheap.
    """
    return float(-np.log(np.min(kappa))) + 40.0


def _which(never_up, z_lo, z_up) -> dict:
    """The details saying which reference gave the reported bound (the smaller upper end wins)."""
    won = "zero-out" if never_up is None or z_up <= never_up else "never-sampled"
    return {"reference": won, "zero_out_upper": float(z_up), "zero_out_lower": float(z_lo),
            "never_sampled_upper": None if never_up is None else float(never_up),
            "reference_note": "fixed-size batches: the smaller of two sound bounds, the zero-out reference "
                              "(Bin(T, q) participations, each sqrt(K)/sigma-GDP) and the never-sampled one "
                              "(the Poisson remove pair at sigma/2)"}


#: The questions' bodies moved beside the analysis that answers them (:mod:`reconrisk._src.analysis.privacy_rero`):
#: a measure here is a function of (σ, q, T, κ) or of a distribution, never of an analysis. The old names still
#: read, with a :class:`DeprecationWarning`.
__getattr__ = moved_names(__name__, __package__, {
    name: "..analysis.privacy_rero" for name in (
        "pld_bracket", "pld_upper", "rero_bounds", "start_monte_carlo", "MonteCarloBounds", "_bracket_at",
        "_saturated_shortcut", "_release_analysis", "_zero_out_applies")})
