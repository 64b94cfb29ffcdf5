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


def test_release_noise_families_are_the_mechanisms_registry():
    import warnings

    from reconrisk._src import release as R
    from reconrisk._src.mechanisms.base import by_name

    # a family is a registered mechanism a Segment can hold: the registry is the only table
    assert R.noise_families() == ("gaussian", "vmf")
    assert all(by_name(n).level_name for n in R.noise_families())
    with pytest.raises(ReconRiskError, match="noise must be one of.*found 'laplace'"):
        Release(1.0, noise="laplace")  # registered, but no DP-SGD release has Laplace noise
    assert Release(concentration=1.0, noise="vmf").noise == "vmf" == Release.vmf(1.0).segments[0].noise
    # the old names are read-only views of the registry, with a DeprecationWarning
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert tuple(R.NOISE_FAMILIES) == R.noise_families() and R.IMPLEMENTED_NOISE == {"gaussian", "vmf"}
    assert len(w) == 2 and all(issubclass(x.category, DeprecationWarning) for x in w)


def test_gaussian_only_computations_refuse_a_vmf_release():
    """A VMF release is never read as a Gaussian one whose noise multiplier is the concentration."""
    import numpy as np
    import pytest

    import reconrisk as rr
    from reconrisk._src.accounting.order2 import release_rdp_alpha2
    from reconrisk import risk
    from reconrisk import tradeoff
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
