"""MSE lower bounds for reconstruction attacks (Guo, Karrer, Chaudhuri & van der Maaten 2022).

Theory layer: numpy/scipy only.

Two answers to "how close can an attack get" in mean squared error per
coordinate, ``MSE = E_h ||ẑ(h) − z||² / d``:

* **Theorem 1** (from (2, ε)-RDP, via the Hammersley–Chapman–Robbins bound):
  ``MSE ≥ [Σ_i γ_i² diam_i² / (4d)] / (e^ε − 1) + ||μ(z) − z||²/d``; for an
  unbiased attack on ``[0, 1]^d`` this is ``1 / (4(e^ε − 1))``.
  :func:`rdp_mse_lower_bound`.
* **Theorem 2** (from the Fisher information I_h(z) of the release about the
  target, via the Cramér–Rao bound):
  ``MSE ≥ Tr(J_μ I⁻¹ J_μᵀ)/d + bias²`` and, unbiased,
  ``MSE ≥ Tr(I⁻¹)/d ≥ d/Tr(I) = 1/η̄² ≥ 1/η²`` with the diagonal FIL
  ``η̄² = Tr(I)/d`` and the spectral FIL ``η² = ||I||₂``.
  :func:`crb_mse_lower_bound`, :func:`dfil_bound`, :func:`spectral_bound`.

and the membership-inference advantage bound (:func:`mia_advantage_bound`).

The accountants these bounds read live in :mod:`reconrisk._src.accounting`: the
RDP at α = 2 of a release or of output perturbation
(:mod:`reconrisk._src.accounting.order2`) and Guo et al.'s (2022) subsampling factor
(Eq. 3; :mod:`reconrisk._src.accounting.subsampling`). Their names are re-exported
here so that ``from reconrisk._src.theory.mse import release_rdp_alpha2`` keeps
working.

Departures from the printed paper (spec_001 §4.2, §6, §10)
-----------------------------------------------------------
* The Fisher information of the Gaussian mechanism ``h = f(z) + N(0, s²I)`` is
  ``J_fᵀ J_f / s²`` with the noise standard deviation ``s``; in DP-SGD the
  noise on the summed gradients has std ``s = σC``. The paper's Eq. 1 and
  Algorithm 1 write ``1/σ²`` (C² dropped); we use ``σ²C²``.
* ``uᵀ I u = lim_{Δ→0} χ²(p(·; z) || p(·; z + Δu)) / Δ²`` — the paper prints
  the limit without the ``Δ²``.
* Output perturbation (spec_001 §6) and the GELU clip overshoot: see
  :mod:`reconrisk._src.accounting.order2` and :mod:`reconrisk._src.accounting.subsampling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from .._deprecated import renamed_kwargs, warn_renamed
from ..errors import ReconRiskError
# re-exported accountants (their home is reconrisk._src.accounting)
from ..accounting.order2 import OUTPUT_PERTURBATION_FORMULAS, output_perturbation_rdp, release_rdp_alpha2  # noqa: F401
from ..accounting.subsampling import (  # noqa: F401
    GELU_CLIP_OVERSHOOT,
    GELU_CLIP_OVERSHOOT_PAPER,
    SubsamplingFactor,
    gaussian_step_dp_epsilon,
    subsampling_factor,
    subsampling_factor_value,
)
from ..release import Release
from ..results import Bound

#: Theorem 1, unbiased, data in a box of per-coordinate diameter diam.
MSE_FORMULA = ("MSE >= diam^2/(4(e^eps2 - 1)), eps2 = RDP at order 2 (Guo, Karrer, Chaudhuri & van der Maaten "
               "2022, Thm 1)")


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------
def log_expm1(eps):
    """log(e^ε − 1) without overflow for large ε or cancellation for small ε (ε > 0)."""
    eps = np.asarray(eps, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        small = np.log(np.expm1(np.minimum(eps, 30.0)))
        large = eps + np.log1p(-np.exp(-np.maximum(eps, 30.0)))
    return np.where(eps < 30.0, small, large)


def _ret(arr: np.ndarray, scalar: bool):
    return float(arr) if scalar else arr


# ----------------------------------------------------------------------------------------
# Theorem 1 (RDP → MSE)
# ----------------------------------------------------------------------------------------
@renamed_kwargs(gamma="bias_factor")
def rdp_mse_lower_bound(rdp_epsilon, diam=1.0, *, d: int | None = None, bias_factor=1.0, bias_sq: float = 0.0):
    """Guo et al. 2022, Theorem 1: MSE lower bound for a (2, ε)-RDP learner.

    ``MSE ≥ [Σ_{i=1}^d γ_i² diam_i² / (4d)] / (e^ε − 1) + bias_sq``.

    ``diam``: the per-coordinate diameters ``diam_i(Z)`` (a scalar — the same
    for every coordinate, ``1`` for ``[0, 1]^d`` — or a length-d vector).
    ``bias_factor``: the paper's ``γ_i = inf_z |∂μ(z)_i/∂z_i|``, where μ(z) is
    the attack's mean output (1 for an unbiased attack), a scalar or a length-d vector. ``d``: the dimension, needed only to check
    vector lengths. ``bias_sq``: the squared bias per coordinate
    ``||μ(z) − z||²/d`` (0 for an unbiased attack).

    ``rdp_epsilon`` may be an array (the bound is then evaluated element-wise
    for scalar ``diam``/``bias_factor``). Computed in log space: finite and
    non-negative for every ε > 0, exactly 0 only below ~1e-308.
    """
    eps, eps_scalar = v.positive_array("rdp_epsilon", rdp_epsilon, allow_inf=True)
    diam_a, _ = v.positive_array("diam", diam)
    gamma_a, _ = v.positive_array("bias_factor", bias_factor, allow_zero=True)
    bias_sq = v.real("bias_sq", bias_sq)
    if bias_sq < 0:
        raise ReconRiskError(f"bias_sq must be >= 0; found {bias_sq}")
    if diam_a.ndim > 1 or gamma_a.ndim > 1:
        raise ReconRiskError("diam and bias_factor must be scalars or 1-d vectors of length d")
    sizes = {a.size for a in (diam_a, gamma_a) if a.ndim == 1}
    if d is not None:
        d = v.integer("d", d, minimum=1)
        sizes.add(d)
    if len(sizes) > 1:
        raise ReconRiskError(f"diam, bias_factor and d must agree on the dimension; found sizes {sorted(sizes)}")
    # mean over coordinates of γ_i² diam_i² / 4
    num = float(np.mean(np.broadcast_to(gamma_a**2 * diam_a**2, (max(sizes) if sizes else 1,)))) / 4.0
    with np.errstate(divide="ignore"):
        log_var = math.log(num) - log_expm1(eps) if num > 0 else np.full(eps.shape, -np.inf)
    out = np.exp(log_var) + bias_sq
    return _ret(out, eps_scalar)


def unbiased_rdp_mse_bound(rdp_epsilon, diam=1.0):
    """Theorem 1 for an unbiased attack: ``diam² / (4(e^ε − 1))`` (``1/(4(e^ε−1))`` on [0, 1]^d)."""
    return rdp_mse_lower_bound(rdp_epsilon, diam)


# ----------------------------------------------------------------------------------------
# Theorem 2 (Fisher information → MSE)
# ----------------------------------------------------------------------------------------
def gaussian_mechanism_fim(jacobian, noise_std: float) -> np.ndarray:
    """Fisher information ``I_h(z) = J_fᵀ J_f / s²`` of ``h = f(z) + N(0, s² I)`` (Hannun et al. 2021).

    ``jacobian``: the (p × d) Jacobian of f at z; ``noise_std``: s. For
    DP-SGD, s = σC (the paper's Eq. 1 omits C²).
    """
    J = np.asarray(jacobian, dtype=float)
    if J.ndim != 2:
        raise ReconRiskError(f"jacobian must be a (p, d) matrix; found shape {J.shape}")
    s = v.positive("noise_std", noise_std)
    return J.T @ J / s**2


def _fim(fim) -> np.ndarray:
    I = np.asarray(fim, dtype=float)
    if I.ndim != 2 or I.shape[0] != I.shape[1] or I.shape[0] == 0:
        raise ReconRiskError(f"fim must be a square (d, d) matrix; found shape {I.shape}")
    if not np.isfinite(I).all():
        raise ReconRiskError("fim must be finite")
    return 0.5 * (I + I.T)


def dfil(fim) -> float:
    """Diagonal Fisher information leakage ``η̄² = Tr(I)/d`` (Guo et al. 2022, §3)."""
    I = _fim(fim)
    return float(np.trace(I) / I.shape[0])


def spectral_fil(fim) -> float:
    """Fisher information leakage ``η² = ||I||₂`` (largest eigenvalue)."""
    return float(np.linalg.eigvalsh(_fim(fim))[-1])


def dfil_bound(eta_bar_sq):
    """``1/η̄²``: the dFIL MSE lower bound for unbiased attacks (Guo et al. 2022, Thm 2; the bound used in its experiments).

    Element-wise for arrays; ``η̄² = 0`` (no leakage) gives ``inf``.
    """
    e, scalar = v.positive_array("eta_bar_sq", eta_bar_sq, allow_zero=True)
    with np.errstate(divide="ignore"):
        return _ret(1.0 / e, scalar)


def spectral_bound(eta_sq):
    """``1/η²`` with the spectral FIL η² = ||I||₂ — weaker than :func:`dfil_bound` (Tr I ≤ dη²)."""
    e, scalar = v.positive_array("eta_sq", eta_sq, allow_zero=True)
    with np.errstate(divide="ignore"):
        return _ret(1.0 / e, scalar)


def crb_mse_lower_bound(fim, *, jac_mu=None, bias_sq: float = 0.0) -> float:
    """Guo et al. 2022, Theorem 2 (Cramér–Rao): ``MSE ≥ Tr(J_μ I⁻¹ J_μᵀ)/d + bias_sq``.

    Without ``jac_mu`` (an unbiased attack, J_μ = I_d) this is ``Tr(I⁻¹)/d``,
    which is ≥ ``1/η̄²`` ≥ ``1/η²``. A singular ``I`` makes unbiased
    estimation impossible along its null space: the unbiased bound is then
    ``inf``; the biased form uses the Moore–Penrose inverse only when the
    rows of J_μ lie in I's range (otherwise ``inf`` too).
    ``bias_sq`` is ``||μ(z) − z||²/d``.
    """
    I = _fim(fim)
    d = I.shape[0]
    bias_sq = v.real("bias_sq", bias_sq)
    if bias_sq < 0:
        raise ReconRiskError(f"bias_sq must be >= 0; found {bias_sq}")
    w, U = np.linalg.eigh(I)
    tol = max(w[-1], 0.0) * d * np.finfo(float).eps
    if jac_mu is None:
        if w[0] <= tol:
            return math.inf
        return float(np.sum(1.0 / w) / d + bias_sq)
    Jm = np.asarray(jac_mu, dtype=float)
    if Jm.ndim != 2 or Jm.shape[1] != d:
        raise ReconRiskError(f"jac_mu must be a (k, {d}) matrix; found shape {Jm.shape}")
    P = Jm @ U  # coordinates of J_μ's rows in I's eigenbasis
    null = w <= tol
    if null.any() and np.any(np.abs(P[:, null]) > 1e-12 * max(1.0, np.abs(P).max())):
        return math.inf
    inv = np.where(null, 0.0, 1.0 / np.where(null, 1.0, w))
    return float(np.sum(P**2 * inv[None, :]) / d + bias_sq)


# ----------------------------------------------------------------------------------------
# membership inference (Humphries et al.; Guo et al. 2022, §2)
# ----------------------------------------------------------------------------------------
def mia_advantage_bound(epsilon):
    """``Adv ≤ (e^ε − 1)/(e^ε + 1) = tanh(ε/2)`` for an ε-DP learner; element-wise."""
    e, scalar = v.positive_array("epsilon", epsilon, allow_zero=True, allow_inf=True)
    return _ret(np.tanh(e / 2.0), scalar)


def mia_success_bound(epsilon):
    """Membership-inference success probability ``≤ (Adv + 1)/2`` (52.50% at ε = 0.1, 88.08% at ε = 2)."""
    adv = mia_advantage_bound(epsilon)
    return (np.asarray(adv) + 1.0) / 2.0 if not isinstance(adv, float) else (adv + 1.0) / 2.0


# ----------------------------------------------------------------------------------------
# the CLI's result
# ----------------------------------------------------------------------------------------
def rdp_mse(rdp_epsilon: float, diam: float = 1.0) -> Bound:
    """Theorem 1 (unbiased) as a :class:`~reconrisk._src.results.Bound`: the lower end ``diam²/(4(e^ε − 1))``, no upper end.

    ``details`` hold ``log10_lower`` (finite even where the lower end underflows to 0), ``rms_lower`` (√lower,
    the RMS error per coordinate), ``rdp_epsilon`` and ``diam``. ``rdp_epsilon = 0`` (nothing released about
    the data) gives a lower end of ``inf``.
    """
    eps = v.real("rdp_epsilon", rdp_epsilon, allow_inf=True)
    if not eps >= 0.0:
        raise ReconRiskError(f"rdp_epsilon must be >= 0; found {eps}")
    diam = v.in_range("diam", diam, 0.0, 1e150, high_open=False)  # diam² must stay a finite double
    if eps == 0.0:
        b, log10_b = math.inf, math.inf
    else:
        b = float(rdp_mse_lower_bound(eps, diam))
        log10_b = float((2 * math.log(diam) - math.log(4.0) - log_expm1(eps)) / math.log(10.0))
    return Bound("mse", b, None, method="rdp", formula=MSE_FORMULA,
                 details={"log10_lower": log10_b, "rms_lower": math.sqrt(b), "rdp_epsilon": float(eps), "diam": diam})


@dataclass(frozen=True)
class MseBound:
    """Theorem 1's unbiased MSE lower bound at one (2, ε)-RDP level.

    ``mse`` is the certified :class:`~reconrisk._src.results.Bound` (a lower end only; its ``details`` hold
    ``log10_lower``, finite even where the bound underflows to 0, and ``rms_lower`` = √lower, the RMS error
    per coordinate). The scalar names of earlier releases (``mse_lower_bound``, ``log10_mse_lower_bound``,
    ``std_lower_bound``) still read (deprecated).
    """

    rdp_epsilon: float
    diam: float
    mse: Bound
    release: dict | None = None
    sensitivity: float = 1.0

    @property
    def mse_lower_bound(self) -> float:
        warn_renamed("MseBound.mse_lower_bound", "MseBound.mse.lower", "reconrisk")
        return self.mse.lower

    @property
    def log10_mse_lower_bound(self) -> float:
        warn_renamed("MseBound.log10_mse_lower_bound", "MseBound.mse.log10_lower", "reconrisk")
        return self.mse.details["log10_lower"]

    @property
    def std_lower_bound(self) -> float:
        warn_renamed("MseBound.std_lower_bound", "MseBound.mse.rms_lower", "reconrisk")
        return self.mse.details["rms_lower"]

    def to_dict(self) -> dict:
        """JSON-ready, with the keys of earlier releases (``mse_lower_bound`` …: the Bound's lower end)."""
        return {"rdp_epsilon": self.rdp_epsilon, "diam": self.diam, "mse_lower_bound": self.mse.lower,
                "log10_mse_lower_bound": self.mse.details["log10_lower"],
                "std_lower_bound": self.mse.details["rms_lower"], "release": self.release,
                "sensitivity": self.sensitivity}


def mse_bound(
    *,
    rdp_epsilon: float | None = None,
    release: Release | None = None,
    diam: float = 1.0,
    sensitivity: float = 1.0,
) -> MseBound:
    """Theorem 1 (unbiased) from an RDP ε at α = 2 or from a DP-SGD release (exactly one of them)."""
    if (rdp_epsilon is None) == (release is None):
        raise ReconRiskError("give exactly one of rdp_epsilon or release (noise_multiplier, sample_rate, steps)")
    diam = v.in_range("diam", diam, 0.0, 1e150, high_open=False)  # diam² must stay a finite double
    if release is not None:
        rdp_epsilon = release_rdp_alpha2(release, sensitivity=sensitivity)
    else:
        rdp_epsilon = v.positive("rdp_epsilon", rdp_epsilon, allow_inf=True)
    mse = rdp_mse(rdp_epsilon, diam)
    return MseBound(
        rdp_epsilon=float(rdp_epsilon),
        diam=diam,
        mse=mse,
        release=None if release is None else release.to_dict(),
        sensitivity=float(sensitivity),
    )
