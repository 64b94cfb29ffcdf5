"""A one-run privacy audit as an optional hook in an Opacus training loop the user already has.

:class:`OneRunAudit` plays the k-option guessing game of Steinke, Nasr &
Jagielski 2023 ("Privacy auditing with one (1) training run") and
Mahloujifar, Melis & Chaudhuri 2025 ("Auditing f-differential privacy in one
run") inside the user's own training: attach it to the ``DPOptimizer`` that
``PrivacyEngine.make_private`` returned, train as usual, and ask for the
lower bound on ε (and on μ) that the guesses certify, beside the certified ε
of the same run (the analysis is :mod:`reconrisk._src.audit.onerun`).

**Canaries: gradient canaries (Dirac canaries), not data.** Slot i (of m)
owns k coordinates of the flattened parameter vector, all m·k coordinates
distinct and drawn at random (so m·k ≤ the number of parameters P).
Candidate j of slot i is the gradient C·u_j on those k coordinates, u_j =
(e_j − 𝟙/k)/√(1 − 1/k) — the vertices of a regular simplex of radius 1, so
every candidate has norm exactly C (the clip norm: clipping leaves it as it
is) and two candidates are C·√(2k/(k − 1)) apart (2C, the largest a
replacement can move the clipped sum, for k = 2). The secret choice
S_i ~ U[k] is drawn once from ``seed``. At every optimizer step each slot's
canary enters the clipped sum independently with the sample rate q (Poisson
sampling, as Opacus samples every example), *before* the noise is added: the
hook wraps the optimizer's ``add_noise``, the one place Opacus adds noise per
logical step (so ``BatchMemoryManager``'s virtual steps inject once).

**Threat model** (Steinke et al.'s white box with gradient canaries): the
adversary may contribute any per-example gradient of norm ≤ C — the
assumption under which DP-SGD's accounting holds — and sees every privatised
sum g_t = Σ clip(∇ℓ) + N(0, σ²C²I), i.e. every iterate. Two variants are
scored from the same run:

* ``"transcript"``: the adversary also knows every other training example and
  which of them were sampled, so it removes their clipped sum exactly (read
  off the optimizer before the canaries go in); what remains on a slot's k
  coordinates is its canary (when sampled) plus Gaussian noise. Revealing the
  other examples' batches does not weaken the canary's guarantee: the
  accountant's per-example analysis holds for any fixed contribution of the
  others.
* ``"no_deduction"``: the adversary sees only g_t; the real data's gradient
  on the canary coordinates is one more noise.

Candidate j of slot i scores Σ_t log((1 − q) + q·exp((⟨r_t, C u_j⟩ − C²/2)/(σC)²))
with r_t the slot's residual at step t: the exact log-likelihood of option j
under ``"transcript"`` (Bayes-optimal there; for q = 1 it is the summed
projection). The guess is the argmax; the ``guess_counts`` most confident
slots (top-1 minus top-2 log-likelihood) are scored.

**What it certifies, honestly compared.** Two choices of one slot differ by
*replacing* one example, so the game bounds the *replace-one* curve
(:func:`replace_one_epsilon`): for q = 1 that curve is exactly Gaussian with
μ = 2√(Σ T_s/σ_s²); for q < 1 no closed form is known and the certified
replace-one ε is the smaller of two sound upper bounds — the same Gaussian μ
(a Poisson-subsampled step is a garbling of the full-batch step: keep the
output with probability q, else replace it by pure noise) and group privacy
of the add/remove ε (replace = remove then add: ε_rep(δ) ≤ 2ε(δ₁) with
δ₁(1 + e^{ε(δ₁)}) ≤ δ). Both can be loose for q < 1 (up to about twice the
add/remove ε), so a lower bound below them is no proof of tightness. The
add/remove ε that Opacus's accountant reports for the same history is given
beside them; it is *not* what the game bounds.

Departures from the papers: Steinke et al. audit add/remove with "in or
out" canaries; here the options are k simplex gradients (replace-one), and
the score is the per-step mixture likelihood rather than a summed
projection. Memory: O(m·k) per step beyond one dense P-vector per parameter
tensor; ``torch`` is imported only inside the hook (this module stays
importable without it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import _validate as v
from ..accounting.gaussian import gaussian_eps
from ..analysis.privacy import PrivacyAnalysis
from ..audit.onerun import Guesses, onerun_lower_bounds
from ..errors import ReconRiskError
from ..release import gaussian_release, Release
from ..results import Bound
from ..adapters.opacus_history import extend_history

THREAT_MODELS = ("transcript", "no_deduction")
GUESS_FRACTIONS = (0.1, 0.25, 0.5, 1.0)


def replace_one_epsilon(release: Release, delta: float) -> Bound:
    """Certified ε at ``delta`` of the *replace-one* curve of Gaussian DP-SGD (clip norm C, Poisson rate q).

    q = 1 everywhere: exact, μ = 2√(Σ T_s/σ_s²) (the clipped sum moves by ≤ 2C), ε from the Gaussian
    privacy profile (Balle & Wang 2018). Otherwise the smaller of (a) that same μ-GDP curve (each
    subsampled step is a garbling of the full-batch step: keep it with probability q, else emit pure
    noise; Gaussian DP composes exactly, Dong, Roth & Su 2022) and (b) group privacy of the add/remove
    PLD ε (a replacement is a removal and an addition: (ε, δ₁) twice gives (2ε, (1 + e^ε)δ₁)), with δ₁
    the largest (on a walk down from δ/2 by e² and a bisection of log δ₁) with δ₁(1 + e^{ε(δ₁)}) ≤ ``delta``. Both are upper bounds.
    """

    rel = gaussian_release(release, "the replace-one epsilon")
    d = v.probability_open("delta", delta)
    mu = 2.0 * math.sqrt(sum(s.steps / s.noise_multiplier ** 2 for s in rel.segments))
    eps_gdp = gaussian_eps(1.0 / mu, d) if 1.0 / mu >= v.MIN_NOISE else math.inf
    details = {"delta": d, "neighbouring": "replace_one", "gdp_mu": mu}
    if rel.full_batch:
        return Bound("epsilon", eps_gdp, eps_gdp, method="closed_form", converged=True, details=details,
                     formula="replace-one, q = 1: mu = 2 sqrt(sum T/sigma^2) (the clipped sum moves by <= 2C); "
                             "eps from the Gaussian privacy profile (Balle & Wang 2018)")
    analysis = PrivacyAnalysis(rel)

    def group(d1):  # 2 eps(d1) if d1 (1 + e^eps(d1)) <= d, else None
        e = float(analysis.epsilon(d1).upper)
        return 2.0 * e if math.isfinite(e) and d1 * (1.0 + math.exp(min(e, 700.0))) <= d else None

    hi, lo, eps_group = math.log(d / 2.0), None, None
    for i in range(1, 16):  # walk down from d/2 in steps of e^2 to a feasible d1 (eps(d1) is finite above its cap)
        if group(math.exp(hi - 2.0 * i)) is not None:
            lo, hi = hi - 2.0 * i, hi - 2.0 * (i - 1)
            break
    if lo is not None:
        for _ in range(10):  # the largest feasible d1, to a factor e^(2/2^10)
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if group(math.exp(mid)) is not None else (lo, mid)
        eps_group = group(math.exp(lo))
    if eps_group is not None and eps_group < eps_gdp:
        return Bound("epsilon", None, eps_group, method="group_privacy", converged=True,
                     details={**details, "delta_add_remove": math.exp(lo), "epsilon_gdp": eps_gdp},
                     formula="replace-one <= 2 x add/remove eps at delta1 with delta1 (1 + e^eps) <= delta (group "
                             "privacy of the PLD accountant's eps)")
    return Bound("epsilon", None, eps_gdp, method="gdp_garbling", converged=True,
                 details={**details, "epsilon_group": eps_group},
                 formula="replace-one: mu = 2 sqrt(sum T/sigma^2) bounds every q (a subsampled step is a garbling "
                         "of the full-batch step); eps from the Gaussian privacy profile")


@dataclass(frozen=True)
class OneRunAuditResult:
    """One threat model's outcome: the lower bounds (``epsilon``, ``gdp_mu``) beside the certified numbers."""

    threat_model: str
    release: Release
    guesses: object  # audit.onerun.Guesses
    epsilon: Bound  # lower bound on the replace-one eps at delta
    gdp_mu: Bound  # lower bound on the replace-one GDP mu
    certified_epsilon: Bound  # replace-one eps at delta, certified (upper)
    epsilon_add_remove: Bound  # what Opacus's accountant reports for the same history (add/remove)
    delta: float

    neighbouring = "replace_one"  # two choices of one slot differ by replacing one example

    @property
    def vacuous(self) -> bool:
        """True when no count of right guesses could have refuted any ε at this δ (then ``epsilon.lower`` = 0 says
        nothing): δ at or above the per-test level (:func:`reconrisk._src.audit.onerun.onerun_lower_bounds`)."""
        return bool(self.epsilon.details.get("vacuous", False))

    @property
    def vacuous_reason(self) -> str | None:
        return self.epsilon.details.get("vacuous_reason")

    def __str__(self) -> str:
        g, c = self.guesses.guesses[-1], self.guesses.correct[-1]
        lower = f"{self.neighbouring.replace('_', '-')} eps >= {self.epsilon.lower:.2f} at {self.epsilon.confidence:.0%}"
        if self.vacuous:
            lower += f" (vacuous: {self.vacuous_reason})"
        return (f"one-run audit ({self.threat_model}): {c}/{g} guesses right (blind: 1/{self.guesses.options}); "
                f"{lower}, certified {self.neighbouring.replace('_', '-')} eps <= {self.certified_epsilon.upper:.2f}, add/remove "
                f"eps <= {self.epsilon_add_remove.upper:.2f} (delta = {self.delta:g})")

    def to_dict(self) -> dict:
        return {"threat_model": self.threat_model, "release": self.release.to_dict(), "delta": self.delta,
                "neighbouring": self.neighbouring, "vacuous": self.vacuous, "vacuous_reason": self.vacuous_reason,
                "canaries": self.guesses.canaries, "options": self.guesses.options,
                "guess_counts": list(self.guesses.guesses), "correct_counts": list(self.guesses.correct),
                "epsilon": self.epsilon.to_dict(), "gdp_mu": self.gdp_mu.to_dict(),
                "certified_epsilon": self.certified_epsilon.to_dict(),
                "epsilon_add_remove": self.epsilon_add_remove.to_dict()}


