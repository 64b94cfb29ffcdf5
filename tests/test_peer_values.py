"""The peers' own expected values, run against reconrisk.

Each table below is copied from a peer's test suite (repository and path named at the table), with the peer's
tolerance. A value passes when reconrisk agrees with it within that tolerance, or when reconrisk is tighter (its
certified upper end below the peer's) and still contains an independent reference computed here (an mpmath or
scipy closed form, the peer's own lower estimate, ``dp_accounting`` with its optimistic discretisation) — an
upper end must never fall below the truth.

Sources:

* Opacus (github.com/pytorch/opacus), ``opacus/tests/prv_accountant.py``: ``msr_values``, ε at δ = 1e-6 of the
  Poisson-subsampled Gaussian (``assertAlmostEqual(..., places=4)``). These are the PRV accountant's *upper*
  estimates (its ``eps_error`` = 0.01 added), so reconrisk's certified ε lies up to 0.0125 below each; the PRV
  estimate itself (``compute_epsilon``'s middle value) and lower end are the references where cheap.
* Opacus, ``opacus/tests/accountants_test.py``: RDP ε 7.32911117143, PRV ε 6.777395712150674, the GDP
  (central-limit) ε in (6.59, 6.6), and the calibrated noise multipliers 1.416, 1.3562 (RDP), 1.34765625,
  1.2915 (PRV), 1.3232421875 (GDP) at ε = 8, δ = 1e-5, q = 0.04.
* dp_accounting (github.com/google/differential-privacy, ``python/dp_accounting``),
  ``dp_accounting/pld/pld_privacy_accountant_test.py``: Gaussian, Poisson-subsampled Gaussian, Laplace,
  Poisson-subsampled Laplace, discrete Laplace, randomized response, zero noise and zero sampling.
* dp_accounting, ``dp_accounting/rdp/rdp_privacy_accountant_test.py``: the subsampled Gaussian's RDP at five
  orders (rtol 1e-4), ``compute_epsilon`` of a pure-DP curve and of the Gaussian, Laplace compositions at
  δ = 1e-10, zero sampling / zero noise, and the Gaussian's δ against the RDP conversion (``test_delta_bounds_gaussian``).
* riskcal (github.com/bogdan-kulynych/riskcal), ``tests/test_conversions.py``: the μ = 2 Gaussian's β(α) at
  α = 0.1, 0.2, 0.3 and its advantage, against the analytic curve (``pytest.approx``, rel 1e-6).

None of these events is sampled without replacement (the fixed-batch analysis is not exercised here).
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest
from scipy import special

import reconrisk
from reconrisk import GuaranteeAnalysis, Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk._src.accounting.rdp import subsampled_gaussian_rdp

G, P, L, S, C = dpa.GaussianDpEvent, dpa.PoissonSampledDpEvent, dpa.LaplaceDpEvent, dpa.SelfComposedDpEvent, dpa.ComposedDpEvent


def gdp_delta(eps: float, mu: float) -> float:
    """Exact δ(ε) of μ-GDP (Balle & Wang 2018), 50 digits."""
    import mpmath as mp

    mp.mp.dps = 50
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return float(mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2))


# -- Opacus: opacus/tests/prv_accountant.py (msr_values, delta = 1e-6, places=4) ------------------------------
MSR = {
    (0.8, 0.001, 100): 0.270403364058018680360362395731, (1.5, 0.001, 100): 0.0393694193095203287535710501288,
    (2.0, 0.001, 100): 0.0291045369484074882560076247273, (3.0, 0.001, 100): 0.0215200934390882663016508757892,
    (0.8, 0.05, 100): 6.74105193941409996938318727189, (1.5, 0.05, 100): 1.95385313568420015961635272106,
    (2.0, 0.05, 100): 1.28363737962406521120328761754, (3.0, 0.05, 100): 0.767933789666825572517439013609,
    (0.8, 0.2, 100): 24.3336641779225644199868838768, (1.5, 0.2, 100): 8.49897785912163072907787864096,
    (2.0, 0.2, 100): 5.67205560882372950004537415225, (3.0, 0.2, 100): 3.38122051022184422208738396876,
    (0.8, 0.001, 1000): 0.477771266184522591657923840103, (1.5, 0.001, 1000): 0.0998206602308474855167474970585,
    (2.0, 0.001, 1000): 0.0712187825381152272985474382949, (3.0, 0.001, 1000): 0.0476159308713589302097801692071,
    (0.8, 0.05, 1000): 19.5258428053837356230815203162, (1.5, 0.05, 1000): 6.20996924657726712126759593957,
    (2.0, 0.05, 1000): 4.17279986668931890392286732094, (3.0, 0.05, 1000): 2.52757432605973830774814814504,
    (0.8, 0.001, 20000): 1.29600925757016161021795142005, (1.5, 0.001, 20000): 0.437005108654860807693154356457,
    (2.0, 0.001, 20000): 0.305837939762453436820521801565, (3.0, 0.001, 20000): 0.194031030686054706269061398416,
    (1.5, 0.05, 20000): 38.3066179140872336006395926233, (2.0, 0.05, 20000): 24.4217185703225858617315680021,
    (3.0, 0.05, 20000): 13.9611146992367061159256991232, (0.8, 0.001, 50000): 2.03451480771586634688219419331,
    (1.5, 0.001, 50000): 0.704218384555810095193351116905, (2.0, 0.001, 50000): 0.491354910211401318953505779064,
    (3.0, 0.001, 50000): 0.309694161156544023327796821832, (1.5, 0.05, 50000): 73.1901767238329625797632616013,
    (2.0, 0.05, 50000): 45.2369958613306906158868514467, (3.0, 0.05, 50000): 24.9420056431444763234139827546,
}
PRV_EPS_ERROR = 0.01  # Opacus PRVAccountant.get_epsilon's default eps_error: the table's values are estimate + up to it


def test_opacus_prv_table_reconrisk_is_tighter_by_at_most_the_prv_error():
    """All 34 msr_values: reconrisk's certified ε(1e-6) is at most the peer's value (+ its 5e-5 tolerance) and at least
    the peer's value − 1.25·eps_error (the PRV estimate lies eps_error below its upper end)."""
    for (s, q, t), v in MSR.items():
        up = PrivacyAnalysis(Release(s, q, t)).epsilon(1e-6).upper
        assert v - 1.25 * PRV_EPS_ERROR <= up <= v + 5e-5, (s, q, t, v, up)


