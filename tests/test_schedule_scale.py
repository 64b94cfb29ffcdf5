"""Schedules whose every step differs (issue 42, item 1): the grouped, transform-domain composition.

References are independent of reconrisk's engine: ``dp_accounting``'s ``PLDAccountant`` composing the schedule
grouped into chunks at each chunk's smallest σ / largest q (pessimistic discretisation: ≥ the exact ε) and at
its largest σ / smallest q (optimistic estimate: ≤ the exact ε), ``dp_accounting`` composing every step of a small
schedule exactly, and ``dp_accounting``'s RDP accountant. Seeds and tolerances are stated per test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from reconrisk._src.accounting import pld_schedule as ps
from reconrisk._src.analysis.privacy import SEGMENTWISE_MAX, PrivacyAnalysis
from reconrisk._src.release import Release

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as pld_lib  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as rdp_acc  # noqa: E402

DELTA = 1e-5
KAPPA = 0.01


def _event(sigma, q, n):
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(float(q), dpa.GaussianDpEvent(float(sigma))), int(n))


def _dpa_eps(triples, *, pessimistic=True, h=5e-4):
    """ε(δ) of dp_accounting's PLD (both directions) composing (σ, q, n) triples, pessimistic or optimistic."""
    total = None
    for s, q, n in triples:
        p = pld_lib.from_gaussian_mechanism(float(s), sampling_prob=float(q), pessimistic_estimate=pessimistic,
                                            value_discretization_interval=h).self_compose(int(n))
        total = p if total is None else total.compose(p)
    return total.get_epsilon_for_delta(DELTA)


def _chunks(sig, q, k):
    """The independent reference grouping: the schedule cut into k runs of consecutive steps."""
    parts = np.array_split(np.arange(sig.size), k)
    pess = [(sig[p].min(), q[p].max(), p.size) for p in parts]
    opt = [(sig[p].max(), q[p].min(), p.size) for p in parts]
    return pess, opt


def _release(sig, q):
    return Release.schedule([(float(s), float(r), 1) for s, r in zip(sig, q)])


# the three schedules: 10⁴ distinct steps (exponential decay, as opacus.schedulers.ExponentialNoise makes),
# 2,000 with linearly rising σ, and 2,000 where q varies too (four cohort sizes in turn, σ decaying linearly;
# σ and q both varying continuously and out of step need more groups: ~2.5 % wide at the group cap)
N_BIG = 10_000
SIG_EXP = 2.0 * 0.99993 ** np.arange(N_BIG)
Q_EXP = np.full(N_BIG, 0.01)
SIG_LIN = np.linspace(0.8, 1.6, 2000)
Q_LIN = np.full(2000, 0.02)
SIG_VAR = np.linspace(1.5, 1.0, 2000)
Q_VAR = np.array([0.008, 0.01, 0.012, 0.015])[np.arange(2000) % 4]


@pytest.fixture(scope="module")
def big():
    a = PrivacyAnalysis(_release(SIG_EXP, Q_EXP))
    return a, a.epsilon(DELTA, two_sided=True), a.rero(KAPPA)


def test_ten_thousand_distinct_steps_bracket_width_and_references(big):
    a, eps, rero = big
    assert len(set(SIG_EXP.tolist())) == N_BIG and a.groups is not None
    assert 0 < eps.lower <= eps.upper and (eps.upper - eps.lower) <= 0.01 * eps.upper
    assert 0 < rero.lower <= rero.upper and (rero.upper - rero.lower) <= 0.01 * rero.upper
    pess, opt = _chunks(SIG_EXP, Q_EXP, 10)
    ref_hi, ref_lo = _dpa_eps(pess), _dpa_eps(opt, pessimistic=False)
    assert ref_lo < ref_hi
    assert eps.lower <= ref_hi and eps.upper >= ref_lo


