"""Success laws of the optimal analytic gradient-inversion attack (Riess et al. 2024, Thm 2, Prop. 4).

Under DP-SGD the optimal attack (Riess et al. 2024, Prop. 1 / Cor. 1) returns
``X̂ ~ N(X, v·I_N)`` with per-coordinate variance ``v = σ²‖X‖²`` (Eq. 20), so

* ``MSE = ‖X − X̂‖²/N =_d (v/N)·χ²_N``  — Thm 2, Eq. 22; CDF Eq. 23:
  ``P(MSE ≤ η) = Γ_R(N/2, Nη/(2v))``;
* ``PSNR = 10·log10(r²/MSE)`` with data range ``r``; ``PSNR ≥ η ⟺ MSE ≤ r²·10^{−η/10}``
  (proof of Prop. 4, Eq. 62).

Both are exposed as small frozen distributions with the scipy.stats interface
(``cdf, sf, logcdf, logsf, pdf, logpdf, ppf, isf, mean, var, std, median,
interval, support, rvs``). They depart from the authors' code (which wraps
``scipy.stats.rv_continuous`` numerically) in using closed forms only:

* the PSNR mean ``10·log10(r²N/v) − (10/ln 10)(ψ(N/2) + ln 2)`` and variance
  ``(10/ln 10)²·ψ'(N/2)`` ([inferred], spec_003 §8 — the paper plots the
  numerical moment);
* log-probabilities that do not underflow: ``logcdf``/``logsf`` switch from
  ``log(gammainc)`` to the power series (lower tail) or Legendre's continued
  fraction (upper tail) of the incomplete gamma function once the probability
  drops below 1e-280, so tails far below the smallest double (e.g. log P ≈ −10⁴)
  are returned exactly instead of −inf (scipy's ``chi2.logcdf`` returns −inf).

``v`` is a free parameter (:meth:`MSELaw.from_variance`) so the same laws
describe the sub-optimal regime ``v = σ²·max(C²/M, ‖X‖²)`` and averaged
reconstructions ``v = σ²‖X‖²/k`` (Prop. 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special  # (scipy.stats, ~0.25 s, loads in the one function that needs it)

from .. import _validate as val
from ..errors import ReconRiskError

__all__ = ["MSELaw", "PSNRLaw", "mse_law", "psnr_law", "mse_asymptotic_normal", "log_gammainc", "log_gammaincc"]

_LN10_10 = math.log(10.0) / 10.0  # d(ln MSE)/d(PSNR) in magnitude
_SWITCH = 1e-280  # below this the direct log(gammainc) loses digits to subnormals
_TINY = 1e-300


# ----------------------------------------------------------------------------
# log of the regularised incomplete gamma functions, valid far below 1e-308
# ----------------------------------------------------------------------------


def _log_p_series(a: np.ndarray, x: np.ndarray, log_x: np.ndarray) -> np.ndarray:
    """log P(a, x) by the series x^a e^{-x}/Γ(a+1) Σ_n Π_{j≤n} x/(a+j) (used where P is tiny, x < a).

    ``log_x`` is passed separately so that x below the smallest double (x = 0
    after underflow) still gives the exact leading term ``a·log x − log Γ(a+1)``.
    """
    term = np.ones_like(x)
    total = np.ones_like(x)
    active = np.ones(x.shape, dtype=bool)
    n = 0
    while active.any():
        n += 1
        term = np.where(active, term * x / (a + n), 0.0)
        total = total + term
        active = term > 1e-17 * total
        if n > 10_000_000:  # pragma: no cover - ratio x/(a+n) < 1 guarantees convergence
            break
    return a * log_x - x - special.gammaln(a + 1.0) + np.log(total)


def _log_q_contfrac(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log Q(a, x) by Legendre's continued fraction, modified Lentz (used where Q is tiny, x > a)."""
    b = x + 1.0 - a
    c = np.full_like(x, 1.0 / _TINY)
    d = 1.0 / np.where(np.abs(b) < _TINY, _TINY, b)
    h = d.copy()
    for i in range(1, 100_000):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1.0) < 1e-16):
            break
    return a * np.log(x) - x - special.gammaln(a) + np.log(h)