@pytest.mark.parametrize("s, q, t", [(0.8, 0.001, 100), (3.0, 0.001, 100), (1.5, 0.05, 100), (3.0, 0.001, 50000)])
def test_opacus_prv_table_contains_the_prvs_own_estimate_and_lower_end(s, q, t):
    """Independent reference: the PRV accountant's own (lower, estimate) at the table's error settings (Opacus,
    computed here): reconrisk's certified upper end ≥ its lower end, and within 3e-3 of its estimate (2.2e-3 at
    T = 50000, where reconrisk's pessimistic grid error has grown; 3e-7 at T = 100)."""
    from opacus.accountants import PRVAccountant

    acc = PRVAccountant()
    acc.history = [(s, q, t)]
    lo, est, hi = acc._get_dprv(eps_error=PRV_EPS_ERROR, delta_error=1e-9).compute_epsilon(1e-6, 1e-9, PRV_EPS_ERROR)
    up = PrivacyAnalysis(Release(s, q, t)).epsilon(1e-6).upper
    assert lo <= up <= hi + 5e-5
    assert abs(up - est) <= 3e-3


# -- Opacus: opacus/tests/accountants_test.py ------------------------------------------------------------------
def test_opacus_accountant_values():
    """RDP 7.32911117143 (int(90/0.04) = 2250 steps), PRV 6.777395712150674 (int(90//0.04) = 2249 steps), GDP in
    (6.59, 6.6) at σ 1.5, q 0.04, δ 1e-5. reconrisk's RDP accountant (a finer order grid) is at most Opacus's RDP; its
    certified PLD ε is at most the PRV value and at least the PRV value − 1.25·eps_error; the GDP value is the
    central-limit approximation, not a bound: it lies below reconrisk's certified lower end."""
    rdp = reconrisk.epsilon(1.5, 0.04, 2250, delta=1e-5, accountant="rdp")
    assert rdp <= 7.32911117143 + 1e-7
    b = PrivacyAnalysis(Release(1.5, 0.04, 2249)).epsilon(1e-5, two_sided=True)
    assert 6.777395712150674 - 1.25 * PRV_EPS_ERROR <= b.upper <= 6.777395712150674
    assert b.lower <= b.upper <= rdp
    assert b.lower > 6.6  # Opacus's GDP accountant (CLT) reports less than the certified lower end


