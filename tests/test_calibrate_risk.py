"""Calibration to any risk measure (``reconrisk.calibrate``): the certified bound at the answer meets the target
exactly, and is not wasteful. (``calibrate_risk``, its deprecated dict view: tests/test_results_vocabulary.py.)"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk import Release
from reconrisk import calibrate
from reconrisk._src.api import risk
from reconrisk.errors import ReconRiskError

MEASURES = [("reconstruction", {"prior_size": 10}), ("membership_tpr", {"fpr": 0.01}), ("membership_advantage", {}),
            ("rad", {"prior": [0.5, 0.3, 0.2]})]


@settings(max_examples=12)
@given(which=st.sampled_from(MEASURES), frac=st.floats(0.05, 0.9), steps=st.integers(1, 5000))
def test_full_batch_noise_multiplier_meets_target(which, frac, steps):
    measure, kw = which
    base = risk(Release(1.0, 1.0, 1), measure, **kw).baseline
    target = frac * (1 - base) if measure == "rad" else base + frac * (1 - base)
    cal = calibrate(measure, target, "noise-multiplier", sample_rate=1.0, steps=steps, rel_tol=1e-4, **kw)
    r = risk(Release(cal.noise_multiplier, 1.0, steps), measure, **kw)
    assert r.upper == cal.bound.upper <= target  # exactly, in floating point
    tighter = risk(Release(cal.noise_multiplier * (1 - 1e-3), 1.0, steps), measure, **kw)
    assert tighter.upper > target  # the smallest σ, to rel_tol


@settings(max_examples=8)
@given(sigma=st.floats(2.5, 8.0), target=st.floats(0.25, 0.6))  # steps=1 must meet the target
def test_steps_and_sample_rate_meet_target(sigma, target):
    t = calibrate("reconstruction", target, "steps", noise_multiplier=sigma, sample_rate=1.0, prior_size=10).steps
    assert risk(Release(sigma, 1.0, t), "reconstruction", prior_size=10).upper <= target
    assert risk(Release(sigma, 1.0, t + 1), "reconstruction", prior_size=10).upper > target  # the most steps
    q = calibrate("reconstruction", target, "sample-rate", noise_multiplier=sigma, steps=1, prior_size=10).sample_rate
    assert risk(Release(sigma, q, 1), "reconstruction", prior_size=10).upper <= target


def test_bayes_security_target_is_a_minimum():
    cal = calibrate("bayes_security", 0.9, "noise-multiplier", sample_rate=1.0, steps=100)
    assert cal.bound.lower >= 0.9 and cal.noise_multiplier > 0


@pytest.mark.parametrize(
    "args, kw, word",
    [
        (("reconstruction", 0.05, "noise-multiplier"), {"kappa": 0.1, "sample_rate": 0.1, "steps": 10}, "target"),
        (("reconstruction", 0.5, "noise-multiplier"), {"kappa": 0.1, "sample_rate": 0.1, "steps": 10,
                                                       "noise_multiplier": 1.0}, "noise_multiplier"),
        (("reconstruction", 0.5, "steps"), {"kappa": 0.1, "sample_rate": 0.1}, "noise_multiplier"),
        (("reconstruction", 1.5, "steps"), {"kappa": 0.1}, "target"),
        (("nope", 0.5, "steps"), {}, "measure"),
        (("membership_advantage", 0.5, "epochs"), {}, "solve"),
        (("membership_advantage", 0.01, "steps"), {"noise_multiplier": 0.1, "sample_rate": 1.0}, "steps=1"),
    ],
)
def test_bad_input(args, kw, word):
    with pytest.raises(ReconRiskError, match=word):
        calibrate(*args, **kw)
