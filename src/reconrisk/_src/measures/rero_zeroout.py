"""ReRo of a replace-one release against the zero-out reference: fixed-size batches, shuffling, cohorts.

**Theorem.** Let a Gaussian DP-SGD run draw its batches by a sampler whose law does not depend on the
data (fixed-size batches without replacement, a shuffle, a Flower cohort drawn without replacement or
refilled), clip every gradient to norm C and add N(0, σ_t²C²I) to the clipped sum of step t. Let K_i be
the number of steps of segment i whose batch holds the target's slot (K_i ~ Bin(T_i, q_i) for
independent batches of B of N, q = B/N; K = epochs for a shuffle). Then for every prior of baseline κ,

    ReRo ≤ B_κ = sup { E[Φ(Φ⁻¹(κ_K) + μ_K)] : E[κ_K] ≤ κ },   μ_K² = Σ_i K_i/σ_i²,

the blow-up (Hayes, Mahloujifar & Balle 2023, Eq. 3) of the pair P = (K, N(μ_K, 1)), Q = (K, N(0, 1)).
With K deterministic (q = 1, or a shuffle with K = E epochs) B_κ = Φ(Φ⁻¹(κ) + √K/σ), and at κ = ½ two
antipodal candidates ±Ce with the other records known attain it: the bound is exact there.

**Proof.** Hayes, Mahloujifar & Balle's (2023) ReRo theorem needs, for every candidate z, a pair
dominating (P_z, ν) with *one* reference ν independent of z: the success of any reconstruction is
E_z P_z(E_z) ≤ E_z B(ν(E_z)) ≤ B(E_z ν(E_z)) ≤ B(κ), by concavity of B and because E_z ν(E_z) =
E_ν[π(ball(R))] ≤ κ when ν does not depend on z. Take for ν the run in which the target's slot is kept
but its clipped gradient is replaced by 0 at every step (the *zero-out* reference). The sampler is the
same under P_z and ν, so the batch selection S has one law under both, independent of the data; reveal
it (post-processing: it can only help). Given S = s, step t of P_z and ν add the same others' gradients
(both computed at the same released parameters) and differ in the mean by b_t·g_t, ‖g_t‖ ≤ C, b_t = 1
when the target's slot is in the batch: the adaptive composition of Gaussian mechanisms of sensitivity
b_t·C at noise σ_t·C is μ_s-GDP, μ_s² = Σ_t b_t/σ_t² (Dong, Roth & Su 2022, Cor. 3.3 and Thm 3.2).
So for any test φ(s, y), E_{P_z}φ = Σ_s p_s E[φ|s] ≤ Σ_s p_s Φ(Φ⁻¹(κ_s) + μ_s) with Σ_s p_s κ_s =
E_ν φ, and μ_s depends on s only through K: B_κ above. At q = 1 the antipodal candidates ±Ce (prior ½
each) give the sums ±CT·e apart by 2C√T/(σC) noise standard deviations, and the likelihood-ratio guess
succeeds with probability Φ(√T/σ) = B_½. ∎

The previous reference — the run in which the target's slot is never sampled — moves the clipped sum
by up to 2C (another record fills the slot) and gives the Poisson remove pair at σ/2
(:meth:`reconrisk._src.release.Release.dominating`), amplified by sampling but at twice the sensitivity. Both
are sound, so :func:`reconrisk._src.analysis.privacy_rero.rero_bounds` reports the smaller (``details["reference"]``
names which won): the zero-out reference wins at large q (q = 1: μ = √T/σ against 2√T/σ); at small q
the amplified one can (σ 3, q 0.05, T 1, κ 0.01: 0.0119 against 0.0153).

**Amplification without revealing the selection** (investigated, not used). Given the others' draw,
one step of a fixed-size batch is (q·N(S+g) + (1−q)·N(S+h), q·N(S) + (1−q)·N(S+h)), h the gradient
of the record that takes the slot when the target is out (‖g‖, ‖h‖ ≤ C). Joint convexity over the
others' sums bounds its divergences by the revealed pair's (no gain); advanced joint convexity (Balle,
Barthe & Gaboardi 2018) gives H_{α'} ≤ q·H_α(N(g) ‖ (1−β)N(h) + βN(0)), which depends on h, and h is
the adversary's: with h = g one hidden step at σ 1, q 0.5, κ ½ reaches 0.6915, the revealed value
itself, and with h = −g at σ 1, q 0.1, κ 0.01 it reaches 0.0323, above the add/remove pair at
sensitivity C (0.0182) though below the revealed 0.0389 (``tests/test_zero_out.py``). So the zero-out reference does *not* inherit the
add/remove amplification, and a tighter dominating pair would be the worst case over h of these
mixtures, hulled, which we have not proved; it is not used.

**Computation** (no PLD). The law of μ_K² is a binomial (one segment), or the binomials' convolution
(several; each sum rounded *up* on the grid 2^(j/4096) for the upper end, *down* for the lower end). Each binomial is kept on mean ± (20 sd + 10), its masses from the ratio recursion and normalised;
the Chernoff bound exp(−T·KL) on each tail is moved to μ = ∞ (upper end) or μ = 0 (lower end), which
dominates the true law from above or below in the stochastic order, and B is monotone in that order.
Then B = inf_t [κe^t + δ(t)] (Hayes, Mahloujifar & Balle 2023, Eq. 3), δ(t) = E[δ_{μ_K}(t)] the
Gaussian hockey-stick curves mixed: the upper end is that infimand at a root-found t, the lower end the
Neyman–Pearson test {L > t} with ν-mass ≤ κ (randomised on the atom of loss 0 when K = 0 carries the
threshold). A relative allowance of 1e-9 covers the floating-point sums.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

#: Per binomial, the window kept: mean ± (WINDOW_SD · sd + 10) (the Chernoff bound on the rest is accounted).
WINDOW_SD = 20.0
#: Several segments: sums of μ² are rounded onto the grid 2^(j / GRID) (up for the upper end, down for the lower).
GRID = 4096
#: Relative allowance for the floating-point sums (both ends moved outward by it).
ROUNDOFF = 1e-9


def _kl(a: float, q: float) -> float:
    """KL(Bern(a) ‖ Bern(q))."""
    out = 0.0
    if a > 0:
        out += a * math.log(a / q)
    if a < 1:
        out += (1 - a) * math.log((1 - a) / (1 - q))
    return out


def _binomial(t: int, q: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(k, masses of k normalised over the window, Chernoff bound on P(K < k₀), on P(K > k₁))."""
    if q >= 1.0:
        return np.array([t]), np.array([1.0]), 0.0, 0.0
    mean, sd = t * q, math.sqrt(t * q * (1 - q))
    lo = max(0, int(math.floor(mean - WINDOW_SD * sd - 10)))
    hi = min(t, int(math.ceil(mean + WINDOW_SD * sd + 10)))
    k = np.arange(lo, hi + 1)
    # log p(k+1) − log p(k) = log((t − k)/(k + 1)) + log(q/(1 − q)); the constant cancels in the normalisation
    step = np.log((t - k[:-1]) / (k[:-1] + 1.0)) + (math.log(q) - math.log1p(-q))
    logp = np.concatenate([[0.0], np.cumsum(step)])
    w = np.exp(logp - logp.max())
    w /= w.sum()
    below = 0.0 if lo == 0 else math.exp(-t * _kl((lo - 1) / t, q))  # P(K ≤ lo − 1), lo − 1 < mean
    above = 0.0 if hi == t else math.exp(-t * _kl((hi + 1) / t, q))  # P(K ≥ hi + 1), hi + 1 > mean
    return k, w, min(below, 1.0), min(above, 1.0)


