"""One-run audits: a lower bound on ε (or μ) from the guesses of a single training run with m canaries.

The game (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1)
training run", for membership; Mahloujifar, Melis & Chaudhuri 2025, "Auditing
f-differential privacy in one run", for k-option guessing games): m canary
slots, slot i holds one of its own k candidates, drawn uniformly and
independently (S_i ~ U[k]); the model is trained once on the data with the m
chosen canaries; the attacker sees what the threat model releases (the
transcript, or the last iterate) and guesses some slots, abstaining on the
rest, c' guesses in all. Two data sets that differ in one slot's choice are
neighbours (replace-one), so the curve audited is the mechanism's *replace-one*
trade-off curve; with k = 2 and "in or out" as the two options it is the
add/remove curve of Steinke et al.

**The bound (Mahloujifar, Melis & Chaudhuri 2025, Alg. 4 / Thm 9, re-derived
here for a blow-up B = 1 − f of a symmetric trade-off function f).** Write C
for the number of correct guesses, W = c' − C for the wrong ones (an attacker
that guesses fewer slots is padded with arbitrary guesses: C only grows), and

    R(s) = E[C·1{C ≥ s}]/m,     H(s) = E[W·1{C ≥ s}]/m.

(a) R(s) − R(s+1) = s P[C = s]/m and H(s) − H(s+1) = (c' − s) P[C = s]/m, so
    R(s) = R(s+1) + s/(c'−s) · (H(s) − H(s+1)).
(b) Slot i's guess and "at least s of the *other* slots right" is an event of
    the output and S₋ᵢ, so f-DP between S_i = j and S_i = l bounds it: the
    mass of wrong guesses with ≥ s others right is at least (k − 1) B⁻¹ of the
    mass of right guesses with ≥ s others right (B⁻¹ is convex; average over
    slots): H(s) ≥ max(H(s+1), (k − 1) B⁻¹(R(s+1))).
(c) R(0) + H(0) = c'/m, and if τ = P[C ≥ c] then R(c) ≥ τc/m, R(c) + H(c) = τc'/m.
Running (a)–(b) from s = c down to 0 from r_c = τc/m, h_c = τ(c' − c)/m with
the smallest allowed increments gives r_0 + h_0 ≤ R(0) + H(0) (the final sum
grows with every H(s), s < c, and falls as H(c) grows at fixed R(c) + H(c)).
So an f-DP mechanism has r_0 + h_0 ≤ c'/m at τ = P[C ≥ c]; if the recursion at
τ = α gives r_0 + h_0 > c'/m for some c ≤ the observed count, the hypothesis
"f-DP" is rejected at level α (the sum grows with τ; a property test checks it).

**Families.** The (ε, δ) curve, B⁻¹(y) = max(0, (y − δ)e^{−ε}, 1 − δ − e^{ε}(1 − y)),
gives the ε lower bound at δ (no assumption on the mechanism's curve); the
Gaussian curve, B⁻¹(y) = Φ(Φ⁻¹(y) − μ), gives a μ lower bound (and the ε at δ of
the refuted μ-GDP curve, which is an ε lower bound only for mechanisms whose
curve is Gaussian, as full-batch DP-SGD's is). Refuted sets are downward closed
(a smaller ε or μ is a smaller blow-up), so the lower bound is found by
bisection. When several numbers of guesses c' are tried, each test runs at
α/(number tried) (Bonferroni), and the best is reported.

Departure from the printed papers: the recursion is written for any number of
options k and any symmetric f with our own derivation above; Steinke et al.'s
binomial bound for pure ε-DP (k options: Binomial(c', e^ε/(e^ε + k − 1))) is
:func:`pure_dp_pvalue`, a cross-check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import special, stats

from .. import _validate as v
from ..errors import ReconRiskError
from ..results import Bound

CITE = "Mahloujifar, Melis & Chaudhuri 2025 (one-run f-DP audit, k-option guessing game)"
CITE_SNJ = "Steinke, Nasr & Jagielski 2023"
EPS_CAP = 200.0


def dp_blowup_inverse(epsilon: float, delta: float) -> Callable[[np.ndarray], np.ndarray]:
    """B⁻¹ of the (ε, δ) curve: max(0, (y − δ)e^{−ε}, 1 − δ − e^{ε}(1 − y)) (generalised inverse)."""
    e = float(epsilon)
    d = float(delta)

    def inv(y):
        y = np.asarray(y, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            a = (y - d) * math.exp(-e)
            b = 1.0 - d - np.exp(min(e, 700.0)) * (1.0 - y)
        return np.clip(np.maximum(a, b), 0.0, 1.0)

    return inv


def gdp_blowup_inverse(mu: float) -> Callable[[np.ndarray], np.ndarray]:
    """B⁻¹ of the μ-GDP curve: Φ(Φ⁻¹(y) − μ)."""
    m = float(mu)

    def inv(y):
        y = np.clip(np.asarray(y, dtype=float), 0.0, 1.0)
        return special.ndtr(special.ndtri(y) - m)

    return inv


def _check_counts(correct, guesses, canaries, options):
    m = v.integer("canaries", canaries, minimum=1)
    g = v.integer("guesses", guesses, minimum=1, maximum=m)
    c = v.integer("correct", correct, minimum=0, maximum=g)
    k = v.integer("options", options, minimum=2)
    return c, g, m, k


def final_sums(correct: int, guesses: int, canaries: int, options: int, tau: float,
               blowup_inverse: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """r_0 + h_0 of the recursion started at every c = 0 … ``correct`` (one vectorised sweep)."""
    c, g, m, k = _check_counts(correct, guesses, canaries, options)
    starts = np.arange(c + 1, dtype=float)
    r = tau * starts / m
    h = tau * (g - starts) / m
    for i in range(c - 1, -1, -1):  # chains whose start c > i take step i
        live = starts > i
        h_new = np.maximum(h, (k - 1) * blowup_inverse(r))
        r_new = r + (i / (g - i)) * (h_new - h)
        h = np.where(live, h_new, h)
        r = np.where(live, r_new, r)
    return r + h


def rejects(correct: int, guesses: int, canaries: int, options: int, alpha: float,
            blowup_inverse: Callable[[np.ndarray], np.ndarray]) -> bool:
    """True when "f-DP" is rejected at level ``alpha``: some c ≤ ``correct`` has r_0 + h_0 > c'/m at τ = α."""
    c, g, m, k = _check_counts(correct, guesses, canaries, options)
    if c == 0:
        return False
    sums = final_sums(c, g, m, k, alpha, blowup_inverse)
    return bool(np.any(sums[1:] > g / m * (1 + 1e-12)))


