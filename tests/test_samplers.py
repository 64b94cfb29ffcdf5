"""Samplers of a release (issue 24): fixed-size batches without replacement, full batch, shuffling.

The exact one-step values here are derived independently of the PLD engine
(Neyman–Pearson on the pair with the *original* σ and replace-one sensitivity 2),
so they check the σ/2 reduction of :meth:`Release.dominating` as well as the engine. ReRo reports the smaller
of that pair's value and the zero-out reference's (tests/test_zero_out.py), so it is compared with the smaller
of the two exact values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk.errors import ReconRiskError
from reconrisk._src.measures.reference import exact_zero_out
from reconrisk._src.release import Release


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
        r = a.rero(k)  # the smaller of the never-sampled reference's exact value and the zero-out one's
        ex = min(wor_exact_rero(k, sigma, q), exact_zero_out(sigma, q, 1, k))
        assert r.lower * (1 - 1e-9) <= ex <= r.upper * (1 + 1e-9), (k, r, ex)


def test_the_sampler_is_not_a_silent_poisson_number():
    # the same (σ, q, T) is much less private with fixed batches under replace-one
    fixed = PrivacyAnalysis(Release.fixed_batch(1.0, 100, 1000, 1)).rero(1e-3)
    pois = PrivacyAnalysis(Release(1.0, 0.1, 1)).rero(1e-3)
    assert fixed.lower > pois.upper
    ex = min(wor_exact_rero(1e-3, 1.0, 0.1), exact_zero_out(1.0, 0.1, 1, 1e-3))  # the zero-out reference wins here
    assert fixed.lower * (1 - 1e-9) <= ex <= fixed.upper * (1 + 1e-9)


@settings(max_examples=15, deadline=None)
@given(sigma=st.floats(0.6, 4.0), q=st.floats(0.01, 1.0), eps=st.floats(0.0, 3.0), logk=st.floats(-9, -1))
def test_fixed_batch_one_step_bracket_property(sigma, q, eps, logk):
    a = PrivacyAnalysis(Release(sigma, q, 1, sampler="fixed"))
    rem, add = wor_exact_delta(eps, sigma, q)
    d = a.delta(eps, two_sided=True)
    assert d.lower - 1e-12 <= rem and max(rem, add) <= d.upper + 1e-12
    k = 10.0**logk
    r = a.rero(k)
    ex = min(wor_exact_rero(k, sigma, q), exact_zero_out(sigma, q, 1, k))
    assert r.lower * (1 - 1e-9) <= ex <= r.upper * (1 + 1e-9)


def test_fixed_batch_composition_against_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld

    sigma, b, n, T = 1.0, 100, 1000, 20
    rel = Release.fixed_batch(sigma, b, n, T)
    a = PrivacyAnalysis(rel)
    # the pair quantities compose the symmetrised per-step curve C_q = min{f_q, f_q⁻¹}** (Dong, Roth & Su
    # 2022, Thm 4.2), built here from dp_accounting's own remove PLD of the Poisson pair at σ/2 (its PLD
    # accountant has no without-replacement event): positive-loss atoms, their mirror images e^{-l}·w at
    # −l, the rest at 0; composed by dp_accounting at a fine grid
    from dp_accounting.pld import pld_pmf

    rem = pld.from_gaussian_mechanism(sigma / 2, sampling_prob=b / n, value_discretization_interval=1e-4)._pmf_remove
    rem = rem.to_dense_pmf()
    h = rem._discretization
    k = rem._lower_loss + np.arange(rem._probs.size)
    w, kp = rem._probs[k >= 1], k[k >= 1]
    probs = np.zeros(2 * kp[-1] + 1)
    probs[kp[-1] + kp] = w
    probs[kp[-1] - kp] = w * np.exp(-kp * h)
    probs[kp[-1]] = 1.0 - rem._infinity_mass - probs.sum()
    sym = pld_pmf.DensePLDPmf(h, -int(kp[-1]), probs, rem._infinity_mass, True)
    ref = pld.PrivacyLossDistribution(sym).self_compose(T)
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


# -- any DpEvent ---------------------------------------------------------------------------------------


def laplace_tradeoff(alpha: np.ndarray, eps0: float) -> np.ndarray:
    """Exact trade-off curve of Lap(0, b) against Lap(1, b), ε₀ = 1/b (Dong, Roth & Su 2022, the Laplace example).

    Neyman–Pearson: the likelihood ratio is monotone, so the tests are thresholds t; with
    Q(X > t) = α: t = −b·log(2α) for α ≤ 1/2 and the power is ½e^{−(t−1)/b} = e^{ε₀}α when t ≥ 1
    (α ≤ e^{−ε₀}/2), 1 − e^{−ε₀}/(4α) when 0 ≤ t < 1; for α > 1/2, 1 − (1 − α)e^{−ε₀}. f = 1 − power.
    """
    return np.where(alpha <= math.exp(-eps0) / 2, 1 - math.exp(eps0) * alpha,
                    np.where(alpha <= 0.5, math.exp(-eps0) / (4 * alpha), math.exp(-eps0) * (1 - alpha)))


@pytest.mark.parametrize("b", [0.5, 2.0])
def test_laplace_event_contains_the_exact_tradeoff_curve_and_delta(b):
    dpa = pytest.importorskip("dp_accounting")
    a = PrivacyAnalysis.from_dp_event(dpa.LaplaceDpEvent(b))
    alphas = np.array([1e-6, 1e-3, 0.05, 0.2, 0.45, 0.6, 0.9])
    t = a.tradeoff(alphas)
    lo, up = t.beta.lower, t.beta.upper
    ex = laplace_tradeoff(alphas, 1 / b)
    assert np.all(lo <= ex + 1e-12) and np.all(ex <= up + 1e-12) and np.all(up - lo < 1e-4)
    for eps in (0.0, 0.3 / b, 0.9 / b):
        d = a.delta(eps, two_sided=True)
        exact = -math.expm1((eps - 1 / b) / 2)  # 1 − e^{(ε − ε₀)/2} on [0, ε₀]
        assert d.lower - 1e-12 <= exact <= d.upper + 1e-12
    r = a.rero(1e-3)
    assert r.lower - 1e-12 <= 1 - laplace_tradeoff(np.array([1e-3]), 1 / b)[0] <= r.upper + 1e-12


def test_event_compositions_against_dp_accounting_at_a_fine_grid():
    dpa = pytest.importorskip("dp_accounting")
    ev = dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, dpa.LaplaceDpEvent(1.0)), 20),
                              dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(1.0)), 20)])
    a = PrivacyAnalysis.from_dp_event(ev)
    acc = dpa.pld.PLDAccountant(value_discretization_interval=2e-5)  # pessimistic; the optimistic side below
    acc.compose(ev)
    eps = a.epsilon(1e-5, two_sided=True)
    assert eps.lower <= acc.get_epsilon(1e-5) + 1e-9  # lower <= truth <= dp_accounting's pessimistic value
    assert abs(eps.upper - acc.get_epsilon(1e-5)) < 5e-3
    # dp_accounting's optimistic distribution of the Laplace part, composed finely, stays below our upper end
    from dp_accounting.pld import privacy_loss_distribution as P

    opt = P.from_laplace_mechanism(1.0, sampling_prob=0.1, pessimistic_estimate=False, use_connect_dots=False,
                                   value_discretization_interval=2e-5).self_compose(20)
    lap = PrivacyAnalysis.from_dp_event(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, dpa.LaplaceDpEvent(1.0)), 20))
    for e in (0.5, 1.5):
        d = lap.delta(e, two_sided=True)
        assert opt.get_delta_for_epsilon(e) <= d.upper + 1e-12 and d.lower <= fine_pess_delta(e) + 1e-12


def fine_pess_delta(eps: float) -> float:
    from dp_accounting.pld import privacy_loss_distribution as P

    return P.from_laplace_mechanism(1.0, sampling_prob=0.1, value_discretization_interval=2e-5).self_compose(
        20).get_delta_for_epsilon(eps)


def test_unsupported_and_mixed_events_are_refused_in_one_line():
    dpa = pytest.importorskip("dp_accounting")
    for ev, what in [(dpa.UnsupportedDpEvent(), "UnsupportedDpEvent"),
                     (dpa.PoissonSampledDpEvent(0.1, dpa.RandomizedResponseDpEvent(0.5, 2)), "PoissonSampledDpEvent"),
                     (dpa.ComposedDpEvent([dpa.LaplaceDpEvent(1.0), dpa.RandomizedResponseDpEvent(0.5, 2)]), "mixes")]:
        with pytest.raises(ReconRiskError, match=what) as e:
            PrivacyAnalysis.from_dp_event(ev)
        assert "\n" not in str(e.value)
    rr = PrivacyAnalysis.from_dp_event(dpa.SelfComposedDpEvent(dpa.RandomizedResponseDpEvent(0.5, 4), 3))
    b = rr.epsilon(1e-6, two_sided=True)
    assert 0 < b.lower <= b.upper


def test_gaussian_events_get_the_full_release_analysis():
    dpa = pytest.importorskip("dp_accounting")
    ev = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(1000, 100, dpa.GaussianDpEvent(0.5)), 10)
    a = PrivacyAnalysis.from_dp_event(ev)
    assert isinstance(a, PrivacyAnalysis) and a.source == Release.fixed_batch(1.0, 100, 1000, 10)


@settings(max_examples=12, deadline=None)
@given(b=st.floats(0.3, 5.0), la=st.floats(-9, -0.01), frac=st.floats(0.0, 1.0))
def test_laplace_event_bracket_property(b, la, frac):
    dpa = pytest.importorskip("dp_accounting")
    a = PrivacyAnalysis.from_dp_event(dpa.LaplaceDpEvent(b))
    alpha = np.array([10.0**la])
    t = a.tradeoff(alpha)
    lo, up = t.beta.lower, t.beta.upper
    ex = laplace_tradeoff(alpha, 1 / b)
    assert lo[0] <= ex[0] + 1e-12 and ex[0] <= up[0] + 1e-12
    eps = frac / b
    d = a.delta(eps, two_sided=True)
    assert d.lower - 1e-12 <= -math.expm1((eps - 1 / b) / 2) <= d.upper + 1e-12


def test_dominating_release_names_what_it_stands_for():
    run = Release.fixed_batch(2.0, 10, 100, 5)
    dom = run.dominating()
    assert dom.stands_for == run and dom.as_run == run and run.stands_for is None and run.as_run is run
    assert dom == Release(1.0, 0.1, 5) and "stands_for" not in repr(dom)  # neither compared nor printed
    assert Release(1.0, 0.1, 5).dominating().stands_for is None  # a Poisson release is its own
    assert PrivacyAnalysis(dom).source == run  # the analysis still says what was run
