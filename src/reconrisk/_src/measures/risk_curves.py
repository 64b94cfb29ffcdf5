"""The curves the δ-based risk measures read (membership advantage, Bayes security, RAD).

Each is seen through three functions of ε or t: δ(ε) = sup_t (g(t) − e^ε t) (the hockey-stick
divergence; g = 1 − f), the ν-tails ν(L > ε) and the blow-up g(t). :mod:`reconrisk._src.measures.risk` reads

* :class:`_Gdp` — the exact curve of μ-GDP (every q = 1);
* :class:`_Pmf` — a discretised privacy-loss distribution (pessimistic: every δ and g from above;
  optimistic: from below);
* :class:`_MaxDelta` — the largest δ of several pessimistic distributions (the two directions of a
  ``dp_accounting`` event: sound whichever order its relation makes the worst);

functions of a distribution or of μ only. The refinement loops that ask an analysis for its distributions grid
after grid live beside the analyses (:func:`reconrisk._src.analysis.privacy_risk.pmf_pair`,
:func:`reconrisk._src.analysis.events_risk.event_pair`). A guarantee's curve
(:class:`~reconrisk._src.analysis.guarantee.GuaranteeCurve`) has δ only: a guarantee bounds from above.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..accounting import pld as _pld
from ..accounting.pmf import _nu_mass
from .._deprecated import moved_names

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


class _MaxDelta:
    """δ(ε) = the largest of several curves' δ (an upper end when each is one)."""

    def __init__(self, curves):
        self.curves = list(curves)

    def delta(self, eps: np.ndarray) -> np.ndarray:
        return np.max([c.delta(eps) for c in self.curves], axis=0)


#: The refinement loops moved beside the analyses they ask; the old names still read, deprecated.
__getattr__ = moved_names(__name__, __package__, {"_pmf_pair": "..analysis.privacy_risk",
                                                  "event_pair": "..analysis.events_risk"})