def pvalue(correct: int, guesses: int, canaries: int, options: int,
           blowup_inverse: Callable[[np.ndarray], np.ndarray], *, tol: float = 1e-4) -> float:
    """Smallest level α at which "f-DP" is rejected (bisection on log α; within a factor 1 + tol above it)."""
    lo, hi = 1e-300, 1.0
    if not rejects(correct, guesses, canaries, options, 1.0 - 1e-12, blowup_inverse):
        return 1.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if rejects(correct, guesses, canaries, options, mid, blowup_inverse):
            hi = mid
        else:
            lo = mid
        if hi / lo < 1 + tol:
            break
    return hi


def pure_dp_pvalue(correct: int, guesses: int, options: int, epsilon: float) -> float:
    """P[Binomial(c', e^ε/(e^ε + k − 1)) ≥ c]: the p-value of pure ε-DP (Steinke, Nasr & Jagielski 2023, Thm 3.1;
    k options: each guess is right with posterior probability at most e^ε/(e^ε + k − 1))."""
    k = v.integer("options", options, minimum=2)
    g = v.integer("guesses", guesses, minimum=1)
    c = v.integer("correct", correct, minimum=0, maximum=g)
    p = 1.0 / (1.0 + (k - 1) * math.exp(-float(epsilon)))
    return float(stats.binom.sf(c - 1, g, p))


def _sup_refuted(refuted: Callable[[float], bool], cap: float) -> float:
    if not refuted(0.0):
        return 0.0
    if refuted(cap):
        return cap
    lo, hi = 0.0, cap
    while hi - lo > 1e-4 * max(1.0, lo):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if refuted(mid) else (lo, mid)
    return lo