@pytest.mark.parametrize("sigma, steps, kind", [(1.416, 2250, "rdp"), (1.3562, 2000, "rdp"), (1.34765625, 2250, "prv"),
                                                (1.2915, 2000, "prv"), (1.3232421875, 2250, "gdp")])
def test_opacus_calibrated_noise_multipliers(sigma, steps, kind):
    """Opacus's get_noise_multiplier at ε = 8, δ = 1e-5, q = 0.04 (places=4). RDP: reconrisk's RDP ε at the peer's σ is
    ≤ 8 (sound, maybe tighter), and reconrisk's certified σ is below the peer's. PRV: the peer's σ is within the PRV
    error of reconrisk's: the certified ε there is in [8 − 2.5·eps_error, 8] (measured 7.983: the PRV
    upper end's error plus the σ search's step). GDP (a CLT approximation): its σ is
    too small for a certified ε of 8 — reconrisk's certified lower end at that σ exceeds 8."""
    if kind == "rdp":
        assert reconrisk.epsilon(sigma, 0.04, steps, delta=1e-5, accountant="rdp") <= 8.0
        assert reconrisk.noise_multiplier_for_epsilon(8.0, 0.04, steps, 1e-5) <= sigma
    elif kind == "prv":
        up = PrivacyAnalysis(Release(sigma, 0.04, steps)).epsilon(1e-5).upper
        assert 8.0 - 2.5 * PRV_EPS_ERROR <= up <= 8.0
    else:
        assert PrivacyAnalysis(Release(sigma, 0.04, steps)).epsilon(1e-5, two_sided=True).lower > 8.0


# -- dp_accounting: dp_accounting/pld/pld_privacy_accountant_test.py ---------------------------------------------
def test_dp_accounting_pld_gaussian_basic():
    """GaussianDpEvent(√3) three times: δ(1) = 0.126936 (delta=1e-3) and ε(0.126936) = 1 (delta=1e-3); exact μ = 1
    GDP (mpmath) is the reference, and reconrisk's closed form matches it to 1e-12."""
    a = PrivacyAnalysis.from_dp_event(C([G(math.sqrt(3)), S(G(math.sqrt(3)), 2)]))
    exact = gdp_delta(1.0, 1.0)
    assert abs(a.delta(1.0).upper - 0.126936) <= 1e-3 and abs(a.delta(1.0).upper - exact) <= 1e-12
    assert abs(a.epsilon(0.126936).upper - 1.0) <= 1e-3


@pytest.mark.parametrize("event", [C([P(0.2, G(0.5)), S(P(0.2, G(0.5)), 2)]), S(P(0.2, G(0.5)), 3)])
def test_dp_accounting_pld_poisson_subsampled_gaussian(event):
    """Poisson(0.2)-sampled Gaussian(0.5) three times: δ(1) = 0.15594 and ε(0.15594) = 1, both with delta=1e-3;
    reconrisk's two-sided bracket is well inside."""
    a = PrivacyAnalysis.from_dp_event(event)
    d = a.delta(1.0, two_sided=True)
    assert abs(d.upper - 0.15594) <= 1e-3 and d.lower <= d.upper <= d.lower + 1e-4
    e = a.epsilon(0.15594, two_sided=True)
    assert abs(e.upper - 1.0) <= 1e-3 and e.lower <= e.upper


