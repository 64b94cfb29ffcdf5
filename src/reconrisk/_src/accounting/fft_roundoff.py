"""FFT convolution round-off with a certified allowance (used by :mod:`reconrisk._src.accounting.pld`).

Composing privacy-loss distributions by FFT rounds; a certified bracket must
charge that round-off to the right end. These bounds are a priori in the FFT
length (Higham 2002, Thm 24.2) and a posteriori in the computed spectrum, and
are tested against a long-double composition in ``tests/test_cert.py``.
"""

from __future__ import annotations

import math

import numpy as np

UNIT_ROUNDOFF = 2.0**-53


def fft_eta(n: int) -> float:
    """Relative 2-norm error bound of one floating-point FFT of length n.

    Higham, *Accuracy and Stability of Numerical Algorithms* (2nd ed., 2002),
    Thm 24.2: for the Cooley–Tukey FFT, ‖fl(Fx) − Fx‖₂ ≤ (log₂n·η₁/(1 − log₂n·η₁))‖Fx‖₂
    with η₁ = μ + γ₄(√2 + μ), μ the accuracy of the computed twiddle factors.
    pocketfft (numpy's FFT) is a mixed-radix Cooley–Tukey FFT with accurately
    precomputed twiddles (μ ≤ 2u); radices up to 11 (``next_fast_len``) are
    each a short DFT whose error is covered by charging ⌈log₂n⌉ + 4 stages
    instead of log₂n, and η₁ is taken as 16u (> 2u + γ₄(√2 + 2u)).
    """
    stages = math.ceil(math.log2(max(n, 2))) + 4
    e1 = 16 * UNIT_ROUNDOFF
    return stages * e1 / (1 - stages * e1)


def norm2(x: np.ndarray) -> float:
    """2-norm, rounded up (pairwise summation: relative error far below 1e-12 at any length here).

    Plain ufuncs, not BLAS: ``np.dot``/``np.linalg.norm`` go through a threaded BLAS that, on a
    loaded machine, took 30 ms for a 70 000-entry vector (a third of a composition's time).
    """
    a = np.abs(x) if np.iscomplexobj(x) else x
    return math.sqrt(float(np.sum(np.square(a)))) * (1.0 + 1e-12)


def full_norm(half: np.ndarray, n: int) -> float:
    """2-norm over the full length-n spectrum from an rfft half-spectrum (Hermitian symmetry)."""
    return math.sqrt(2.0) * norm2(half) * (1.0 + 1e-15)


def power_roundoff(x: np.ndarray, x_hat: np.ndarray, spec: np.ndarray, t: int, n: int, out_len: int) -> float:
    """Bound, in total variation, on the round-off of irfft(rfft(x)**t) over ``out_len`` entries.

    With e = η√n‖x‖₂ ≥ ‖X̂ − X‖₂ (Thm 24.2 and Parseval), each entry obeys
    |X̂ₖᵗ − Xₖᵗ| ≤ t·mₖ^{t−1}|X̂ₖ − Xₖ| with mₖ = |X̂ₖ| + e, so
    ‖X̂ᵗ − Xᵗ‖₂ ≤ t·e·min((Σₖ mₖ^{2(t−1)})^{1/2}, maxₖ mₖ^{t−1}) (|ΔXₖ| ≤ e, or
    Cauchy–Schwarz): a-posteriori factors from the computed spectrum. The
    power itself (``exp(t·log z)``) adds a relative error ≤ 8tu per entry.
    The inverse FFT adds η‖Ẑ‖₂ and scales by 1/√n; the ℓ₁ norm over the
    ``out_len`` kept entries is at most √out_len times the ℓ₂ norm.
    """
    eta = fft_eta(n)
    e = eta * math.sqrt(n) * norm2(x)
    with np.errstate(divide="ignore", over="ignore"):
        m = np.abs(x_hat) + e
        log_m = np.log(np.where(m > 0, m, 1.0))
        s = math.sqrt(2.0 * float(np.sum(np.exp(np.minimum(2.0 * (t - 1) * log_m, 700.0)) * (m > 0))))
        # Cauchy–Schwarz the other way round: Σ (t m^{t−1}|ΔX|)² ≤ t² max(m)^{2(t−1)} ‖ΔX‖²
        s_max = math.exp(min((t - 1) * float(np.max(log_m)), 700.0))
    z_norm = full_norm(spec, n)
    err_pow = t * e * min(s / 1.0, s_max) + 8.0 * t * UNIT_ROUNDOFF * z_norm
    err_c = (err_pow * (1 + eta) + eta * z_norm) / math.sqrt(n)
    return math.sqrt(out_len) * err_c


