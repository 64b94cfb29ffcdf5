"""Issue 22 part 5, "precision where users look": tiny κ and α, coarsening instead of refusing, RAD lower end.

References never touch the PLD engine (reconrisk._src.measures.reference: exact T = 1, q = 1, T = 2 by
quadrature); the engine's tilted compositions must contain them *and* be narrow.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import special

import reconrisk as rr
from reconrisk import Release
from reconrisk._src.accounting import pmf as pmf_mod
from reconrisk._src.accounting.pld import compose_segments, step_pmf
from reconrisk._src.accounting.pld_tilt import tilt_for_kappa
from reconrisk._src.measures import reference as ref
from reconrisk._src.analysis import risk as R
from reconrisk._src.analysis.privacy_rero import pld_bracket
from reconrisk._src.measures.rero import _loss_spread, analytic_bracket, loss_cap
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk import analyse

REL = 1e-9


def _inside(lo, ex, up):
    assert lo <= ex * (1 + REL), (lo, ex, up)
    assert ex <= up * (1 + REL), (lo, ex, up)


def _tilted_pair(release, kappa, h):
    k = np.array([kappa])
    th, _ = tilt_for_kappa(release.segments, k)
    up = compose_segments(release.segments, h, pessimistic=True, loss_cap=loss_cap(k), tilt=float(th[0]), tail_mass=1e-30)
    lo = compose_segments(release.segments, h, pessimistic=False, loss_cap=loss_cap(k), tilt=float(th[0]), tail_mass=1e-30)
    return float(lo.blowup(k)[0]), float(up.blowup(k)[0]), float(th[0])


# -- the reproducers ------------------------------------------------------------------
def test_kappa_1e12_small_rate_is_converged_and_narrow():
    # was [1.42e-10, 1.66e-10] (14.5 % wide, converged False) after 10 s
    b = rr.rero_bound(0.5, 1e-4, 1000, kappa=1e-12)
    assert b.converged and b.upper - b.lower <= 0.01 * b.upper
    a_lo, a_up = analytic_bracket(Release(0.5, 1e-4, 1000), np.array([1e-12]))
    assert a_lo[0] * (1 - REL) <= b.upper and b.lower <= a_up[0]


def test_kappa_1e12_long_run_upper_end_is_no_longer_256x_the_truth():
    # was [1.20e-12, 4.94e-10]; the truth lies in [1.863e-12, 1.925e-12] (issue 22)
    lo, up, det = pld_bracket(PrivacyAnalysis(Release(2.101, 5.13e-4, 69118)), np.array([1.17e-12]))
    assert det["converged"] and det["tilts"]
    assert up[0] - lo[0] <= 0.01 * up[0]
    assert lo[0] <= 1.925e-12 and up[0] >= 1.863e-12


def test_tradeoff_power_at_alpha_1e12_is_narrow():
    from reconrisk import tradeoff

    t = tradeoff(Release(1.0, 0.02, 500), np.array([1e-12, 1e-10, 1e-6, 1e-2, 0.5]))
    rel = (t.power.upper - t.power.lower) / t.power.upper
    assert rel[0] <= 0.01 and rel[1] <= 0.01, rel  # was a factor ≈ 5 at α = 1e-12
    assert np.all(t.power.lower <= t.power.upper)


# -- rarely sampled targets: the sampled-steps bound and the stop when round-off dominates ----------
@settings(max_examples=40, deadline=None)
@given(st.floats(0.3, 20.0), st.floats(1e-6, 0.9), st.floats(-12.0, -0.5), st.sampled_from([1, 2]))
def test_sampled_steps_upper_end_contains_the_exact_value(s, q, lk, T):
    # E_K[Φ(Φ⁻¹(κ) + √K/σ)] ≥ B_κ: against the exact T = 1 closed form (where it is exact) and T = 2 quadrature
    from reconrisk._src.measures.rero import _sampled_gdp_upper

    k = 10.0**lk
    ex = ref.exact_single_step(s, q, k) if T == 1 else ref.exact_two_steps(s, q, s, q, k)
    up = float(_sampled_gdp_upper(Release(s, q, T).segments[0], np.array([k]))[0])
    assert ex <= up * (1 + REL), (ex, up)
    if T == 1:
        assert up <= ex * (1 + 1e-9)  # one step: the bound is the exact value


def test_rarely_sampled_target_calibrates_its_sample_rate():
    # issue 22: solving for q at κ 1.437e-11, σ 0.8285, T 3,810, target 6.753e-11 stopped with "even
    # sample_rate=1e-07 exceeds target" (bracket [1.438e-11, 3.8e-4] there); the sampled-steps bound certifies it
    lo, up = analytic_bracket(Release(0.8285, 1e-7, 3810), np.array([1.437e-11]))  # (rero_bound's upper is ≤ it)
    assert up[0] <= 6.753e-11 and lo[0] <= up[0]


def test_roundoff_dominated_bracket_stops_at_once_and_says_why():
    # σ 1, q 1e-4, T 1000, κ 1e-12: the width is the composition's absolute round-off allowance (~1e-11),
    # which finer grids only grow; it used to refine five times (35 s) to [1.19e-12, 1.33e-11]
    lo, up, det = pld_bracket(PrivacyAnalysis(Release(1.0, 1e-4, 1000)), np.array([1e-12]))
    assert not det["converged"] and det["rounds"] == 1 and "round-off" in det["note"]
    assert lo[0] <= up[0] <= 1.3e-11


# -- tilted brackets against exact references at tiny κ ------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.5, 20.0), st.floats(1e-4, 0.9), st.floats(-13.0, -3.0), st.sampled_from([4, 16]))
def test_single_step_tiny_kappa_contains_the_exact_value(s, q, lk, cells):
    k = 10.0**lk
    h = min(0.05, _loss_spread(s, q) / cells)
    lo, up, _ = _tilted_pair(Release(s, q, 1), k, h)
    _inside(lo, ref.exact_single_step(s, q, k), up)


@pytest.mark.parametrize("s,q,k", [(1.0, 0.05, 1e-12), (3.0, 0.3, 1e-10), (0.7, 0.01, 1e-12), (10.0, 0.5, 1e-11)])
def test_two_steps_tiny_kappa_by_quadrature(s, q, k):
    h = min(1e-3, _loss_spread(s, q) / 32)
    lo, up, _ = _tilted_pair(Release(s, q, 2), k, h)
    ex = ref.exact_two_steps(s, q, s, q, k)
    _inside(lo, ex, up)
    assert up - lo <= 0.02 * up, (lo, ex, up)


@pytest.mark.parametrize("s,T,k", [(20.0, 100, 1e-12), (5.0, 100, 1e-12), (3.0, 30, 1e-10), (10.0, 30, 1e-13)])
def test_full_batch_engine_tilted_is_exact_to_one_percent(s, T, k):
    # q = 1 through the engine (pld_bracket would use the closed form): the tilted bracket must contain
    # Φ(Φ⁻¹(κ) + √T/σ) and be within 1 % of it at κ down to 1e-13
    ex = ref.exact_full_batch(math.sqrt(T) / s, k)
    lo, up, th = _tilted_pair(Release(s, 1.0, T), k, 2e-3)
    assert th > 0
    _inside(lo, ex, up)
    assert up - lo <= 0.01 * ex, (lo, ex, up)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.8, 10.0), st.floats(1e-3, 0.5), st.integers(2, 40), st.floats(-12.0, -2.0))
def test_tilted_and_untilted_brackets_overlap(s, q, T, lk):
    # both are certified, so they must intersect (a wrong tilt bookkeeping would separate them)
    k = np.array([10.0**lk])
    h = min(2e-3, _loss_spread(s, q) / 8)
    lo_t, up_t, _ = _tilted_pair(Release(s, q, T), float(k[0]), h)
    up_u = compose_segments(Release(s, q, T).segments, h, pessimistic=True, loss_cap=loss_cap(k)).blowup(k)[0]
    lo_u = compose_segments(Release(s, q, T).segments, h, pessimistic=False, loss_cap=loss_cap(k)).blowup(k)[0]
    assert lo_t <= up_u * (1 + REL) and lo_u <= up_t * (1 + REL), (lo_t, up_t, lo_u, up_u)


@pytest.mark.parametrize("s,q,T,k", [(2.0, 0.0078125, 2, 1e-2), (2.0, 0.0078125, 2, 0.3), (1.0, 0.05, 3, 0.5)])
def test_tilted_upper_end_with_kappa_beyond_the_window(s, q, T, k):
    # regression: a tilt chosen for a small κ applied to a large one — the window then misses the
    # untilted bulk, and the pessimistic end read "all atoms" as the ε → −∞ limit (3e-23 against 0.0102)
    kk = np.array([k])
    up = compose_segments(Release(s, q, T).segments, 5e-4, pessimistic=True, loss_cap=loss_cap(kk), tilt=80.0)
    lo = compose_segments(Release(s, q, T).segments, 5e-4, pessimistic=False, loss_cap=loss_cap(kk), tilt=80.0)
    if T == 2:
        ex = ref.exact_two_steps(s, q, s, q, k)
    else:
        ex = float(pld_bracket(PrivacyAnalysis(Release(s, q, T)), kk)[1][0])  # an untilted certified upper end
        assert lo.blowup(kk)[0] <= ex * (1 + REL)
        return
    _inside(lo.blowup(kk)[0], ex, up.blowup(kk)[0])


def _longdouble_power(x, t):
    x = x.astype(np.longdouble)
    r = np.ones(1, dtype=np.longdouble)
    b = x
    n = t
    while n:
        if n & 1:
            r = np.convolve(r, b)
        n >>= 1
        if n:
            b = np.convolve(b, b)
    return r


@pytest.mark.parametrize("pess", [True, False])
@pytest.mark.parametrize("theta", [1.0, 6.0])
def test_tilted_fft_roundoff_allowance_covers_extended_precision_error(pess, theta):
    p = step_pmf(2.0, 0.05, 5e-3, pessimistic=pess).tilted(theta)
    assert p.probs.sum() <= 1.0
    for T in (8, 32):
        f = p.self_compose(T)
        r = _longdouble_power(p.probs, T)
        start = f.offset - T * p.offset
        err = float(np.abs(r[start : start + f.probs.size].astype(float) - f.probs).sum())
        # the tilted slack also carries the tilting's own rounding; the FFT part alone must cover err
        assert err <= f.slack, (T, err, f.slack)
        assert f.slack < 1e-9
        assert f.log_scale == pytest.approx(T * p.log_scale)


def test_tilt_commutes_with_composition():
    # tilted composition, untilted in the queries, gives the untilted masses (up to round-off)
    p = step_pmf(1.5, 0.1, 2e-3, pessimistic=True)
    plain = p.self_compose(20)
    tilted = p.tilted(2.0).self_compose(20)
    a = plain.masses()
    b = tilted.masses()
    lo = max(plain.offset, tilted.offset)
    hi = min(plain.offset + a.size, tilted.offset + b.size)
    x = a[lo - plain.offset : hi - plain.offset]
    y = b[lo - tilted.offset : hi - tilted.offset]
    big = x > 1e-8
    assert np.allclose(x[big], y[big], rtol=1e-9)
    # the tilted masses keep relative digits far in the upper tail, where the plain ones are round-off
    assert tilted.tail_error(tilted.losses[-50])[()] < plain.tail_error(0.0)[()] * 1e-3


# -- coarsening instead of refusing ------------------------------------------------------------
def test_window_overflow_coarsens_and_stays_certified(monkeypatch):
    monkeypatch.setattr(pmf_mod, "MAX_WINDOW_ATOMS", 300)
    rel = Release(2.0, 0.3, 2)
    kk = np.array([1e-3])
    up = compose_segments(rel.segments, 1e-3, pessimistic=True, loss_cap=loss_cap(kk))
    assert up.h > 1e-3
    with pytest.raises(pmf_mod.WindowTooLarge, match="coarser grid"):
        compose_segments(rel.segments, 1e-3, pessimistic=True, loss_cap=loss_cap(kk), coarsen=False)
    lo, hi, det = pld_bracket(PrivacyAnalysis(rel), kk, discretization=1e-3)
    _inside(lo[0], ref.exact_two_steps(2.0, 0.3, 2.0, 0.3, 1e-3), hi[0])
    assert det["discretization"] > 1e-3 and "coarser grid" in det["note"]


# -- the RAD lower end ----------------------------------------------------------------------------
@pytest.mark.parametrize("s,q,T,n", [(0.1, 1.0, 100, 1000), (0.05, 1.0, 1, 10), (0.1, 0.5, 1, 10), (0.02, 0.9, 1, 100)])
def test_rad_lower_end_is_informative(s, q, T, n):
    rel = Release(s, q, T)
    b = rel and (ref.exact_full_batch(math.sqrt(T) / s, 1 / n) if q == 1 else ref.exact_single_step(s, q, 1 / n))
    rad = R.reconstruction_advantage(analyse(rel), prior_size=n)
    exact = b - 1 / n
    assert rad.lower <= exact + 1e-9 <= rad.upper + 2e-9
    assert rad.lower >= exact - 1e-3, (rad.lower, exact)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.02, 5.0), st.integers(1, 400), st.integers(2, 5000))
def test_rad_full_batch_bracket_is_tight_and_contains_the_closed_form(s, T, n):
    mu = math.sqrt(T) / s
    exact = float(special.ndtr(special.ndtri(1 / n) + mu)) - 1 / n
    rad = R.reconstruction_advantage(analyse(Release(s, 1.0, T)), prior_size=n)
    assert rad.lower - 1e-9 <= exact <= rad.upper + 1e-9
    assert rad.upper - rad.lower <= 1e-6 + 1e-6 * exact, (rad.lower, exact, rad.upper)