def test_dp_accounting_pld_laplace_basic():
    """3 × Laplace(1) and 2 × Laplace(2): δ(4) ≈ 1e-14 (delta=1e-6), ε(1e-14) = 4 (delta=1e-6). Before: ε's upper end
    at δ ≤ 1e-11 was +∞ (below the PLD's floor); now the pure-DP composition 3·1 + 2·½ = 4 bounds it. Reference: the
    truth is at most 4 (basic composition) and at least reconrisk's optimistic lower end."""
    a = PrivacyAnalysis.from_dp_event(C([S(L(1.0), 3), S(L(2.0), 2)]))
    assert abs(a.delta(4.0).upper - 1e-14) <= 1e-6
    for d in (1e-11, 1e-14, 1e-300):
        b = a.epsilon(d, two_sided=True)
        assert abs(b.upper - 4.0) <= 1e-6 and b.lower <= b.upper


def test_dp_accounting_pld_poisson_subsampled_laplace():
    """Poisson(0.2)-sampled Laplace(0.5) three times: δ(2.46964) ≈ 1e-14 (delta=1e-6), ε(1e-14) = 2.46964 (delta=1e-3).
    The truth at tiny δ is the amplified pure ε, 3·log(1 + 0.2(e² − 1)) = 2.469645 (was [2.4696, ∞] before)."""
    a = PrivacyAnalysis.from_dp_event(C([P(0.2, L(0.5)), S(P(0.2, L(0.5)), 2)]))
    pure = 3 * math.log1p(0.2 * math.expm1(2.0))
    assert abs(a.delta(2.46964).upper - 1e-14) <= 1e-6
    assert a.delta(pure * (1 + 1e-12)).upper == 0.0
    b = a.epsilon(1e-14, two_sided=True)
    assert abs(b.upper - 2.46964) <= 1e-3 and b.lower <= pure * (1 + 1e-12) and b.upper <= pure * (1 + 1e-12)


def test_dp_accounting_pld_discrete_laplace_basic():
    """3 × DiscreteLaplace(1, 1) and 2 × DiscreteLaplace(0.5, 1): δ(4) = 0 and ε(0) = 4 (delta=1e-6; here δ = 1e-300)."""
    dl = dpa.dp_event.DiscreteLaplaceDpEvent
    a = PrivacyAnalysis.from_dp_event(C([S(dl(1.0, 1), 3), S(dl(0.5, 1), 2)]))
    assert a.delta(4.0).upper <= 1e-6
    assert abs(a.epsilon(1e-300).upper - 4.0) <= 1e-6


def test_dp_accounting_pld_randomized_response_replace_one():
    """RandomizedResponse(4/(3 + e), 4 buckets), replace-one: δ(1) = 0 (places=7)."""
    a = PrivacyAnalysis.from_dp_event(dpa.RandomizedResponseDpEvent(4 / (3 + math.e), 4))
    assert a.delta(1.0).upper <= 5e-8


@pytest.mark.parametrize("event, p_ever", [(G(0.0), 1.0), (P(0.1, G(0.0)), 0.1), (S(P(0.1, G(0.0)), 5), 1 - 0.9**5)])
def test_dp_accounting_zero_noise(event, p_ever):
    """test_additive_noise_mechanisms_with_zero_noise_multiplier: ε(0.01) = ∞, δ(1) = 1 (was ZeroDivisionError). The
    exact δ(ε) of zero noise is P(target ever sampled) = 1 − (1 − q)^T for every ε: reconrisk's δ(1) is that, within
    its grid (≤ the peer's 1, never below the exact value); ReRo at κ is q + (1 − q)κ for one step, 1 at q = 1."""
    a = PrivacyAnalysis.from_dp_event(event)
    assert a.epsilon(0.01).upper == math.inf
    assert p_ever <= a.delta(1.0).upper <= min(1.0, p_ever + 1e-3)
    if p_ever == 1.0:
        assert a.rero(0.01).upper == 1.0
    elif isinstance(event, P):
        assert 0.1 + 0.9 * 0.01 <= a.rero(0.01).upper <= 0.1 + 0.9 * 0.01 + 1e-4


