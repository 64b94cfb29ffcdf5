"""The Gaussian mechanism: :class:`Gaussian` (noise multiplier s, in units of the relation's sensitivity).

This module is on ``import reconrisk._src.release``'s numpy-only path (a :class:`~reconrisk._src.release.Segment` holds a
:class:`Gaussian`): the engines it reads (scipy) are imported where a number is computed.

Under :class:`~.samplers.NoAmplification` and :class:`~.samplers.Poisson` its privacy-loss distribution is the
reconrisk engine's (:func:`reconrisk._src.accounting.pld.step_pmf`; s = 0 is the exact noiseless step
:func:`noiseless_pmf`). Under :class:`~.samplers.FixedBatch` (replace-one, ``dp_accounting``'s units) the
one-reference reading is the Poisson pair at the event's noise multiplier (:meth:`Release.dominating
<reconrisk._src.release.Release.dominating>`), and a pair question reads the symmetrised curve C_q = min{f_q, f_q⁻¹}**
(Dong, Roth & Su 2022, Thm 4.2; ``direction="symmetric"``). Under :class:`~.samplers.Shuffled` (K passes) the
K full-batch steps compose exactly to one Gaussian step of noise multiplier s/√K.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..results import Support
from .base import Mechanism, Sampler, Step, register
from .samplers import FixedBatch, NoAmplification, Poisson, Shuffled


def noiseless_pmf(q: float, h: float, pessimistic: bool, direction: str):
    """The exact PLD of one Gaussian step with noise multiplier 0, sampled with probability q ∈ (0, 1].

    Outputs are points: ν = δ₀, μ = (1 − q)δ₀ + qδ₁. Remove: loss +∞ with probability q, log(1 − q) otherwise;
    add: loss −log(1 − q) with probability 1 (+∞ at q = 1). The finite loss is rounded up to the grid when
    pessimistic and down when optimistic. So δ(ε) = 1 − (1 − q)^T for every ε ≥ 0 over T such steps.
    """
    from ..accounting.pmf import PMF

    rnd = math.ceil if pessimistic else math.floor
    if q == 1.0:
        return PMF(h, 0, np.zeros(1), 1.0, bool(pessimistic), 0.0)
    if direction == "remove":
        return PMF(h, int(rnd(math.log1p(-q) / h)), np.array([1.0 - q]), q, bool(pessimistic), 0.0)
    return PMF(h, int(rnd(-math.log1p(-q) / h)), np.ones(1), 0.0, bool(pessimistic), 0.0)


@register
@dataclass(frozen=True)
class Gaussian(Mechanism):
    """Gaussian noise of ``noise_multiplier`` s ≥ 0 times the sensitivity (0: the noiseless step)."""

    noise_multiplier: float
    name = "gaussian"
    event_types = ("GaussianDpEvent",)
    level_name = "noise_multiplier"

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", v.in_range("noise_multiplier", self.noise_multiplier, 0.0,
                                                                 math.inf, low_open=False))

    def supports(self, sampler: Sampler) -> Support:
        if not isinstance(sampler, (NoAmplification, Poisson, FixedBatch, Shuffled)):
            return Support(False, f"a Gaussian step under {sampler.describe()} is not analysed here")
        if self.noise_multiplier == 0.0 and isinstance(sampler, (FixedBatch, Shuffled)):
            return Support(False, "a SampledWithoutReplacementDpEvent of GaussianDpEvent(0) (no noise) is not analysed; "
                                  "give a noise multiplier > 0")
        return Support(True)

    def pld(self, sampler: Sampler, h: float, *, pessimistic: bool, direction: str):
        from ..accounting import pld as _pld

        s = self.noise_multiplier
        if isinstance(sampler, Shuffled):  # K full-batch steps: one step at s/√K (Gaussian DP composes exactly)
            return _pld.step_pmf(s / math.sqrt(sampler.passes), 1.0, h, pessimistic=pessimistic, direction="remove")
        if isinstance(sampler, FixedBatch):
            return _pld.step_pmf(s, sampler.rate, h, pessimistic=pessimistic,
                                 direction="symmetric" if direction == "symmetric" else direction)
        d = "remove" if direction == "symmetric" else direction  # (add/remove: a pair question reads both directions)
        if s == 0.0:
            return noiseless_pmf(sampler.rate, h, pessimistic, d)
        return _pld.step_pmf(s, sampler.rate, h, pessimistic=pessimistic, direction=d)

    def rdp(self, sampler: Sampler, orders) -> np.ndarray:
        """α/(2s²) amplified: Poisson by :func:`~reconrisk._src.accounting.rdp.subsampled_gaussian_rdp` (Mironov, Talwar
        & Zhang 2019); without replacement by Wang, Balle & Kasiviswanathan 2019's bound as ``dp_accounting``
        computes it (its module-level helper; RDP composes adaptively, so either orientation is covered)."""
        from ..accounting.rdp import subsampled_gaussian_rdp

        orders = np.asarray(orders, dtype=float)
        s = self.noise_multiplier
        if s <= 0:
            return np.full(orders.size, np.inf)
        if isinstance(sampler, (FixedBatch, Shuffled)):
            try:
                from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_sample_wor_gaussian as wor
            except ImportError:  # pragma: no cover - a dp_accounting without it: no RDP value (never unsound)
                return np.full(orders.size, np.inf)
            k = sampler.passes if isinstance(sampler, Shuffled) else 1
            return k * np.asarray(wor(sampler.rate, s, orders), dtype=float)
        return subsampled_gaussian_rdp(s, sampler.rate, orders)

    def gdp_mu(self, sampler: Sampler) -> float:
        """1/s (subsampling is a garbling); √K/s for K shuffled passes; +inf without noise."""
        s = self.noise_multiplier
        if s == 0.0:
            return math.inf
        return math.sqrt(sampler.passes) / s if isinstance(sampler, Shuffled) else 1.0 / s

    def to_dp_event(self, sampler: Sampler):
        import dp_accounting as dpa

        g = dpa.GaussianDpEvent(self.noise_multiplier)
        if isinstance(sampler, Poisson):
            return dpa.PoissonSampledDpEvent(sampler.sample_rate, g)
        if isinstance(sampler, FixedBatch):
            return dpa.SampledWithoutReplacementDpEvent(sampler.dataset_size, sampler.batch_size, g)
        if isinstance(sampler, Shuffled):
            e = dpa.SampledWithoutReplacementDpEvent(1, 1, g)
            return e if sampler.passes == 1 else dpa.SelfComposedDpEvent(e, sampler.passes)
        return g

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(event.noise_multiplier), NoAmplification(), 1)]

    def event_label(self, sampler: Sampler) -> str:
        what = {Poisson: "PoissonSampled Gaussian", FixedBatch: "WithoutReplacement Gaussian",
                Shuffled: "Shuffled Gaussian"}.get(type(sampler), "Gaussian")
        q = "" if isinstance(sampler, (NoAmplification, Shuffled)) else f", q={sampler.rate:g}"
        return f"{what}(s={self.noise_multiplier:g}{q})"


def release_refusal(steps) -> str | None:
    """Why the steps of an event are not one DP-SGD :class:`Release` (one line), or None where they are:
    only Gaussian steps, one sampler (Poisson and without-replacement steps need different neighbouring
    relations; a plain Gaussian step joins either), at least one step, in a release's range."""
    other = [s for s in steps if not isinstance(s.mechanism, Gaussian)
             or not isinstance(s.sampler, (NoAmplification, Poisson, FixedBatch, Shuffled))]
    if other:
        return (f"a Release describes DP-SGD with Gaussian noise; this event holds {other[0].event_name} (analyse it "
                "with PrivacyAnalysis.from_dp_event)")
    relations = {s.relation for s in steps} - {None}
    if len(relations) > 1:
        return ("a Release has one sampler; this event mixes PoissonSampledDpEvent (add/remove neighbours) and "
                "SampledWithoutReplacementDpEvent (replace-one neighbours)")
    if not steps:
        return "the event holds no privacy-relevant step (only NoOpDpEvent)"
    scale = 2.0 if relations == {"replace_one"} else 1.0  # (see Release.from_dp_event: the units of the relation)
    for st in steps:
        s, q = st.mechanism.noise_multiplier, st.sampler.rate
        if not (v.MIN_NOISE <= scale * s <= v.MAX_NOISE and 0.0 < q <= 1.0):
            return (f"a Release's steps have noise_multiplier in [{v.MIN_NOISE:g}, {v.MAX_NOISE:g}] and sample_rate in "
                    f"(0, 1]; this event has a Gaussian step with noise multiplier {scale * s!r} and sampling "
                    f"probability {q!r}")
    total = sum(step_passes(st) for st in steps)
    if total > v.MAX_STEPS:
        return f"a Release has at most {v.MAX_STEPS:g} steps; this event has {total}"
    return None


def step_passes(step: Step) -> int:
    """The DP-SGD steps a step stands for (K for K shuffled passes)."""
    return step.count * (step.sampler.passes if isinstance(step.sampler, Shuffled) else 1)