def test_ten_thousand_steps_never_above_rdp(big):
    """dp_accounting's RDP ε of the exact schedule is ≥ its RDP ε of the chunks at their largest σ (RDP falls as σ
    grows), so an upper end below the latter is below the former."""
    _, eps, _ = big
    acc = rdp_acc.RdpAccountant()
    for s, q, n in _chunks(SIG_EXP, Q_EXP, 10)[1]:
        acc.compose(_event(s, q, n))
    assert eps.upper <= acc.get_epsilon(DELTA)


@pytest.mark.parametrize("sig,q", [(SIG_LIN, Q_LIN), (SIG_VAR, Q_VAR)], ids=["linear", "q-varies"])
def test_other_schedules_against_grouping_reference(sig, q):
    """Where q varies too the groups split both ways and the first 200 groups leave ~1.2 %: the measured bracket
    regroups the schedule (more groups, the widest split further) until ε and ReRo are within 1 %."""
    a = PrivacyAnalysis(_release(sig, q))
    assert a.groups is not None
    eps = a.epsilon(DELTA, two_sided=True)
    assert (eps.upper - eps.lower) <= 0.01 * eps.upper
    pess, opt = _chunks(sig, q, 8)
    assert eps.lower <= _dpa_eps(pess) and eps.upper >= _dpa_eps(opt, pessimistic=False)
    rero = a.rero(KAPPA)
    assert rero.lower <= rero.upper and rero.upper - rero.lower <= 0.01 * rero.upper
    if q is Q_VAR:
        assert len(a.groups) > ps.MAX_GROUPS  # regrouped (at the first grouping the bracket is 1.2 % wide)
    # a grid set by the grouped schedule's floor is not a memory refusal
    assert "memory" not in rero.details.get("note", "")


def test_small_schedule_contains_dp_accounting_exact_value():
    """Five distinct (σ, q): dp_accounting composes every step; the spectral composition of the exact groups, and
    of a coarser grouping, must bracket its value (within dp_accounting's own discretisation, 1e-3 relative)."""
    triples = [(1.0, 0.01, 300), (1.3, 0.02, 200), (0.9, 0.005, 400), (1.1, 0.015, 250), (1.6, 0.03, 150)]
    exact = _dpa_eps(triples, h=1e-4)
    sig, q, n = ps.distinct_steps(triples)
    for groups in (ps.group_steps(sig, q, n), ps.group_steps(sig, q, n, rel_width=0.0, max_groups=2)):
        up = max(ps.compose_groups(groups, 1e-4, pessimistic=True, direction=d, loss_cap=250.0).epsilon(DELTA)
                 for d in ("remove", "add"))
        lo = ps.compose_groups(groups, 1e-4, pessimistic=False, loss_cap=250.0).epsilon(DELTA)
        assert lo <= exact * (1 + 1e-3) and up >= exact * (1 - 1e-3)
        if all(g.exact for g in groups):
            assert up - lo <= 1e-3 * up
        else:
            assert up - lo > 1e-3 * up  # a coarse grouping is visibly wider (the test can tell them apart)


def test_spectral_composition_matches_segmentwise_engine():
    """The transform-domain product equals the engine's segment-by-segment composition on the same grid (both
    pessimistic; their ε differ by the round-off allowances only)."""
    from reconrisk._src.accounting import pld

    triples = [(1.0, 0.01, 300), (1.2, 0.02, 200), (0.9, 0.005, 500)]
    groups = [ps.Group(s, s, q, q, n) for s, q, n in triples]
    for pess in (True, False):
        ours = ps.compose_groups(groups, 1e-4, pessimistic=pess, loss_cap=250.0)
        ref = pld.compose_segments([ps._Rep(*t) for t in triples], 1e-4, pessimistic=pess, loss_cap=250.0)
        assert ours.slack < 1e-10
        assert math.isclose(ours.epsilon(DELTA), ref.epsilon(DELTA), rel_tol=1e-6)
        assert math.isclose(float(ours.blowup(np.array([KAPPA]))[0]), float(ref.blowup(np.array([KAPPA]))[0]),
                            rel_tol=1e-6)