def _step_loglik(resid: np.ndarray, noise_std: float, clip: float, q: float) -> np.ndarray:
    """(m, k) log-likelihood ratios of one step: option j against "canary absent" on each slot's residual."""
    k = resid.shape[1]
    proj = clip * (resid - resid.mean(axis=1, keepdims=True)) / math.sqrt(1.0 - 1.0 / k)  # ⟨r, C u_j⟩
    z = (proj - 0.5 * clip * clip) / (noise_std * noise_std)
    return z if q >= 1.0 else np.logaddexp(math.log1p(-q), math.log(q) + z)


@dataclass
class OneRunAudit:
    """m gradient canaries, each one of its own k simplex candidates, audited after one Opacus training run.

    Usage (``optimizer``, ``loader``: what ``PrivacyEngine.make_private`` returned)::

        audit = OneRunAudit(canaries=1000, options=2, seed=0).attach(optimizer, sample_rate=loader.sample_rate)
        ...  # the user's training loop, unchanged
        print(audit.result(delta=1e-5))  # OneRunAuditResult: .epsilon, .gdp_mu, .certified_epsilon, ...

    See the module docstring for the threat model and what the bound is compared with.
    """

    canaries: int = 1000
    options: int = 2
    seed: int = 0
    history: list = field(default_factory=list, init=False)  # [(sigma, q, steps)] the canaries were exposed to

    def __post_init__(self):
        self.canaries = v.integer("canaries", self.canaries, minimum=1, maximum=10_000_000)
        self.options = v.integer("options", self.options, minimum=2, maximum=10_000)
        self.seed = v.seed("seed", self.seed)
        game, steps = np.random.SeedSequence([self.seed, 27]).spawn(2)
        self._game_rng = np.random.default_rng(game)
        self.choice = self._game_rng.integers(0, self.options, self.canaries)  # the secret S_i
        self._step_rng = np.random.default_rng(steps)
        self._unit = (np.eye(self.options)[self.choice] - 1.0 / self.options) / math.sqrt(1.0 - 1.0 / self.options)
        self._loglik = {t: np.zeros((self.canaries, self.options)) for t in THREAT_MODELS}
        self._optimizer = self._original = self._layout = None
        self.coordinates = None
        self.sample_rate = None

    # -- the hook -------------------------------------------------------------------------------
    def attach(self, optimizer, *, sample_rate: float) -> "OneRunAudit":
        """Hook into an Opacus ``DPOptimizer`` (flat clipping, one process; ghost clipping works too, whose
        optimizer also keeps the clipped sum in ``p.summed_grad``); ``sample_rate`` is the data loader's Poisson
        rate (``loader.sample_rate`` for the loader ``make_private`` returned; 1 for full batches)."""
        if self._optimizer is not None or self.history:
            raise ReconRiskError("this OneRunAudit is already attached or used; make a new one per training run")
        for attr in ("add_noise", "params", "noise_multiplier", "max_grad_norm", "accumulated_iterations"):
            if not hasattr(type(optimizer), attr) and not hasattr(optimizer, attr):
                raise ReconRiskError(f"optimizer must be an Opacus DPOptimizer (from make_private); found "
                                     f"{type(optimizer).__name__} without {attr!r}")
        if getattr(optimizer, "world_size", 1) != 1:
            raise ReconRiskError("the one-run audit runs in one process (a distributed DPOptimizer adds the noise on "
                                 f"one rank only); found world_size={optimizer.world_size}")
        if isinstance(optimizer.max_grad_norm, (list, tuple)):
            raise ReconRiskError("the one-run audit needs flat clipping (one max_grad_norm); found per-layer "
                                 f"clipping with {len(optimizer.max_grad_norm)} norms")
        self.sample_rate = v.sample_rate("sample_rate", sample_rate)
        params = list(optimizer.params)
        sizes = [int(p.numel()) for p in params]
        total = sum(sizes)
        need = self.canaries * self.options
        if need > total:
            raise ReconRiskError(f"canaries x options must be <= the number of trained parameters ({total}): each "
                                 f"candidate owns a coordinate; found {self.canaries} x {self.options} = {need}")
        coords = self._game_rng.choice(total, size=need, replace=False)
        self.coordinates = coords.reshape(self.canaries, self.options)
        layout, start = [], 0
        for p, n in zip(params, sizes):
            sel = np.flatnonzero((coords >= start) & (coords < start + n))
            layout.append((p, sel, coords[sel] - start))
            start += n
        self._layout = [x for x in layout if x[1].size]
        self._optimizer, self._original = optimizer, optimizer.add_noise
        optimizer.add_noise = self._add_noise
        return self

    def detach(self) -> None:
        """Give the optimizer its own ``add_noise`` back (training then goes on without canaries)."""
        if self._optimizer is not None:
            del self._optimizer.add_noise  # the instance attribute; the class's method shows again
            self._optimizer = None

    def _add_noise(self) -> None:
        import torch

        opt = self._optimizer
        sigma, clip = float(opt.noise_multiplier), float(opt.max_grad_norm)
        if not (sigma > 0 and clip > 0):
            raise ReconRiskError(f"the one-run audit needs noise_multiplier > 0 and max_grad_norm > 0; found "
                                 f"{sigma} and {clip}")
        q = min(1.0, self.sample_rate * opt.accumulated_iterations)  # as Opacus's accountants count it
        inside = self._step_rng.random(self.canaries) < q
        values = (clip * inside[:, None] * self._unit).ravel()
        known = np.zeros(values.size)
        observed = np.zeros(values.size)
        for p, sel, loc in self._layout:
            sg = p.summed_grad
            if sg is None:
                raise ReconRiskError("no clipped gradient sum on a trained parameter: attach to the DPOptimizer "
                                     "that make_private returned")
            idx = torch.as_tensor(loc, device=sg.device)
            known[sel] = sg.reshape(-1)[idx].double().cpu().numpy()  # the other examples' clipped sum
            add = torch.zeros(sg.numel(), dtype=sg.dtype, device=sg.device)
            add[idx] = torch.as_tensor(values[sel], dtype=sg.dtype, device=sg.device)
            sg.add_(add.view_as(sg))
        self._original()
        for p, sel, loc in self._layout:
            g = p.grad.reshape(-1)[torch.as_tensor(loc, device=p.grad.device)]
            observed[sel] = g.double().cpu().numpy()  # the privatised sum, before Opacus scales it
        shape = (self.canaries, self.options)
        self._loglik["transcript"] += _step_loglik((observed - known).reshape(shape), sigma * clip, clip, q)
        self._loglik["no_deduction"] += _step_loglik(observed.reshape(shape), sigma * clip, clip, q)
        extend_history(self.history, sigma, q)

    # -- the verdict ----------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return int(sum(n for _, _, n in self.history))

    @property
    def release(self) -> Release:
        """The release the canaries were exposed to (σ, q per hooked step), as Opacus's accountant records it."""
        if not self.history:
            raise ReconRiskError("no optimizer step was taken with the audit attached; train first")
        return Release.schedule(self.history)

    def scores(self, threat_model: str = "transcript") -> np.ndarray:
        """(m, k) log-likelihood of every candidate so far (a copy)."""
        return self._loglik[v.choice("threat_model", threat_model, THREAT_MODELS)].copy()

    def result(self, *, delta: float = 1e-5, threat_model: str = "transcript", guess_counts=None,
               confidence: float = 0.95) -> OneRunAuditResult:
        """Guess, and turn the counts into lower bounds on the replace-one ε at ``delta`` and μ
        (:func:`reconrisk._src.audit.onerun.onerun_lower_bounds`), beside the certified replace-one ε and the
        add/remove ε of the same history. ``guess_counts`` defaults to 10 %, 25 %, 50 % and 100 % of the slots."""

        threat = v.choice("threat_model", threat_model, THREAT_MODELS)
        d = v.probability_open("delta", delta)
        rel = self.release
        if guess_counts is None:
            guess_counts = sorted({max(1, round(f * self.canaries)) for f in GUESS_FRACTIONS})
        guesses = Guesses.from_scores(self._loglik[threat], self.choice, guess_counts)
        certified = replace_one_epsilon(rel, d)
        lower = onerun_lower_bounds(guesses, delta=d, confidence=confidence, certified_epsilon=certified.upper)
        return OneRunAuditResult(threat, rel, guesses, lower["epsilon"], lower["gdp_mu"], certified,
                                 PrivacyAnalysis(rel).epsilon(d), d)
