"""Monte-Carlo estimate of the DP-SGD ReRo bound (Hayes, Mahloujifar & Balle 2023, Algorithm 1, corrected).

Hayes, Mahloujifar & Balle 2023 estimates γ = B_κ(μ_{T,σ,q}, ν_{T,σ}) by sampling w ~ ν, computing
the likelihood ratios r = μ(w)/ν(w), and averaging the top ⌈κN⌉ of them.

Departures from the printed Algorithm 1 (spec_000 §2.1):

* The printed normalisation 1/N′ (N′ = ⌈κN⌉) is a typo; by change of measure
  P_μ[E] = E_ν[r·1_E] ≈ (1/N) Σ_{i∈E} r_i, so we divide by **N**.
* We use the **complement form** γ̂ = 1 − (1/N) Σ_{i∉top} r_i, which has the
  same expectation (E_ν[r] = 1) but far smaller variance: every summand is
  below the threshold ratio, whereas the top sum is dominated by rare huge
  ratios and is badly wrong at large ε.
* Everything is in log space: per step
  ``log r_t = log(1 − q + q·e^{(2x_t − 1)/(2σ²)})``, summed over t (evaluated as below).

Confidence interval (the "μ-sampling variant" of the issue): with N ν-samples
the empirical CDF of log r is within τ = √(log(4/α)/(2N)) of the truth
everywhere (DKW, failure α/2). The super-level sets E_c = {log r ≥ c} are
Neyman–Pearson optimal, so μ(E_c) = B_{ν(E_c)} exactly. Choosing c so that the
empirical ν-tail is κ + τ (resp. κ − τ) gives a set whose true ν-mass is ≥ κ
(resp. ≤ κ); its μ-mass, estimated from N fresh μ-samples with a
Clopper–Pearson interval (failure α/4 each), bounds B_κ from above (resp.
below) because B is non-decreasing in κ. The union bound gives coverage
≥ 1 − α.

How the samples are drawn (the estimator above does not depend on it):

* **Random streams.** The N samples of each side are cut into blocks of about
  ``BLOCK_FLOATS`` normals; block i of side s draws from its own stream, the
  child ``SeedSequence(seed, spawn_key=(s, i))`` driving an ``SFC64`` generator.
  The samples are independent as before, and they depend on the seed alone —
  not on how many threads drew them or in which order — so the same seed gives
  the same numbers. Blocks run on background threads (numpy releases the GIL
  while drawing and computing), so the report overlaps them with its other work.
* **μ-samples.** A coordinate of a μ-sample is σZ + B with B ~ Bernoulli(q). The
  log-ratio of a sample is a sum over its T coordinates, a symmetric function,
  so only how many coordinates were sampled matters: each row draws
  K ~ Binomial(T, q) and shifts its first K coordinates (the same law as T
  Bernoulli draws, at 1/T of their cost).
* **Per step** log r_t = log(1 − q + q·e^{z_t}) with z_t = Z_t/σ ∓ 1/(2σ²)
  (− unsampled, + sampled), evaluated as log1p(q·expm1(z)) — a few ulps for
  every z — with the z > 700 corner as log q + z + log1p((1 − q)e^{−z}/q).
  Each tile of ``TILE_FLOATS`` normals is transformed in place, in a core's
  cache.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Callable

import numpy as np

from .. import _validate as v
from ..metrics import clopper_pearson_interval  # numpy only at import: the draws start before scipy loads

#: Normals per block: each block of samples draws from its own stream (see the module docstring).
BLOCK_FLOATS = 1 << 20
#: Normals per tile inside a block: every pass over a tile (draw, scale, log-ratio, row sums) stays in cache.
TILE_FLOATS = 1 << 16
#: |Z| of numpy's normal sampler never exceeds this (its tail draw is at most r − log(2⁻⁵³)/r ≈ 13.7).
_Z_MAX = 40.0


def log_likelihood_ratio(x: np.ndarray, sigma: float, q: float) -> np.ndarray:
    """Per-step log μ(x)/ν(x) = log(1 − q + q·e^z), z = (2x − 1)/(2σ²), of the subsampled Gaussian (spec_000 §1.7)."""
    z = (2.0 * np.asarray(x, dtype=float) - 1.0) / (2.0 * sigma**2)
    return _log_ratio(z, q)


def _log_ratio(z: np.ndarray, q: float) -> np.ndarray:
    """log(1 − q + q·e^z) in place of ``z``: log1p(q·expm1(z)), and log q + z + log1p((1 − q)e^{−z}/q) above 700."""
    if q == 1.0:
        return z
    big = z > 700.0
    zb = z[big] if big.any() else None
    with np.errstate(over="ignore"):
        np.expm1(z, out=z)
        z *= q
        np.log1p(z, out=z)
    if zb is not None:
        z[big] = math.log(q) + zb + np.log1p((1.0 - q) / q * np.exp(-zb))
    return z


def _block(seed: np.random.SeedSequence, rows: int, segments, from_mu: bool) -> np.ndarray:
    """log r of ``rows`` samples (μ if ``from_mu`` else ν) from one stream, tile by tile."""
    rng = np.random.Generator(np.random.SFC64(seed))
    out = np.zeros(rows)
    buf = np.empty(TILE_FLOATS)
    for s in segments:
        steps, q = s.steps, s.sample_rate
        a = 1.0 / s.noise_multiplier
        b = min(0.5 * a * a, 1e300)  # (σ below 1e-150: every sampled step's ratio is astronomically large)
        may_overflow = a * _Z_MAX + b > 700.0
        shift = b if (from_mu and q == 1.0) else -b
        binomial = from_mu and q < 1.0
        cols = min(steps, TILE_FLOATS)
        per_tile = max(1, TILE_FLOATS // steps)
        for r0 in range(0, rows, per_tile):
            m = min(per_tile, rows - r0)
            hits = rng.binomial(steps, q, size=m) if binomial else None
            for c0 in range(0, steps, cols):
                c = min(cols, steps - c0)
                z = buf[: m * c].reshape(m, c)
                rng.standard_normal(out=z)
                z *= a
                z += shift
                if hits is not None:
                    k = np.clip(hits - c0, 0, c)
                    n_hit = int(k.sum())
                    if n_hit:  # the first K coordinates of each row were sampled: z + 2b = Z/σ + 1/(2σ²)
                        row = np.repeat(np.arange(m), k)
                        col = np.arange(n_hit) - np.repeat(np.cumsum(k) - k, k)
                        z[row, col] += 2.0 * b
                if q == 1.0 or not may_overflow:
                    if q < 1.0:
                        np.expm1(z, out=z)
                        z *= q
                        np.log1p(z, out=z)
                else:
                    _log_ratio(z, q)
                out[r0 : r0 + m] += z.sum(axis=1)
    return out


def _threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


class _Blocks:
    """Independent tasks run on background threads; :meth:`wait` has the calling thread help, then joins.

    A failure in any task stops the others and is raised by :meth:`wait`; :meth:`cancel` (also on an
    exception or Ctrl-C inside :meth:`wait`) lets each thread finish its current task and stop.
    """

    def __init__(self, tasks: list[Callable[[], None]], threads: int) -> None:
        self._tasks = tasks
        self._next = 0
        self._lock = threading.Lock()
        self._stop = False
        self._error: BaseException | None = None
        self._workers = [threading.Thread(target=self._work, daemon=True, name=f"reconrisk-mc-{i}")
                         for i in range(min(threads, len(tasks)))]
        for t in self._workers:
            t.start()

    def _take(self) -> Callable[[], None] | None:
        with self._lock:
            if self._stop or self._next >= len(self._tasks):
                return None
            self._next += 1
            return self._tasks[self._next - 1]

    def _work(self) -> None:
        try:
            while (task := self._take()) is not None:
                task()
        except BaseException as exc:  # noqa: BLE001 - handed to wait()
            with self._lock:
                self._error = self._error or exc
                self._stop = True

    def wait(self) -> None:
        try:
            self._work()
            for t in self._workers:
                t.join()
        except BaseException:
            self.cancel()
            raise
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        with self._lock:
            self._stop = True
        for t in self._workers:
            if t is not threading.current_thread():
                t.join()


def check_draws(samples, seed, steps: int) -> tuple[int, int | None]:
    """The validated (samples, seed) of ``samples`` draws of ``steps`` coordinates per side, or ReconRiskError.

    The one place these limits live: :func:`reconrisk._src.analysis.privacy_rero.start_monte_carlo` and ``reconrisk report``'s
    early start (which draws before the rest of the report is imported) both ask it.
    """
    samples = v.integer("samples", samples, minimum=100)
    seed = v.seed("seed", seed, allow_none=True)
    # ~5 float64 arrays of `samples` (sorted ratios, cumulative sums) and samples × steps normal draws (a bound on memory, so a huge run is refused, not crashed)
    v.memory("samples", samples, 48 * samples)
    v.max_count("samples × steps", samples * steps, 10**11, "normal draws of the Monte-Carlo estimate")
    return samples, seed


def _root(seed) -> np.random.SeedSequence:
    if isinstance(seed, np.random.Generator):  # a generator's state picks the entropy (and advances)
        return np.random.SeedSequence([int(w) for w in seed.integers(0, 2**63, size=4)])
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(seed)


class LogRatioSampler:
    """log r(W) of ``n`` samples W ~ ν and, with ``mu``, ``n`` more W ~ μ, drawn block by block on threads.

    Started on construction (``threads`` background threads, default: the usable CPUs); :meth:`result`
    waits, helping with the remaining blocks, and returns ``(log_nu, log_mu)`` (``log_mu`` None without
    ``mu``). The numbers depend on ``seed`` only. ``progress(k)`` is told k draws as each block ends.
    """

    def __init__(self, seed, n: int, segments, *, mu: bool = True, nu: bool = True,
                 progress: Callable[[int], None] | None = None, threads: int | None = None) -> None:
        #: what was drawn: a consumer given a started sampler checks it against what it would draw itself
        self.key = (seed if isinstance(seed, int) else None, n, tuple(segments), mu, nu)
        root = _root(seed)
        steps = sum(s.steps for s in segments)
        rows = max(1, BLOCK_FLOATS // max(1, steps))
        self._out = {side: np.empty(n) for side, on in (("nu", nu), ("mu", mu)) if on}
        lock = threading.Lock()

        def task(side: str, i: int, r0: int, m: int) -> Callable[[], None]:
            def run() -> None:
                ss = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 0 if side == "nu" else 1, i))
                self._out[side][r0 : r0 + m] = _block(ss, m, segments, from_mu=side == "mu")
                if progress is not None:
                    with lock:
                        progress(m * steps)
            return run

        tasks = [task(side, i, r0, min(rows, n - r0)) for side in self._out
                 for i, r0 in enumerate(range(0, n, rows))]
        threads = _threads() if threads is None else threads
        self._blocks = _Blocks(tasks, threads if len(tasks) > 1 else 0)

    def result(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        self._blocks.wait()
        return self._out.get("nu"), self._out.get("mu")

    def cancel(self) -> None:
        self._blocks.cancel()


def sample_log_ratios(seed, n: int, segments, *, from_mu: bool, progress: Callable[[int], None] | None = None
                      ) -> np.ndarray:
    """log r(W) for n samples W ~ μ (``from_mu``) or W ~ ν; ``seed``: an int, a SeedSequence or a Generator."""
    nu, mu = LogRatioSampler(seed, n, segments, mu=from_mu, nu=not from_mu, progress=progress).result()
    return mu if from_mu else nu


def complement_estimate(sorted_log_nu: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """γ̂ = 1 − (1/N) Σ of the N − ⌈κN⌉ smallest ratios (corrected Algorithm 1)."""
    n = sorted_log_nu.size
    n_top = np.ceil(kappa * n).astype(np.int64)
    n_bottom = n - n_top
    # prefix sums of exp(sorted log r) in a numerically safe way (bottom part is bounded)
    with np.errstate(over="ignore"):
        csum = np.concatenate([[0.0], np.cumsum(np.exp(sorted_log_nu))])
    est = 1.0 - csum[n_bottom] / n
    return np.clip(est, 0.0, 1.0)


class MonteCarloRero:
    """:func:`mc_rero` started now and finished by :meth:`result` (its draws run on background threads
    meanwhile, so a caller can do other work); :meth:`cancel` stops it."""

    def __init__(self, segments, kappa: np.ndarray, *, samples: int, seed, confidence: float,
                 progress: Callable[[int], None] | None = None, threads: int | None = None,
                 sampler: LogRatioSampler | None = None) -> None:
        self.kappa = np.asarray(kappa, dtype=float)
        self.samples, self.confidence = samples, confidence
        if sampler is not None and (not isinstance(seed, int)
                                    or sampler.key != (seed, samples, tuple(segments), True, True)):
            sampler.cancel()  # started for other draws than these: not used
            sampler = None
        self._sampler = sampler or LogRatioSampler(seed, samples, segments, progress=progress, threads=threads)

    def cancel(self) -> None:
        self._sampler.cancel()

    def result(self) -> dict:
        """Estimate and confidence interval of B_κ for every κ (see the module docstring)."""
        log_nu, log_mu = self._sampler.result()
        log_nu.sort()
        log_mu.sort()
        return _interval(log_nu, log_mu, self.kappa, self.samples, self.confidence)


def mc_rero(
    segments,
    kappa: np.ndarray,
    *,
    samples: int,
    seed,
    confidence: float,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Estimate and confidence interval of B_κ for every κ (see module docstring)."""
    return MonteCarloRero(segments, kappa, samples=samples, seed=seed, confidence=confidence,
                          progress=progress).result()


