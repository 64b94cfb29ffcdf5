"""Samplers of a release (issue 24): fixed-size batches without replacement, full batch, shuffling.

The exact one-step values here are derived independently of the PLD engine
(Neyman–Pearson on the pair with the *original* σ and replace-one sensitivity 2),
so they check the σ/2 reduction of :meth:`Release.dominating` as well as the engine.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from reconrisk.bounds.analysis import PrivacyAnalysis
from reconrisk.errors import ReconRiskError
from reconrisk.release import Release


def wor_exact_delta(eps: float, sigma: float, q: float) -> tuple[float, float]:
    """Exact δ(ε) of one fixed-size step, both orders: (remove-like, add-like).

    Pair (worst case: target gradient +Ce, every other example and the replacement −Ce;
    centred, in units of C): P = (1 − q)N(0, σ²) + qN(2, σ²), Q = N(0, σ²). The likelihood
    ratio (1 − q) + q·exp((4x − 4)/(2σ²)) is increasing in x, so by Neyman–Pearson the
    optimal sets are {x > x*} with ratio e^ε at x*: x* = (σ²/2)·log((e^ε − 1 + q)/q) + 1 when
    e^ε > 1 − q (otherwise the whole line: δ = 1 − e^ε). δ_PQ = P(X > x*) − e^ε Q(X > x*).
    The reverse order: δ_QP(ε) = 1 − e^ε + e^ε δ_PQ(−ε) (hockey-stick reflection).
    """

    def d_pq(e: float) -> float:
        if math.exp(e) <= 1 - q:
            return -math.expm1(e)
        x = 0.5 * sigma**2 * math.log((math.expm1(e) + q) / q) + 1.0
        p_tail = (1 - q) * special.ndtr(-x / sigma) + q * special.ndtr(-(x - 2.0) / sigma)
        return float(p_tail - math.exp(e) * special.ndtr(-x / sigma))

    return d_pq(eps), float(-math.expm1(eps) + math.exp(eps) * d_pq(-eps))


def wor_exact_rero(kappa: float, sigma: float, q: float) -> float:
    """sup P(E) over sets with Q(E) ≤ κ (Neyman–Pearson: E = {x > σΦ⁻¹(1 − κ)}) for the pair above."""
    t = -sigma * special.ndtri(kappa)  # = σΦ⁻¹(1 − κ), without the rounding of 1 − κ
    return float((1 - q) * kappa + q * special.ndtr(-(t - 2.0) / sigma))


@pytest.mark.parametrize("sigma,b,n", [(1.0, 100, 1000), (2.0, 1, 50), (0.8, 30, 60)])
def test_fixed_batch_one_step_contains_the_neyman_pearson_values(sigma, b, n):
    q = b / n
    a = PrivacyAnalysis(Release.fixed_batch(sigma, b, n, 1))
    for eps in (0.0, 0.3, 1.0, 2.5):
        rem, add = wor_exact_delta(eps, sigma, q)
        d = a.delta(eps, two_sided=True)
        assert d.lower - 1e-12 <= rem <= max(rem, add) <= d.upper + 1e-12, (eps, d, rem, add)
        assert d.upper - max(rem, add) < 1e-3  # tight, not just sound
    for k in (1e-6, 1e-3, 0.05):
        r = a.rero(k)
        ex = wor_exact_rero(k, sigma, q)
        assert r.lower * (1 - 1e-9) <= ex <= r.upper * (1 + 1e-9), (k, r, ex)


def test_the_sampler_is_not_a_silent_poisson_number():
    # the same (σ, q, T) is much less private with fixed batches under replace-one
    fixed = PrivacyAnalysis(Release.fixed_batch(1.0, 100, 1000, 1)).rero(1e-3)
    pois = PrivacyAnalysis(Release(1.0, 0.1, 1)).rero(1e-3)
    assert fixed.lower > pois.upper
    assert fixed.lower <= wor_exact_rero(1e-3, 1.0, 0.1) <= fixed.upper


@settings(max_examples=15, deadline=None)
@given(sigma=st.floats(0.6, 4.0), q=st.floats(0.01, 1.0), eps=st.floats(0.0, 3.0), logk=st.floats(-9, -1))
def test_fixed_batch_one_step_bracket_property(sigma, q, eps, logk):
    a = PrivacyAnalysis(Release(sigma, q, 1, sampler="fixed"))
    rem, add = wor_exact_delta(eps, sigma, q)
    d = a.delta(eps, two_sided=True)
    assert d.lower - 1e-12 <= rem and max(rem, add) <= d.upper + 1e-12
    k = 10.0**logk
    r = a.rero(k)
    ex = wor_exact_rero(k, sigma, q)
    assert r.lower * (1 - 1e-9) <= ex <= r.upper * (1 + 1e-9)


def test_fixed_batch_composition_against_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld

    sigma, b, n, T = 1.0, 100, 1000, 20
    rel = Release.fixed_batch(sigma, b, n, T)
    a = PrivacyAnalysis(rel)
    # the dominating pair, composed by dp_accounting at a fine grid (its PLD accountant has no
    # without-replacement event): Poisson remove/add pair at σ/2
    ref = pld.from_gaussian_mechanism(sigma / 2, sampling_prob=b / n, value_discretization_interval=1e-4).self_compose(T)
    for eps in (1.0, 3.0):
        d = a.delta(eps, two_sided=True)
        want = ref.get_delta_for_epsilon(eps)
        assert d.lower <= want + 1e-9 and abs(d.upper - want) <= 1e-3 * want + 1e-9, (eps, d, want)
    # and below dp_accounting's own RDP accountant for the same without-replacement event (an upper bound)
    acc = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(rel.to_dp_event())
    assert a.epsilon(1e-5).upper <= acc.get_epsilon(1e-5)


def test_full_batch_sampler_is_the_gaussian_dp_closed_form():
    a = PrivacyAnalysis(Release(2.0, 1.0, 16, sampler="full"))
    assert a.gdp_mu().upper == pytest.approx(math.sqrt(16) / 2.0)
    with pytest.raises(ReconRiskError, match="sample_rate must be 1"):
        Release(2.0, 0.5, 16, sampler="full")
    # fixed-size batches of the whole data set: replace-one, μ doubles
    assert PrivacyAnalysis(Release.fixed_batch(2.0, 10, 10, 16)).gdp_mu().upper == pytest.approx(4.0)


def test_shuffling_is_refused_in_one_line_with_the_sound_choice():
    with pytest.raises(ReconRiskError) as e:
        Release(1.0, 0.1, 10, sampler="shuffle")
    msg = str(e.value)
    assert "\n" not in msg and "no known tight" in msg and "Release.shuffled" in msg
    s = Release.shuffled(2.0, epochs=9)
    assert s.sampler == "fixed" and s.steps == 9
    assert PrivacyAnalysis(s).gdp_mu().upper == pytest.approx(2 * 3 / 2.0)


def test_dp_event_round_trip_and_units():
    dpa = pytest.importorskip("dp_accounting")
    for rel in (Release(1.1, 0.01, 100), Release.fixed_batch(1.0, 64, 60000, 500), Release(3.0, 1.0, 4),
                Release.schedule([(1.0, 0.01, 10), (2.0, 0.02, 5)]), Release.fixed_batch(1.0, 5, 5, 3)):
        assert Release.from_dp_event(rel.to_dp_event()) == rel
    ev = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(1000, 10, dpa.GaussianDpEvent(0.5)), 7)
    rel = Release.from_dp_event(ev)
    assert (rel.sampler, rel.noise_multiplier, rel.sample_rate, rel.steps) == ("fixed", 1.0, 0.01, 7)
    with pytest.raises(ReconRiskError, match="mixes"):
        Release.from_dp_event(dpa.ComposedDpEvent([ev, dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(1.0))]))
    with pytest.raises(ReconRiskError, match="LaplaceDpEvent"):
        Release.from_dp_event(dpa.LaplaceDpEvent(1.0))
    with pytest.raises(ReconRiskError, match="DpEvent"):
        Release.from_dp_event("gaussian")
