"""An independent extended-precision reference for ε(δ) at tiny δ (tests/test_tiny_delta.py).

Nothing here touches reconrisk's PLD engine (no FFT, no tilt, no round-off allowance): one Poisson-subsampled
Gaussian step, remove direction (μ = (1−q)N(0, σ²) + qN(1, σ²) against ν = N(0, σ²), loss
λ(x) = log(1 − q + q·e^{(2x−1)/(2σ²)})), discretised on a coarse loss grid two ways, composed by direct
convolution in ``np.longdouble`` (non-negative terms: relative round-off ~n·2⁻⁶⁴), and δ(ε) = E[(1 − e^{ε−L})₊]
inverted by bisection.

* **upper** — connect-the-dots (Doroshenko et al. 2022): each loss cell's μ- and ν-masses split onto its two
  end atoms preserving both; the top tail goes to +∞, the bottom tail onto the first atom.
* **lower** — an exact garbling that lands on the grid: cells [b_k, b_{k+1}) in x are chosen one after another
  so that each merged outcome's loss log(μ/ν) is just above a grid point g_k (bisection); the outcome is put at
  g_k (a smaller loss: δ only decreases, by the coupling of the sums); both tails are dropped.

During composition, partial sums above ``top`` go to +∞ (upper) or are dropped (lower), and those below ``bottom``
are raised onto it (upper) or dropped (lower): each move raises, respectively lowers, every composed sum, and
δ(ε) is increasing in each loss. So [lower, upper] contains the true ε(δ) up to the longdouble round-off.
``symmetric=True`` symmetrises the step first (Dong, Roth & Su 2022, Thm 4.2: keep the atoms at l > 0, mirror
e^{−l}·ω(l) at −l, the rest at 0), for the pair view of fixed-size batches.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

LD = np.longdouble


def _x(lam, sigma, q):
    v = np.expm1(lam) + q
    return sigma**2 * (np.log(v) - math.log(q)) + 0.5 if v > 0 else -np.inf


def _lam(x, sigma, q):
    return float(np.logaddexp(math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * sigma**2)))


def _mass(a, b, loc, sigma):
    za, zb = (a - loc) / sigma, (b - loc) / sigma
    return special.ndtr(-za) - special.ndtr(-zb) if za > 0 else special.ndtr(zb) - special.ndtr(za)


def _cell(a, b, sigma, q):
    n0 = _mass(a, b, 0.0, sigma)
    return (1 - q) * n0 + q * _mass(a, b, 1.0, sigma), n0


def _range(sigma, q, tail):
    z = float(-special.ndtri(tail))
    return -sigma * z, 1.0 + sigma * z


def step_upper(sigma, q, h, tail):
    """(offset, μ-masses on k·h, +∞ mass): the pessimistic connect-the-dots step."""
    xlo, xhi = _range(sigma, q, tail)
    k0, k1 = math.floor(_lam(xlo, sigma, q) / h), math.ceil(_lam(xhi, sigma, q) / h)
    p = np.zeros(k1 - k0 + 1, dtype=LD)
    for i, k in enumerate(range(k0, k1)):
        a, b = max(_x(k * h, sigma, q), xlo), min(_x((k + 1) * h, sigma, q), xhi)
        if b <= a:
            continue
        P, Q = (LD(v) for v in _cell(a, b, sigma, q))
        ea, eb = np.exp(-LD(k * h)), np.exp(-LD((k + 1) * h))
        lo = min(max((Q - P * eb) / (ea - eb), LD(0)), P)
        p[i] += lo
        p[i + 1] += P - lo
    p[0] += LD((1 - q) * special.ndtr(xlo / sigma) + q * special.ndtr((xlo - 1) / sigma))
    inf = (1 - q) * special.ndtr(-xhi / sigma) + q * special.ndtr(-(xhi - 1) / sigma)
    return k0, p, LD(inf)


def step_lower(sigma, q, h, tail):
    """(offset, μ-masses on k·h, 0): the garbling whose merged outcomes land on grid points (rounded down)."""
    xlo, xhi = _range(sigma, q, tail)
    atoms, b = {}, xlo
    while b < xhi:
        g = (math.floor(_lam(b, sigma, q) / h) + 1) * h
        lo, hi = max(_x(g, sigma, q), b), xhi

        def phi(c):
            P, Q = _cell(b, c, sigma, q)
            return P - math.exp(g) * Q

        if phi(hi) < 0:
            break  # the rest of the top tail is dropped
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if phi(mid) >= 0:
                hi = mid
            else:
                lo = mid
        k = round(g / h)
        atoms[k] = atoms.get(k, LD(0)) + LD(_cell(b, hi, sigma, q)[0])
        b = hi
    k0 = min(atoms)
    p = np.zeros(max(atoms) - k0 + 1, dtype=LD)
    for k, v in atoms.items():
        p[k - k0] += v
    return k0, p, LD(0)


def symmetrise(step, h):
    k0, p, inf = step
    ks = k0 + np.arange(p.size)
    pos = ks >= 1
    kmax = int(ks[pos].max())
    out = np.zeros(2 * kmax + 1, dtype=LD)
    out[kmax + ks[pos]] = p[pos]
    out[kmax - ks[pos]] = p[pos] * np.exp(-LD(h) * ks[pos].astype(LD))
    out[kmax] = max(LD(1) - inf - out.sum(), LD(0))
    return -kmax, out, inf


def _truncate(pmf, bottom, top, upper):
    k0, p, inf = pmf
    hi = top - k0
    if hi < p.size - 1:
        if upper:
            inf = inf + p[hi + 1:].sum()
        p = p[: hi + 1]
    lo = bottom - k0
    if lo > 0:
        below = p[:lo].sum()
        p = p[lo:].copy()
        if upper:
            p[0] += below
        k0 = bottom
    return k0, p, inf


def _product(a, b, bottom, top, upper):
    out = (a[0] + b[0], np.convolve(a[1], b[1]), LD(1) - (LD(1) - a[2]) * (LD(1) - b[2]))
    return _truncate(out, bottom, top, upper)


def compose(step, t, h, bottom, top, upper, dtype=LD):
    """The t-fold composition by repeated squaring, partial sums kept in [bottom, top] (losses); the
    convolutions in ``dtype`` (long double, or float64: sums of non-negative products, relative error ≤ n·u)."""
    kb, kt = math.floor(bottom / h), math.ceil(top / h)
    result, base = None, _truncate((step[0], step[1].astype(dtype), step[2]), kb, kt, upper)
    while t:
        if t & 1:
            result = base if result is None else _product(result, base, kb, kt, upper)
        t >>= 1
        if t:
            base = _product(base, base, kb, kt, upper)
    return result


def delta(pmf, h, eps):
    k0, p, inf = pmf
    l = (k0 + np.arange(p.size)).astype(LD) * LD(h)
    m = l > eps
    return float(inf + np.sum(p[m] * -np.expm1(LD(eps) - l[m])))


def epsilon(pmf, h, target):
    """ε with δ(ε) = target (bisection, 100 steps); +∞ if the +∞ atom alone exceeds it."""
    if float(pmf[2]) >= target:
        return math.inf
    lo, hi = 0.0, 200.0
    if delta(pmf, h, 0.0) <= target:
        return 0.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delta(pmf, h, mid) > target else (lo, mid)
    return hi


def bracket(segments, target, *, guess, h=None, symmetric=False, window=(-3.0, 6.0), dtype=LD):
    """(lower, upper) of the remove direction's (or symmetrised) ε(δ) of a schedule of ``(σ, q, T)`` segments of
    Poisson-subsampled Gaussian steps; the grid h (default min(0.005, smallest q/4): the garbling must resolve
    the bulk of losses near log(1 − q)), partial sums kept in [window[0], guess + window[1]]."""
    h = min([0.005] + [q / 4 for _, q, _ in segments]) if h is None else h
    steps = sum(t for _, _, t in segments)
    tail = 1e-4 * target / steps
    kb, kt = math.floor(window[0] / h), math.ceil((guess + window[1]) / h)
    out = []
    for upper, build in ((False, step_lower), (True, step_upper)):
        total = None
        for sigma, q, t in segments:
            step = build(sigma, q, h, tail)
            if symmetric:
                step = symmetrise(step, h)
            part = compose(step, t, h, window[0], guess + window[1], upper, dtype)
            total = part if total is None else _product(total, part, kb, kt, upper)
        out.append(epsilon(total, h, target))
    return tuple(out)