@pytest.mark.parametrize("event", [P(0.0, G(1.0)), P(0.0, L(1.0)), P(0.0, G(0.0)), P(0.0, L(0.0)), S(P(0.0, G(1.0)), 10)])
def test_dp_accounting_zero_sampling(event):
    """test_poisson_subsampling_with_zero_probability (and the RDP test_zero_poisson_sample): δ(0) = 0, ε = 0 (was a
    bare "math domain error"); the target is never used, so ReRo is κ."""
    a = PrivacyAnalysis.from_dp_event(event)
    assert a.delta(0.0).upper == 0.0 and a.epsilon(1e-10).upper == 0.0
    assert abs(a.rero(0.01).upper - 0.01) <= 1e-12


# -- dp_accounting: dp_accounting/rdp/rdp_privacy_accountant_test.py ---------------------------------------------
@pytest.mark.parametrize("order, expected", [(1.5, 6.70579741e-04), (2.5, 1.08548710e-03), (5, 2.18075656e-03),
                                             (50, 2.38460375e-02), (100, 1.67416308e02)])
def test_dp_accounting_rdp_poisson_sampled_gaussian(order, expected):
    """50 × Poisson(0.01)-sampled Gaussian(2.5): the RDP curve at five orders (rtol 1e-4). At orders 1.5 and 2.5
    dp_accounting's fractional-order series is above the truth (6.7058e-4 against 6.5007e-4 at 1.5): reconrisk is at
    most the peer's value (+ its tolerance) and within 1e-6 (relative) of the mpmath integral E_ν[(1 − q + q·r)^α]."""
    import mpmath as mp

    mp.mp.dps = 30
    sg, q, a = mp.mpf(2.5), mp.mpf("0.01"), mp.mpf(order)
    A = mp.quad(lambda z: mp.npdf(z, 0, sg) * (1 - q + q * mp.e ** ((2 * z - 1) / (2 * sg**2))) ** a,
                [-mp.inf, 0, mp.mpf(0.5), a / 2, a, mp.inf])
    exact = float(50 * mp.log(A) / (a - 1))
    got = 50 * float(subsampled_gaussian_rdp(2.5, 0.01, [order])[0])
    assert got <= expected * (1 + 1e-4)
    assert got == pytest.approx(exact, rel=1e-6) and got >= exact * (1 - 1e-9)
    if order >= 5:
        assert got == pytest.approx(expected, rel=1e-4)


def test_dp_accounting_rdp_compute_epsilon_pure_dp_curve():
    """compute_epsilon of the constant curve 1.1 at orders 2…32, δ = 1e-5: 1.32783806176. reconrisk's RDP guarantee is
    at most that and at least 1.1 − 1e-4 (the (1.1, 0)-DP pair meets the curve, and its ε at 1e-5 is 1.1 − 4e-5)."""
    g = GuaranteeAnalysis("rdp", order=list(range(2, 33)), epsilon=[1.1] * 31)
    got = g.epsilon(1e-5).upper
    ref = math.log(math.exp(1.1) - 1e-5 * (1 + math.exp(1.1)))
    assert ref <= got <= 1.32783806176 + 1e-9


def test_dp_accounting_rdp_compute_epsilon_gaussian():
    """q = 1, σ = 4.530877117 gives (1, 1e-6) through the RDP conversion; the exact Gaussian ε(1e-6) (below 1) is what
    reconrisk returns, checked against the mpmath δ(ε) of μ = 1/σ."""
    a = PrivacyAnalysis(Release(4.530877117, 1.0, 1))
    e = a.epsilon(1e-6).upper
    assert e <= 1.0
    assert gdp_delta(e, 1 / 4.530877117) == pytest.approx(1e-6, rel=1e-8)


