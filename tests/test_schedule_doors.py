"""Schedules at scale at the doors: ``Release.schedule`` of 10⁴ distinct steps, the RDP curve of such a schedule,
and the one calibrator on a schedule's scale (σ_t → c·σ_t)."""

import json

import numpy as np
import pytest

from reconrisk import Release, calibrate
from reconrisk._src import release as release_module
from reconrisk._src.accounting import rdp
from reconrisk._src.analysis.calibrate import meets, quantity_bound
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk.errors import ReconRiskError


def test_schedule_of_10k_distinct_steps_validates_once_and_round_trips(monkeypatch):
    hist = [(1.0 + 0.001 * i, 0.01, 1 + i % 3) for i in range(10_000)]
    made = []
    post_init = release_module.Segment.__post_init__
    monkeypatch.setattr(release_module.Segment, "__post_init__", lambda self: (made.append(1), post_init(self)))
    r = Release.schedule(hist)
    assert len(made) == 10_000 and len(r.segments) == 10_000 and r.steps == sum(t for _, _, t in hist)  # linear
    monkeypatch.undo()
    d = json.loads(json.dumps(r.to_dict()))
    assert Release.schedule(d["segments"], clip_norm=d["clip_norm"], noise=d["noise"]) == r
    assert Release.schedule([(1.0, 0.01, 2), (1.0, 0.01, 3)]).segments == Release(1.0, 0.01, 5).segments  # merged
    bad = hist[:9_999] + [(1.0, 1.5, 1)]
    with pytest.raises(ReconRiskError, match=r"segments\[9999\]: sample_rate must be .*found 1.5"):
        Release.schedule(bad)
    with pytest.raises(ReconRiskError, match=r"segments\[3\] must be \(noise_multiplier, sample_rate, steps\)"):
        Release.schedule(hist[:3] + [{"noise_multiplier": 1.0, "steps": 2}])


def test_rdp_of_a_many_step_schedule_bounds_the_exact_curve(monkeypatch):
    """Beyond CHORD_ABOVE distinct steps the curve is read off the integer orders (chord; σ buckets above 64):
    never below the exact per-step curve, equal to it (and to Opacus's RDP) at the integer orders up to 64."""
    segs = Release.schedule([(2.0 * 0.999 ** i, 0.01 + 0.0001 * (i % 5), 1) for i in range(100)]).segments
    orders = rdp.DEFAULT_ORDERS
    fast = rdp.release_rdp(segs, orders)
    monkeypatch.setattr(rdp, "CHORD_ABOVE", 10**9)
    exact = rdp.release_rdp(segs, orders)
    assert np.all(fast >= exact * (1 - 1e-13))
    ints = (orders == np.round(orders)) & (orders >= 2) & (orders <= 64)
    assert np.allclose(fast[ints], exact[ints], rtol=1e-12, atol=0)
    assert np.all(fast[orders > 64] <= 1.03 * exact[orders > 64])
    from opacus.accountants.analysis.rdp import compute_rdp  # an independent implementation

    some = np.array([2.0, 5.0, 32.0])
    ref = sum(compute_rdp(q=s.sample_rate, noise_multiplier=s.noise_multiplier, steps=s.steps, orders=some)
              for s in segs)
    assert np.allclose(fast[np.searchsorted(orders, some)], ref, rtol=1e-9)


SHAPE = [(2.0 * 0.8 ** k, 0.01, 100) for k in range(5)]  # a StepNoise-like decay: σ₀ = 2, × 0.8 every 100 steps


def _at(scale, quantity, args):
    return quantity_bound(PrivacyAnalysis(Release.schedule([(scale * s, q, t) for s, q, t in SHAPE])), quantity, args)


@pytest.mark.parametrize("quantity,target,args", [("reconstruction", 0.2, {"prior_size": 10}),
                                                  ("epsilon", 2.0, {"delta": 1e-5})])
def test_calibrating_a_schedules_scale(quantity, target, args):
    cal = calibrate(quantity, target, schedule=SHAPE, **args)
    assert cal.solve == "scale" and cal.value == cal.scale and cal.bracket[1] == cal.scale
    assert cal.release == Release.schedule([(cal.scale * s, q, t) for s, q, t in SHAPE])
    assert meets(cal.bound, target) and cal.bound.upper == _at(cal.scale, quantity, args).upper
    lo = cal.bracket[0]
    assert cal.scale / lo - 1 <= 1e-3 and not meets(_at(lo, quantity, args), target)  # the bracket's low end fails
    # bracket-aware: 2 % less noise, and even the certified lower end passes the target
    less = PrivacyAnalysis(Release.schedule([(cal.scale / 1.02 * s, q, t) for s, q, t in SHAPE]))
    low_end = less.epsilon(args["delta"], two_sided=True).lower if quantity == "epsilon" else \
        less.risk(quantity, **args).lower
    assert low_end > target
    d = cal.to_dict()
    assert d["scale"] == cal.scale and d["segments"] == 5 and d["noise_multiplier"] == cal.scale * 2.0 * 0.8 ** 4


def test_scale_calibration_validates_its_inputs():
    with pytest.raises(ReconRiskError, match="schedule calibrates its scale.*noise_multiplier"):
        calibrate("reconstruction", 0.2, schedule=SHAPE, noise_multiplier=1.0, prior_size=10)
    with pytest.raises(ReconRiskError, match="schedule calibrates its scale.*schedule=None"):
        calibrate("reconstruction", 0.2, solve="scale", prior_size=10)
    with pytest.raises(ReconRiskError, match=r"segments\[1\]: noise_multiplier must be > 0"):
        calibrate("reconstruction", 0.2, schedule=[(1.0, 0.01, 10), (-1.0, 0.01, 10)], prior_size=10)
    with pytest.raises(ReconRiskError, match="target must exceed"):
        calibrate("reconstruction", 0.05, schedule=SHAPE, prior_size=10)


def test_fano_kl_of_a_many_step_schedule_bounds_the_exact_sum(monkeypatch):
    """Beyond 32 distinct steps the Fano bound's KL reads each step at the smallest σ of its 1 % bucket: never
    below the per-step sum, at most ~2 % above it."""
    from reconrisk._src.theory import fano

    r = Release.schedule([(1.0 + 0.003 * i, 0.01, 1) for i in range(100)])
    fast, _ = fano.kl_mutual_information(r)
    monkeypatch.setattr(fano, "KL_BUCKETS_ABOVE", 10**9)
    exact, _ = fano.kl_mutual_information(r)
    assert exact <= fast <= 1.025 * exact and fast != exact
