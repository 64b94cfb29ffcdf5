"""Rényi-DP curves of the (Poisson-subsampled) Gaussian mechanism and of schedules.

The RDP curve of the Poisson-subsampled Gaussian (remove direction,
D_α(μ‖ν) with μ = (1−q)N(0,σ²) + qN(1,σ²), ν = N(0,σ²); Mironov, Talwar,
Zhang 2019, "Rényi DP of the Sampled Gaussian Mechanism", Thm 5 shows this
direction dominates) is ε(α) = log A_α / (α − 1) with
``A_α = E_{z∼ν}[(1 − q + q·r(z))^α]``, ``r(z) = exp((2z − 1)/(2σ²))``.

* Integer α (MTZ Sec. 3.3, integer case): the binomial theorem gives the
  finite positive sum ``A_α = Σ_k C(α,k)(1−q)^{α−k} q^k exp((k²−k)/(2σ²))``.
* Fractional α. MTZ Sec. 3.3 give a split binomial series (derived here): split at
  z₀ = σ²·log(1/q − 1) + ½, where q·r(z₀) = 1 − q. For z ≤ z₀ expand
  (1−q)^α (1 + q r/(1−q))^α as a binomial series (ratio ≤ 1, so it converges),
  and for z > z₀ expand (q r)^α (1 + (1−q)/(q r))^α likewise. Under ν,
  E[r^i·1{z ≤ z₀}] = e^{(i²−i)/(2σ²)} Φ((z₀ − i)/σ) (r^i tilts N(0,σ²) to
  N(i,σ²)), so with j = α − i

      A_α = Σ_{i≥0} C(α,i) [ (1−q)^{α−i} q^i e^{(i²−i)/(2σ²)} Φ((z₀−i)/σ)
                              + q^{α−i} (1−q)^i e^{(j²−j)/(2σ²)} Φ((j−z₀)/σ) ].

  Its terms decay only polynomially in i when z₀ lies in the Gaussian bulk
  (large σ, q near ½), so reconrisk evaluates the same A_α as the 1-D
  integral it is, by adaptive quadrature in log space with the error
  estimate added (:func:`_log_a_frac`); the series is the cross-check of
  the tests (through dp_accounting, which sums it).
* q = 1: ε(α) = α/(2σ²).
* Orders near 1 and the KL limit (:func:`subsampled_gaussian_kl`): below
  α = 1.01 (no order of ``DEFAULT_ORDERS``) A_α is computed as
  ``E_μ[e^{(α−1)L}]`` with L = log(μ/ν) the privacy loss, i.e.
  ε(α) = log1p(E_μ[expm1((α−1)L)])/(α−1): the integrand is O(α−1) instead of
  1 + O(α−1), so no digit is lost as α → 1 (the form above loses
  |log(α−1)| / log 10 of them). α = 1 is the KL divergence E_μ[L]. The
  optimal RDP → trade-off conversion of :mod:`reconrisk._src.measures.rdp_tradeoff`
  needs these orders: its minimum can sit at α → 1.

``DEFAULT_ORDERS`` is a fine fractional grid: the union of the orders of
``dp_accounting``'s ``RdpAccountant`` and Opacus (1.1, 1.2, …, 10.9, 11–63,
128, 256, 512) with 1.01–1.09, 1.25, 1.5, 1.75 and a geometric tail up to
1024, so the minimum over α is taken where it lies at small σ (ε of
Biswas et al. 2024, Table IV at σ = 0.204 is attained near α ≈ 1.2). ReRo conversions
of these curves live in :mod:`reconrisk._src.measures.conversions`.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from scipy import special

#: Fractional and integer Rényi orders (> 1) used by the RDP accountant and baseline.
DEFAULT_ORDERS = np.unique(
    np.round(
        np.concatenate(
            [
                1.0 + np.arange(1, 10) / 100.0,
                1.0 + np.arange(1, 100) / 10.0,
                [1.25, 1.5, 1.75, 2.25, 2.5, 2.75],
                np.arange(11, 64),
                np.round(np.geomspace(64, 1024, 24)),
                [128, 256, 512],
            ]
        ),
        10,
    )
)


def _log_a_int(sigma: float, q: float, a: int) -> float:
    k = np.arange(0, a + 1)
    log_binom = special.gammaln(a + 1) - special.gammaln(k + 1) - special.gammaln(a - k + 1)
    terms = log_binom + (a - k) * math.log1p(-q) + k * math.log(q) + (k * k - k) / (2 * sigma**2)
    return float(special.logsumexp(terms))


def _log_a_frac(sigma: float, q: float, a: float) -> float:
    """log A_α for fractional α: adaptive quadrature of E_ν[(1 − q + q·r(z))^α] in log space.

    The integrand exp(g(z)), g(z) = −z²/(2σ²) + α·log(1 − q + q e^{(2z−1)/(2σ²)})
    − log(σ√(2π)), is log-concave-plus-convex but unimodal in practice with its
    peak between 0 and α; it is integrated as exp(g − g*) around the peak z*
    with breakpoints at 0, z₀ and α, and quad's own error estimate is added so
    the result errs upward. (The MTZ split series is slow to converge — its
    terms decay only polynomially in i when q·r(z₀) = 1 − q sits inside the
    Gaussian bulk — which is why dp_accounting reports non-convergence for
    e.g. σ = 5, q = 0.5; the integral has no such problem.) Cross-checked in
    the tests against the exact integer-order sum and against dp_accounting's
    series where it converges.
    """
    from scipy import integrate  # light, and only needed for fractional orders

    ls1, lq = math.log1p(-q), math.log(q)
    c = -math.log(sigma * math.sqrt(2 * math.pi))

    def g(z):
        return -(z * z) / (2 * sigma**2) + a * np.logaddexp(ls1, lq + (2 * z - 1) / (2 * sigma**2)) + c

    lo, hi = -40.0 * sigma - 1.0, a + 40.0 * sigma + 1.0
    zs = np.linspace(lo, hi, 4001)
    gs = g(zs)
    k = int(np.argmax(gs))
    g_star = float(gs[k])
    width = max(sigma, 1e-3)
    pts = sorted({float(zs[k]), 0.0, min(max(sigma**2 * (ls1 - lq) + 0.5, lo), hi), float(a)})
    pts = [p for p in pts if lo < p < hi]
    two_s2 = 2 * sigma**2

    def integrand(z: float) -> float:  # exp(g(z) − g*) on Python floats: quad calls it ~400 times per order
        y = lq + (2 * z - 1) / two_s2
        lse = (ls1 + math.log1p(math.exp(y - ls1))) if y <= ls1 else (y + math.log1p(math.exp(ls1 - y)))
        return math.exp(-(z * z) / two_s2 + a * lse + c - g_star)

    try:
        val, err = integrate.quad(integrand, lo, hi, points=pts or None, epsabs=0.0, epsrel=1e-12, limit=500)
    except OverflowError:  # the grid missed the integrand's peak (σ ≲ 1e-9): no value at this order (a
        return math.inf    # vacuous bound; the minimum over orders takes the others), never an underestimate
    del width
    if not val + 2 * err > 0.0:  # the quadrature saw no mass (the peak is narrower than its nodes): no value
        return math.inf
    return g_star + math.log(val + 2 * err + 1e-15 * val)


def _loss_moment(sigma: float, q: float, u: float) -> float:
    """E_μ[expm1(u·L)] (u > 0) or E_μ[L] (u = 0), L(z) = log(1 − q + q e^{(2z−1)/(2σ²)}), by adaptive quadrature.

    μ = (1−q)N(0,σ²) + qN(1,σ²), integrated component by component in standard units (z = m + σw, w ~ N(0, 1)),
    so the quadrature sees each component's mass at every σ (in z its width σ went below the nodes' spacing at
    σ ≈ 1e-4, and the KL at σ 1e-6 came out 0). quad's own error estimate is added (twice), so the value errs
    upward.
    """
    from scipy import integrate  # noqa: PLC0415

    ls1, lq = math.log1p(-q), math.log(q)
    half_inv_s2 = 0.5 / sigma**2
    log_phi0 = -0.5 * math.log(2 * math.pi)
    total = 0.0
    for m, lw in ((0.0, ls1), (1.0, lq)):
        shift = lq + (2.0 * m - 1.0) * half_inv_s2  # L = logaddexp(ls1, shift + w/σ) at z = m + σw

        def integrand(w, shift=shift):
            y = shift + w / sigma
            loss = (ls1 + math.log1p(math.exp(y - ls1))) if y <= ls1 else (y + math.log1p(math.exp(ls1 - y)))
            h = math.expm1(u * loss) if u > 0 else loss
            return math.exp(log_phi0 - 0.5 * w * w) * h

        kink = sigma * (ls1 - shift)  # where the two terms of L are equal
        pts = [0.0] + ([kink] if -39.0 < kink < 39.0 else [])
        with warnings.catch_warnings():  # quad's round-off note: its error estimate is added below either way
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            try:
                val, err = integrate.quad(integrand, -40.0, 40.0, points=sorted(set(pts)), epsabs=0.0, epsrel=1e-11,
                                          limit=500)
            except OverflowError:  # e^{uL} beyond float range (tiny σ): +inf — an upper end, never too small
                return math.inf
        total += math.exp(lw) * val + 2 * err
    return total


def subsampled_gaussian_kl(noise_multiplier: float, sample_rate: float) -> float:
    """KL(μ‖ν) of ONE Poisson-subsampled Gaussian step: the RDP curve's limit at α → 1 (E_μ of the privacy loss)."""
    sigma, q = float(noise_multiplier), float(sample_rate)
    if q == 1.0:
        return 1.0 / (2 * sigma**2)
    return max(0.0, _loss_moment(sigma, q, 0.0))