@pytest.mark.parametrize("eps, count", [(0.01, 1), (1.0, 1), (100.0, 1), (1.0, 100)])
def test_dp_accounting_rdp_laplace(eps, count):
    """LaplaceDpEvent(1/ε) × count: ε(1e-10) = ε·count (assertAlmostEqual). reconrisk is at most that; for one step the
    truth is ε + 2·log(1 − 1e-10) (the Laplace profile δ(ε') = 1 − e^{(ε' − ε)/2}); for 100 steps reconrisk is tighter
    and at least dp_accounting's optimistic PLD (computed here at its default grid)."""
    ev = L(1 / eps) if count == 1 else S(L(1 / eps), count)
    got = PrivacyAnalysis.from_dp_event(ev).epsilon(1e-10).upper
    assert got <= eps * count + 1e-7
    if count == 1:
        assert eps + 2 * math.log1p(-1e-10) - 1e-12 <= got
    else:
        from dp_accounting.pld import privacy_loss_distribution as pld

        opt = pld.from_laplace_mechanism(1 / eps, pessimistic_estimate=False, value_discretization_interval=1e-3)
        assert opt.self_compose(count).get_epsilon_for_delta(1e-10) <= got + 1e-9


def test_dp_accounting_rdp_non_private_gaussian():
    """test_epsilon_non_private_gaussian: GaussianDpEvent(0) has ε(0.1) = ∞."""
    assert PrivacyAnalysis.from_dp_event(G(0.0)).epsilon(0.1).upper == math.inf


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 40.0])
def test_dp_accounting_rdp_delta_bounds_gaussian(eps):
    """test_delta_bounds_gaussian (σ = 1, q = 1): the exact δ0 (Balle & Wang 2018) ≤ the RDP conversion's δ
    (dp_accounting's compute_delta at orders 1…50.4, computed here). reconrisk's δ lies between them, equal to δ0 (mpmath)."""
    from dp_accounting.rdp import rdp_privacy_accountant as R

    orders = [0.1 * x for x in range(10, 505)]
    rdp = R._compute_rdp_poisson_subsampled_gaussian(1, 1, orders)
    peer = R.compute_delta(orders, rdp, epsilon=eps)[0]
    got = PrivacyAnalysis(Release(1.0, 1.0, 1)).delta(eps).upper
    exact = gdp_delta(eps, 1.0)
    assert got <= peer + 1e-300
    assert got == pytest.approx(exact, rel=1e-9, abs=1e-300)


def test_dp_accounting_tiny_delta_is_finite_dpsgd():
    """DP-SGD σ 1, q 0.01, T 1000 at δ = 1e-12: the PLD's upper end was +∞ (its floor is ~4e-12); now the RDP conversion
    (4.35, what dp_accounting's RdpAccountant gives at its orders, computed here) bounds it: ≤ the peer, finite down to
    1e-300, and ≥ the optimistic PLD's lower end."""
    acc = dpa.rdp.RdpAccountant()
    acc.compose(S(P(0.01, G(1.0)), 1000))
    peer = acc.get_epsilon(1e-12)
    a = PrivacyAnalysis(Release(1.0, 0.01, 1000))
    for d in (1e-12, 1e-100, 1e-300):
        b = a.epsilon(d, two_sided=True)
        assert math.isfinite(b.upper) and b.lower <= b.upper
    assert a.epsilon(1e-12).upper <= peer + 1e-9
    assert a.delta(10.0).upper <= 1e-30


# -- riskcal: tests/test_conversions.py ---------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.1, 0.2, 0.3])
def test_riskcal_gaussian_beta_matches_analytic(alpha):
    """μ = 2 Gaussian (σ = 0.5, one full-batch step): β(α) = Φ(Φ⁻¹(1 − α) − μ) (rel 1e-6); reconrisk's bracket holds it."""
    t = PrivacyAnalysis(Release(0.5, 1.0, 1)).tradeoff([alpha])
    exact = float(special.ndtr(special.ndtri(1 - alpha) - 2.0))
    assert t.beta.lower[0] <= exact * (1 + 1e-9) and exact <= t.beta.upper[0] * (1 + 1e-9)
    assert t.beta.lower[0] == pytest.approx(exact, rel=1e-6)


def test_riskcal_gaussian_advantage_matches_analytic():
    """μ = 2 Gaussian: advantage = 2Φ(μ/2) − 1 (rel 1e-6)."""
    b = PrivacyAnalysis(Release(0.5, 1.0, 1)).risk("membership_advantage")
    exact = float(2 * special.ndtr(1.0) - 1)
    assert b.upper == pytest.approx(exact, rel=1e-6) and b.upper >= exact * (1 - 1e-12)