def log_gammainc(a, x=None, *, log_x=None):
    """log of the regularised lower incomplete gamma ``P(a, x)``, exact in the far lower tail.

    Give ``x`` or, for arguments below the smallest double, ``log_x``.
    """
    if (x is None) == (log_x is None):
        raise ReconRiskError("give exactly one of x or log_x")
    if log_x is not None:
        a, lx = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(log_x, dtype=float))
        with np.errstate(over="ignore"):
            x = np.exp(lx)
    else:
        a, x = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))
        with np.errstate(divide="ignore", invalid="ignore"):
            lx = np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)
    p = special.gammainc(a, x)
    with np.errstate(divide="ignore"):
        out = np.array(np.log(p), dtype=float)
    tiny = (p < _SWITCH) & np.isfinite(lx)
    if tiny.any():
        out[tiny] = _log_p_series(a[tiny], x[tiny], lx[tiny])
    out = np.where(lx == -np.inf, -np.inf, out)
    return np.where(np.isnan(lx) | np.isnan(a), np.nan, out)


def log_gammaincc(a, x):
    """log of the regularised upper incomplete gamma ``Q(a, x)``, exact in the far upper tail."""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))
    q = special.gammaincc(a, x)
    with np.errstate(divide="ignore"):
        out = np.array(np.log(q), dtype=float)
    tiny = (q < _SWITCH) & np.isfinite(x) & (x > 0)
    if tiny.any():
        out[tiny] = _log_q_contfrac(a[tiny], x[tiny])
    out = np.where(np.isposinf(x), -np.inf, out)
    return np.where(np.isnan(x), np.nan, out)


def _ret(x):
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


def _arr(x) -> np.ndarray:
    def bad() -> ReconRiskError:  # built only on failure: repr of a large array is costly
        return ReconRiskError(f"eta (the argument) must be a real number or array of real numbers; found {x!r:.80}")

    if isinstance(x, (str, bytes, bool, np.bool_, dict, set)) or x is None:
        raise bad()
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError):
        raise bad() from None
    if raw.dtype.kind not in "fiu":  # bool, complex, object, strings
        raise bad()
    return raw.astype(float)


def _prob_arr(q) -> np.ndarray:
    """Probabilities; values outside [0, 1] give nan (scipy.stats convention)."""
    q = _arr(q)
    return np.where((q >= 0) & (q <= 1), q, np.nan)