def mu_law(segments, *, upper: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """(μ values, masses, mass at μ = ∞) of μ_K, dominating the true law from above (``upper``) or below.

    ``segments``: (σ, q, steps) of the run as it was trained (not the σ/2 of the never-sampled reference).
    """
    vals, probs, inf = np.array([0.0]), np.array([1.0]), 0.0
    for sigma, q, steps in segments:
        k, w, below, above = _binomial(int(steps), float(q))
        v = k / float(sigma) ** 2
        if upper:  # upper tail to μ = ∞; the lower tail's mass spread over the window (higher μ)
            inf = 1.0 - (1.0 - inf) * (1.0 - above)
        else:  # lower tail to K = 0; the upper tail's mass spread over the window (lower μ)
            w = np.concatenate([[below], (1.0 - below) * w]) if k[0] > 0 else w
            v = np.concatenate([[0.0], v]) if k[0] > 0 else v
        s = (vals[:, None] + v[None, :]).ravel()
        p = (probs[:, None] * w[None, :]).ravel()
        if len(segments) == 1:
            vals, probs = s, p
            continue
        # several segments: each sum onto the grid 2^(j/GRID), rounded up (upper end) or down, by integer bins
        pos = s > 0
        j = np.log2(np.where(pos, s, 1.0)) * GRID
        j = (np.ceil(j) if upper else np.floor(j)).astype(np.int64)
        j0 = int(j[pos].min()) if pos.any() else 0
        binned = np.bincount(j[pos] - j0, weights=p[pos])
        keep = np.nonzero(binned)[0]
        grid = np.exp2((keep + j0) / GRID) * (1.0 + 1e-12 if upper else 1.0 - 1e-12)
        vals = np.concatenate([[0.0], grid])
        probs = np.concatenate([[float(p[~pos].sum())], binned[keep]])
    mass = probs * (1.0 - inf) / probs.sum()
    return np.sqrt(vals), mass, inf


class ZeroOutCurve:
    """The mixture of μ_K-GDP curves (revealed selection), on the law :func:`mu_law` gives for one side.

    ``delta`` (hockey-stick δ(ε)), ``nu_tail`` (ν(L > ε)), ``blowup`` (B_t): the interface of the curves
    :mod:`reconrisk._src.measures.risk` reads; ``pessimistic`` True gives every value from above, False from below.
    """

    def __init__(self, segments, *, pessimistic: bool) -> None:
        self.pessimistic = bool(pessimistic)
        mu, p, self.inf = mu_law(segments, upper=self.pessimistic)
        self.p0 = float(p[mu == 0].sum())
        keep = (mu > 0) & (p > 0)
        self.mu, self.p = mu[keep], p[keep]
        self._logp = np.log(self.p)

    # -- the three readings at a scalar threshold -------------------------------------------------
    def _log_nu(self, t: float) -> float:
        parts = [special.logsumexp(self._logp + special.log_ndtr(-t / self.mu - self.mu / 2))] if self.mu.size else []
        if t < 0 and self.p0 > 0:
            parts.append(math.log(self.p0))
        return float(np.logaddexp.reduce(parts)) if parts else -math.inf

    def _mu_tail(self, t: float) -> float:
        m = float(np.dot(self.p, special.ndtr(-t / self.mu + self.mu / 2))) if self.mu.size else 0.0
        return m + (self.p0 if t < 0 else 0.0) + self.inf

    def _delta1(self, t: float) -> float:
        d = 0.0
        if self.mu.size:
            a = special.log_ndtr(-t / self.mu + self.mu / 2)
            b = t + special.log_ndtr(-t / self.mu - self.mu / 2)
            d = float(np.dot(self.p, np.exp(a) * -np.expm1(np.minimum(b - a, 0.0))))
        return d + self.p0 * max(0.0, -math.expm1(t)) + self.inf

    def delta(self, eps) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        out = np.array([self._delta1(float(e)) for e in eps.ravel()]).reshape(eps.shape)
        return np.clip(out * (1 + ROUNDOFF if self.pessimistic else 1 - ROUNDOFF), 0.0, 1.0)

    def nu_tail(self, eps) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        return np.array([math.exp(self._log_nu(float(e))) for e in eps.ravel()]).reshape(eps.shape)

    # -- the blow-up ---------------------------------------------------------------------------------
    def _root(self, kappa: float, lo: float, hi: float) -> float:
        """The t in [lo, hi] with ν(L > t) = κ, nudged up until ν(L > t) ≤ κ (a feasible test)."""
        from scipy import optimize

        lk = math.log(kappa)
        t = optimize.brentq(lambda x: self._log_nu(x) - lk, lo, hi, xtol=1e-13, rtol=1e-13, maxiter=300)
        j = 0
        while self._log_nu(t) > lk and j < 60:
            t += 1e-12 * (1.0 + abs(t)) * 2.0**j
            j += 1
        return t

    def _blowup1(self, kappa: float) -> float:
        if kappa >= 1.0:
            return 1.0
        nu0 = math.exp(self._log_nu(0.0))  # ν(L > 0)
        if nu0 <= kappa <= nu0 + self.p0:  # the threshold is the atom of loss 0 (K = 0): randomise on it
            val = self._mu_tail(0.0) + (kappa - nu0)
        elif kappa < nu0:
            hi = 1.0
            while self._log_nu(hi) > math.log(kappa):
                hi *= 2.0
            t = self._root(kappa, 0.0, hi)
            val = self._delta1(t) + kappa * math.exp(t) if self.pessimistic else self._mu_tail(t)
        else:
            lo = -1.0
            while self._log_nu(lo) < math.log(kappa) and lo > -1e12:
                lo *= 2.0
            if self._log_nu(lo) < math.log(kappa):  # (only the upper law, whose mass at ∞ has no ν-mass)
                return 1.0
            t = self._root(kappa, lo, 0.0)
            val = self._delta1(t) + kappa * math.exp(t) if self.pessimistic else self._mu_tail(t)
        val = val * (1 + ROUNDOFF) if self.pessimistic else val * (1 - ROUNDOFF)
        return float(min(max(val, kappa), 1.0))

    def blowup(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        out = [0.0 if x <= 0 else self._blowup1(float(min(x, 1.0))) for x in t.ravel()]
        return np.array(out).reshape(t.shape)


def run_segments(release) -> list[tuple[float, float, int]]:
    """(σ, q, steps) of the run as trained: a fixed-batch release's own σ (not the σ/2 of its dominating pair), or
    its ``zero_out_segments`` where it has them (Flower's every-client rounds in a mixed ledger: σ, not the 2σ
    their pair reading enters at)."""
    run = release.as_run
    if run.zero_out_segments is not None:
        return [tuple(s) for s in run.zero_out_segments]
    return [(s.noise_multiplier, s.sample_rate, s.steps) for s in run.segments]


def zero_out_bracket(release, kappa) -> tuple[np.ndarray, np.ndarray]:
    """[lower, upper] on B_κ of the zero-out reference for every κ (module docstring), both certified."""
    segs = run_segments(release)
    kap = np.atleast_1d(np.asarray(kappa, dtype=float))
    if all(q == 1.0 for _, q, _ in segs):  # K = T deterministic: Φ(Φ⁻¹(κ) + √(Σ T/σ²)), exact
        exact = special.ndtr(special.ndtri(kap) + math.sqrt(sum(t / s**2 for s, _, t in segs)))
        # both ends moved outward by the module's allowance: ndtri/ndtr err by a few ulps (more at tiny κ, where
        # the slope of log Φ is |Φ⁻¹(κ)|), so the bare closed form could sit an ulp below the attained value
        slack = 1e-14 * (1.0 + np.abs(special.ndtri(kap))) ** 2  # ~50 ulps at κ ½, 1.4e-11 at κ 1e-300
        return np.maximum(exact * (1 - slack), kap), np.minimum(exact * (1 + slack), 1.0)
    up = ZeroOutCurve(segs, pessimistic=True).blowup(kap)
    lo = ZeroOutCurve(segs, pessimistic=False).blowup(kap)
    return np.minimum(lo, up), up
