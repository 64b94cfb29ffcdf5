"""The von Mises–Fisher (VMF) mechanism on the sphere S^{p−1} (Biswas et al. 2024, Def. 4; spec_004 §1, §7, §10).

Density ``f(y | μ, κ) = e^{κ μᵀy} / C_{p,κ}`` with
``C_{p,κ} = (2π)^{ν+1} I_ν(κ) / κ^ν``, ``ν = p/2 − 1`` (Biswas et al. 2024, Def. 4).

Numerics (spec_004 §10). For p in the thousands scipy's ``iv``/``ive``
underflow (``ive(6849, 500) == 0``), so everything goes through
:func:`log_iv`, the natural log of the modified Bessel function I_ν(x):

* ν ≥ ``_DEBYE_NU``: Debye's uniform asymptotic expansion
  (Abramowitz–Stegun 9.7.7 / DLMF 10.41.3) with the terms u₁…u₅,
  ``log I_ν(νz) = −½ log(2πν) + νη − ¼ log(1+z²) + log Σ_k u_k(t)/ν^k``,
  ``η = √(1+z²) + log(z/(1+√(1+z²)))``, ``t = 1/√(1+z²)``; the neglected
  term is O(ν⁻⁶) relative, < 1e−13 for ν ≥ 50 (checked against mpmath in
  the tests, including ν = 10⁵ and x = 10⁶);
* smaller ν: ``log(ive(ν, x)) + x`` from scipy, and where that under- or
  overflows a log-domain power series (small x).

The sampler is Wood's (1994) rejection algorithm for the cosine ``W = μᵀy``
followed by a Householder reflection e₁ → μ, O(p) memory per sample
(spec_004 §7; the reference implementation's ``null_space`` rotation costs
O(p²) and an SVD, scipy's sampler does not finish at p = 13,700). A JAX
version (:func:`sample_vmf_jax`) serves the DP-SGD simulator.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .. import _validate as v
from .._deprecated import renamed_kwargs
from ..errors import ReconRiskError

__all__ = [
    "log_iv",
    "bessel_ratio",
    "vmf_log_norm",
    "vmf_logpdf",
    "vmf_mean_resultant",
    "sample_vmf",
    "sample_vmf_cosine",
    "sample_vmf_jax",
    "vmf_noise_jax",
]

#: Below this order the scipy/series branch is used; above it Debye's expansion.
_DEBYE_NU = 50.0
_LOG_2PI = math.log(2.0 * math.pi)


def _debye_u(t: np.ndarray) -> list[np.ndarray]:
    """Debye polynomials u₁(t)…u₅(t) (DLMF 10.41.10 and the recursion 10.41.9)."""
    t2 = t * t
    u1 = t * (3.0 - 5.0 * t2) / 24.0
    u2 = t2 * (81.0 - 462.0 * t2 + 385.0 * t2**2) / 1152.0
    u3 = t * t2 * (30375.0 - 369603.0 * t2 + 765765.0 * t2**2 - 425425.0 * t2**3) / 414720.0
    u4 = t2**2 * (4465125.0 - 94121676.0 * t2 + 349922430.0 * t2**2 - 446185740.0 * t2**3
                  + 185910725.0 * t2**4) / 39813120.0
    u5 = t * t2**2 * (1519035525.0 - 49286948607.0 * t2 + 284499769554.0 * t2**2 - 614135872350.0 * t2**3
                      + 566098157625.0 * t2**4 - 188699385875.0 * t2**5) / 6688604160.0
    return [u1, u2, u3, u4, u5]


def _log_iv_debye(nu: np.ndarray, x: np.ndarray) -> np.ndarray:
    return _log_ive_debye(nu, x) + x


def _log_ive_debye(nu: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log I_ν(x) − x by Debye's expansion, with νη − x written without cancellation at x ≫ ν.

    νη − x = ν²/(√(ν²+x²) + x) − ν log1p((1 + 1/(s+z))/z), s = √(1+z²), z = x/ν.
    """
    z = x / nu
    s = np.sqrt(1.0 + z * z)
    t = 1.0 / s
    eta_minus = nu * nu / (np.sqrt(nu * nu + x * x) + x) - nu * np.log1p((1.0 + 1.0 / (s + z)) / z)
    series = 1.0
    pw = 1.0
    for u in _debye_u(t):
        pw = pw / nu
        series = series + u * pw
    return -0.5 * (_LOG_2PI + np.log(nu)) + eta_minus - 0.5 * np.log(s) + np.log(series)


