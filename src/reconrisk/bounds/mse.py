"""MSE lower bounds for reconstruction attacks (seed 001: Guo, Karrer, Chaudhuri, van der Maaten).

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

and the accountants they need: the RDP of the subsampled Gaussian at α = 2
for a :class:`~reconrisk.release.Release` (:func:`release_rdp_alpha2`), the
(ε, δ)-DP of one Gaussian step (:func:`gaussian_step_dp_epsilon`), the
subsampling factor κ of seed 001 Eq. 3 with its failure probability
(:func:`subsampling_factor`), the RDP of output-perturbed regularised ERM by
the paper's and by the standard formula (:func:`output_perturbation_rdp`) and
the membership-inference advantage bound (:func:`mia_advantage_bound`).

Departures from the printed paper (spec_001 §4.2, §6, §10)
-----------------------------------------------------------
* The Fisher information of the Gaussian mechanism ``h = f(z) + N(0, s²I)`` is
  ``J_fᵀ J_f / s²`` with the noise standard deviation ``s``; in DP-SGD the
  noise on the summed gradients has std ``s = σC``. The paper's Eq. 1 and
  Algorithm 1 write ``1/σ²`` (C² dropped); we use ``σ²C²``.
* ``uᵀ I u = lim_{Δ→0} χ²(p(·; z) || p(·; z + Δu)) / Δ²`` — the paper prints
  the limit without the ``Δ²``.
* Output perturbation: the paper states (2, ε)-RDP with ``ε = 2/(nλσ)``
  (reproducing its 1.58 and 1579); the Gaussian mechanism with L2
  sensitivity ``2/(nλ)`` is (2, ``4/(nλσ)²``)-RDP. Both are offered, named
  ``"paper"`` and ``"gaussian"``.
* GELU soft clipping bounds a clipped gradient's norm by ``1.11522·C``
  (computed maximum of ``r/(GELU(r−1)+1)``); the paper rounds this to
  ``1.115``. :data:`GELU_CLIP_OVERSHOOT` is the (rounded-up) exact value
  used by default; :data:`GELU_CLIP_OVERSHOOT_PAPER` reproduces the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .. import _validate as v
from ..errors import ReconRiskError
from ..release import Release, Segment
from ..accounting.rdp import release_rdp

#: Upper bound on ``||GELU-clip(g)|| / C`` (max of r/(GELU(r−1)+1) = 1.1152189…, rounded up).
GELU_CLIP_OVERSHOOT = 1.11522
#: The value seed 001 prints (Algorithm 1 line 4; its code uses σ/1.115 in the RDP accountant).
GELU_CLIP_OVERSHOOT_PAPER = 1.115
#: Output-perturbation ε formulas (spec_001 §6).
OUTPUT_PERTURBATION_FORMULAS = ("paper", "gaussian")


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


def _positive_array(name: str, value, *, allow_zero: bool = False, allow_inf: bool = False) -> tuple[np.ndarray, bool]:
    if isinstance(value, (str, bytes)) or value is None:
        raise ReconRiskError(f"{name} must be a number or an array of numbers; found {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError(f"{name} must be a number or an array of numbers; found {value!r}") from None
    if arr.size == 0:
        raise ReconRiskError(f"{name} must not be empty")
    if np.isnan(arr).any():
        raise ReconRiskError(f"{name} must not contain NaN; found nan")
    bad = (arr < 0) if allow_zero else (arr <= 0)
    if not allow_inf:
        bad = bad | np.isinf(arr)
    if bad.any():
        rel = ">= 0" if allow_zero else "> 0"
        fin = "" if allow_inf else " and finite"
        raise ReconRiskError(f"{name} must be {rel}{fin}; found {float(arr[bad].ravel()[0])}")
    return arr, arr.ndim == 0


def _ret(arr: np.ndarray, scalar: bool):
    return float(arr) if scalar else arr


# ----------------------------------------------------------------------------------------
# Theorem 1 (RDP → MSE)
# ----------------------------------------------------------------------------------------
def rdp_mse_lower_bound(rdp_epsilon, diam=1.0, *, d: int | None = None, gamma=1.0, bias_sq: float = 0.0):
    """Seed 001 Theorem 1: MSE lower bound for a (2, ε)-RDP learner.

    ``MSE ≥ [Σ_{i=1}^d γ_i² diam_i² / (4d)] / (e^ε − 1) + bias_sq``.

    ``diam``: the per-coordinate diameters ``diam_i(Z)`` (a scalar — the same
    for every coordinate, ``1`` for ``[0, 1]^d`` — or a length-d vector).
    ``gamma``: ``γ_i = inf_z |∂μ(z)_i/∂z_i|`` (1 for an unbiased attack), a
    scalar or a length-d vector. ``d``: the dimension, needed only to check
    vector lengths. ``bias_sq``: the squared bias per coordinate
    ``||μ(z) − z||²/d`` (0 for an unbiased attack).

    ``rdp_epsilon`` may be an array (the bound is then evaluated element-wise
    for scalar ``diam``/``gamma``). Computed in log space: finite and
    non-negative for every ε > 0, exactly 0 only below ~1e-308.
    """
    eps, eps_scalar = _positive_array("rdp_epsilon", rdp_epsilon, allow_inf=True)
    diam_a, _ = _positive_array("diam", diam)
    gamma_a, _ = _positive_array("gamma", gamma, allow_zero=True)
    bias_sq = v.real("bias_sq", bias_sq)
    if bias_sq < 0:
        raise ReconRiskError(f"bias_sq must be >= 0; found {bias_sq}")
    if diam_a.ndim > 1 or gamma_a.ndim > 1:
        raise ReconRiskError("diam and gamma must be scalars or 1-d vectors of length d")
    sizes = {a.size for a in (diam_a, gamma_a) if a.ndim == 1}
    if d is not None:
        d = v.integer("d", d, minimum=1)
        sizes.add(d)
    if len(sizes) > 1:
        raise ReconRiskError(f"diam, gamma and d must agree on the dimension; found sizes {sorted(sizes)}")
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
    """Diagonal Fisher information leakage ``η̄² = Tr(I)/d`` (seed 001 §3)."""
    I = _fim(fim)
    return float(np.trace(I) / I.shape[0])


def spectral_fil(fim) -> float:
    """Fisher information leakage ``η² = ||I||₂`` (largest eigenvalue)."""
    return float(np.linalg.eigvalsh(_fim(fim))[-1])


def dfil_bound(eta_bar_sq):
    """``1/η̄²``: the dFIL MSE lower bound for unbiased attacks (seed 001 Thm 2; the bound used in its experiments).

    Element-wise for arrays; ``η̄² = 0`` (no leakage) gives ``inf``.
    """
    e, scalar = _positive_array("eta_bar_sq", eta_bar_sq, allow_zero=True)
    with np.errstate(divide="ignore"):
        return _ret(1.0 / e, scalar)


def spectral_bound(eta_sq):
    """``1/η²`` with the spectral FIL η² = ||I||₂ — weaker than :func:`dfil_bound` (Tr I ≤ dη²)."""
    e, scalar = _positive_array("eta_sq", eta_sq, allow_zero=True)
    with np.errstate(divide="ignore"):
        return _ret(1.0 / e, scalar)


def crb_mse_lower_bound(fim, *, jac_mu=None, bias_sq: float = 0.0) -> float:
    """Seed 001 Theorem 2 (Cramér–Rao): ``MSE ≥ Tr(J_μ I⁻¹ J_μᵀ)/d + bias_sq``.

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
# membership inference (Humphries et al.; seed 001 §2)
# ----------------------------------------------------------------------------------------
def mia_advantage_bound(epsilon):
    """``Adv ≤ (e^ε − 1)/(e^ε + 1) = tanh(ε/2)`` for an ε-DP learner; element-wise."""
    e, scalar = _positive_array("epsilon", epsilon, allow_zero=True, allow_inf=True)
    return _ret(np.tanh(e / 2.0), scalar)