def test_rdp_wins_when_the_pld_upper_end_would_exceed_it(monkeypatch):
    """With the grouping forced to one group, the pessimistic representative (σ_min, q_max for every step) is
    far looser than RDP of the finer regrouping: the smaller certified upper end must be reported."""
    sig, q = SIG_LIN[::4], Q_LIN[::4]
    a = PrivacyAnalysis(_release(sig, q))
    monkeypatch.setattr(ps, "MAX_GROUPS", 1)
    coarse = ps.group_steps(*ps.distinct_steps(a.release.segments), max_groups=1)
    a._groups = coarse
    pld_up = max(a.pmf(1e-4, pessimistic=True, direction=d, loss_cap=250.0).epsilon(DELTA) for d in ("remove", "add"))
    fine = ps.group_steps(*ps.distinct_steps(a.release.segments), max_groups=32)
    rdp_fine = ps.grouped_rdp_epsilon(fine, DELTA)
    assert rdp_fine < pld_up  # the situation the test is about
    monkeypatch.setattr(ps, "grouped_rdp_epsilon", lambda groups, delta: rdp_fine)
    eps = a.epsilon(DELTA)
    assert eps.upper == rdp_fine and eps.method == "rdp"


def test_every_question_on_a_grouped_release():
    sig = 1.0 + 0.05 * np.arange(SEGMENTWISE_MAX + 4)
    a = PrivacyAnalysis(Release.schedule([(float(s), 0.05, 25) for s in sig]))
    assert a.groups is not None and len(ps.distinct_steps(a.release.segments)[0]) > SEGMENTWISE_MAX
    e = a.epsilon(DELTA, two_sided=True)
    d = a.delta(e.upper, two_sided=True)
    assert e.lower <= e.upper and d.lower <= d.upper <= DELTA * (1 + 1e-6)
    r = a.rero_many([1e-3, 1e-2])
    assert all(b.lower <= b.upper for b in r)
    t = a.tradeoff(np.array([1e-3, 1e-2, 0.1]))
    assert np.all(t.beta.lower <= t.beta.upper)
    mu = a.gdp_mu()
    assert mu.lower <= mu.upper
    tpr = a.risk("membership_tpr", fpr=0.01)
    assert tpr.lower <= tpr.upper
    # the same questions on 10× finer σ steps (grouped, inexact groups): ε and ReRo
    fine = PrivacyAnalysis(_release(1.0 + 0.0005 * np.arange(1200), np.full(1200, 0.05)))
    assert any(not g.exact for g in fine.groups)
    assert fine.epsilon(DELTA, two_sided=True).lower <= fine.epsilon(DELTA, two_sided=True).upper
    assert fine.rero(KAPPA).lower <= fine.rero(KAPPA).upper


def test_fixed_batch_schedule_pair_view():
    sig = 1.5 + 0.01 * np.arange(40)
    r = Release.schedule([(float(s), 0.02, 25) for s in sig], sampler="fixed")
    a = PrivacyAnalysis(r)
    e = a.epsilon(DELTA, two_sided=True)
    assert a.pair.groups is not None and e.lower <= e.upper <= e.lower * 1.01
    # the symmetrised pair dominates the Poisson remove pair at σ/2 (its ε is at least that one's lower end)
    poisson = PrivacyAnalysis(Release.schedule([(float(s) / 2, 0.02, 25) for s in sig]))
    assert e.upper >= poisson.epsilon(DELTA, two_sided=True).lower * (1 - 1e-3)


def _ends(segs, h=5e-4):
    groups = ps.group_steps(*ps.distinct_steps(segs))
    up = max(ps.compose_groups(groups, h, pessimistic=True, direction=d, loss_cap=250.0).epsilon(DELTA)
             for d in ("remove", "add"))
    return ps.compose_groups(groups, h, pessimistic=False, loss_cap=250.0).epsilon(DELTA), up


@settings(max_examples=5, deadline=None, derandomize=True)
@given(st.lists(st.floats(0.9, 3.0), min_size=SEGMENTWISE_MAX + 1, max_size=40, unique=True),
       st.integers(0, 39), st.floats(1.0, 1.5))