def _interval(log_nu: np.ndarray, log_mu: np.ndarray, kappa: np.ndarray, samples: int, confidence: float) -> dict:
    """The complement estimate and the DKW + Clopper–Pearson interval from sorted ν- and μ-samples."""
    alpha = 1.0 - confidence
    estimate = complement_estimate(log_nu, kappa)
    tau = math.sqrt(math.log(4.0 / alpha) / (2.0 * samples))
    n = samples

    def mu_mass_of_top(frac: np.ndarray) -> np.ndarray:
        # set = the top ceil(frac*n) ν-samples' region {log r >= c}
        n_top = np.clip(np.ceil(frac * n).astype(np.int64), 0, n)
        c = np.where(n_top > 0, log_nu[np.clip(n - n_top, 0, n - 1)], np.inf)
        counts = n - np.searchsorted(log_mu, c, side="left")
        return np.where(n_top > 0, counts, 0)

    up_frac = kappa + tau
    lo_frac = kappa - tau
    k_up = mu_mass_of_top(np.minimum(up_frac, 1.0))
    k_lo = mu_mass_of_top(np.maximum(lo_frac, 0.0))
    _, upper = clopper_pearson_interval(k_up, n, alpha / 2)
    lower, _ = clopper_pearson_interval(k_lo, n, alpha / 2)
    upper = np.where(up_frac >= 1.0, 1.0, upper)
    lower = np.where(lo_frac <= 0.0, kappa, np.maximum(lower, kappa))
    return {
        "estimate": estimate,
        "lower": np.minimum(lower, 1.0),
        "upper": np.maximum(upper, lower),
        "dkw_tau": tau,
    }