def mia_success_bound(epsilon):
    """Membership-inference success probability ``≤ (Adv + 1)/2`` (52.50% at ε = 0.1, 88.08% at ε = 2)."""
    adv = mia_advantage_bound(epsilon)
    return (np.asarray(adv) + 1.0) / 2.0 if not isinstance(adv, float) else (adv + 1.0) / 2.0


# ----------------------------------------------------------------------------------------
# accountants
# ----------------------------------------------------------------------------------------
def release_rdp_alpha2(release: Release, *, sensitivity: float = 1.0) -> float:
    """RDP ε at α = 2 of a DP-SGD :class:`Release` (Poisson-subsampled Gaussian, composed over its segments).

    For one step ``log(1 + q²(e^{1/σ_eff²} − 1))`` with ``σ_eff = σ/sensitivity``
    (sensitivity in units of C: 1 for hard clipping,
    :data:`GELU_CLIP_OVERSHOOT` for the GELU soft clip). Evaluated by
    :func:`reconrisk.accounting.rdp.release_rdp` (exact at integer orders).
    """
    if not isinstance(release, Release):
        raise ReconRiskError(f"release must be a reconrisk.Release; found {type(release).__name__}")
    k = v.positive("sensitivity", sensitivity)
    segs = [Segment(s.noise_multiplier / k, s.sample_rate, s.steps) for s in release.segments]
    return float(release_rdp(segs, orders=np.array([2]))[0])