def _rng(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(random_state)
    raise ReconRiskError(f"random_state must be None, an int seed or a numpy Generator; found {random_state!r}")


# ----------------------------------------------------------------------------
# MSE
# ----------------------------------------------------------------------------


class _LawSummaries:
    """std, median and central interval from ``var`` and ``ppf`` (scipy.stats conventions)."""

    def std(self) -> float:
        return math.sqrt(self.var())

    def median(self) -> float:
        return float(self.ppf(0.5))

    def interval(self, confidence: float):
        c = val.in_range("confidence", confidence, 0.0, 1.0, low_open=False, high_open=False)
        return float(self.ppf((1 - c) / 2)), float(self.ppf((1 + c) / 2))


@dataclass(frozen=True)
class MSELaw(_LawSummaries):
    """Law of ``MSE(X, X̂) = ‖X − X̂‖²/N`` for ``X̂ ~ N(X, variance·I_N)``: ``(variance/N)·χ²_N``.

    Riess et al. 2024, Thm 2 (Eq. 22) with ``variance = σ²‖X‖²``; equivalently
    ``Gamma(shape=N/2, scale=2·variance/N)``. Build it with :func:`mse_law`
    (from σ and ‖X‖) or :meth:`from_variance`.
    """

    variance: float
    dim: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "variance", val.positive("variance", self.variance))
        object.__setattr__(self, "dim", val.integer("dim", self.dim, minimum=1))

    @classmethod
    def from_variance(cls, variance: float, dim: int) -> "MSELaw":
        return cls(variance, dim)

    # gamma shape and the map η ↦ Nη/(2v)
    @property
    def _a(self) -> float:
        return 0.5 * self.dim

    def _z(self, x) -> np.ndarray:
        x = _arr(x)
        return np.maximum(x, 0.0) * (self.dim / (2.0 * self.variance))

    def cdf(self, x):
        """P(MSE ≤ x) = Γ_R(N/2, Nx/(2v)) (Eq. 23)."""
        return _ret(special.gammainc(self._a, self._z(x)))

    def sf(self, x):
        """P(MSE > x), computed directly (no 1 − cdf cancellation)."""
        return _ret(special.gammaincc(self._a, self._z(x)))

    def logcdf(self, x):
        """log P(MSE ≤ x), exact far below 1e-308."""
        x = _arr(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            lz = np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf) + math.log(self.dim / (2.0 * self.variance))
        return _ret(log_gammainc(self._a, log_x=np.where(np.isnan(x), np.nan, lz)))

    def logsf(self, x):
        return _ret(log_gammaincc(self._a, self._z(x)))

    def logpdf(self, x):
        k = self.dim / (2.0 * self.variance)
        return _ret(self._logpdf(_arr(x), self._a, k, math.log(k)))

    @staticmethod
    def _logpdf(x, a, k, log_k):
        """log density at ``x`` with k = N/(2v); ``k``, ``log_k`` may be columns (one law per row, see mse_pdfs)."""
        z = np.maximum(x, 0.0) * k
        with np.errstate(divide="ignore", invalid="ignore"):
            out = special.xlogy(a - 1.0, z) - z - special.gammaln(a) + log_k
        out = np.where(x < 0, -np.inf, out)
        return np.where(np.isnan(x), np.nan, out)

    def pdf(self, x):
        return _ret(np.exp(self.logpdf(x)))

    def ppf(self, q):
        """Quantile ``v·χ²_N⁻¹(q)/N``."""
        q = _prob_arr(q)
        return _ret(special.gammaincinv(self._a, q) * (2.0 * self.variance / self.dim))

    def isf(self, q):
        q = _prob_arr(q)
        return _ret(special.gammainccinv(self._a, q) * (2.0 * self.variance / self.dim))

    def mean(self) -> float:
        """E[MSE] = v (Eq. 21)."""
        return self.variance

    def var(self) -> float:
        """Var[MSE] = 2v²/N (cf. Prop. B.3)."""
        return 2.0 * self.variance**2 / self.dim

    def support(self):
        return 0.0, math.inf

    def rvs(self, size=None, random_state=None):
        """Draws of the MSE; same ``random_state`` (int or Generator), same numbers."""
        return _rng(random_state).gamma(self._a, 2.0 * self.variance / self.dim, size=size)

    def to_dict(self) -> dict:
        return {"law": "mse", "variance": self.variance, "dim": self.dim, "mean": self.mean(), "var": self.var()}


def mse_law(noise_multiplier, norm, dim, *, averaged: int = 1) -> MSELaw:
    """Law of the MSE of the optimal attack on a sample of norm ‖X‖ (Riess et al. 2024, Thm 2).

    ``averaged`` = k matched reconstructions averaged (Prop. 7): ``v = σ²‖X‖²/k``.
    """
    s = val.positive("noise_multiplier", noise_multiplier)
    n = val.positive("norm", norm)
    k = val.integer("averaged", averaged, minimum=1)
    return MSELaw(s * s * n * n / k, val.integer("dim", dim, minimum=1))


def mse_asymptotic_normal(noise_multiplier, norm, dim, *, averaged: int = 1):
    """Prop. B.3 (Eq. 57): MSE ≈ N(v, 2v²/N) for large N, as a frozen ``scipy.stats.norm``."""
    from scipy import stats

    law = mse_law(noise_multiplier, norm, dim, averaged=averaged)
    return stats.norm(loc=law.mean(), scale=law.std())