@dataclass(frozen=True)
class Guesses:
    """The outcome of one run's guessing game: for each number of guesses tried, how many were right."""

    canaries: int
    options: int
    guesses: tuple[int, ...]
    correct: tuple[int, ...]

    def __post_init__(self):
        v.integer("canaries", self.canaries, minimum=1)
        v.integer("options", self.options, minimum=2)
        if len(self.guesses) != len(self.correct) or not self.guesses:
            raise ReconRiskError(f"guesses and correct must be non-empty and of equal length; found "
                                 f"{len(self.guesses)} and {len(self.correct)}")
        for g, c in zip(self.guesses, self.correct):
            _check_counts(c, g, self.canaries, self.options)

    @classmethod
    def from_scores(cls, scores, truth, guess_counts: Sequence[int]) -> "Guesses":
        """Guess argmax of each slot's scores (m, k); the ``c'`` most confident slots (top-1 minus top-2 margin)."""
        s = np.asarray(scores, dtype=float)
        t = np.asarray(truth)
        if s.ndim != 2 or t.shape != (s.shape[0],):
            raise ReconRiskError(f"scores must be (m, k) and truth (m,); found {s.shape} and {t.shape}")
        guess = np.argmax(s, axis=1)
        top2 = np.sort(s, axis=1)[:, -2:]
        order = np.argsort(-(top2[:, 1] - top2[:, 0]), kind="stable")
        right = (guess == t)[order]
        counts = tuple(int(v.integer("guess count", g, minimum=1, maximum=s.shape[0])) for g in guess_counts)
        return cls(s.shape[0], s.shape[1], counts, tuple(int(right[:g].sum()) for g in counts))


def onerun_lower_bounds(result: Guesses, *, delta: float, confidence: float = 0.95,
                        certified_epsilon: float | None = None) -> dict[str, Bound]:
    """ε at δ (the (ε, δ) family) and μ (the Gaussian family) lower bounds, each the best over the guess counts.

    Each count's test runs at (1 − confidence)/(number of counts) (Bonferroni). Returns
    ``{"epsilon": Bound, "gdp_mu": Bound}``; the μ bound's details carry ``epsilon_if_gaussian``, the ε at δ of
    the refuted μ-GDP curve.
    """
    from ..accounting.gaussian import gaussian_eps

    d = v.in_range("delta", delta, 0.0, 1.0, low_open=False)
    conf = v.probability_open("confidence", confidence)
    alpha = (1.0 - conf) / len(result.guesses)
    args = (result.canaries, result.options, alpha)
    best_eps, best_mu, at_eps, at_mu = 0.0, 0.0, None, None
    for g, c in zip(result.guesses, result.correct):
        e = _sup_refuted(lambda x: rejects(c, g, *args, dp_blowup_inverse(x, d)), EPS_CAP)
        mu = _sup_refuted(lambda x: rejects(c, g, *args, gdp_blowup_inverse(x)), 40.0)
        if e > best_eps or at_eps is None:
            best_eps, at_eps = e, (g, c)
        if mu > best_mu or at_mu is None:
            best_mu, at_mu = mu, (g, c)
    common = {"canaries": result.canaries, "options": result.options, "guess_counts": list(result.guesses),
              "correct_counts": list(result.correct), "per_test_alpha": alpha, "neighbouring": "replace-one"}
    eps_details = {**common, "delta": d, "guesses": at_eps[0], "correct": at_eps[1]}
    if certified_epsilon is not None:
        ce = v.positive("certified_epsilon", certified_epsilon, allow_inf=True)
        eps_details.update(certified_epsilon=ce, ratio_to_certified=best_eps / ce)
    eps_gauss = gaussian_eps(1.0 / best_mu, d) if best_mu > 0 and d > 0 else 0.0
    return {
        "epsilon": Bound("epsilon", best_eps, None, confidence=conf, method="one_run_fdp",
                         formula=f"sup of eps whose (eps, delta) curve the guess counts reject ({CITE}, Alg. 4; "
                                 f"{CITE_SNJ})", details=eps_details),
        "gdp_mu": Bound("gdp_mu", best_mu, None, confidence=conf, method="one_run_fdp",
                        formula=f"sup of mu whose Gaussian curve the guess counts reject ({CITE}, Alg. 4)",
                        details={**common, "delta": d, "guesses": at_mu[0], "correct": at_mu[1],
                                 "epsilon_if_gaussian": eps_gauss}),
    }