def output_perturbation_rdp(n: int, lam: float, noise_std: float, formula: str = "gaussian") -> float:
    """RDP ε at α = 2 of ``θ* + N(0, σ²I)`` for λ-regularised logistic regression on n points.

    ``formula="paper"``: ``2/(nλσ)`` as printed in seed 001 §7.1 (gives its
    (2, 1.58) at n = 12,665, λ = σ = 1e-2 and 1579 at σ = 1e-5).
    ``formula="gaussian"``: the standard Gaussian RDP ``αΔ²/(2σ²)`` at α = 2
    with the L2 sensitivity ``Δ = 2/(nλ)`` of the minimiser of
    ``(1/n)Σ ℓ + (λ/2)||θ||²`` (Chaudhuri et al. 2011), i.e. ``4/(nλσ)²``.
    Both assume ``||x|| ≤ 1`` and a 1-Lipschitz loss; pixel data in [0, 1]^d
    do not satisfy the first (spec_001 §6), so neither is a certificate there.
    """
    n = v.integer("n", n, minimum=1)
    lam = v.positive("lam", lam)
    s = v.positive("noise_std", noise_std)
    formula = v.choice("formula", formula, OUTPUT_PERTURBATION_FORMULAS)
    if formula == "paper":
        return 2.0 / (n * lam * s)
    return 4.0 / (n * lam * s) ** 2


def gaussian_step_dp_epsilon(noise_multiplier: float, delta: float, *, sensitivity_factor: float = 2 * GELU_CLIP_OVERSHOOT) -> float:
    """ε of one Gaussian step, ``ε = sensitivity_factor · √(2 log(1.25/δ)) / σ`` (Dwork et al.; seed 001 Alg. 1 line 4).

    ``sensitivity_factor`` is the replace-one sensitivity in units of C:
    ``2 × 1.115`` for GELU-clipped gradients (the paper's choice), 2 for
    hard clipping. Dwork–Roth's calibration formally needs ε < 1; the paper
    uses it regardless (spec_001 §4.4).
    """
    sigma = v.positive("noise_multiplier", noise_multiplier)
    delta = v.probability_open("delta", delta)
    k = v.positive("sensitivity_factor", sensitivity_factor)
    return k * math.sqrt(2.0 * math.log(1.25 / delta)) / sigma