# ----------------------------------------------------------------------------
# PSNR
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PSNRLaw(_LawSummaries):
    """Law of ``PSNR = 10·log10(r²/MSE)`` (dB) when MSE follows :class:`MSELaw` (Riess et al. 2024, Prop. 4).

    ``data_range`` is ``r``: a fixed range such as 1 or 255 (the authors'
    figures) or the per-sample ``max(X) − min(X)`` of Def. 4. Higher is a
    better reconstruction (the Fig. 3 caption says the opposite; a typo).
    """

    variance: float
    dim: int
    data_range: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "variance", val.positive("variance", self.variance))
        object.__setattr__(self, "dim", val.integer("dim", self.dim, minimum=1))
        object.__setattr__(self, "data_range", val.positive("data_range", self.data_range))

    @classmethod
    def from_variance(cls, variance: float, dim: int, data_range: float = 1.0) -> "PSNRLaw":
        return cls(variance, dim, data_range)

    @property
    def _a(self) -> float:
        return 0.5 * self.dim

    @property
    def _logc(self) -> float:
        # log of N r²/(2v): the gamma argument at PSNR = 0 dB
        return math.log(self.dim) + 2.0 * math.log(self.data_range) - math.log(2.0 * self.variance)

    def _z(self, x) -> np.ndarray:
        """Gamma argument N·r²·10^{−x/10}/(2v) of the MSE threshold equivalent to PSNR = x."""
        x = _arr(x)
        with np.errstate(over="ignore"):
            return np.exp(self._logc - _LN10_10 * x)

    def cdf(self, x):
        """P(PSNR ≤ x) = P(MSE ≥ r²10^{−x/10})."""
        return _ret(special.gammaincc(self._a, self._z(x)))

    def sf(self, x):
        """P(PSNR ≥ x) = Γ_R(N/2, N r² 10^{−x/10}/(2v)) (Eq. 25 with ‖X‖ in place of m)."""
        return _ret(special.gammainc(self._a, self._z(x)))

    def logcdf(self, x):
        return _ret(log_gammaincc(self._a, self._z(x)))

    def logsf(self, x):
        """log P(PSNR ≥ x), exact far below 1e-308 (the gamma argument is kept in log form)."""
        return _ret(log_gammainc(self._a, log_x=self._logc - _LN10_10 * _arr(x)))

    def logpdf(self, x):
        """log density: gamma density in z times |dz/dx| = z·ln10/10."""
        return _ret(self._logpdf(self._logc, _arr(x), self._a))

    @staticmethod
    def _logpdf(logc, x, a):
        """log density at ``x`` given :attr:`_logc` (may be a column: one law per row, see psnr_pdfs)."""
        with np.errstate(over="ignore"):
            z = np.exp(logc - _LN10_10 * x)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = a * np.log(z) - z - special.gammaln(a) + math.log(_LN10_10)
        out = np.where((z == 0) | np.isinf(z), -np.inf, out)
        return np.where(np.isnan(z), np.nan, out)

    def pdf(self, x):
        return _ret(np.exp(self.logpdf(x)))

    def _from_z(self, z: np.ndarray):
        with np.errstate(divide="ignore"):
            return _ret((self._logc - np.log(z)) / _LN10_10)

    def ppf(self, q):
        """Quantile ``10·log10(r²N/(v·χ²_N⁻¹(1−q)))``, with 1−q never formed."""
        return self._from_z(special.gammainccinv(self._a, _prob_arr(q)))

    def isf(self, q):
        return self._from_z(special.gammaincinv(self._a, _prob_arr(q)))

    def mean(self) -> float:
        """E[PSNR] = 10·log10(r²N/v) − (10/ln 10)(ψ(N/2) + ln 2) ([inferred], spec_003 §8)."""
        return self._mean(self.variance, self.dim, self.data_range)

    @staticmethod
    def _mean(variance: float, dim: int, data_range: float) -> float:
        """:meth:`mean` of validated floats (shared with :func:`psnr_means`, which skips the per-law validation)."""
        return (math.log(data_range**2 * dim / variance) - special.digamma(0.5 * dim) - math.log(2.0)) / _LN10_10

    def var(self) -> float:
        """Var[PSNR] = (10/ln 10)²·ψ'(N/2)."""
        return float(special.polygamma(1, self._a)) / _LN10_10**2

    def support(self):
        return -math.inf, math.inf

    def rvs(self, size=None, random_state=None):
        mse = _rng(random_state).gamma(self._a, 2.0 * self.variance / self.dim, size=size)
        return (2.0 * math.log(self.data_range) - np.log(mse)) / _LN10_10

    def to_dict(self) -> dict:
        return {
            "law": "psnr",
            "variance": self.variance,
            "dim": self.dim,
            "data_range": self.data_range,
            "mean": self.mean(),
            "var": self.var(),
        }


