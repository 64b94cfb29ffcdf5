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
τ = α gives r_0 + h_0 > c'/m for the observed count c, the hypothesis "f-DP" is
rejected at level α (the sum grows with τ; a property test checks it).

**One count suffices** (so the test is linear in c, as in the authors' public
code). Write S_c for r_0 + h_0 started at c, and G_i(r, h) for the final sum
from (r, h) at level i (one step to level i − 1 uses w_{i−1} = (i−1)/(c'−i+1),
which falls with i). G_i does not decrease under a move (a, e) with e ≥ 0 and
a ≥ w_{i−1}·e, or with e < 0 and a + e ≥ 0: true for G_0 = r + h, and one step
maps such a move to one of the same kinds (needs only B⁻¹ non-decreasing). The
start c + 1 after its first step is the start c moved by e = H − τ(c'−c)/m ≥
−τ/m, a = (1 + w_c)τ/m + w_c·e (H the new h): a ≥ w_c·e ≥ w_{c−1}·e when e ≥ 0,
a + e = (1 + w_c)(τ/m + e) ≥ 0 when e < 0. So S_{c+1} ≥ S_c: the rejected counts
are upward closed, and testing the observed count is testing every count below
it (which an earlier version did, in quadratic time; a test compares the two).

**Vacuous tests.** With every guess right, c = c', the start is r = αc'/m, and
(ε, δ)-DP with δ ≥ αc'/m has B⁻¹(r) = 0: the recursion never moves, so no count
refutes any ε (an (ε, δ)-DP mechanism may give away every slot with probability
δ). :func:`onerun_lower_bounds` runs the best possible count at ε = 0 (μ = 0)
and says when the audit cannot refute anything (``details["vacuous"]``).

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
from ..accounting.gaussian import gaussian_eps
from ..errors import ReconRiskError
from ..results import Bound

CITE = "Mahloujifar, Melis & Chaudhuri 2025 (one-run f-DP audit, k-option guessing game)"
CITE_SNJ = "Steinke, Nasr & Jagielski 2023"
EPS_CAP = 200.0


_U = 2.0 ** -53  # unit roundoff of float64


class BlowupInverse:
    """B⁻¹ of a built-in family: ``inv(y)`` on arrays and ``inv.scalar(y)`` on one float, with the same floating-point
    operations in the same order (both round alike), convex and non-decreasing on [0, 1]."""

    def __call__(self, y) -> np.ndarray:
        raise NotImplementedError

    def scalar(self, y: float) -> float:
        raise NotImplementedError


class _DPBlowupInverse(BlowupInverse):
    def __init__(self, epsilon: float, delta: float):
        self.epsilon = v.real("epsilon", epsilon, allow_inf=False)
        if self.epsilon < 0:
            raise ReconRiskError(f"epsilon must be >= 0; found {epsilon!r}")
        self.delta = v.in_range("delta", delta, 0.0, 1.0, low_open=False, high_open=False)
        self._em = math.exp(-self.epsilon)
        self._ep = float(np.exp(min(self.epsilon, 700.0)))

    def __call__(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        d = self.delta
        with np.errstate(over="ignore", invalid="ignore"):
            a = (y - d) * self._em
            b = 1.0 - d - self._ep * (1.0 - y)
        return np.clip(np.maximum(a, b), 0.0, 1.0)

    def scalar(self, y: float) -> float:
        d = self.delta
        a = (y - d) * self._em
        b = 1.0 - d - self._ep * (1.0 - y)
        x = a if a >= b else b
        return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)

    def __repr__(self) -> str:
        return f"dp_blowup_inverse({self.epsilon!r}, {self.delta!r})"


class _GDPBlowupInverse(BlowupInverse):
    def __init__(self, mu: float):
        self.mu = v.real("mu", mu)
        if self.mu < 0:
            raise ReconRiskError(f"mu must be >= 0; found {mu!r}")

    def __call__(self, y) -> np.ndarray:
        y = np.clip(np.asarray(y, dtype=float), 0.0, 1.0)
        return special.ndtr(special.ndtri(y) - self.mu)

    def scalar(self, y: float) -> float:
        y = 0.0 if y < 0.0 else (1.0 if y > 1.0 else y)
        return float(special.ndtr(special.ndtri(y) - self.mu))

    def __repr__(self) -> str:
        return f"gdp_blowup_inverse({self.mu!r})"


def dp_blowup_inverse(epsilon: float, delta: float) -> BlowupInverse:
    """B⁻¹ of the (ε, δ) curve: max(0, (y − δ)e^{−ε}, 1 − δ − e^{ε}(1 − y)) (generalised inverse); ε ≥ 0, δ ∈ [0, 1]."""
    return _DPBlowupInverse(epsilon, delta)


def gdp_blowup_inverse(mu: float) -> BlowupInverse:
    """B⁻¹ of the μ-GDP curve: Φ(Φ⁻¹(y) − μ); μ ≥ 0."""
    return _GDPBlowupInverse(mu)


def _check_counts(correct, guesses, canaries, options):
    m = v.integer("canaries", canaries, minimum=1)
    g = v.integer("guesses", guesses, minimum=1, maximum=m)
    c = v.integer("correct", correct, minimum=0, maximum=g)
    k = v.integer("options", options, minimum=2)
    return c, g, m, k


def _scalar_form(blowup_inverse) -> tuple[Callable[[float], float], bool]:
    """(y ↦ B⁻¹(y) on one float, whether its rounding is bounded as :func:`_settles` assumes)."""
    if isinstance(blowup_inverse, BlowupInverse):
        return blowup_inverse.scalar, True
    if not callable(blowup_inverse):
        raise ReconRiskError(f"blowup_inverse must be callable; found {type(blowup_inverse).__name__}")
    return (lambda y: float(np.asarray(blowup_inverse(np.array([y], dtype=float)), dtype=float).reshape(-1)[0])), False


def final_sum(correct: int, guesses: int, canaries: int, options: int, tau: float,
              blowup_inverse: Callable[[np.ndarray], np.ndarray]) -> float:
    """r_0 + h_0 of the recursion started at c = ``correct`` with τ = ``tau`` (module docstring), walked to the end.

    Linear in c: until the chain activates nothing moves ((r, h) is a fixed point of every later step, so the
    walk stops there); an active chain stops as soon as one step leaves (r, h) unchanged in floating point. The
    value is the one every step of the full walk would give (the same operations in the same order).
    """
    c, g, m, k = _check_counts(correct, guesses, canaries, options)
    tau = v.in_range("tau", tau, 0.0, 1.0, low_open=False, high_open=False)
    b, _ = _scalar_form(blowup_inverse)
    r, h = tau * c / m, tau * (g - c) / m
    for i in range(c - 1, -1, -1):
        hn = (k - 1) * b(r)
        if not hn > h:  # max(h, (k − 1)B⁻¹(r)) = h: nothing moves, now or later
            break
        r, h = r + (i / (g - i)) * (hn - h), hn
    return r + h


def _settles(r: float, h: float, i: int, g: int, k: int, b: Callable[[float], float], thr: float) -> bool:
    """True when the i steps still to come (levels i − 1 … 0) provably keep the computed r_0 + h_0 ≤ ``thr``.

    With the gap γ_j = (k − 1)B⁻¹(r_j) − h_j, a step adds γ_j⁺ to h and w_{j−1}γ_j⁺ to r (w_j = j/(c' − j),
    decreasing as j falls), so γ_{j−1}⁺ ≤ L·w_{j−1}γ_j⁺ where L bounds the slope of (k − 1)B⁻¹ where r goes. B⁻¹
    is convex on [0, 1], so on [r, r + x] its slope is at most the secant over [r + x, r + 2x]. With
    ρ = L·w_{i−1} < 1 the gaps sum to at most (γ_i + iη)/(1 − ρ), where η covers the rounding of one step
    (each evaluation of (k − 1)B⁻¹ within 64·u·k, each update of r within 2u, u = 2⁻⁵³); if r provably stays in
    [r, r + x] and the sum with the whole remaining growth stays below ``thr``, no later step can reject.
    """
    if i <= 0:
        return r + h <= thr
    gap = (k - 1) * b(r) - h
    if not gap > 0:
        return r + h <= thr
    x = max(1e-4 * r, 1e-12)
    y1 = r + x
    y2 = y1 + x
    if y2 > 1.0:
        return False
    eta_b = 64.0 * _U * k
    lip = ((k - 1) * b(y2) - (k - 1) * b(y1) + 2.0 * eta_b) / (y2 - y1) * (1.0 + 8.0 * _U)
    w = (i - 1) / (g - i + 1) * (1.0 + 8.0 * _U)
    rho = lip * w
    if not rho < 1.0:
        return False
    eta_r = 2.0 * _U
    gaps = (gap * (1.0 + 2.0 * _U) + i * (lip * eta_r + 2.0 * eta_b)) / (1.0 - rho)
    grow_r = w * gaps + i * eta_r
    if not grow_r <= (y1 - r) * (1.0 - 8.0 * _U):
        return False
    return (r + h + gaps + grow_r) * (1.0 + 8.0 * _U) <= thr


def rejects(correct: int, guesses: int, canaries: int, options: int, alpha: float,
            blowup_inverse: Callable[[np.ndarray], np.ndarray]) -> bool:
    """True when "f-DP" is rejected at level ``alpha``: r_0 + h_0 > c'/m at τ = α for the observed count c.

    Linear in c (the public implementations check the observed count only). The former check of every start
    c″ ≤ c gives the same answer: r_0 + h_0 is non-decreasing in the start (module docstring, "one count
    suffices"), so some c″ ≤ c rejects exactly when c does. The walk stops early when the decision is certain:
    r + h only grows, so it rejects as soon as r + h exceeds c'/m; a step that moves nothing ends it; and for
    the built-in families the remaining growth is bounded (:func:`_settles`). The decision is the full walk's.
    """
    c, g, m, k = _check_counts(correct, guesses, canaries, options)
    tau = v.in_range("alpha", alpha, 0.0, 1.0, low_open=False, high_open=False)
    if c == 0:
        return False
    b, bounded = _scalar_form(blowup_inverse)
    thr = g / m * (1 + 1e-12)
    r, h = tau * c / m, tau * (g - c) / m
    n = 0
    for i in range(c - 1, -1, -1):
        hn = (k - 1) * b(r)
        if not hn > h:  # a fixed point of every later step
            break
        r, h = r + (i / (g - i)) * (hn - h), hn
        if r + h > thr:  # r and h only grow, and so does their rounded sum
            return True
        n += 1
        if bounded and (n & 63 == 0 or n in (1, 2, 4, 8, 16, 32)) and _settles(r, h, i, g, k, b, thr):
            return False
    return r + h > thr


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


def _vacuous_reason(result: "Guesses", alpha: float, weakest: BlowupInverse, family: str) -> str | None:
    """Why no count can refute any curve of the family, or None: even every guess right at every count tried
    rejects not the family's weakest curve (ε = 0, μ = 0); rejected counts are upward closed and refuted
    curves downward closed (module docstring), so then nothing is refuted whatever the guesses."""
    if any(rejects(g, g, result.canaries, result.options, alpha, weakest) for g in result.guesses):
        return None
    return f"even every guess right refutes no {family} curve at the per-test level alpha = {alpha:.3g}"


def onerun_lower_bounds(result: Guesses, *, delta: float, confidence: float = 0.95,
                        certified_epsilon: float | None = None) -> dict[str, Bound]:
    """ε at δ (the (ε, δ) family) and μ (the Gaussian family) lower bounds, each the best over the guess counts.

    Each count's test runs at (1 − confidence)/(number of counts) (Bonferroni). Returns
    ``{"epsilon": Bound, "gdp_mu": Bound}``; the μ bound's details carry ``epsilon_if_gaussian``, the ε at δ of
    the refuted μ-GDP curve. Each bound's details say ``vacuous`` (with ``vacuous_reason``) when no count of
    right guesses could have refuted anything at this δ and level (then the lower end 0 is no evidence at all).
    """
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
              "correct_counts": list(result.correct), "per_test_alpha": alpha, "neighbouring": "replace_one"}
    eps_why = _vacuous_reason(result, alpha, dp_blowup_inverse(0.0, d), f"(eps, delta = {d:g})")
    if eps_why is not None and d >= alpha * max(result.guesses) / result.canaries:
        floor = alpha * max(result.guesses) / result.canaries
        eps_why += (f": delta = {d:g} >= alpha c'/m = {floor:.3g}, and an (eps, delta)-DP mechanism may give away "
                    f"every slot with probability delta; use a delta below {floor:.3g}")
    mu_why = _vacuous_reason(result, alpha, gdp_blowup_inverse(0.0), "Gaussian (mu)")
    eps_details = {**common, "delta": d, "guesses": at_eps[0], "correct": at_eps[1],
                   "vacuous": eps_why is not None, "vacuous_reason": eps_why}
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
                                 "epsilon_if_gaussian": eps_gauss, "vacuous": mu_why is not None,
                                 "vacuous_reason": mu_why}),
    }