def _log_iv_debye_scalar(nu: float, x: float) -> float:
    """:func:`_log_iv_debye` for one pair of Python floats (same formula, ``math`` instead of numpy)."""
    z = x / nu
    s = math.sqrt(1.0 + z * z)
    t = 1.0 / s
    eta_minus = nu * nu / (math.sqrt(nu * nu + x * x) + x) - nu * math.log1p((1.0 + 1.0 / (s + z)) / z)
    series, pw = 1.0, 1.0
    for u in _debye_u(t):
        pw /= nu
        series += u * pw
    return -0.5 * (_LOG_2PI + math.log(nu)) + eta_minus - 0.5 * math.log(s) + math.log(series) + x


#: For ν below ``_DEBYE_NU`` and x ≥ max(this, 20ν²), Hankel's large-argument expansion replaces scipy's ``ive``,
#: which loses accuracy there (relative 1e−8 at x = 10⁹) and returns NaN past x ≈ 1.07·10⁹.
_HANKEL_X = 1e4
_HANKEL_TERMS = 12


def _log_ive_hankel(nu: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log I_ν(x) − x = −½ log(2πx) + log Σ_k (−1)^k a_k(ν)/x^k (DLMF 10.40.1), for x ≥ max(10⁴, 20ν²)."""
    mu = 4.0 * nu * nu
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, _HANKEL_TERMS + 1):
        term = -term * ((mu - (2.0 * k - 1.0) ** 2) / (8.0 * k)) / x
        total = total + term
    return -0.5 * (_LOG_2PI + np.log(x)) + np.log(total)


def _log_iv_series(nu: np.ndarray, x: np.ndarray, terms: int = 400) -> np.ndarray:
    """log I_ν(x) = ν log(x/2) − logΓ(ν+1) + log Σ_k (x²/4)^k / (k! (ν+1)_k), summed in log space."""
    k = np.arange(terms, dtype=float)
    nu_ = nu[..., None]
    lx = np.log(x / 2.0)[..., None]
    logt = 2.0 * k * lx - special.gammaln(k + 1.0) - (special.gammaln(nu_ + k + 1.0) - special.gammaln(nu_ + 1.0))
    return nu * np.log(x / 2.0) - special.gammaln(nu + 1.0) + special.logsumexp(logt, axis=-1)


def log_iv(nu, x):
    """Natural log of the modified Bessel function of the first kind, log I_ν(x).

    Vectorised (numpy broadcasting) over ``nu ≥ 0`` and ``x ≥ 0``; valid for
    ν up to 10⁵ and beyond and x up to 10⁶ and beyond, where scipy's ``iv``
    and ``ive`` underflow or overflow (spec_004 §10.1). ``log I_ν(0)`` is
    −inf for ν > 0 and 0 for ν = 0. Relative accuracy ≈ 1e−13 (mpmath check
    in ``tests/test_vmf.py``).
    """
    if isinstance(nu, (int, float)) and isinstance(x, (int, float)) and not isinstance(nu, bool) \
            and not isinstance(x, bool) and _DEBYE_NU <= nu < math.inf and 0 < x < math.inf:
        return _log_iv_debye_scalar(float(nu), float(x))  # fast path: ~50× less overhead than the array path
    nu_a = np.asarray(nu, dtype=float)
    x_a = np.asarray(x, dtype=float)
    if np.isnan(nu_a).any() or (nu_a < 0).any() or np.isinf(nu_a).any():
        raise ReconRiskError(f"nu must be finite and >= 0; found {nu}")
    if np.isnan(x_a).any() or (x_a < 0).any() or np.isinf(x_a).any():
        raise ReconRiskError(f"x must be finite and >= 0; found {x}")
    out = _log_iv_core(nu_a, x_a)
    return float(out) if out.ndim == 0 else out


def _log_iv_core(nu_a: np.ndarray, x_a: np.ndarray) -> np.ndarray:
    """:func:`log_iv` for validated float arrays (no checks; used in inner loops)."""
    return _log_ive_core(nu_a, x_a) + x_a


def _log_ive_core(nu_a: np.ndarray, x_a: np.ndarray) -> np.ndarray:
    """log I_ν(x) − x (the exponentially scaled log) for validated float arrays.

    Differences of log I at large x (the VMF RDP, the ratio I_{ν+1}/I_ν) are taken on this scale, so the e^x
    parts cancel exactly instead of in floating point.
    """
    if nu_a.ndim == 0 and float(nu_a) >= _DEBYE_NU and (x_a > 0).all():
        return _log_ive_debye(nu_a, x_a)
    nu_b, x_b = np.broadcast_arrays(nu_a, x_a)
    out = np.empty(nu_b.shape, dtype=float)
    zero = x_b == 0
    out[zero] = np.where(nu_b[zero] == 0, 0.0, -np.inf)
    big = (nu_b >= _DEBYE_NU) & ~zero
    if big.any():
        out[big] = _log_ive_debye(nu_b[big], x_b[big])
    far = ~big & ~zero & (x_b >= np.maximum(_HANKEL_X, 20.0 * nu_b * nu_b))
    if far.any():
        out[far] = _log_ive_hankel(nu_b[far], x_b[far])
    small = ~big & ~zero & ~far
    if small.any():
        ns, xs = nu_b[small], x_b[small]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            val = np.log(special.ive(ns, xs))
        bad = ~np.isfinite(val)
        if bad.any():
            val[bad] = _log_iv_series(ns[bad], xs[bad]) - xs[bad]
        out[small] = val
    return out


def bessel_ratio(nu, x):
    """I_{ν+1}(x) / I_ν(x) from the difference of logs (never a ratio of underflowed values)."""
    log_iv(nu, x)  # validation
    return _bessel_ratio_core(np.asarray(nu, dtype=float), np.asarray(x, dtype=float))


def _bessel_ratio_core(nu: np.ndarray, x_a: np.ndarray):
    with np.errstate(invalid="ignore"):
        r = np.exp(_log_ive_core(nu + 1.0, x_a) - _log_ive_core(nu, x_a))
    r = np.where(x_a == 0, 0.0, r)
    return float(r) if np.ndim(r) == 0 else r


def _dim(p) -> int:
    return v.integer("dim", p, minimum=2)


def _concentration(concentration, allow_zero: bool = True) -> float:
    k = v.real("concentration", concentration)
    if k < 0 or (k == 0 and not allow_zero) or math.isinf(k):
        rng = ">= 0" if allow_zero else "> 0"
        raise ReconRiskError(f"concentration must be finite and {rng}; found {concentration}")
    return k


def log_sphere_area(p: int) -> float:
    """log A(S^{p−1}) = log(2 π^{p/2} / Γ(p/2)), the surface area of the unit sphere in R^p."""
    return math.log(2.0) + 0.5 * p * math.log(math.pi) - float(special.gammaln(0.5 * p))


@renamed_kwargs(kappa="concentration")
def vmf_log_norm(dim, concentration) -> float:
    """log C_{p,κ} = (ν+1) log 2π + log I_ν(κ) − ν log κ (Biswas et al. 2024, Def. 4); κ = 0 gives log A(S^{p−1})."""
    p, k = _dim(dim), _concentration(concentration)
    if k == 0:
        return log_sphere_area(p)
    nu = 0.5 * p - 1.0
    return (nu + 1.0) * _LOG_2PI + log_iv(nu, k) - nu * math.log(k)


@renamed_kwargs(kappa="concentration")
def vmf_logpdf(y, mu, concentration):
    """log f(y | μ, κ) = κ μᵀy − log C_{p,κ} for unit vectors y (…, p) and μ (p,)."""
    mu_a = _unit("mu", mu)
    y_a = np.asarray(y, dtype=float)
    if y_a.shape[-1:] != mu_a.shape:
        raise ReconRiskError(f"y must have last axis {mu_a.size} (the dimension of mu); found shape {y_a.shape}")
    k = _concentration(concentration)
    return k * (y_a @ mu_a) - vmf_log_norm(mu_a.size, k)


@renamed_kwargs(kappa="concentration")
def vmf_mean_resultant(dim, concentration) -> float:
    """A_p(κ) = E[μᵀy] = I_{p/2}(κ)/I_{p/2−1}(κ) (spec_004 §1)."""
    p, k = _dim(dim), _concentration(concentration)
    return float(bessel_ratio(0.5 * p - 1.0, k))


def _unit(name: str, mu) -> np.ndarray:
    arr = np.asarray(mu, dtype=float)
    if arr.ndim != 1 or arr.size < 2:
        raise ReconRiskError(f"{name} must be a vector of dimension >= 2; found shape {arr.shape}")
    n = float(np.linalg.norm(arr))
    if not np.isfinite(arr).all() or n == 0:
        raise ReconRiskError(f"{name} must be finite and nonzero (it is normalised to unit length); found norm {n}")
    return arr / n


def _wood_constants(p: int, concentration: float) -> tuple[float, float, float]:
    m1 = p - 1.0
    b = m1 / (2.0 * concentration + math.sqrt(4.0 * concentration * concentration + m1 * m1))  # stable form (spec_004 §7)
    x0 = (1.0 - b) / (1.0 + b)
    c = concentration * x0 + m1 * math.log1p(-x0 * x0)
    return b, x0, c


@renamed_kwargs(kappa="concentration")
def sample_vmf_cosine(dim, concentration, n: int, rng: np.random.Generator) -> np.ndarray:
    """n draws of W = μᵀy under VMF(μ, κ) on S^{p−1} (Wood 1994 rejection step)."""
    p, k = _dim(dim), _concentration(concentration)
    n = v.integer("n", n, minimum=1)
    b, x0, c = _wood_constants(p, k)
    m1 = p - 1.0
    out = np.empty(n)
    todo = np.arange(n)
    while todo.size:
        z = rng.beta(0.5 * m1, 0.5 * m1, size=todo.size)
        u = rng.uniform(size=todo.size)
        w = (1.0 - (1.0 + b) * z) / (1.0 - (1.0 - b) * z)
        with np.errstate(divide="ignore"):
            ok = k * w + m1 * np.log1p(-x0 * w) - c >= np.log(u)
        out[todo[ok]] = w[ok]
        todo = todo[~ok]
    return out


@renamed_kwargs(kappa="concentration")
def sample_vmf(mu, concentration, n: int = 1, rng: np.random.Generator | None = None, *, batch: int = 256) -> np.ndarray:
    """n samples (n, p) of VMF(μ, κ) on S^{p−1} (Wood's algorithm + Householder reflection).

    ``rng`` is a ``numpy.random.Generator`` (required for reproducibility;
    ``None`` means ``default_rng()``). Samples are produced ``batch`` rows at a
    time, so memory is O(batch·p), never O(p²).
    """
    mu_a = _unit("mu", mu)
    k = _concentration(concentration)
    n = v.integer("n", n, minimum=1)
    batch = v.integer("batch", batch, minimum=1)
    if rng is None:
        rng = np.random.default_rng()
    elif not isinstance(rng, np.random.Generator):
        raise ReconRiskError(f"rng must be a numpy.random.Generator; found {type(rng).__name__}")
    p = mu_a.size
    # Householder vector sending e1 to mu: H = I − 2uuᵀ/‖u‖², u = e1 − μ
    u = -mu_a.copy()
    u[0] += 1.0
    uu = float(u @ u)
    out = np.empty((n, p))
    for s in range(0, n, batch):
        m = min(batch, n - s)
        w = sample_vmf_cosine(p, k, m, rng)
        xi = rng.standard_normal((m, p - 1))
        xi /= np.linalg.norm(xi, axis=1, keepdims=True)
        y = np.empty((m, p))
        y[:, 0] = w
        y[:, 1:] = np.sqrt(np.clip(1.0 - w * w, 0.0, None))[:, None] * xi
        if uu > 1e-30:
            y -= (2.0 / uu) * (y @ u)[:, None] * u[None, :]
        out[s:s + m] = y
    return out


# ----------------------------------------------------------------------------------------
# JAX version for the DP-SGD simulator (imported lazily)
# ----------------------------------------------------------------------------------------
@renamed_kwargs(kappa="concentration")
def sample_vmf_jax(key, mu, concentration):
    """One sample of VMF(μ, κ) for a unit vector μ (p,) in JAX (jit-able; κ may be traced).

    Wood's rejection loop runs as a ``lax.while_loop``; the rotation is the
    Householder reflection, so memory is O(p).
    """
    from .._jax import jax
    import jax.numpy as jnp

    p = mu.shape[0]
    m1 = p - 1.0
    concentration = jnp.asarray(concentration, mu.dtype)
    b = m1 / (2.0 * concentration + jnp.sqrt(4.0 * concentration * concentration + m1 * m1))
    x0 = (1.0 - b) / (1.0 + b)
    c = concentration * x0 + m1 * jnp.log1p(-x0 * x0)
    k_w, k_xi = jax.random.split(key)

    def cond(state):
        return ~state[2]

    def body(state):
        k, _, _ = state
        k, kz, ku = jax.random.split(k, 3)
        # Beta((p−1)/2, (p−1)/2) as (1 + first coordinate of a uniform point on S^{p−1})/2: O(p) normals,
        # and no gamma sampler to compile (jax.random.beta takes ~15 s to compile)
        e = jax.random.normal(kz, (p,), mu.dtype)
        z = 0.5 * (1.0 + e[0] / jnp.linalg.norm(e))
        u = jax.random.uniform(ku, dtype=mu.dtype)
        w = (1.0 - (1.0 + b) * z) / (1.0 - (1.0 - b) * z)
        ok = concentration * w + m1 * jnp.log1p(-x0 * w) - c >= jnp.log(u)
        return k, w, ok

    _, w, _ = jax.lax.while_loop(cond, body, (k_w, jnp.zeros((), mu.dtype), jnp.array(False)))
    xi = jax.random.normal(k_xi, (p - 1,), mu.dtype)
    xi = xi / jnp.linalg.norm(xi)
    y = jnp.concatenate([w[None], jnp.sqrt(jnp.clip(1.0 - w * w, 0.0)) * xi])
    u = -mu.at[0].add(-1.0)  # e1 − μ
    uu = jnp.sum(u * u)
    refl = y - (2.0 / jnp.maximum(uu, 1e-30)) * jnp.dot(u, y) * u
    return jnp.where(uu > 1e-20, refl, y)


@renamed_kwargs(kappa="concentration")
def vmf_noise_jax(key, grad_flat, concentration):
    """VMF DP-SGD noise (Biswas et al. 2024, Alg. 2, lines 7′–8′): normalise the flat gradient, sample VMF around it."""
    import jax.numpy as jnp

    mu = grad_flat / jnp.maximum(jnp.linalg.norm(grad_flat), 1e-30)
    return sample_vmf_jax(key, mu, concentration)