def psnr_law(noise_multiplier, norm, dim, *, data_range: float = 1.0, averaged: int = 1) -> PSNRLaw:
    """Law of the PSNR (dB) of the optimal attack on a sample of norm ‖X‖ (Riess et al. 2024, Prop. 4)."""
    m = mse_law(noise_multiplier, norm, dim, averaged=averaged)
    return PSNRLaw(m.variance, m.dim, data_range)


# ----------------------------------------------------------------------------
# many laws at once (one per sample): the per-law results, without building a law per sample
# ----------------------------------------------------------------------------


def _all_positive(a: np.ndarray) -> bool:
    return bool(a.size == 0 or (np.isfinite(a).all() and (a > 0).all()))


def mse_cdfs(variances, dim: int, x) -> np.ndarray:
    """``[MSELaw(v, dim).cdf(xi) for v, xi in zip(variances, x)]`` as one array, the same floats bit for bit.

    The arithmetic is elementwise (one correctly rounded division and product, then ``gammainc``), so
    doing it over an array gives each element exactly the per-law value; an invalid variance or ``dim``
    falls back to the per-law loop, which raises the per-law error.
    """
    v = np.asarray(variances).astype(float).ravel()
    xs = _arr(x).ravel()
    if not (_all_positive(v) and _is_dim(dim)):
        return np.array([MSELaw(float(vi), dim).cdf(xi) for vi, xi in zip(v, xs)], dtype=float)
    return special.gammainc(0.5 * int(dim), np.maximum(xs, 0.0) * (int(dim) / (2.0 * v)))


def psnr_means(variances, dim: int, data_ranges) -> list[float]:
    """``[PSNRLaw(v, dim, r).mean() for v, r in zip(variances, data_ranges)]``, without a law per sample."""
    v = np.asarray(variances).astype(float).ravel()
    r = np.asarray(data_ranges).astype(float).ravel()
    if not (_all_positive(v) and _all_positive(r) and _is_dim(dim)):
        return [PSNRLaw(vi, dim, ri).mean() for vi, ri in zip(v, r)]
    return [PSNRLaw._mean(vi, int(dim), ri) for vi, ri in zip(v.tolist(), r.tolist())]


def mse_pdfs(variances, dim: int, x) -> np.ndarray:
    """Row i: ``MSELaw(variances[i], dim).pdf(x)``, the same floats (elementwise arithmetic; per-law constants
    from ``math.log`` as there); an invalid variance or ``dim`` falls back to the per-law loop and its error."""
    v = np.asarray(variances).astype(float).ravel()
    xs = _arr(x)
    if not (_all_positive(v) and _is_dim(dim)):
        return np.array([MSELaw(float(vi), dim).pdf(xs) for vi in v], dtype=float).reshape(v.size, *xs.shape)
    k = int(dim) / (2.0 * v)
    log_k = np.array([math.log(ki) for ki in k.tolist()])
    return np.exp(MSELaw._logpdf(xs[None, :], 0.5 * int(dim), k[:, None], log_k[:, None]))


def psnr_pdfs(variances, dim: int, data_ranges, x) -> np.ndarray:
    """Row i: ``PSNRLaw(variances[i], dim, data_ranges[i]).pdf(x)``, the same floats (see :func:`mse_pdfs`)."""
    v = np.asarray(variances).astype(float).ravel()
    r = np.asarray(data_ranges).astype(float).ravel()
    xs = _arr(x)
    if not (_all_positive(v) and _all_positive(r) and _is_dim(dim)):
        return np.array([PSNRLaw(float(vi), dim, float(ri)).pdf(xs) for vi, ri in zip(v, r)],
                        dtype=float).reshape(v.size, *xs.shape)
    n = int(dim)
    logc = np.array([math.log(n) + 2.0 * math.log(ri) - math.log(2.0 * vi) for vi, ri in zip(v.tolist(), r.tolist())])
    return np.exp(PSNRLaw._logpdf(logc[:, None], xs[None, :], 0.5 * n))


def _is_dim(dim) -> bool:
    return isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) and dim >= 1