def subsampled_gaussian_rdp(noise_multiplier: float, sample_rate: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP ε(α) of ONE Poisson-subsampled Gaussian step (sensitivity 1) at real orders α ≥ 1 (α = 1: the KL)."""
    sigma, q = float(noise_multiplier), float(sample_rate)
    orders = np.asarray(orders, dtype=float)
    if sigma < 1e-100:  # σ² underflows: the curve is +inf at every order > 1
        return np.full(orders.size, np.inf)
    if q == 1.0 or sigma > 1e100:  # exact at q = 1; subsampling only lowers the curve otherwise
        return orders * (1.0 / sigma) ** 2 / 2
    return np.array([_rdp_at(sigma, q, float(a)) for a in orders], dtype=float)


@functools.lru_cache(maxsize=8192)
def _rdp_at(sigma: float, q: float, a: float) -> float:
    """ε(α) of one step, 0 < q < 1 (memoised: a report asks the same orders for every κ it shows)."""
    if a == 1.0:
        return subsampled_gaussian_kl(sigma, q)
    if a < 1.01:  # near the KL limit: log1p of E_μ[expm1((α−1)L)] keeps every digit
        return math.log1p(_loss_moment(sigma, q, a - 1.0)) / (a - 1.0)
    if a.is_integer():
        la = _log_a_int(sigma, q, int(a))
    else:
        la = _log_a_frac(sigma, q, a)
    return la / (a - 1)


#: A schedule with more distinct (σ, q) than this reads its RDP curve off the integer orders (:func:`release_rdp`).
CHORD_ABOVE = 32
#: Above order 64 such a schedule's steps are read in buckets of σ this wide (ratio), each at its smallest σ.
HIGH_ORDER_BUCKET = 1.01


def release_rdp(segments, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of a whole schedule (RDP composes additively).

    A schedule of more than :data:`CHORD_ABOVE` distinct (σ, q) — a noise scheduler's, every step its own σ —
    is not integrated order by order and step by step (a quadrature per fractional order and step: 10⁴ steps
    took hours): equal steps are summed once, the integer orders are the exact binomial sums of all the steps
    at once, and a fractional order α ∈ (n, n + 1) is read off the chord: (α − 1)ε(α) = Σ_steps log A_α, and
    log A_α = log E[e^{αL}] is convex in α (a cumulant generating function), so it lies under the chord of
    its values at n and n + 1 — an upper bound, sound, equal at the integers; below α = 2 the bound is ε(2)
    (ε(α) is non-decreasing in α). Above order 64 (orders rarely optimal, and the costliest: n + 1 terms a step)
    the steps are grouped in buckets of σ 1 % wide, each read at its smallest σ (ε(α) falls as σ grows): an
    upper bound at most ~2 % above the exact one there. Exact at the integer orders up to 64.
    """
    seen = _GROUPS_SEEN.get(id(segments))
    if seen is not None and seen[0] is segments:  # (the same tuple asked again, order after order)
        groups = seen[1]
    else:
        if isinstance(segments, tuple):
            seen = segments
        segments = list(segments)
        counts: dict[tuple[float, float], int] = {}
        for s in segments:
            key = (float(s.noise_multiplier), float(s.sample_rate))
            counts[key] = counts.get(key, 0) + int(s.steps)
        groups = tuple(counts.items())
        if seen is not None:  # (held, so its id is not reused while cached)
            if len(_GROUPS_SEEN) >= 4:
                _GROUPS_SEEN.pop(next(iter(_GROUPS_SEEN)))
            _GROUPS_SEEN[id(seen)] = (seen, groups)
    if len(groups) > CHORD_ABOVE:
        return _chord_rdp(groups, np.asarray(orders, dtype=float))
    total = np.zeros(np.asarray(orders).size)
    for s in segments:
        total += s.steps * subsampled_gaussian_rdp(s.noise_multiplier, s.sample_rate, orders)
    return total


_GROUPS_SEEN: dict = {}  # id(segments tuple) -> (that tuple, its (σ, q) groups): the last few schedules read
_CHORD_CACHE: dict = {}  # the composed integer orders of the last few schedules: {groups: {n: Σ steps·ε(n)}}


def _integer_rdp_sum(groups: tuple, n: int) -> float:
    """Σ over the (σ, q) groups of steps·ε(n) at the integer order n ≥ 2 (the binomial sums, all σ of a q at once)."""
    memo = _CHORD_CACHE.get(groups)
    if memo is None:
        if len(_CHORD_CACHE) >= 4:
            _CHORD_CACHE.pop(next(iter(_CHORD_CACHE)))
        memo = _CHORD_CACHE[groups] = {}
    if n in memo:
        return memo[n]
    by_q: dict[float, list] = {}
    total = 0.0
    for (sigma, q), steps in groups:
        if sigma < 1e-100:
            total = math.inf
        elif q == 1.0 or sigma > 1e100:  # exact at q = 1; subsampling only lowers the curve otherwise
            total += steps * n * (1.0 / sigma) ** 2 / 2
        else:
            by_q.setdefault(q, []).append((sigma, steps))
    k = np.arange(0, n + 1, dtype=float)
    log_binom = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    for q, items in by_q.items():
        base = log_binom + (n - k) * math.log1p(-q) + k * math.log(q)
        sig = np.array([x for x, _ in items])
        steps = np.array([t for _, t in items], dtype=float)
        if n > 64 and sig.size > 64:  # high orders: each σ read at the smallest σ of its 1 % bucket (ε falls in σ)
            bucket = np.floor(np.log(sig) / math.log(HIGH_ORDER_BUCKET)).astype(np.int64)
            keys, inv = np.unique(bucket, return_inverse=True)
            low = np.full(keys.size, np.inf)
            np.minimum.at(low, inv, sig)
            sig, steps = low, np.bincount(inv, weights=steps)
        kk = k * k - k
        rows = max(1, 1_000_000 // (n + 1))  # (memory: at most ~8 MB of terms at once)
        for i in range(0, sig.size, rows):
            terms = kk[None, :] / (2 * sig[i:i + rows, None] ** 2)
            terms += base
            arg = terms.argmax(axis=1)
            top = terms[np.arange(arg.size), arg]
            terms -= top[:, None]
            np.exp(terms, out=terms)
            terms[np.arange(arg.size), arg] = 0.0  # log(1 + the rest): log1p keeps the digits of a small log A
            log_a = np.log1p(terms.sum(axis=1)) + top
            total += float(np.dot(steps[i:i + rows], log_a)) / (n - 1)
    memo[n] = total
    return total


def _chord_rdp(groups: tuple, orders: np.ndarray) -> np.ndarray:
    """The composed curve at ``orders`` from the integer orders (see :func:`release_rdp`)."""
    out = np.empty(orders.size)
    for j, a in enumerate(orders):
        if a <= 2.0:
            out[j] = _integer_rdp_sum(groups, 2)
            continue
        n = math.floor(a)
        if a == n:
            out[j] = _integer_rdp_sum(groups, n)
            continue
        lo, hi = (n - 1) * _integer_rdp_sum(groups, n), n * _integer_rdp_sum(groups, n + 1)  # log A at n, n + 1
        out[j] = ((n + 1 - a) * lo + (a - n) * hi) / (a - 1)
    return out


def minimise_over_orders(
    segments, objective, orders=DEFAULT_ORDERS, *, refine: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """min over α in ``orders`` of ``objective(α, ε(α))`` (vectorised over its rows), evaluated lazily.

    Integer orders are exact and cheap; fractional ones need a quadrature
    each. Every order yields a valid bound, so the minimum may be taken over
    any subset: the integer orders first, then the fractional orders within
    ±1.5 of each row's best integer order (plus all orders below 3, where
    the optimum of small σ lies). ``objective(a, e)`` receives the order
    array ``a`` and the RDP array ``e`` and returns an array of shape
    (rows, len(a)). With ``refine``, each row's minimum is then refined over
    real α between the grid neighbours of its best order (bounded Brent), so
    the result is a continuous minimisation up to ~1e-4 in α. Returns (best
    values per row, best order per row).
    """
    orders = np.asarray(orders, dtype=float)
    is_int = orders == np.round(orders)
    ints = orders[is_int]
    vals_i = np.atleast_2d(objective(ints, release_rdp(segments, ints)))
    best_i = ints[np.argmin(vals_i, axis=1)]
    frac = orders[~is_int]
    near = np.zeros(frac.size, dtype=bool)
    for b in np.unique(best_i):
        near |= np.abs(frac - b) <= 1.5
    near |= frac < 3.0
    fr = frac[near]
    if fr.size:
        vals_f = np.atleast_2d(objective(fr, release_rdp(segments, fr)))
        allv = np.concatenate([vals_i, vals_f], axis=1)
        allo = np.concatenate([ints, fr])
    else:
        allv, allo = vals_i, ints
    k = np.argmin(allv, axis=1)
    best_v = allv[np.arange(allv.shape[0]), k].copy()
    best_o = allo[k].copy()
    if refine and best_v.size <= 16:
        # continuous refinement between the grid neighbours of each row's best order (Brent):
        # any order gives a valid bound, so this can only tighten
        from scipy import optimize  # noqa: PLC0415

        grid = np.sort(allo)
        for r in range(best_v.size):
            j = int(np.searchsorted(grid, best_o[r]))
            a_lo = grid[j - 1] if j > 0 else max(1.0 + 1e-3, best_o[r] / 2)
            a_hi = grid[j + 1] if j + 1 < grid.size else best_o[r] * 2

            def f(a, r=r):
                a = float(a)
                if a.is_integer():
                    a = a + 1e-9
                return float(np.atleast_2d(objective(np.array([a]), release_rdp(segments, np.array([a]))))[r, 0])

            with warnings.catch_warnings():  # orders without a value (inf, σ ≲ 1e-9) make Brent's steps nan:
                warnings.simplefilter("ignore", RuntimeWarning)  # such a result is dropped just below
                res = optimize.minimize_scalar(f, bounds=(a_lo, a_hi), method="bounded",
                                               options={"xatol": 1e-4, "maxiter": 30})
            if np.isfinite(res.fun) and res.fun < best_v[r]:
                best_v[r], best_o[r] = res.fun, res.x
    return best_v, best_o
