"""The curves the δ-based risk measures read (membership advantage, Bayes security, RAD).

Each is seen through three functions of ε or t: δ(ε) = sup_t (g(t) − e^ε t) (the hockey-stick
divergence; g = 1 − f), the ν-tails ν(L > ε) and the blow-up g(t). :mod:`reconrisk._src.measures.risk` reads

* :class:`_Gdp` — the exact curve of μ-GDP (every q = 1);
* :class:`_Pmf` — a discretised privacy-loss distribution (pessimistic: every δ and g from above;
  optimistic: from below);
* :class:`_MaxDelta` — the largest δ of several pessimistic distributions (the two directions of a
  ``dp_accounting`` event: sound whichever order its relation makes the worst);

and the refinement loops that halve a loss grid until a measure's bracket is narrow enough:
:func:`_pmf_pair` for a release's :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` and
:func:`event_pair` for an :class:`~reconrisk._src.analysis.events.EventAnalysis`. A guarantee's curve
(:class:`~reconrisk._src.analysis.guarantee.GuaranteeCurve`) has δ only: a guarantee bounds from above.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..accounting import pld as _pld
from ..accounting.pmf import _nu_mass
from . import rero as _rero

#: The δ-based brackets halve the engine's first loss grid at most this many times.
MAX_HALVINGS = 8


class _Gdp:
    """Exact curve of μ-GDP (every q = 1): δ, ν-tails and g in closed form, for any real ε."""

    def __init__(self, mu: float):
        self.mu = mu

    def delta(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        mu = self.mu
        with np.errstate(over="ignore", invalid="ignore"):
            a = special.log_ndtr(-eps / mu + mu / 2)
            b = eps + special.log_ndtr(-eps / mu - mu / 2)
            d = np.exp(a) * -np.expm1(np.minimum(b - a, 0.0))
        return np.clip(np.nan_to_num(d, nan=0.0), 0.0, 1.0)

    def nu_tail(self, eps: np.ndarray) -> np.ndarray:
        return special.ndtr(-np.asarray(eps, dtype=float) / self.mu - self.mu / 2)

    def blowup(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        with np.errstate(divide="ignore"):
            return np.where(t <= 0, 0.0, np.where(t >= 1, 1.0, special.ndtr(special.ndtri(np.clip(t, 1e-300, 1)) + self.mu)))


class _Pmf:
    """A discrete PLD seen as a curve: δ, ν-tails above ε and g (blow-up)."""

    def __init__(self, pmf: _pld.PMF):
        self.pmf = pmf
        l = pmf.losses
        w = _nu_mass(pmf.probs, l)
        self._l = l
        self._w_suf = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])

    def delta(self, eps: np.ndarray) -> np.ndarray:
        return self.pmf.delta(eps)

    def nu_tail(self, eps: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self._l, np.asarray(eps, dtype=float), side="right")
        return self._w_suf[idx]

    def blowup(self, t: np.ndarray) -> np.ndarray:
        t = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
        return self.pmf.blowup(t)


def _pmf_pair(analysis, cap: float, tol: float, width_fn) -> tuple[_Pmf, _Pmf, dict]:
    """Pessimistic and optimistic curves of the analysis, refined (halving from the engine's start grid) until
    ``width_fn(up, lo) ≤ tol``; the analysis composes each grid once for every δ-based measure."""
    release = analysis.release
    h = h0 = _rero.start_discretization(release)
    while True:
        up = _Pmf(analysis.pmf(h, pessimistic=True, loss_cap=cap))
        lo = _Pmf(analysis.pmf(h, pessimistic=False, loss_cap=cap))
        width = float(width_fn(up, lo))
        if width <= tol or h / 2 < h0 / 2**MAX_HALVINGS or _rero._atoms_per_step(release, h / 2) > _rero.MAX_REFINED_ATOMS:
            break  # both ends stay certified; only the width may miss the target
        h /= 2
    det = {"method": "pld", "discretization": max(h, up.pmf.h, lo.pmf.h), "max_width": width, "target_width": tol,
           "converged": bool(width <= tol)}
    if max(up.pmf.h, lo.pmf.h) > h:  # the engine coarsened a grid whose window would not fit the memory target
        det["note"] = (f"grid h = {h:.3g} would not fit the memory target; composed on h = {det['discretization']:.3g}"
                       " (a coarser discretisation is still certified, only wider)")
    return up, lo, det


class _MaxDelta:
    """δ(ε) = the largest of several curves' δ (an upper end when each is one)."""

    def __init__(self, curves):
        self.curves = list(curves)

    def delta(self, eps: np.ndarray) -> np.ndarray:
        return np.max([c.delta(eps) for c in self.curves], axis=0)


def event_pair(analysis, tol: float, width_fn):
    """The curves of an event analysis, refined (halving its grid) until ``width_fn(up, lo) ≤ tol``.

    ``up``: the larger δ of the pessimistic distributions of both directions; ``lo``: the optimistic
    distribution of the remove direction. Stops short (``converged`` False, both ends still certified)
    after ``MAX_HALVINGS`` halvings or when the next grid would exceed the event's atom budget.
    """
    h = analysis.h
    while True:
        up = _MaxDelta(_Pmf(analysis.pmf(h, pessimistic=True, direction=d)) for d in analysis.directions(True))
        lo = _Pmf(analysis.pmf(h, pessimistic=False, direction="remove"))
        width = float(width_fn(up, lo))
        if width <= tol or not analysis.can_refine(h):
            break
        h /= 2
    return up, lo, {"method": "pld", "discretization": h, "max_width": width, "target_width": tol,
                    "converged": bool(width <= tol)}
