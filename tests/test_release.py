import math

import pytest

from reconrisk import ReconRiskError, Release, Segment


def test_homogeneous_release_fields():
    r = Release(1.5, 0.01, 1000, clip_norm=0.1)
    assert (r.noise_multiplier, r.sample_rate, r.steps, r.clip_norm) == (1.5, 0.01, 1000, 0.1)
    assert r.noise_std == pytest.approx(0.15)
    assert r.to_dict()["noise_multiplier"] == 1.5


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(noise_multiplier=0.0), "noise_multiplier"),
        (dict(noise_multiplier=-1.0), "noise_multiplier"),
        (dict(noise_multiplier=math.nan), "noise_multiplier"),
        (dict(noise_multiplier=1.0, sample_rate=0.0), "sample_rate"),
        (dict(noise_multiplier=1.0, sample_rate=1.5), "sample_rate"),
        (dict(noise_multiplier=1.0, steps=0), "steps"),
        (dict(noise_multiplier=1.0, steps=2.5), "steps"),
        (dict(noise_multiplier=1.0, clip_norm=0.0), "clip_norm"),
        (dict(noise_multiplier=1.0, noise="laplace"), "noise"),
    ],
)
def test_release_rejects_bad_input_naming_the_parameter(kwargs, name):
    with pytest.raises(ReconRiskError) as err:
        Release(**kwargs)
    assert name in str(err.value)
    assert "found" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_schedule_from_opacus_history_merges_equal_segments():
    history = [(1.0, 0.01, 100), (1.0, 0.01, 50), (2.0, 0.02, 10)]
    r = Release.from_opacus_history(history)
    assert r.segments == (Segment(1.0, 0.01, 150), Segment(2.0, 0.02, 10))
    assert r.steps == 160
    with pytest.raises(ReconRiskError, match="segments"):
        _ = r.noise_multiplier
    with pytest.raises(ReconRiskError, match="segments\\[0\\]"):
        Release.schedule([(1.0, 0.01)])


def test_full_batch_property():
    assert Release(1.0, 1.0, 10).full_batch
    assert not Release(1.0, 0.5, 10).full_batch
    assert Release.schedule([(1.0, 1.0, 3), (2.0, 1.0, 4)]).full_batch
    assert not Release.schedule([(1.0, 1.0, 3), (2.0, 0.1, 4)]).full_batch


def test_release_refuses_a_noise_family_nothing_implements(monkeypatch):
    from reconrisk._src import release as R

    # "vmf" is a known family (seed 004) but no mechanism implements it here yet: refused, not silently Gaussian.
    monkeypatch.setattr(R, "IMPLEMENTED_NOISE", {"gaussian"})
    with pytest.raises(ReconRiskError, match="noise must be an implemented noise family.*found 'vmf'"):
        Release(concentration=1.0, noise="vmf")
    with pytest.raises(ReconRiskError, match="noise"):
        Release.schedule([(1.0, 0.1, 3)], noise="vmf")
    # the mechanism's module registers the family; then the release is accepted
    monkeypatch.setattr(R, "IMPLEMENTED_NOISE", {"gaussian"})
    R.register_noise_family("vmf")
    assert Release(concentration=1.0, noise="vmf").noise == "vmf"
    with pytest.raises(ReconRiskError, match="noise must be one of"):
        R.register_noise_family("laplace")


def test_gaussian_only_computations_refuse_a_vmf_release():
    """A VMF release is never read as a Gaussian one whose noise multiplier is the concentration."""
    import numpy as np
    import pytest

    import reconrisk as rr
    from reconrisk._src.accounting.order2 import release_rdp_alpha2
    from reconrisk._src.api import risk
    from reconrisk._src.api import tradeoff
    from reconrisk.errors import ReconRiskError

    r = rr.Release.vmf(10.0, 0.01, 100)
    calls = [
        lambda: rr.rero_bound(release=r, prior_size=10),
        lambda: rr.rero_bound(release=r, prior_size=10, method="rdp"),
        lambda: rr.epsilon(release=r),
        lambda: tradeoff(r, np.array([0.1])),
        lambda: risk(r, "reconstruction", prior_size=10),
        lambda: release_rdp_alpha2(r),
    ]
    for call in calls:
        with pytest.raises(ReconRiskError, match="noise='gaussian'"):
            call()
