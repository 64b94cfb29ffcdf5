"""Tightest conversions of a guarantee alone (issue 24 item 3): (ε, δ) trade-off, optimal RDP/zCDP → trade-off, VMF.

Checked: the issue's figures; never looser than the conversions they replace (Balle, Cherubin & Hayes 2022);
still sound (≥ the exact Gaussian-DP closed form, ≥ the certified PLD lower end, ≥ the exact VMF risk);
attained by a Bernoulli pair (so the bisection is tight); cross-checks between the (ε, δ) and the RDP routes.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

from reconrisk._src.measures.conversions import rdp_rero_bound, rero_from_dp, rero_from_rdp, rero_from_zcdp
from reconrisk._src.measures.fdp import dp_power, dp_tradeoff, rero_dp, tradeoff_dp
from reconrisk._src.measures.rdp_tradeoff import (
    rdp_power,
    release_rdp_power,
    renyi_bernoulli,
    rero_rdp_curve,
    tradeoff_rdp_curve,
    tradeoff_zcdp,
    zcdp_power,
)
from reconrisk._src.measures.vmf_rero import rero_vmf, vmf_rdp_curve
from reconrisk.errors import ReconRiskError
from reconrisk._src.release import Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis


def _bern(p, k):
    return math.log(p), math.log1p(-p), math.log(p) - math.log(k), math.log1p(-p) - math.log1p(-k)


# ------------------------------------------------------------------------------------------- (ε, δ)
def test_pure_dp_second_branch_reproduces_0853():
    assert rero_dp(0.6, 1.0).upper == pytest.approx(1 - math.exp(-1) * 0.4, rel=1e-14)  # 0.8528
    assert round(rero_dp(0.6, 1.0).upper, 3) == 0.853
    assert rero_from_dp(0.6, 1.0)[0] == 1.0  # the conversion it replaces


def _np_tradeoff(p, q, alpha):
    """Neyman–Pearson on finite laws: min 1 − E_P φ subject to E_Q φ ≤ α (randomised likelihood-ratio test)."""
    with np.errstate(divide="ignore"):
        lr = np.where(q > 0, p / np.where(q > 0, q, 1), np.inf)
    order = np.argsort(-lr, kind="stable")
    budget, power = alpha, 0.0
    for i in order:
        take = 1.0 if q[i] == 0 else min(1.0, budget / q[i])
        power += take * p[i]
        budget -= take * q[i]
        if budget <= 0:
            break
    return 1.0 - power


@given(st.floats(0.0, 5.0), st.floats(0.0, 0.5), st.floats(1e-4, 0.999))
def test_dp_tradeoff_is_the_canonical_pairs_neyman_pearson_curve(eps, delta, alpha):
    """f_{ε,δ} equals the trade-off of the 4-point pair that meets (ε, δ) with equality (Kairouz, Oh & Viswanath)."""
    e = math.exp(eps)
    p = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    q = p[::-1].copy()
    assert dp_tradeoff(alpha, eps, delta) == pytest.approx(_np_tradeoff(p, q, alpha), abs=1e-12)
    assert dp_power(alpha, eps, delta) == pytest.approx(1 - _np_tradeoff(p, q, alpha), abs=1e-12)


@given(st.floats(1e-12, 0.999), st.floats(0.0, 20.0), st.floats(0.0, 0.5))
def test_dp_never_looser_than_corollary3_and_at_least_kappa(k, eps, delta):
    g = rero_dp(k, eps, delta).upper
    assert k * (1 - 1e-12) <= g <= rero_from_dp(k, eps, delta)[0] * (1 + 1e-12)


def test_dp_profile_is_the_max_of_its_curves_and_log_kappa_keeps_tiny_priors():
    a = np.linspace(0.01, 0.99, 50)
    both = dp_tradeoff(a, [0.5, 2.0], [0.2, 1e-3])
    assert np.allclose(both, np.maximum(dp_tradeoff(a, 0.5, 0.2), dp_tradeoff(a, 2.0, 1e-3)))
    tiny = rero_dp(None, 5.0, log_kappa=-800.0)
    assert tiny.upper == 0.0 and tiny.log_upper == pytest.approx(-795.0, rel=1e-14)  # e^-795 underflows; its log does not
    assert rero_dp(None, 5.0, 1e-3, log_kappa=-800.0).log_upper == pytest.approx(math.log(1e-3), rel=1e-12)
    t = tradeoff_dp(a, 1.0, 1e-3)
    assert np.all(t.beta.lower <= t.beta.upper) and np.allclose(t.power.upper, 1 - t.beta.lower)


def test_pure_dp_through_the_rdp_route_at_order_infinity_agrees():
    for k in (1e-6, 0.01, 0.3, 0.6, 0.9):
        for eps in (0.1, 1.0, 4.0):
            p, _ = rdp_power(k, [np.inf], [eps])
            assert p == pytest.approx(rero_dp(k, eps).upper, rel=1e-9)


# ----------------------------------------------------------------------------- Bernoulli divergences
@given(st.floats(1e-6, 1 - 1e-6), st.floats(1e-6, 1 - 1e-6), st.floats(1.0001, 50.0))
def test_renyi_bernoulli_matches_the_definition(p, k, a):
    """Against the definition in 50-digit arithmetic (in doubles it cancels when p ≈ k or a ≈ 1)."""
    import mpmath

    with mpmath.workdps(50):
        P, K, A = mpmath.mpf(p), mpmath.mpf(k), mpmath.mpf(a)
        direct = float(mpmath.log(P**A * K ** (1 - A) + (1 - P) ** A * (1 - K) ** (1 - A)) / (A - 1))
    lw1, lw2, l1, l2 = _bern(p, k)
    # the one cancellation left: Σ w·expm1((a−1)l) when p ≈ k, of order ulp × (|l₁| + |l₂|)
    assert float(renyi_bernoulli(a, lw1, lw2, l1, l2)) == pytest.approx(direct, rel=1e-9, abs=4e-16 * (abs(l1) + abs(l2)) + 1e-45)


def test_renyi_bernoulli_tends_to_kl_and_dinf():
    p, k = 0.3, 0.1
    kl = p * math.log(p / k) + (1 - p) * math.log((1 - p) / (1 - k))
    assert float(renyi_bernoulli(1.0, *_bern(p, k))) == pytest.approx(kl, rel=1e-14)
    assert float(renyi_bernoulli(1 + 1e-9, *_bern(p, k))) == pytest.approx(kl, rel=1e-7)
    assert float(renyi_bernoulli(np.inf, *_bern(p, k))) == pytest.approx(math.log(3.0), rel=1e-14)
    assert float(renyi_bernoulli(1e6, *_bern(p, k))) == pytest.approx(math.log(3.0), rel=1e-5)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.floats(1.0, 200.0), st.floats(0.0, 30.0)), min_size=1, max_size=6),
       st.floats(1e-9, 0.99), st.booleans())
def test_optimal_rdp_is_attained_by_a_bernoulli_pair(points, k, symmetric):
    """(Bern(p*), Bern(κ)) meets every constraint (up to the bisection's end) and a slightly larger p breaks one."""
    o, e = np.array([x[0] for x in points]), np.array([x[1] for x in points])
    p, _ = rdp_power(k, o, e, symmetric=symmetric)
    assert k * (1 - 1e-12) <= p <= 1.0
    if p < 1 - 1e-9:
        lo = p * (1 - 1e-9) if p > k * (1 + 1e-8) else k
        for a, eps in zip(o, e):
            assert float(renyi_bernoulli(a, *_bern(lo, k))) <= eps * (1 + 1e-9) + 1e-15
            if symmetric:
                assert float(renyi_bernoulli(a, *_bern(k, lo)[:2], *(-x for x in _bern(lo, k)[2:]))) <= eps * (1 + 1e-9) + 1e-15
        up = min(p * (1 + 1e-7), (1 + p) / 2)
        fwd = [float(renyi_bernoulli(a, *_bern(up, k))) > eps for a, eps in zip(o, e)]
        lk, l1k = math.log(k), math.log1p(-k)
        rev = [float(renyi_bernoulli(a, lk, l1k, lk - math.log(up), l1k - math.log1p(-up))) > eps for a, eps in zip(o, e)]
        assert any(fwd) or (symmetric and any(rev))


@settings(max_examples=80)
@given(st.lists(st.tuples(st.floats(1.001, 500.0), st.floats(0.0, 50.0)), min_size=1, max_size=8),
       st.floats(1e-12, 0.999))
def test_optimal_rdp_never_looser_than_theorem2_on_the_same_points(points, k):
    o, e = [x[0] for x in points], [x[1] for x in points]
    b = rero_rdp_curve(k, o, e)
    assert b.upper <= rero_from_rdp(k, o, e)[0] * (1 + 1e-12)
    assert b.upper <= rero_rdp_curve(k, o, e, symmetric=False).upper * (1 + 1e-12)  # both directions only tighten
    assert b.method == "rdp_optimal" and "Riess et al. 2026" in b.formula


@given(st.floats(1e-12, 0.9), st.floats(1e-4, 20.0))
@settings(max_examples=25)
def test_zcdp_never_looser_than_corollary4_and_sound_against_gaussian_dp(k, rho):
    p, _ = zcdp_power(k, rho)
    assert p <= rero_from_zcdp(k, rho)[0] * (1 + 1e-9)
    # the Gaussian mechanism of sensitivity 1 and σ = 1/√(2ρ) is exactly ρ-zCDP: its ReRo is Φ(Φ⁻¹(κ) + μ)
    exact = special.ndtr(special.ndtri(k) + math.sqrt(2 * rho))
    assert p >= exact * (1 - 1e-9)


def test_tiny_priors_keep_the_bound_in_log_space():
    from reconrisk._src.measures.rdp_tradeoff import rero_zcdp
    from reconrisk._src.priors import log_kappa_uniform_ball

    lk = log_kappa_uniform_ball(784, 0.5)  # ≈ −543: κ underflows
    b = rero_zcdp(None, 10.0, log_kappa=lk)
    cor4 = -((math.sqrt(-lk) - math.sqrt(10.0)) ** 2)
    assert lk < b.log_upper <= cor4 + 1e-9 and b.upper == pytest.approx(math.exp(b.log_upper), rel=1e-12)
    r = rero_rdp_curve(None, [2.0, 8.0], [1.0, 3.0], log_kappa=-800.0)
    assert -800.0 < r.log_upper <= min(0.5 * (-800 + 1.0), 7 / 8 * (-800 + 3.0)) + 1e-9


def test_zcdp_tradeoff_agrees_with_the_scalar_bound():
    a = np.array([1e-6, 1e-3, 0.1, 0.5, 0.9])
    t = tradeoff_zcdp(a, 0.7)
    for ai, pw in zip(a, t.power.upper):
        assert pw == pytest.approx(zcdp_power(ai, 0.7)[0], rel=1e-6)
    assert np.all(np.diff(t.beta.lower) < 0) and np.all(t.beta.lower >= 0)


# --------------------------------------------------------------------- a DP-SGD release's own curve
@pytest.mark.parametrize("sigma, q, steps, kappa, one_sided, symmetric", [
    (1.0, 0.01, 1000, 0.1, 0.2227, 0.2227),
    (1.0, 0.01, 1000, 0.5, 0.7018, 0.6964),
    (5.0, 1.0, 100, 0.1, 0.9511, 0.9238),
])
def test_issue_figures(sigma, q, steps, kappa, one_sided, symmetric):
    rel = Release(sigma, q, steps)
    p1, _ = release_rdp_power(rel, kappa, symmetric=False)
    p2, _ = release_rdp_power(rel, kappa)
    assert p1 == pytest.approx(one_sided, abs=1e-3)  # the issue's figures: forward constraint only
    assert p2 == pytest.approx(symmetric, abs=1e-3)  # with the reverse direction (the default)
    assert p2 <= p1 <= float(rdp_rero_bound(rel.segments, [kappa])[0])


def test_kl_limit_binds_at_full_batch():
    """q = 1, σ = 5, T = 100, κ = 0.1: the one-sided minimum is the KL limit (order 1)."""
    p, a = release_rdp_power(Release(5.0, 1.0, 100), 0.1, symmetric=False)
    assert a == 1.0
    rho = 100 / 50.0
    grid = 1 + np.geomspace(1e-3, 100, 200)
    p_no_kl, _ = rdp_power(0.1, grid, rho * grid, symmetric=False)
    assert p_no_kl > p + 1e-4  # orders from 1.001 up miss it


GRID = [Release(1.0, 0.01, 1000), Release(0.8, 0.05, 200), Release(2.0, 0.1, 50), Release(0.6, 0.004, 3000),
        Release(3.0, 1.0, 20)]
KAPPAS = [1e-6, 1e-3, 0.05, 0.3, 0.7]


@pytest.mark.parametrize("rel", GRID, ids=lambda r: f"s{r.noise_multiplier}-q{r.sample_rate}-T{r.steps}")
def test_release_never_looser_than_balle2022_and_above_the_exact_risk(rel):
    from reconrisk._src.analysis.privacy_rero import rero_bounds

    old = rdp_rero_bound(rel.segments, KAPPAS)
    pld = rero_bounds(PrivacyAnalysis(rel), KAPPAS, method="pld")
    for k, o, b in zip(KAPPAS, old, pld):
        p, _ = release_rdp_power(rel, k)
        assert p <= o * (1 + 1e-9), (k, p, o)
        assert p >= b.lower * (1 - 1e-12), (k, p, b.lower)  # sound: the exact risk is at least the PLD's lower end


def test_release_tradeoff_curve_is_a_lower_bound_on_the_exact_curve():
    from reconrisk import tradeoff

    rel = Release(1.0, 0.02, 300)
    a = np.array([1e-4, 1e-2, 0.1, 0.3, 0.6, 0.9])
    from reconrisk._src.measures.rdp_tradeoff import tradeoff_release_rdp

    ours = tradeoff_release_rdp(rel, a)
    exact = tradeoff(rel, a, method="pld")
    assert np.all(ours.beta.lower <= exact.beta.upper + 1e-12)
    assert np.all(np.diff(ours.beta.lower) < 0)
    full = Release(2.0, 1.0, 10)
    ex = tradeoff(full, a, method="closed_form")
    assert np.all(tradeoff_release_rdp(full, a).beta.lower <= ex.beta.lower * (1 + 1e-9))


def test_curve_input_validation():
    with pytest.raises(ReconRiskError, match="order"):
        rero_rdp_curve(0.1, [0.5], [1.0])
    with pytest.raises(ReconRiskError, match="epsilon"):
        rero_rdp_curve(0.1, [2.0], [-1.0])
    with pytest.raises(ReconRiskError, match="one order per epsilon"):
        rero_rdp_curve(0.1, [2.0, 3.0], [1.0])
    with pytest.raises(ReconRiskError, match="kappa"):
        rero_rdp_curve(1.5, [2.0], [1.0])
    with pytest.raises(ReconRiskError, match="rho"):
        zcdp_power(0.1, 0.0)
    with pytest.raises(ReconRiskError, match="alphas"):
        tradeoff_rdp_curve([0.0, 0.5], [2.0], [1.0])


# ------------------------------------------------------------------------------------------------ VMF
def _vmf_exact_rero(k, c, dim):
    """Exact ReRo of one VMF mechanism (antipodal centres) at baseline k: B_k(P, Q) by the likelihood ratio.

    The loss is 2c·t with t = ⟨x, μ⟩ of density ∝ e^{ct}(1 − t²)^{(p−3)/2} under P and e^{−ct}(…) under Q; the
    optimal event is {t > τ} with Q(t > τ) = k.
    """
    def dens(t, sign):
        return math.exp(sign * c * t + (dim - 3) / 2 * math.log1p(-t * t)) if abs(t) < 1 else 0.0

    zp = integrate.quad(lambda t: dens(t, 1), -1, 1, epsabs=0, epsrel=1e-12, limit=400)[0]

    def q_tail(tau):
        # brentq's first probes sit at τ = ±(1 − 1e-12), where the tail is ~1e-40 and quad warns that its relative
        # target is out of reach; those probes only fix the sign at the ends, the root is found well inside
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            return integrate.quad(lambda t: dens(t, -1), tau, 1, epsabs=0, epsrel=1e-12, limit=400)[0] / zp

    from scipy import optimize

    tau = optimize.brentq(lambda x: q_tail(x) - k, -1 + 1e-12, 1 - 1e-12, xtol=1e-14)
    return integrate.quad(lambda t: dens(t, 1), tau, 1, epsabs=0, epsrel=1e-12, limit=400)[0] / zp


@pytest.mark.parametrize("k, c, dim", [(0.1, 2.0, 5), (0.01, 5.0, 10), (0.3, 1.0, 3)])
def test_vmf_optimal_is_sound_and_never_looser(k, c, dim):
    exact = _vmf_exact_rero(k, c, dim)
    b = rero_vmf(k, c, dim, 1.0, 1)
    old = rero_vmf(k, c, dim, 1.0, 1, conversion="balle2022")
    assert exact * (1 - 1e-6) <= b.upper <= old.upper * (1 + 1e-12)
    assert b.method == "rdp_optimal" and old.method == "rdp_balle2022"


def test_vmf_subsampled_curve_and_bound():
    orders, eps, eps_of = vmf_rdp_curve(100.0, 13700, 128 / 60000, 1406)
    assert orders[0] == 1.0 and eps_of is None and np.all(np.isfinite(eps)) and np.all(eps > 0)
    assert eps[0] > eps[1]  # γτ₁ (joint convexity) is weaker than Zhu–Wang's γ² at order 2: the curve binds there
    assert rero_vmf(0.1, 100.0, 13700, 128 / 60000, 1406).order == 2.0
    b = rero_vmf(0.1, 100.0, 13700, 128 / 60000, 1406)
    assert 0.1 <= b.upper <= b.balle2022_upper
    with pytest.raises(ReconRiskError, match="conversion"):
        rero_vmf(0.1, 100.0, 13700, 1.0, 1, conversion="best")


# ------------------------------------------------------------------------------ accounting near order 1
@pytest.mark.parametrize("sigma, q", [(1.0, 0.01), (0.5, 0.1), (5.0, 0.5), (0.8, 0.9)])
def test_subsampled_gaussian_kl_and_orders_near_one(sigma, q):
    """KL by an independent quadrature of μ log(μ/ν) in mpmath; orders in (1, 1.01) continuous with it and with 1.01."""
    import mpmath

    from reconrisk._src.accounting.rdp import _log_a_frac, subsampled_gaussian_kl, subsampled_gaussian_rdp

    def f(z):
        mu = (1 - q) * mpmath.npdf(z, 0, sigma) + q * mpmath.npdf(z, 1, sigma)
        return mu * mpmath.log(mu / mpmath.npdf(z, 0, sigma))

    with mpmath.workdps(30):
        ref = float(mpmath.quad(f, [-mpmath.inf, 0, 1, mpmath.inf]))
    kl = subsampled_gaussian_kl(sigma, q)
    assert kl == pytest.approx(ref, rel=1e-8)
    e = subsampled_gaussian_rdp(sigma, q, [1.0, 1 + 1e-8, 1 + 1e-4, 1.0099, 1.01])
    assert e[0] == kl and np.all(np.diff(e) > -1e-15)  # nondecreasing in the order
    assert e[1] == pytest.approx(kl, rel=1e-6)
    assert e[3] == pytest.approx(e[4], rel=2e-3)  # the new path meets the old one at 1.01
    assert e[3] == pytest.approx(_log_a_frac(sigma, q, 1.0099) / 0.0099, rel=1e-6)  # the old form, where it still works


def _brute_p(k, orders, eps, symmetric=True):
    """Independent route: brentq on p directly, per order, with the divergence from its definition (mpmath)."""
    import mpmath
    from scipy import optimize

    def div(p, q, a):
        with mpmath.workdps(40):
            p, q, a = mpmath.mpf(p), mpmath.mpf(q), mpmath.mpf(a)
            if a == 1:
                return float(p * mpmath.log(p / q) + (1 - p) * mpmath.log((1 - p) / (1 - q)))
            return float(mpmath.log(p**a * q ** (1 - a) + (1 - p) ** a * (1 - q) ** (1 - a)) / (a - 1))

    best = 1.0
    for a, e in zip(orders, eps):
        def g(p):
            d = div(p, k, a)
            if symmetric:
                d = max(d, div(k, p, a))
            return d - e
        hi = 1 - 1e-15
        if g(hi) <= 0:
            continue
        best = min(best, optimize.brentq(g, k, hi, xtol=1e-15, rtol=1e-13))
    return best


@pytest.mark.parametrize("k, rho", [(0.1, 0.5), (0.01, 0.5), (0.5, 2.0), (1e-4, 0.1)])
def test_zcdp_matches_an_independent_brute_force(k, rho):
    orders = np.concatenate([[1.0], 1 + np.geomspace(1e-4, 1e3, 200)])
    brute = _brute_p(k, orders, rho * orders)
    p, _ = zcdp_power(k, rho)
    assert p <= brute * (1 + 1e-9)  # refined over real orders: at least as tight as any grid
    assert p == pytest.approx(brute, rel=2e-3)  # and a grid of 200 orders (ratio 1.08 in a − 1) is nearly the continuum


def test_rdp_curve_matches_an_independent_brute_force():
    orders, eps = [1.0, 1.5, 2.0, 4.0, 16.0, np.inf], [0.05, 0.08, 0.12, 0.3, 1.1, 3.0]
    for k in (1e-3, 0.05, 0.4, 0.8):
        for sym in (True, False):
            assert rdp_power(k, orders, eps, symmetric=sym)[0] == pytest.approx(
                _brute_p(k, orders[:-1], eps[:-1], sym) if not sym else min(_brute_p(k, orders[:-1], eps[:-1], sym),
                                                                             rero_dp(k, eps[-1]).upper), rel=1e-9)