def subsampling_kappa(sample_rate, epsilon):
    """Seed 001 Eq. 3: ``κ = q / (q + (1 − q) e^{−ε})``, computed as ``expit(ε + logit q)``; κ = 1 at q = 1."""
    q, q_scalar = _positive_array("sample_rate", sample_rate)
    if (q > 1).any():
        raise ReconRiskError(f"sample_rate must be in (0, 1]; found {float(q[q > 1].ravel()[0])}")
    e, e_scalar = _positive_array("epsilon", epsilon, allow_zero=True, allow_inf=True)
    with np.errstate(divide="ignore"):
        logit = np.log(q) - np.log1p(-np.minimum(q, 1.0))
    out = np.where(q >= 1.0, 1.0, special.expit(e + logit))
    return _ret(out, q_scalar and e_scalar)


@dataclass(frozen=True)
class SubsamplingFactor:
    """κ of seed 001 Eq. 3 for T subsampled Gaussian steps, with its failure probability.

    The per-step (ε, δ)-DP guarantee behind Eq. 3 fails with probability δ
    per step; over the run the FIL bound ``I ⪯ κ Σ_t I_t`` holds except with
    probability ``failure_probability = min(1, T·δ)`` (union bound). Where
    that event cannot be tolerated, use κ = 1 (Eq. 2, no failure
    probability). ``meets_target`` says whether ``T·δ ≤ 1/n`` (seed 001 §6.1).
    """

    kappa: float
    step_epsilon: float
    delta: float
    steps: int
    failure_probability: float
    target_failure: float | None
    meets_target: bool | None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def subsampling_factor(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float | None = None,
    *,
    n: int | None = None,
    sensitivity_factor: float = 2 * GELU_CLIP_OVERSHOOT,
) -> SubsamplingFactor:
    """κ of Eq. 3 with δ chosen (when ``delta`` is None) so that ``T·δ = 1/n`` (needs ``n``)."""
    steps = v.integer("steps", steps, minimum=1)
    q = v.sample_rate("sample_rate", sample_rate)
    if n is not None:
        n = v.integer("n", n, minimum=1)
    if delta is None:
        if n is None:
            raise ReconRiskError("delta must be given (in (0, 1)) or n, to choose delta = 1/(n·steps); found neither")
        delta = 1.0 / (n * steps * (1 + 1e-12))
    delta = v.probability_open("delta", delta)
    eps = gaussian_step_dp_epsilon(noise_multiplier, delta, sensitivity_factor=sensitivity_factor)
    kappa = subsampling_kappa(q, eps)
    fail = min(1.0, steps * delta)
    target = None if n is None else 1.0 / n
    return SubsamplingFactor(
        kappa=float(kappa),
        step_epsilon=eps,
        delta=delta,
        steps=steps,
        failure_probability=fail,
        target_failure=target,
        meets_target=None if target is None else bool(fail <= target),
    )


# ----------------------------------------------------------------------------------------
# the CLI's result
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MseBound:
    """Theorem 1's unbiased MSE lower bound at one (2, ε)-RDP level."""

    rdp_epsilon: float
    diam: float
    mse_lower_bound: float
    log10_mse_lower_bound: float  # finite even where the bound underflows to 0
    std_lower_bound: float  # √bound: RMS error per coordinate
    release: dict | None = None
    sensitivity: float = 1.0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


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
    b = rdp_mse_lower_bound(rdp_epsilon, diam)
    log10_b = float((2 * math.log(diam) - math.log(4.0) - log_expm1(rdp_epsilon)) / math.log(10.0))
    return MseBound(
        rdp_epsilon=float(rdp_epsilon),
        diam=diam,
        mse_lower_bound=b,
        log10_mse_lower_bound=log10_b,
        std_lower_bound=math.sqrt(b),
        release=None if release is None else release.to_dict(),
        sensitivity=float(sensitivity),
    )
