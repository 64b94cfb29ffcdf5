"""ReRo bounds, calibration and NCC for analytic gradient inversion under DP (Riess et al. 2024).

The attack: the adversary replaces the network by ``f(X) = WX`` (M rows, no
bias) with loss ``1ᵀWX``; every row gradient is a copy of ``X``. After
clipping at C and adding ``N(0, σ²C²)`` noise, averaging the rows and undoing
the clipping factor gives ``X̂ ~ N(X, σ²·max(C²/M, ‖X‖²)·I_N)`` — the optimal
(minimum-variance unbiased) reconstruction once ``M ≥ (C/‖X‖)²`` (Prop. 1,
Cor. 1, Eq. 20). Everything here follows from that Gaussian:

* :func:`rero_mse` — Prop. 3 (Eq. 24) and its looser C-variant (the paper's γ(η));
* :func:`rero_psnr` — Props. 4–5 (Eqs. 25–27) and the C-variants (the paper's γ̃(η));
* :func:`analytic_noise_multiplier_for_rero`, :func:`eta_for_rero` — closed-form
  calibration ([inferred], spec_003 §7: ``σ² ≥ Nη/(m²·χ²_N⁻¹(γ))``);
* :func:`ncc_bound`, :func:`ncc_exact`, :func:`sample_ncc_decomposition` —
  Prop. 6 (Eq. 28) and Prop. B.4 (Eq. 66);
* :func:`averaged_variance` (Prop. 7) and :func:`selection_probability` (Sec. 4.3).

Departures from the printed paper (each also stated where it applies):

1. **Row count.** Eq. 18 / Cor. 1 print ``M ≥ ⌈C/m⌉``. With ``L = 1ᵀWX`` the
   per-sample gradient has norm ``√M‖X‖``, so clipping is active — and the
   variance reaches its floor ``σ²‖X‖²`` — iff ``M ≥ (C/‖X‖)²``. The squared
   rule is the default of :func:`optimal_num_rows`; ``rule="paper"`` keeps the
   printed one for reproduction only (the Fig. 1 caption, Sec. 5.1 and the
   authors' code all use the squared rule).
2. **Selection probability.** The paper's ``C(K̂, k)/|D|^k`` is not a
   probability (it can exceed 1); the exact binomial pmf is the default.
3. **Bounds need m > 0.** Zero-norm data are excluded (``m = min over D∖{0}``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special  # (scipy.stats, ~0.25 s, loads in the one function that needs it)

from .. import _validate as val
from .._roots import strict_up
from .._deprecated import renamed_function, renamed_kwargs, warn_renamed
from ..errors import ReconRiskError
from ..results import Bound
from .analytic_laws import MSELaw, PSNRLaw, _ret

__all__ = [
    "optimal_num_rows",
    "reconstruction_variance",
    "averaged_variance",
    "rero_mse",
    "rero_psnr",
    "analytic_noise_multiplier_for_rero",
    "eta_for_rero",
    "ncc_bound",
    "ncc_exact",
    "sample_ncc_decomposition",
    "selection_probability",
    "analytic_bound",
    "analytic_calibration",
    "AnalyticBound",
    "AnalyticCalibration",
    "METRICS",
]

METRICS = ("mse", "psnr", "ncc")
_LN10_10 = math.log(10.0) / 10.0


# ----------------------------------------------------------------------------
# the attack's variance
# ----------------------------------------------------------------------------


def optimal_num_rows(clip_norm, min_norm, *, rule: str = "squared") -> int:
    """Rows M of the optimal linear layer (Riess et al. 2024, Eq. 18 / Cor. 1, corrected).

    ``rule="squared"`` (default): ``max(1, ⌈(C/m)²⌉)``, the smallest M for which
    clipping is active for every sample of norm ≥ m, so the variance is the
    floor σ²‖X‖². ``rule="paper"``: the printed ``max(1, ⌈C/m⌉)``, which is
    *not* sufficient (spec_003 §5.3: at C = 5000, ‖X‖ ≈ 194 it leaves the noise
    std at 0.49 instead of 0.097).
    """
    c = val.positive("clip_norm", clip_norm)
    m = val.positive("min_norm", min_norm)
    r = val.choice("rule", rule, ("squared", "paper"))
    ratio = c / m if r == "paper" else (c / m) ** 2
    # guard against ceil(4.000000000001) from round-off
    return max(1, math.ceil(ratio * (1 - 1e-12)))


def reconstruction_variance(noise_multiplier, clip_norm, rows, norm, *, bias: bool = False):
    """Per-coordinate variance of the oracle-scaled sample-mean reconstruction (Eq. 17).

    ``σ²·max(C²/M, ‖X‖²)`` for the Cor. 1 layer without bias, and
    ``σ²·max(C²/M, ‖X‖² + 1)`` with a learnable bias (its gradient is 1 per
    row). [inferred, checked by Monte Carlo with explicit gradients] —
    spec_003 §5.3; it reduces to Eq. 20's ``σ²‖X‖²`` when ``M ≥ (C/‖X‖)²``.
    Vectorised over ``norm``.
    """
    s = val.positive("noise_multiplier", noise_multiplier)
    c = val.positive("clip_norm", clip_norm)
    m = val.integer("rows", rows, minimum=1)
    n2 = val.positive_array("norm", norm)[0] ** 2 + (1.0 if bias else 0.0)
    return _ret(s * s * np.maximum(c * c / m, n2))


def averaged_variance(noise_multiplier, norm, averaged) -> float:
    """Variance σ²‖X‖²/k of the average of k matched reconstructions (Riess et al. 2024, Prop. 7, Eq. 29)."""
    s = val.positive("noise_multiplier", noise_multiplier)
    n = val.positive("norm", norm)
    k = val.integer("averaged", averaged, minimum=1)
    return s * s * n * n / k


# ----------------------------------------------------------------------------
# ReRo (Props. 3-5)
# ----------------------------------------------------------------------------


def _scale(min_norm, clip_norm) -> float:
    """The norm in the bound: m (Props. 3-5) or C (their looser C-variants, valid when C ≤ m)."""
    if (min_norm is None) == (clip_norm is None):
        raise ReconRiskError(
            "give exactly one of min_norm (Props. 3-5) or clip_norm (their C-variant, valid when "
            f"clip_norm <= min_norm); found min_norm={min_norm}, clip_norm={clip_norm}"
        )
    if min_norm is not None:
        return val.positive("min_norm", min_norm)
    return val.positive("clip_norm", clip_norm)


def _eta_mse(eta) -> np.ndarray:
    if isinstance(eta, (str, bool)) or eta is None:
        raise ReconRiskError(f"eta must be a number >= 0 (an MSE threshold); found {eta!r}")
    arr = np.asarray(eta, dtype=float)
    bad = ~(arr >= 0)
    if bad.any():
        raise ReconRiskError(f"eta must be >= 0 for metric 'mse' (an MSE threshold); found {arr[bad].ravel()[0]}")
    return arr


def _eta_psnr(eta) -> np.ndarray:
    if isinstance(eta, (str, bool)) or eta is None:
        raise ReconRiskError(f"eta must be a finite number of dB for metric 'psnr'; found {eta!r}")
    arr = np.asarray(eta, dtype=float)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ReconRiskError(f"eta must be a finite number of dB for metric 'psnr'; found {arr[bad].ravel()[0]}")
    return arr


def rero_mse(eta, noise_multiplier, dim, *, min_norm=None, clip_norm=None, averaged: int = 1, log: bool = False):
    """γ(η) ≥ P(MSE(X, R(θ)) ≤ η) for the analytic (unbiased) attack R, X̂ ~ N(X, σ²‖X‖²·I_N), ‖X‖ ≥ m: its error
    law (Riess et al. 2024, Prop. 3, Eq. 24), not a bound over every attack.

    The paper states it for every attack; that holds only among unbiased reconstructions. An estimator
    that uses what is public — the clip norm C — does better: guessing zero has MSE ≤ C²/N with
    probability 1, projecting the noisy update onto the C-sphere ≤ 4C²/N, where γ(4C²/N) is ~0 at any
    useful σ (``tests/test_flower_local.py`` on real ``LocalDpMod`` updates). An attack-independent
    statement about a record is ReRo with a prior (Hayes, Mahloujifar & Balle 2023).

    ``γ(η) = Γ_R(N/2, Nη/(2σ²m²))``. With ``clip_norm`` instead of ``min_norm``
    it is the looser C-variant ``Γ_R(N/2, Nη/(2σ²C²))``, valid only when
    ``C ≤ m`` (the caller asserts this). ``averaged`` = k divides σ² by k
    (Prop. 7). ``log=True`` returns log γ, exact far below 1e-308.
    Vectorised over ``eta`` (an MSE threshold in the data's squared units, ≥ 0).
    """
    e = _eta_mse(eta)
    s = val.positive("noise_multiplier", noise_multiplier)
    n = val.integer("dim", dim, minimum=1)
    k = val.integer("averaged", averaged, minimum=1)
    law = MSELaw(s * s * _scale(min_norm, clip_norm) ** 2 / k, n)
    return law.logcdf(e) if log else law.cdf(e)


def rero_psnr(
    eta, noise_multiplier, dim, *, data_range=1.0, min_norm=None, clip_norm=None, averaged: int = 1, log: bool = False
):
    """γ̃(η) = P(PSNR(X, R(θ)) ≥ η) of the analytic (unbiased) attack R (Riess et al. 2024, Props. 4-5,
    Eqs. 25-27): that attack's error law, not a bound over every attack (see :func:`rero_mse`).

    ``γ̃(η) = Γ_R(N/2, N·10^{−η/10}·R_D²/(2σ²m²))`` with the global data range
    ``R_D`` (``data_range``, default 1); the C-variant (``clip_norm``, valid
    when C ≤ m) replaces m by C. Equivalently, the mechanism is (−η, γ̃)-ReRo
    for the error −PSNR, against that attack. ``eta`` is in dB (any finite real).
    """
    e = _eta_psnr(eta)
    s = val.positive("noise_multiplier", noise_multiplier)
    n = val.integer("dim", dim, minimum=1)
    r = val.positive("data_range", data_range)
    k = val.integer("averaged", averaged, minimum=1)
    law = PSNRLaw(s * s * _scale(min_norm, clip_norm) ** 2 / k, n, r)
    return law.logsf(e) if log else law.sf(e)


# ----------------------------------------------------------------------------
# calibration (closed form)
# ----------------------------------------------------------------------------


def _mse_threshold(metric: str, eta: float, data_range: float) -> float:
    """The MSE threshold equivalent to η: η itself, or R²·10^{−η/10} for PSNR (Eq. 62)."""
    if metric == "mse":
        return float(_eta_mse(eta))
    return data_range**2 * math.exp(-_LN10_10 * float(_eta_psnr(eta)))


def analytic_noise_multiplier_for_rero(metric, eta, target_rero, dim, min_norm, *, data_range=1.0, averaged: int = 1) -> float:
    """Smallest noise multiplier σ with γ(η) ≤ ``target_rero`` (closed form; [inferred], spec_003 §7-8).

    ``σ² = N·η_MSE/(m²·χ²_N⁻¹(γ))·k`` where ``η_MSE = η`` (MSE) or
    ``R²·10^{−η/10}`` (PSNR, η in dB), and k = ``averaged``. Since
    Γ_R is increasing in its second argument, every σ at or above this value
    satisfies the bound. (Named apart from :func:`reconrisk._src.analysis.calibrate.noise_multiplier_for_rero`,
    the DP-SGD calibration of Hayes, Mahloujifar & Balle 2023.) Works for ``target_rero`` down to ~1e-300.
    """
    mt = val.choice("metric", metric, ("mse", "psnr"))
    g = val.probability_open("target_rero", target_rero)
    n = val.integer("dim", dim, minimum=1)
    m = val.positive("min_norm", min_norm)
    r = val.positive("data_range", data_range)
    k = val.integer("averaged", averaged, minimum=1)
    thr = _mse_threshold(mt, eta, r)
    if mt == "mse" and thr == 0:
        raise ReconRiskError("eta must be > 0 for calibration of metric 'mse' (γ(0) = 0 for every σ); found 0.0")
    q = 2.0 * special.gammaincinv(0.5 * n, g)  # χ²_N quantile, without the 1 - γ round trip
    return math.sqrt(k * n * thr / (m * m * q))


@renamed_kwargs(gamma="target_rero")
def eta_for_rero(metric, target_rero, noise_multiplier, dim, min_norm, *, data_range=1.0, averaged: int = 1) -> float:
    """The threshold η at which the bound γ(η) equals ``target_rero`` (closed-form inverse of Props. 3-5).

    MSE: ``η = σ²m²·χ²_N⁻¹(γ)/(kN)``. PSNR (dB): ``η = 10·log10(R²kN/(σ²m²·χ²_N⁻¹(γ)))``.
    """
    mt = val.choice("metric", metric, ("mse", "psnr"))
    g = val.probability_open("target_rero", target_rero)
    s = val.positive("noise_multiplier", noise_multiplier)
    n = val.integer("dim", dim, minimum=1)
    m = val.positive("min_norm", min_norm)
    r = val.positive("data_range", data_range)
    k = val.integer("averaged", averaged, minimum=1)
    mse_eta = s * s * m * m * 2.0 * special.gammaincinv(0.5 * n, g) / (k * n)
    if mt == "mse":
        return float(mse_eta)
    return (2.0 * math.log(r) - math.log(mse_eta)) / _LN10_10


# ----------------------------------------------------------------------------
# NCC (Prop. 6, Prop. B.4)
# ----------------------------------------------------------------------------


def ncc_bound(noise_multiplier, dim, *, averaged: int = 1):
    """Upper bound ``sqrt(1/(1 + σ²N/k))`` on the population NCC of the optimal attack (Riess et al. 2024, Prop. 6, Eq. 28).

    Independent of C, ‖X‖ and the data range. Finite-N *sample* NCC can exceed
    it (Remark B.1); it is not a ReRo bound. Vectorised over ``noise_multiplier``.
    """
    s = val.positive_array("noise_multiplier", noise_multiplier)[0]
    n = val.integer("dim", dim, minimum=1)
    k = val.integer("averaged", averaged, minimum=1)
    return _ret(1.0 / np.sqrt(1.0 + s * s * n / k))


def _sample(name: str, x) -> np.ndarray:
    if isinstance(x, (str, bool)) or x is None:
        raise ReconRiskError(f"{name} must be an array of numbers; found {x!r}")
    arr = np.asarray(x, dtype=float).ravel()
    if arr.size < 1 or not np.isfinite(arr).all():
        raise ReconRiskError(f"{name} must be a non-empty array of finite numbers; found {arr[:3]}...")
    return arr


def ncc_exact(noise_multiplier, x, *, averaged: int = 1) -> float:
    """Population NCC ``sqrt(1/(1 + σ²‖X‖²/(k·Var(x))))`` for a given sample X (Riess et al. 2024, Prop. 6, Eq. 28, left side).

    ``Var(x)`` is the population (1/N) variance of the entries of X. Constant
    X (Var = 0) has no NCC and zero-norm X is excluded: both raise.
    """
    s = val.positive("noise_multiplier", noise_multiplier)
    k = val.integer("averaged", averaged, minimum=1)
    arr = _sample("x", x)
    norm2 = float(arr @ arr)
    if norm2 == 0:
        raise ReconRiskError("x must have a nonzero norm (Riess et al. 2024 excludes X = 0); found norm 0")
    var = float(np.var(arr))
    if var == 0:
        raise ReconRiskError("x must not be constant (NCC is undefined for zero variance); found variance 0")
    return 1.0 / math.sqrt(1.0 + s * s * norm2 / (k * var))


def sample_ncc_decomposition(x, zeta) -> dict:
    """Prop. B.4 (Eq. 66): the sample NCC of X and X̂ = X + ζ split into its two terms.

    ``NCC = σ_X/σ_X̂ + ((1/N)Σ x_i ζ_i − x̄ ζ̄)/(σ_X σ_X̂)`` (population moments).
    Returns ``{"ncc", "ratio_term", "covariance_term"}``; the cross term can
    have either sign, which is why empirical NCC can exceed Prop. 6 (Remark B.1).
    """
    xs = _sample("x", x)
    zs = _sample("zeta", zeta)
    if xs.shape != zs.shape:
        raise ReconRiskError(f"zeta must have the shape of x {xs.shape}; found {zs.shape}")
    xh = xs + zs
    sx, sxh = float(np.std(xs)), float(np.std(xh))
    if sx == 0 or sxh == 0:
        raise ReconRiskError("x and x + zeta must not be constant (NCC undefined); found zero variance")
    ratio = sx / sxh
    cov = (float(np.mean(xs * zs)) - float(np.mean(xs)) * float(np.mean(zs))) / (sx * sxh)
    direct = float(np.mean((xs - xs.mean()) * (xh - xh.mean()))) / (sx * sxh)
    return {"ncc": direct, "ratio_term": ratio, "covariance_term": cov}


# ----------------------------------------------------------------------------
# selection (Sec. 4.3)
# ----------------------------------------------------------------------------


def selection_probability(k, attacks, n_records, *, exact: bool = True, log: bool = False) -> float:
    """Probability that the target is picked exactly k times in K̂ = ``attacks`` batch-size-1 steps (Riess et al. 2024, Sec. 4.3).

    ``exact=True`` (default): the binomial pmf ``C(K̂,k)·p^k·(1−p)^{K̂−k}``,
    ``p = 1/|D|``. ``exact=False``: the paper's printed ``C(K̂,k)/|D|^k``, which
    omits ``(1−p)^{K̂−k}``; it is only an upper bound and can exceed 1 (e.g.
    K̂ = 100, k = 1, |D| = 100 gives 1.0 against the true 0.3697).
    ``log=True`` returns the natural log.
    """
    K = val.integer("attacks", attacks, minimum=1)
    kk = val.integer("k", k, minimum=0, maximum=K)
    n = val.integer("n_records", n_records, minimum=1)
    if exact:
        from scipy import stats

        out = float(stats.binom.logpmf(kk, K, 1.0 / n))
    else:
        out = float(special.gammaln(K + 1) - special.gammaln(kk + 1) - special.gammaln(K - kk + 1) - kk * math.log(n))
    return out if log else math.exp(out)


# ----------------------------------------------------------------------------
# structured results for the CLI and reports
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalyticBound:
    """A Riess et al. 2024 bound at one setting.

    ``bound`` is the paper's γ(η) as a :class:`~reconrisk._src.results.Bound` (an upper end on the attack's success
    probability; ``bound.log_upper`` its log), ``clip`` the C-variant and ``ncc`` the bound on the optimal
    attack's population NCC (Prop. 6). ``bound`` and ``clip`` are None for NCC (no ReRo form), ``clip`` also
    where it does not apply. The scalar names of earlier releases (``rero``, ``log_rero``, ``rero_clip``,
    ``ncc_bound``) still read (deprecated); :meth:`to_dict` keeps them as its keys.
    """

    metric: str
    noise_multiplier: float
    dim: int
    eta: float | None
    bound: Bound | None
    min_norm: float | None
    clip_norm: float | None
    clip: Bound | None  # C-variant, only when clip_norm <= min_norm
    data_range: float | None
    averaged: int
    expected: float | None  # E[metric] for a sample of norm m (MSE, PSNR) or None
    ncc: Bound
    optimal_rows: int | None  # rows the attacker needs: ⌈(C/m)²⌉, when C and m are known
    basis: str | None = None  # "min_norm" (Props. 3-5) or "clip_norm" (C-variant, m unknown, C ≤ m assumed)

    def to_dict(self) -> dict:
        """JSON-ready, with the keys of earlier releases (``rero``, ``log_rero``, ``rero_clip``, ``ncc_bound``)."""
        up = lambda b: None if b is None else b.upper  # noqa: E731
        return {"metric": self.metric, "noise_multiplier": self.noise_multiplier, "dim": self.dim, "eta": self.eta,
                "rero": up(self.bound), "log_rero": None if self.bound is None else self.bound.details["log_upper"],
                "min_norm": self.min_norm, "clip_norm": self.clip_norm, "rero_clip": up(self.clip),
                "data_range": self.data_range, "averaged": self.averaged, "expected": self.expected,
                "ncc_bound": self.ncc.upper, "optimal_rows": self.optimal_rows, "basis": self.basis}

    # the scalar names of earlier releases, for one release
    @property
    def rero(self) -> float | None:
        warn_renamed("AnalyticBound.rero", "AnalyticBound.bound.upper", "reconrisk")
        return None if self.bound is None else self.bound.upper

    @property
    def log_rero(self) -> float | None:
        warn_renamed("AnalyticBound.log_rero", "AnalyticBound.bound.log_upper", "reconrisk")
        return None if self.bound is None else self.bound.details["log_upper"]

    @property
    def rero_clip(self) -> float | None:
        warn_renamed("AnalyticBound.rero_clip", "AnalyticBound.clip.upper", "reconrisk")
        return None if self.clip is None else self.clip.upper

    @property
    def ncc_bound(self) -> float:
        warn_renamed("AnalyticBound.ncc_bound", "AnalyticBound.ncc.upper", "reconrisk")
        return self.ncc.upper

    # the names before the kappa/gamma vocabulary, for one release
    @property
    def gamma(self) -> float | None:
        warn_renamed("AnalyticBound.gamma", "AnalyticBound.bound.upper", "reconrisk")
        return None if self.bound is None else self.bound.upper

    @property
    def log_gamma(self) -> float | None:
        warn_renamed("AnalyticBound.log_gamma", "AnalyticBound.bound.log_upper", "reconrisk")
        return None if self.bound is None else self.bound.details["log_upper"]

    @property
    def gamma_clip(self) -> float | None:
        warn_renamed("AnalyticBound.gamma_clip", "AnalyticBound.clip.upper", "reconrisk")
        return None if self.clip is None else self.clip.upper


_GAMMA_FORMULA = {
    "mse": "P(MSE(X, R) <= eta) <= gamma(eta) for the analytic (unbiased) attack R, X != 0: that attack's error law, "
           "not a bound over every attack (Riess et al. 2024, Prop. 3, Eq. 24)",
    "psnr": "P(PSNR(X, R) >= eta) <= gamma(eta) for the analytic (unbiased) attack R, X != 0: that attack's error law, "
            "not a bound over every attack (Riess et al. 2024, Props. 4-5)",
}
_NCC_FORMULA = "population NCC of the optimal attack <= sqrt(1/(1 + sigma^2 N/k)) (Riess et al. 2024, Prop. 6, Eq. 28)"


def _ncc(value: float, setting: dict) -> Bound:
    return Bound("ncc", None, value, method="closed_form", formula=_NCC_FORMULA, details=setting)


def analytic_bound(
    metric, noise_multiplier, dim, *, eta=None, min_norm=None, clip_norm=None, data_range=None, averaged: int = 1
) -> AnalyticBound:
    """All Riess et al. 2024 numbers at one setting: γ (Prop. 3 or 5), the C-variant, E[metric], the NCC bound.

    ``metric="ncc"`` needs neither ``eta`` nor ``min_norm``; if ``eta`` is
    given it must lie in [−1, 1]. ``data_range`` defaults to 1 for PSNR.
    γ uses ``min_norm`` when it is given (and then ``rero_clip`` is the
    looser C-variant if ``clip_norm ≤ min_norm``); with only ``clip_norm``, γ
    is the C-variant itself, valid under the caller's assertion C ≤ m
    (``basis`` says which).
    """
    mt = val.choice("metric", metric, METRICS)
    s = val.positive("noise_multiplier", noise_multiplier)
    n = val.integer("dim", dim, minimum=1)
    k = val.integer("averaged", averaged, minimum=1)
    m = None if min_norm is None else val.positive("min_norm", min_norm)
    c = None if clip_norm is None else val.positive("clip_norm", clip_norm)
    nb = float(ncc_bound(s, n, averaged=k))
    rows = optimal_num_rows(c, m) if (c is not None and m is not None) else None
    if mt == "ncc":
        e = None
        if eta is not None:
            e = val.in_range("eta", eta, -1.0, 1.0, low_open=False, high_open=False)
        return AnalyticBound(mt, s, n, e, None, m, c, None, None, k, None,
                             _ncc(nb, {"noise_multiplier": s, "dim": n, "averaged": k}), rows)
    if eta is None:
        raise ReconRiskError(f"eta must be given for metric {mt!r}; found None")
    if m is None and c is None:
        raise ReconRiskError(
            f"min_norm must be given for metric {mt!r} (smallest nonzero data norm, > 0), or clip_norm for the "
            "C-variant that assumes clip_norm <= min_norm; found neither"
        )
    # basis of γ: m (Props. 3-5); C only when m is unknown (the caller asserts C ≤ m)
    basis, scale = ("min_norm", m) if m is not None else ("clip_norm", c)
    r = None
    if mt == "mse":
        e = float(_eta_mse(eta))
        fn = lambda **kw: rero_mse(e, s, n, averaged=k, **kw)  # noqa: E731
        expected = s * s * scale * scale / k
    else:
        e = float(_eta_psnr(eta))
        r = 1.0 if data_range is None else val.positive("data_range", data_range)
        fn = lambda **kw: rero_psnr(e, s, n, data_range=r, averaged=k, **kw)  # noqa: E731
        expected = PSNRLaw(s * s * scale * scale / k, n, r).mean()
    log_g = float(fn(**{basis: scale}, log=True))
    g = math.exp(log_g)
    g_clip = float(fn(clip_norm=c)) if (m is not None and c is not None and c <= m) else None
    setting = {"metric": mt, "eta": e, "noise_multiplier": s, "dim": n, "averaged": k}
    bound = Bound("reconstruction", None, g, method="closed_form", formula=_GAMMA_FORMULA[mt],
                  details={**setting, "log_upper": log_g, "basis": basis, basis: scale})
    clip = None if g_clip is None else Bound(
        "reconstruction", None, g_clip, method="closed_form",
        formula=_GAMMA_FORMULA[mt] + ", C-variant: the smallest norm m replaced by the clip norm C <= m",
        details={**setting, "basis": "clip_norm", "clip_norm": c})
    return AnalyticBound(mt, s, n, e, bound, m, c, clip, r, k, float(expected),
                         _ncc(nb, {"noise_multiplier": s, "dim": n, "averaged": k}), rows, basis)


@dataclass(frozen=True)
class AnalyticCalibration:
    """Smallest σ with γ(η) ≤ target, and the γ it actually achieves as ``bound`` (round-trip check)."""

    metric: str
    eta: float
    target_rero: float
    dim: int
    min_norm: float
    data_range: float | None
    averaged: int
    noise_multiplier: float
    bound: Bound  # γ(η) at the σ found: upper <= target_rero

    @property
    def achieved_rero(self) -> float:
        warn_renamed("AnalyticCalibration.achieved_rero", "AnalyticCalibration.bound.upper", "reconrisk")
        return self.bound.upper

    def to_dict(self) -> dict:
        """JSON-ready, with the keys of earlier releases (``achieved_rero``: the bound's upper end)."""
        return {"metric": self.metric, "eta": self.eta, "target_rero": self.target_rero, "dim": self.dim,
                "min_norm": self.min_norm, "data_range": self.data_range, "averaged": self.averaged,
                "noise_multiplier": self.noise_multiplier, "achieved_rero": self.bound.upper}


def analytic_calibration(metric, eta, target_rero, dim, min_norm, *, data_range=None, averaged: int = 1) -> AnalyticCalibration:
    """:func:`analytic_noise_multiplier_for_rero` with the bound re-evaluated at the answer."""
    mt = val.choice("metric", metric, ("mse", "psnr"))
    r = None if mt == "mse" else (1.0 if data_range is None else val.positive("data_range", data_range))
    s = analytic_noise_multiplier_for_rero(mt, eta, target_rero, dim, min_norm, data_range=r or 1.0, averaged=averaged)

    def bound_at(sig: float) -> float:
        if mt == "mse":
            return float(rero_mse(eta, sig, dim, min_norm=min_norm, averaged=averaged))
        return float(rero_psnr(eta, sig, dim, data_range=r, min_norm=min_norm, averaged=averaged))

    # the closed form is exact in real arithmetic; in floating point the bound at the rounded σ can
    # exceed the target by a few ulps, so σ is stepped up (the bound decreases in σ) until it holds exactly —
    # by the one calibrator's own closed-form step (:func:`reconrisk._src._roots.strict_up`), as for every other quantity
    target = float(target_rero)
    s = strict_up(s, lambda x: bound_at(x) <= target)
    got = bound_at(s)
    bound = Bound("reconstruction", None, got, method="closed_form", formula=_GAMMA_FORMULA[mt],
                  details={"metric": mt, "eta": float(eta), "noise_multiplier": s, "dim": int(dim),
                           "min_norm": float(min_norm), "averaged": int(averaged), "target_rero": target})
    return AnalyticCalibration(mt, float(eta), float(target_rero), int(dim), float(min_norm), r, int(averaged), s,
                               bound)


#: The names before the kappa/gamma vocabulary (γ is no longer a public name), kept for one release (they warn).
rero_gamma_mse = renamed_function("rero_gamma_mse", rero_mse)
rero_gamma_psnr = renamed_function("rero_gamma_psnr", rero_psnr)
