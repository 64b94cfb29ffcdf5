"""Many compositions of the same few steps at once: per-example PLDs in the Fourier domain.

Per-example accounting (:mod:`reconrisk._src.individual.privacy`) composes, for each example
i, the same L per-step privacy-loss distributions p_1 … p_L (one per sensitivity level,
from :func:`reconrisk._src.accounting.pld.step_pmf`) with example-specific counts c_i,k.
On an FFT of length N the composition is the inverse transform of
Π_k X_k^{c_ik} = exp(Σ_k c_ik·log X_k), so with the L spectra computed once, a batch
of examples costs one (batch × L)·(L × N) complex matrix product, an ``exp`` and one
inverse FFT per example — instead of L FFT powers and L − 1 FFT products each
(:func:`reconrisk._src.accounting.pld.compose_segments`, which remains the reference and
what the tests compare against).

The result of each example is a pessimistic :class:`~reconrisk._src.accounting.pmf.PMF`
with a certified slack, built exactly as :meth:`PMF.self_compose` builds a power:

* window: Chernoff bounds from the combined log-MGF Σ_k c_k K_k(λ) on a fixed λ grid
  (any λ gives a valid bound) leave out at most ``COMPOSE_TAIL`` of the normalised
  mass, charged twice (missing, and aliased by the circular FFT), times Π‖p_k‖₁^{c_k};
* the steps' own slack s_k: ‖Π(p̂_k + e_k)^{c_k} − Πp̂_k^{c_k}‖₁
  ≤ Σ_k c_k s_k·Π_j max(1, n_j + s_j)^{c_j} (n_j = ‖p̂_j‖₁; telescoping);
* round-off. Forward FFTs: ‖X̂_k − X_k‖₂ ≤ e_k = η√N‖p_k‖₂ (Higham 2002, Thm 24.2, with
  Parseval; :func:`~reconrisk._src.accounting.fft_roundoff.fft_eta`), and
  |Π X̂^c − Π X^c| ≤ Π_j M_j^{c_j}·Σ_k c_k|X̂_k − X_k| with M_j = max(1, n_j + e_j) ≥ |X̂_j|, |X_j|
  (telescoping), so the product's ℓ₂ error is ≤ Π M^c·Σ c_k e_k. Exponent: with
  ℓ̂_k = fl(log X̂_k) (error ≤ 4u(|ℓ̂_k| + 1)) and the matrix product's summation
  (≤ (L + 1)u·Σ c_k|ℓ̂_k|), the computed exponent is within
  d = (L + 5)u·Σ_k c_k(|ℓ̂_k| + 1) of the exact one, so |exp(Ŝ) − Π X̂^c| ≤ |exp(Ŝ)|(e^d − 1), and
  ``exp`` rounds by 4u more. The inverse FFT adds η‖Ẑ‖₂; as in
  :func:`~reconrisk._src.accounting.fft_roundoff.power_roundoff` the ℓ₁ error over the kept
  ``out_len`` entries is √out_len times the ℓ₂ error divided by √N.

Losses above ``loss_cap`` go to +∞ (:meth:`PMF.cap`), as in the engine.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ReconRiskError
from .fft_roundoff import UNIT_ROUNDOFF, fast_len, fft_eta, full_norm, norm2
from .pmf import COMPOSE_TAIL, MAX_WINDOW_ATOMS, PMF

#: λ grid of the Chernoff windows (both signs; every λ gives a valid bound, the best is taken).
_LAMBDAS = np.concatenate([-np.logspace(-3, 4, 71), np.logspace(-3, 4, 71)])
#: Examples composed per matrix product (bounds the (batch, N/2) complex buffers).
BATCH = 16
#: Exponent of a zero spectrum entry (exp(c·this) = 0 for every c ≥ 1; c = 0 gives 1).
_LOG_ZERO = -1e4


def _ladder_len(n: int) -> int:
    """FFT length ≥ n on the ladder 2^(j/4) (few distinct lengths, so spectra are reused)."""
    j = math.ceil(4 * math.log2(max(n, 2)) - 1e-12)
    return fast_len(int(math.ceil(2.0 ** (j / 4))))


class LevelSpectra:
    """The L per-step PMFs (pessimistic, untilted, one grid) and what every composition of them needs."""

    def __init__(self, pmfs) -> None:
        self.pmfs = list(pmfs)
        if not self.pmfs:
            raise ReconRiskError("at least one step PMF is needed")
        h = self.pmfs[0].h
        for p in self.pmfs:
            if p.h != h or not p.pessimistic or p.tilt != 0.0 or p.log_scale != 0.0:
                raise ReconRiskError("the step PMFs must be pessimistic, untilted and on one grid")
        self.h = h
        self.offsets = np.array([p.offset for p in self.pmfs], dtype=np.int64)
        self.sizes = np.array([p.probs.size for p in self.pmfs], dtype=np.int64)
        self.norm1 = np.array([p._norm1() for p in self.pmfs])
        self.norm2 = np.array([norm2(p.probs) for p in self.pmfs])
        self.slack = np.array([p.slack for p in self.pmfs])
        self.log_keep = np.array([math.log1p(-min(p.infinity_mass, 1.0)) if p.infinity_mass < 1 else -math.inf
                                  for p in self.pmfs])
        self.kmgf = np.stack([p._log_mgf(_LAMBDAS) for p in self.pmfs])  # (L, λ) normalised log-MGFs
        self._spectra: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def spectra(self, n_fft: int):
        """(log X̂ (L, N/2+1) complex, |log X̂| + 1, e_k = η√N‖p_k‖₂) for FFT length N (cached)."""
        if n_fft not in self._spectra:
            logs = np.empty((len(self.pmfs), n_fft // 2 + 1), dtype=complex)
            for k, p in enumerate(self.pmfs):
                x = np.fft.rfft(p.probs, n_fft)
                with np.errstate(divide="ignore"):
                    lx = np.log(np.where(x == 0, 1.0, x))
                logs[k] = np.where(x == 0, _LOG_ZERO, lx)
            e = fft_eta(n_fft) * math.sqrt(n_fft) * self.norm2
            self._spectra[n_fft] = (logs, np.abs(logs) + 1.0, e)
        return self._spectra[n_fft]

    def windows(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Index windows [lo, hi] per row of ``counts`` (Chernoff, tail ``COMPOSE_TAIL``)."""
        c = counts.astype(float)
        kmgf = c @ np.where(np.isfinite(self.kmgf), self.kmgf, 1e300)
        log_t = math.log(COMPOSE_TAIL / 2)
        pos = _LAMBDAS > 0
        with np.errstate(over="ignore", invalid="ignore"):
            a_hi = np.min((kmgf[:, pos] - log_t) / _LAMBDAS[pos], axis=1)
            a_lo = np.max((kmgf[:, ~pos] - log_t) / _LAMBDAS[~pos], axis=1)
        full_lo = counts @ self.offsets
        full_hi = counts @ (self.offsets + self.sizes - 1)
        with np.errstate(over="ignore", invalid="ignore"):
            lo = np.where(np.isfinite(a_lo), np.maximum(full_lo, np.floor(a_lo / self.h) - 1), full_lo)
            hi = np.where(np.isfinite(a_hi), np.minimum(full_hi, np.ceil(a_hi / self.h) + 1), full_hi)
        lo = lo.astype(np.int64)
        return lo, np.maximum(hi.astype(np.int64), lo)