#: Unit round-off of numpy's long double (2^-64 on x86-64; 2^-53 where long double is double).
UNIT_ROUNDOFF_LD = float(np.finfo(np.longdouble).eps) / 2
#: Rest-of-spectrum contribution aimed for when choosing the accurately recomputed frequencies.
LOW_FREQ_TARGET = 1e-13
#: At most this many frequencies are recomputed (long-double direct DFT, cost ∝ count × atoms).
MAX_LOW_FREQ = 2048
#: Error allowed to the FFT of the small atoms (see :func:`accurate_low_frequencies`).
SMALL_PART_ERROR = 2e-16
#: Largest (frequencies × big atoms) summed directly in long double.
MAX_DIRECT_TERMS = 20_000_000


def accurate_low_frequencies(x: np.ndarray, x_hat: np.ndarray, t: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Recompute the frequencies that a t-th power amplifies, by a long-double direct DFT.

    The t-th power multiplies the forward FFT's error at frequency k by
    t·|X_k|^{t−1}, which is ≈ t only where |X_k| ≈ 1 (a few low frequencies).
    Those are recomputed as Σ_j x_j·e^{−2πi·(kj mod n)/n} in long double over
    the big atoms, plus an FFT of the small atoms (x_small: the smallest atoms
    whose FFT error bound η√n‖x_small‖₂ stays ≤ 2e-16, added to the bound), and
    replace the FFT values in ``x_hat`` (in place). Returns (indices, bound on
    |X̂_k − X_k| at each). Bound: angle 2π·m/n with m = kj mod n exact, a
    relative error ≤ 3u_L (u_L the long-double unit round-off), so cos and sin
    are off by ≤ 25u_L with a 4u_L allowance for the library; each product
    adds u_L, and a sequential sum of N terms at most N·u_L·Σ|terms| (whatever
    order numpy sums in); both components together √2 times that, plus the
    rounding to double and the final sum, 2u·|X_k|·√2.
    """
    e = fft_eta(n) * math.sqrt(n) * norm2(x)
    if t < 2 or e <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    m = np.abs(x_hat) + e
    with np.errstate(divide="ignore"):
        weight = t * np.exp(np.minimum((t - 1) * np.log(m), 700.0)) * e
    low = np.flatnonzero(weight > LOW_FREQ_TARGET)
    if low.size == 0:
        return low, np.zeros(0)
    if low.size > MAX_LOW_FREQ:
        low = np.sort(low[np.argsort(-weight[low])[:MAX_LOW_FREQ]])
    # Split x = x_big + x_small: the many tiny atoms go through one more FFT, whose error bound
    # η√n‖x_small‖₂ is kept at the double-rounding level; the few big atoms are summed in long double.
    eta = fft_eta(n)
    order = np.argsort(x)  # ascending
    csq = np.cumsum(np.square(x[order]))
    small_ok = csq <= (SMALL_PART_ERROR / (eta * math.sqrt(n))) ** 2
    n_small = int(np.count_nonzero(small_ok))
    big = np.sort(order[n_small:])
    big = big[x[big] != 0]
    if big.size * low.size > MAX_DIRECT_TERMS:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    x_small = x.copy()
    x_small[big] = 0.0
    e_small = eta * math.sqrt(n) * norm2(x_small)
    xs_hat = np.fft.rfft(x_small, n)[low]
    xv = x[big].astype(np.longdouble)
    j = big.astype(np.int64)
    two_pi = np.arctan(np.longdouble(1)) * 8
    chunk = max(1, 2_000_000 // max(big.size, 1))
    for c in range(0, low.size, chunk):
        ks = low[c : c + chunk].astype(np.int64)
        ang = ((ks[:, None] * j[None, :]) % n).astype(np.longdouble) / np.longdouble(n) * two_pi
        re = np.sum(xv[None, :] * np.cos(ang), axis=1)
        im = -np.sum(xv[None, :] * np.sin(ang), axis=1)
        x_hat[low[c : c + chunk]] = (re.astype(float) + 1j * im.astype(float)) + xs_hat[c : c + chunk]
    l1 = float(np.sum(np.abs(x[big])))
    delta = (
        math.sqrt(2) * (l1 * (30 + big.size) * UNIT_ROUNDOFF_LD + 2 * UNIT_ROUNDOFF * np.abs(x_hat[low]))
        + e_small * (1 + 1e-9)
    ) * (1 + 1e-6)
    return low, delta


def power_roundoff_refined(
    x: np.ndarray, x_hat: np.ndarray, low: np.ndarray, delta: np.ndarray, spec: np.ndarray, t: int, n: int, out_len: int
) -> float:
    """:func:`power_roundoff` with per-frequency error bounds ``delta`` at the indices ``low``.

    ‖X̂ᵗ − Xᵗ‖₂ ≤ (2Σ_{k∈low}(t·m_k^{t−1}δ_k)²)^{1/2} + t·max_{k∉low} m_k^{t−1}·e (the rest's errors
    have ℓ₂ norm ≤ e over the whole spectrum; Hermitian pairs doubled), m_k = |X̂_k| + bound; the rest
    as in :func:`power_roundoff`.
    """
    eta = fft_eta(n)
    e = eta * math.sqrt(n) * norm2(x)
    bound = np.full(x_hat.size, e)
    bound[low] = delta
    with np.errstate(divide="ignore", over="ignore"):
        log_m = np.log(np.abs(x_hat) + bound)
        amp = np.exp(np.minimum((t - 1) * log_m, 700.0))
    low_part = math.sqrt(2.0 * float(np.sum((t * amp[low] * delta) ** 2))) if low.size else 0.0
    rest = np.ones(x_hat.size, dtype=bool)
    rest[low] = False
    rest_part = t * float(np.max(amp[rest])) * e if rest.any() else 0.0
    z_norm = full_norm(spec, n)
    err_pow = low_part + rest_part + 8.0 * t * UNIT_ROUNDOFF * z_norm
    err_c = (err_pow * (1 + eta) + eta * z_norm) / math.sqrt(n)
    return math.sqrt(out_len) * err_c * (1 + 1e-9)


def product_roundoff(x: np.ndarray, y: np.ndarray, z: np.ndarray, n: int, out_len: int, *,
                     x_l1: float = 1.0, y_l1: float = 1.0) -> float:
    """Bound, in total variation, on the round-off of irfft(rfft(x)·rfft(y)) (non-negative x, y).

    ‖X̂Ŷ − XY‖₂ ≤ e_x‖Y‖_∞ + ‖X‖_∞e_y + e_xe_y + 4u‖Ẑ‖₂ with ‖X‖_∞ ≤ ‖x‖₁ (≤ ``x_l1``, 1 for
    sub-probability vectors), e_x = η√n‖x‖₂; then as in :func:`power_roundoff`.
    """
    eta = fft_eta(n)
    ex = eta * math.sqrt(n) * norm2(x)
    ey = eta * math.sqrt(n) * norm2(y)
    z_norm = full_norm(z, n)
    err_z = ex * max(y_l1, 1.0) + ey * max(x_l1, 1.0) + ex * ey + 4 * UNIT_ROUNDOFF * z_norm
    err_c = (err_z * (1 + eta) + eta * z_norm) / math.sqrt(n)
    return math.sqrt(out_len) * err_c


def fast_len(n: int) -> int:
    from scipy import fft as sfft  # light submodule

    return int(sfft.next_fast_len(int(n), real=True))