def test_bracket_ordered_and_monotone_in_sigma(sigmas, which, factor):
    """Composed as PrivacyAnalysis composes a schedule of more than SEGMENTWISE_MAX distinct steps (on a coarser
    grid, to keep the test short): lower ≤ upper, and raising one σ never raises the upper end."""
    segs = [(s, 0.02, 20) for s in sigmas]
    lo, up = _ends(segs)
    assert lo <= up
    i = which % len(segs)
    raised = list(segs)
    raised[i] = (segs[i][0] * factor, 0.02, 20)
    assert _ends(raised)[1] <= up * (1 + 1e-9)


def test_grouped_tilts_read_few_segments_and_tiny_delta_brackets(monkeypatch):
    """The tilts of tiny-δ / tiny-κ questions on a grouped schedule are chosen from ≤ TILT_GROUPS representative
    segments (grid choice only; one moment computation per distinct step made gdp_mu take a minute on 300 steps),
    and the tilted ε(1e-12) still brackets the references: ≥ dp_accounting's optimistic chunks, ≤ its RDP ε of
    the schedule at its chunks' largest σ (≤ that of the exact schedule)."""
    from reconrisk._src.accounting import epsilon_tilt, pld_tilt

    seen = set()
    orig = pld_tilt.step_moments

    def recording(segments, *args, **kw):
        seen.update((s.noise_multiplier, s.sample_rate) for s in segments)
        return orig(segments, *args, **kw)

    monkeypatch.setattr(pld_tilt, "step_moments", recording)
    monkeypatch.setattr(epsilon_tilt, "step_moments", recording)
    epsilon_tilt._moments_cached.cache_clear()
    sig, q = np.linspace(1.0, 1.6, 300), np.full(300, 0.01)
    a = PrivacyAnalysis(Release.schedule([(float(s), 0.01, 10) for s in sig]))
    assert a.groups is not None and sum(s.steps for s in a.tilt_segments) == 3000
    eps = a.epsilon(1e-12, two_sided=True)
    rero = a.rero(1e-9)
    assert 0 < len(seen) <= ps.TILT_GROUPS
    assert rero.lower <= rero.upper and eps.lower <= eps.upper
    _, opt_chunks = _chunks(np.repeat(sig, 10), np.repeat(q, 10), 10)
    acc = rdp_acc.RdpAccountant()  # ≤ its RDP ε of the exact schedule (RDP falls as σ grows)
    for s, r, n in opt_chunks:
        acc.compose(_event(s, r, n))
    assert eps.upper <= acc.get_epsilon(1e-12)
    opt = None
    for s, r, n in opt_chunks:
        p = pld_lib.from_gaussian_mechanism(float(s), sampling_prob=float(r), pessimistic_estimate=False,
                                            value_discretization_interval=5e-4).self_compose(int(n))
        opt = p if opt is None else opt.compose(p)
    assert eps.upper >= opt.get_epsilon_for_delta(1e-12) * (1 - 1e-3)


def test_small_sigma_schedule_refines_the_grid_not_the_groups():
    """σ 0.7 → 0.65 at q 0.01 (a slow ExponentialNoise): one-dimensional, so 200 groups leave the grouping a tiny
    share, and the width (2 % before, unchanged by 800 groups) is the grouped grid floor's: the refinement lowers
    the floor instead and the bracket meets 1 %, still containing dp_accounting's chunked references."""
    sig = 0.7 * 0.99992 ** np.arange(1000)
    q = np.full(1000, 0.01)
    a = PrivacyAnalysis(_release(sig, q))
    eps = a.epsilon(DELTA, two_sided=True)
    assert eps.upper - eps.lower <= 0.01 * eps.upper
    assert a._floor_scale < 1.0 and len(a.groups) <= ps.MAX_GROUPS
    pess, opt = _chunks(sig, q, 8)
    assert eps.lower <= _dpa_eps(pess) and eps.upper >= _dpa_eps(opt, pessimistic=False)
