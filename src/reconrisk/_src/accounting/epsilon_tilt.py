"""ε(δ) and δ(ε) at tiny δ, read off exponentially tilted compositions of the PLD itself.

Why. An untilted composed PLD certifies nothing below its *floor*: the infinity atom (each step's truncated
Gaussian tail ``STEP_TAIL`` × T) plus the FFT round-off allowance, which is relative to the ℓ₁ norm of the
whole vector (~1e-12 after a thousand steps). Below it reconrisk used to fall back to the RDP conversion,
which is looser than a PLD (σ 1, q 0.01, T 1000, δ 1e-12: 4.353 against dp_accounting's PLD 3.916).

How (every step is a bound, none an approximation):

1. **Tilt.** The composition is made of the tilted steps p̃(l) ∝ p(l)·e^{θl}
   (:meth:`~reconrisk._src.accounting.pmf.PMF.tilted`; :func:`~reconrisk._src.accounting.pld.compose_segments`
   with ``tilt=θ``). Tilting commutes with convolution, so the composed vector is the tilt of the composed
   PLD; its round-off allowance ``slack`` bounds the error weighted by e^{θl − log Z}, so the error of the
   μ-mass above a loss a is at most ``slack·e^{log Z − θa}`` (:meth:`PMF.tail_error`): *relative* to the tail
   near the tilted mean, whatever its absolute size. θ is a grid choice only: both ends are certified for
   every θ ≥ 0; θ decides where the precision is.
2. **Saddle point.** θ is chosen so that the tilted mean T·K′(θ) of the composed loss (K the log-MGF of
   one step, from coarse step PMFs: :func:`~reconrisk._src.accounting.pld_tilt.step_moments`) is the ε
   sought: the hockey-stick integrand (1 − e^{ε−L})₊ lives just above ε. The first ε is guessed from the
   Chernoff relation log δ ≈ T·K(θ) − θ·T·K′(θ) (:func:`tilt_for_delta`); if the ε read is more than half a
   tilted standard deviation away from the tilted mean, θ is chosen again for it and the composition redone
   once.
3. **Tails.** Each step's truncated Gaussian tail ``tail_mass`` is ≤ 1e-3·δ/T (:func:`tiny_tail`), so the
   infinity atom (pessimistic: the truncated tails go to +∞) is ≤ 1e-3·δ, not the floor of the default.
4. **Read δ(ε) = E_P[(1 − e^{ε−L})₊]** from the tilted composition, untilted in log space with its
   log-normaliser (:meth:`PMF.delta`: pessimistic + infinity mass + the error above ε, optimistic − it),
   and **solve for ε** (:func:`upper_epsilon`, :func:`lower_epsilon`): the pessimistic δ̂ ≥ δ everywhere,
   so the first ε where δ̂ ≤ δ is ≥ the true ε; the optimistic δ̌ ≤ δ, so the last ε where δ̌ > δ is ≤ it.
   Between two atoms the ε axis is cut into 64 points and δ̂, δ̌ are read at them (no interpolation).

Directions: ε is the larger of the remove and add directions' (each tilted for itself), the lower end the
remove direction's optimistic PLD (a lower end of the maximum); the pair view of fixed-size batches composes
the symmetrised step (Dong, Roth & Su 2022, Thm 4.2), tilted after symmetrising. Multi-segment schedules:
one θ for every segment, K summed over them.
Both directions' pessimistic steps carry their rounding relative to their own tails
(:func:`~reconrisk._src.accounting.pld_rounding.pessimistic_scale`); the add direction's was once left
uncharged (up to ~1e-11 relative, which a tilted read at δ 1e-15 could see).

Where this departs from ``dp_accounting`` (``PLDAccountant``, value_discretization 1e-4): the same
connect-the-dots pessimistic discretisation (Doroshenko et al. 2022) on the same grid, but dp_accounting
composes untilted in float64 with a truncation of tail_mass_truncation per composition and no round-off
charge, so below ~1e-10 its numbers carry FFT round-off of the size of δ itself (σ 1.6, q 0.03, T 800,
δ 1e-14: its pessimistic 5.86 and "optimistic" 5.57 both exceed RDP's 5.12). Here the round-off is charged,
and made small relative to δ by the tilt.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .pld_step import STEP_TAIL
from .pld_tilt import step_moments

#: Each step's truncated tail is at most this fraction of δ/T (so the infinity atom is ≤ this fraction of δ).
TAIL_FRACTION = 1e-3
#: Smallest per-step tail asked of the step PMFs (below it the +∞ atom may exceed δ: ε is then +∞ here).
MIN_TAIL = 1e-300
#: Tilts tried by :func:`tilt_for_delta` and :func:`tilt_for_epsilon` (grid choice only).
_THETAS = np.concatenate([[0.0], np.logspace(-3, 4, 281)])
#: Points per grid cell at which δ̂ is read when ε is solved between two atoms.
_CUTS = 64


def tiny_tail(delta: float, steps: int) -> float:
    """The per-step truncated tail for a question at δ: ``TAIL_FRACTION``·δ/T, at most ``STEP_TAIL``."""
    return float(min(STEP_TAIL, max(MIN_TAIL, TAIL_FRACTION * delta / max(steps, 1))))


#: Round-off allowance a tilted composition may keep without recomputing its amplified low frequencies
#: (``slack_budget`` of :meth:`~reconrisk._src.accounting.pmf.PMF.self_compose`; charged either way, so a
#: choice of cost only): in the tilted norm, i.e. ~1e-6 relative to δ near the tilted mean.
TILT_SLACK_BUDGET = 1e-8


def _moments(segments, direction: str, tail_mass: float):
    return _moments_cached(tuple(segments), direction, float(tail_mass))


@lru_cache(maxsize=32)
def _moments_cached(segments, direction, tail_mass):
    return step_moments(segments, _THETAS, tail_mass=tail_mass, direction=direction)


def tilt_for_delta(segments, delta: float, direction: str, tail_mass: float) -> tuple[float, float, float]:
    """(θ, ε guess, sd): the tilt whose Chernoff value T·K(θ) − θ·T·K′(θ) is log δ, the tilted mean T·K′(θ)
    as the first guess of ε(δ), and the tilted spread √(T·K″(θ)). Grid choice only."""
    k0, k1, k2 = _moments(segments, direction, tail_mass)
    g = np.minimum.accumulate(k0 - _THETAS * k1)  # non-increasing in θ (its derivative is −θ·K″ ≤ 0)
    target = math.log(delta)
    if g[0] <= target:
        th = 0.0
    else:
        j = min(max(int(np.searchsorted(-g, -target, side="left")), 1), _THETAS.size - 1)
        g0, g1 = g[j - 1], g[j]
        t = 1.0 if g1 >= g0 else (g0 - target) / (g0 - g1)
        th = float(_THETAS[j - 1] + min(max(t, 0.0), 1.0) * (_THETAS[j] - _THETAS[j - 1]))
    return th, float(np.interp(th, _THETAS, k1)), float(math.sqrt(max(np.interp(th, _THETAS, k2), 0.0)))


def tilt_for_epsilon(segments, eps: float, direction: str, tail_mass: float) -> tuple[float, float, float, float]:
    """(θ, tilted mean, sd, log Chernoff): the tilt whose tilted mean T·K′(θ) is ``eps`` (θ = 0 if the untilted
    mean is already above it), and T·K(θ) − θ·ε, the Chernoff exponent of P(L ≥ ε) (an estimate of log δ(ε)'s
    size for choosing the per-step tail). Grid choice only."""
    k0, k1, k2 = _moments(segments, direction, tail_mass)
    k1m = np.maximum.accumulate(k1)
    th = 0.0 if eps <= k1m[0] else float(np.interp(eps, k1m, _THETAS))
    chernoff = float(np.interp(th, _THETAS, k0)) - th * eps
    return (th, float(np.interp(th, _THETAS, k1)), float(math.sqrt(max(np.interp(th, _THETAS, k2), 0.0))),
            min(chernoff, 0.0))


def rounded_tilt(theta: float) -> float:
    """θ rounded to three significant digits, so that nearby questions share a cached composition."""
    if theta <= 0.0:
        return 0.0
    return float(f"{theta:.3g}")


def upper_epsilon(pmf, delta: float) -> float:
    """The smallest ε ≥ 0 (on a grid of 64 points per atom cell) with δ̂(ε) ≤ δ, δ̂ the ``pmf``'s certified
    hockey-stick curve (:meth:`PMF.delta`, tilted or not); +∞ if none. Pessimistic ``pmf``: a certified upper
    end of ε(δ), since δ̂ ≥ the true δ(·) everywhere and both are non-increasing."""
    if float(pmf.delta(np.array([0.0]))[0]) <= delta:
        return 0.0
    l = pmf.losses
    d_at = pmf.delta(l)
    ok = np.flatnonzero(d_at <= delta)
    if ok.size == 0:
        return math.inf
    k = int(ok[0])
    a = max(float(l[k - 1]) if k > 0 else 0.0, 0.0)
    b = float(l[k])
    if b <= a:
        return b
    cuts = np.linspace(a, b, _CUTS + 1)[1:]
    good = np.flatnonzero(pmf.delta(cuts) <= delta)
    return float(cuts[good[0]]) if good.size else b


def lower_epsilon(pmf, delta: float) -> float:
    """The largest ε ≥ 0 (on a grid of 64 points per atom cell) with δ̌(ε) > δ, δ̌ the optimistic ``pmf``'s
    certified curve (:meth:`PMF.delta`); 0 if none. Since δ̌ ≤ the true δ(·), the true ε(δ) is above it."""
    l = pmf.losses
    d_at = pmf.delta(l)
    above = np.flatnonzero((d_at > delta) & (l >= 0.0))
    if above.size == 0:
        return 0.0
    j = int(above[-1])
    a = float(l[j])
    if j + 1 >= l.size:
        return a
    cuts = np.linspace(a, float(l[j + 1]), _CUTS + 1)[:-1]
    good = np.flatnonzero(pmf.delta(cuts) > delta)
    return float(cuts[good[-1]]) if good.size else a
