"""Truncated Poisson sampling (``TruncatedSubsampledGaussianDpEvent``): reconrisk's PLD of the step against
dp_accounting's PLD accountant, which builds the same dominating mixture.

Tolerances: on one grid h the pessimistic δ(ε) is ≥ dp_accounting's pessimistic δ(ε)·(1 − 1e-6) and ≤ it·(1 + 1e-5)
(both connect-the-dots of the same pairs; reconrisk adds its round-off slack); the optimistic δ(ε) is ≤ the
pessimistic and within 5 % of dp_accounting's (cells rounded down: O(h)); composed over T steps the ε(δ) of the
two pessimistic PLDs agree within 1e-3 relative and the optimistic ε is below both.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from reconrisk._src.accounting.pld import step_pmf
from reconrisk._src.accounting.rdp import subsampled_gaussian_rdp
from reconrisk.errors import ReconRiskError
from reconrisk._src.mechanisms import base
from reconrisk._src.mechanisms.samplers import NoAmplification
from reconrisk._src.mechanisms.truncated_poisson import (
    TruncatedPoisson,
    TruncatedSubsampledGaussian,
    truncated_poisson_pld,
    truncated_poisson_rdp,
)

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as PLD  # noqa: E402

#: (dataset_size, sampling_probability, truncated_batch_size, noise_multiplier); the first is the issue's run
#: (jax-privacy's truncated Poisson, 75 of 2000 expected, batches cut at 90).
CASES = [(2000, 75 / 2000, 90, 1.1), (500, 0.1, 45, 0.8), (100, 0.5, 40, 2.0), (1000, 0.01, 5, 0.6), (60, 0.9, 50, 1.4)]
EPS = np.array([0.0, 0.05, 0.2, 0.5, 1.0, 2.0, 4.0])


def _theirs(n, q, b, sigma, h):
    return PLD.from_truncated_subsampled_gaussian_mechanism(n, q, b, sigma, value_discretization_interval=h)


@pytest.mark.parametrize("n,q,b,sigma", CASES)
def test_truncation_probabilities_match_the_binomial_law(n, q, b, sigma):
    tau, p = TruncatedPoisson(q, n, b).truncation()
    ref_tau = stats.binom.sf(b - 1, n - 1, q)
    assert tau == pytest.approx(ref_tau, rel=1e-10)
    assert p == pytest.approx(stats.binom.sf(b, n, q) * b / ref_tau / n, rel=1e-10)


@pytest.mark.parametrize("n,q,b,sigma", CASES)
def test_step_pld_brackets_dp_accountings(n, q, b, sigma):
    h = 1e-3
    theirs = _theirs(n, q, b, sigma, h)
    sampler = TruncatedPoisson(q, n, b)
    for d, pm in (("remove", theirs._pmf_remove), ("add", theirs._pmf_add)):
        ref = np.array([pm.get_delta_for_epsilon(e) for e in EPS])
        hi = truncated_poisson_pld(sigma, sampler, h, True, d).delta(EPS)
        lo = truncated_poisson_pld(sigma, sampler, h, False, d).delta(EPS)
        assert np.all(hi >= ref * (1 - 1e-6)), (d, hi / ref)
        assert np.all(hi <= ref * (1 + 1e-5) + 1e-15), (d, hi / ref)
        assert np.all(lo <= hi)
        assert np.all(lo >= ref * 0.95), (d, lo / ref)


def test_composed_epsilon_of_the_issue_run_matches_dp_accounting():
    """The issue's run, 300 steps: dp_accounting's PLD accountant gives ε ≈ 7.27 at δ = 1e-5 (B = 90)."""
    n, q, b, sigma, T, h = 2000, 75 / 2000, 90, 1.1, 300, 1e-3
    acc = dpa.pld.PLDAccountant(value_discretization_interval=h)
    acc.compose(dpa.dp_event.TruncatedSubsampledGaussianDpEvent(n, q, b, sigma), T)
    theirs = acc.get_epsilon(1e-5)
    sampler = TruncatedPoisson(q, n, b)
    ours = {}
    for side in (True, False):
        ours[side] = max(truncated_poisson_pld(sigma, sampler, h, side, d).self_compose(T).epsilon(1e-5)
                         for d in ("remove", "add"))
    assert 7.0 < theirs < 7.5
    assert ours[True] == pytest.approx(theirs, rel=1e-3)
    assert ours[False] <= ours[True] and ours[False] <= theirs * (1 + 1e-6)


def test_no_truncation_is_the_poisson_step():
    sampler = TruncatedPoisson(0.02, 1000, 1000)  # B ≥ n: nothing is ever cut (τ = 0)
    assert sampler.truncation() == (0.0, 0.0)
    a = truncated_poisson_pld(0.9, sampler, 1e-3, True, "remove")
    b = step_pmf(0.9, 0.02, 1e-3, pessimistic=True, direction="remove")
    assert a.offset == b.offset and np.array_equal(a.probs, b.probs) and a.infinity_mass == b.infinity_mass
    np.testing.assert_array_equal(truncated_poisson_rdp(0.9, sampler, [2.0, 8.0]),
                                  subsampled_gaussian_rdp(0.9, 0.02, [2.0, 8.0]))


@pytest.mark.parametrize("q,n,b", [(0.0, 100, 10), (0.3, 100, 0), (0.3, 0, 5)])
def test_never_sampled_reveals_nothing(q, n, b):
    m, s = TruncatedSubsampledGaussian(0.0), TruncatedPoisson(q, n, b)  # dp_accounting: ε 0 whatever the noise
    assert s.never_samples
    assert m.pld(s, 1e-3, pessimistic=True, direction="remove").delta(np.array([0.0]))[0] == pytest.approx(0, abs=1e-15)
    assert np.all(m.rdp(s, [2.0, 10.0]) == 0) and m.pure_epsilon(s) == 0.0 and m.gdp_mu(s) == 0.0


def test_noiseless_step_is_revealed():
    m, s = TruncatedSubsampledGaussian(0.0), TruncatedPoisson(0.1, 100, 20)
    assert m.pld(s, 1e-3, pessimistic=True, direction="remove").delta(np.array([3.0]))[0] == 1.0
    assert np.all(np.isinf(m.rdp(s, [2.0])))


def _renyi_revealed(alpha, sigma, q, tau, p):
    """e^{(α−1)D_α} of the revealed mixture by quadrature (an independent reference for the curve's soundness):
    the Poisson remove pair at σ and the exact replace-one pair at σ/2 (both orientations of it coincide)."""
    def pair_integral(logP, logQ, width):
        f = lambda x: math.exp(alpha * logP(x) + (1 - alpha) * logQ(x))  # noqa: E731
        return integrate.quad(f, -1 - width, 1 + width, limit=400, epsabs=0, epsrel=1e-10)[0]

    def mix(x, w, m1, s):  # log((1 − w)·N(0, s²) + w·N(m1, s²)) at x
        return float(np.logaddexp(math.log1p(-w) + stats.norm.logpdf(x, 0, s), math.log(w) + stats.norm.logpdf(x, m1, s)))

    g = lambda x, s: float(stats.norm.logpdf(x, 0, s))  # noqa: E731
    rem = pair_integral(lambda x: mix(x, q, 1, sigma), lambda x: g(x, sigma), 14 * sigma)
    add = pair_integral(lambda x: g(x, sigma), lambda x: mix(x, q, 1, sigma), 14 * sigma)
    s = sigma / 2
    rep = pair_integral(lambda x: mix(x, p, -1, s), lambda x: mix(x, p, 1, s), 14 * s)
    return max(tau * rep + (1 - tau) * rem, tau * rep + (1 - tau) * add)


@pytest.mark.parametrize("n,q,b,sigma", [(500, 0.1, 45, 2.0), (100, 0.5, 40, 3.0)])
def test_rdp_curve_bounds_the_revealed_mixture(n, q, b, sigma):
    s = TruncatedPoisson(q, n, b)
    tau, p = s.truncation()
    orders = np.array([1.5, 2.0, 3.0, 5.0])
    ours = truncated_poisson_rdp(sigma, s, orders)
    for a, r in zip(orders, ours):
        exact = math.log(_renyi_revealed(a, sigma, q, tau, p)) / (a - 1)
        assert r >= exact * (1 - 1e-9)
        assert r <= exact * (1 + 1e-6)


def test_rdp_derived_epsilon_is_above_the_pld_epsilon():
    n, q, b, sigma, T = 500, 0.1, 45, 1.5, 20
    s = TruncatedPoisson(q, n, b)
    orders = np.array([1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0])
    eps_rdp, _ = dpa.rdp.rdp_privacy_accountant.compute_epsilon(orders, T * truncated_poisson_rdp(sigma, s, orders), 1e-5)
    eps_pld = max(truncated_poisson_pld(sigma, s, 1e-3, True, d).self_compose(T).epsilon(1e-5) for d in ("remove", "add"))
    assert eps_rdp >= eps_pld


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 400), q=st.floats(0.001, 1.0), frac=st.floats(0.0, 1.0), sigma=st.floats(0.5, 5.0))
def test_optimistic_never_above_pessimistic(n, q, frac, sigma):
    b = max(1, int(frac * n))
    s = TruncatedPoisson(q, n, b)
    tau, p = s.truncation()
    assert 0.0 <= tau <= 1.0 and 0.0 <= p <= 1.0
    for d in ("remove", "add"):
        hi = truncated_poisson_pld(sigma, s, 1e-2, True, d).delta(EPS)
        lo = truncated_poisson_pld(sigma, s, 1e-2, False, d).delta(EPS)
        assert np.all(lo <= hi + 1e-15) and np.all(hi <= 1.0 + 1e-12) and np.all(lo >= 0)


@pytest.mark.parametrize("args,needle", [
    ((1.5, 100, 10), "sampling_probability must be in"), ((0.1, -1, 10), "dataset_size"), ((0.1, 10, 2.5), "truncated_batch_size"),
    ((float("nan"), 10, 2), "sampling_probability"),
])
def test_sampler_refusals_name_the_field(args, needle):
    with pytest.raises(ReconRiskError, match=needle):
        TruncatedPoisson(*args)


def test_mechanism_reads_and_writes_its_event():
    ev = dpa.dp_event.TruncatedSubsampledGaussianDpEvent(2000, 75 / 2000, 90, 1.1)
    (step,) = TruncatedSubsampledGaussian.from_dp_event(ev, None)
    assert step.sampler == TruncatedPoisson(75 / 2000, 2000, 90) and step.relation == "add_remove"
    assert step.mechanism.to_dp_event(step.sampler) == ev
    with pytest.raises(ReconRiskError, match="noise_multiplier"):
        TruncatedSubsampledGaussian(-1.0)
    with pytest.raises(ReconRiskError, match="truncated Poisson sampler"):
        base.Step(TruncatedSubsampledGaussian(1.0), NoAmplification())


@settings(max_examples=60, deadline=None)
@given(s=st.floats(0.2, 20.0), p=st.floats(1e-6, 1.0), x=st.floats(-3.0, 3.0))
def test_replace_one_loss_inverts(s, p, x):
    from reconrisk._src.mechanisms.truncated_poisson import _replace_loss, _x_of_replace_loss

    lam = _replace_loss(np.array([x]), s, p)
    back = float(_x_of_replace_loss(lam, s, p)[0])
    assert back == pytest.approx(x, abs=1e-7 * max(1.0, s * s))


@pytest.mark.parametrize("s,p", [(0.55, 0.036), (0.4, 0.085), (1.0, 0.4), (0.3, 1.0)])
def test_replace_one_part_brackets_its_exact_curve(s, p):
    """The replace-one pair's exact δ(ε) (log_ndtr closed form, itself checked by quadrature) lies between the
    optimistic and pessimistic discretisations, down to δ ≈ 1e-12 (round-off charged relative to the tail)."""
    from reconrisk._src.mechanisms.truncated_poisson import _replace_hockey_stick, replace_one_pmf

    eps = np.linspace(0.0, 12.0, 25)
    exact, _, _ = _replace_hockey_stick(eps, s, p)
    g = lambda x, m: stats.norm.pdf(x, m, s)  # noqa: E731
    for e, d in zip(eps[:4], exact[:4]):
        quad = integrate.quad(lambda x: max(0.0, (1 - p) * g(x, 0) + p * g(x, -1) - math.exp(e) * ((1 - p) * g(x, 0)
                                                                                                + p * g(x, 1))),
                              -1 - 14 * s, 1 + 14 * s, limit=400, epsabs=1e-15, epsrel=1e-10)[0]
        assert d == pytest.approx(quad, rel=1e-7, abs=1e-14)
    hi = replace_one_pmf(s, p, 1e-3, pessimistic=True).delta(eps)
    lo = replace_one_pmf(s, p, 1e-3, pessimistic=False).delta(eps)
    keep = exact > 1e-12
    assert np.all(hi[keep] >= exact[keep] * (1 - 1e-12)) and np.all(hi[keep] <= exact[keep] * 1.01)
    assert np.all(lo[keep] <= exact[keep] * (1 + 1e-12)) and np.all(lo[keep] >= exact[keep] * 0.9)