def compose_counts(levels: LevelSpectra, counts, *, loss_cap: float = math.inf):
    """Yield ``(row, PMF)``: the pessimistic composed PMF of every row of ``counts`` (G, L), Π_k p_k^{*c_k}
    (module docstring), in an order of the FFT lengths (one PMF alive at a time)."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[1] != len(levels.pmfs) or np.any(counts < 0):
        raise ReconRiskError(f"counts must be a non-negative (G, {len(levels.pmfs)}) integer array; found "
                             f"{counts.shape}")
    lo, hi = levels.windows(counts)
    out_len = hi - lo + 1
    if np.any(out_len > MAX_WINDOW_ATOMS):
        raise ReconRiskError(f"a per-example composition needs {int(out_len.max()):,} atoms (at most "
                             f"{MAX_WINDOW_ATOMS:,}); use a coarser grid")
    n_fft = np.array([_ladder_len(max(int(w), int(levels.sizes.max()))) for w in out_len])
    c = counts.astype(float)
    base = counts @ levels.offsets
    log_grow = c @ np.log(np.maximum(levels.norm1, 1.0))
    log_grow_s = c @ np.log(np.maximum(levels.norm1 + levels.slack, 1.0))
    inf_mass = -np.expm1(c @ np.where(np.isfinite(levels.log_keep), levels.log_keep, -1e300))
    step_slack = (c @ levels.slack) * np.exp(np.minimum(log_grow_s, 700.0))
    tail_slack = 2 * COMPOSE_TAIL * np.exp(np.minimum(log_grow, 700.0))
    L = len(levels.pmfs)
    for N in np.unique(n_fft):
        rows = np.flatnonzero(n_fft == N)
        logs, abs_logs, e = levels.spectra(int(N))
        eta = fft_eta(int(N))
        log_m = np.log(np.maximum(1.0, levels.norm1 + e))
        for start in range(0, rows.size, BATCH):
            r = rows[start:start + BATCH]
            cr = c[r]
            spec = np.exp(cr @ logs)  # (b, N/2+1)
            d = (L + 5) * UNIT_ROUNDOFF * (cr @ abs_logs) * (1 + 1e-9)
            fwd = np.exp(np.minimum(cr @ log_m, 700.0)) * (cr @ e)
            full = np.fft.irfft(spec, int(N), axis=1)
            for j, i in enumerate(r):
                z = spec[j]
                z_norm = full_norm(z, int(N))
                rel = np.expm1(d[j]) + 4 * UNIT_ROUNDOFF
                exp_err = math.sqrt(2.0) * norm2(np.abs(z) * rel) / (1 - 4 * UNIT_ROUNDOFF)
                err_z = fwd[j] + exp_err
                fft_err = math.sqrt(out_len[i]) * (err_z * (1 + eta) + eta * z_norm) / math.sqrt(N) * (1 + 1e-9)
                shift = int((lo[i] - base[i]) % N)
                probs = np.clip(np.roll(full[j], -shift)[: out_len[i]], 0.0, None)
                slack = float(step_slack[i] + tail_slack[i] + fft_err)
                pmf = PMF(levels.h, int(lo[i]), probs, float(min(1.0, inf_mass[i])), True, min(1.0, slack))
                yield int(i), pmf._trim().cap(loss_cap)
