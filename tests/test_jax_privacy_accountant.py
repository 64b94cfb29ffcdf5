"""reconrisk's jax-privacy accountant (reconrisk.integrations.jax_privacy), driven through jax-privacy's own
DpParams and calibrators, held against jax-privacy's own DpsgdTrainingAccountant (PLD and RDP configs) and
against dp_accounting composed independently.

Settings are kept small (a few hundred steps, coarse where jax-privacy's own PLD is slow) so the file runs in
about a minute on 2 cores.
"""

from __future__ import annotations

import math

import pytest

jp = pytest.importorskip("jax_privacy", reason="the jax-privacy integration needs jax-privacy "
                                               "(pip install reconrisk[jax-privacy])")
dpa = pytest.importorskip("dp_accounting", reason="the independent reference composes with dp_accounting")

from jax_privacy.accounting import (  # noqa: E402
    DpParams, DpsgdTrainingAccountant, PldAccountantConfig, RdpAccountantConfig, SamplingMethod)

from reconrisk._src.analysis.privacy import PrivacyAnalysis  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk.integrations import jax_privacy as rj  # noqa: E402

DELTA = 1e-5
POISSON, FIXED = SamplingMethod.POISSON, SamplingMethod.FIXED_BATCH_SIZE
#: reconrisk's upper end charges a certified floating-point round-off allowance that dp_accounting does not
#: (relative ~1e-7 on the same 1e-4 grid); "never looser" is held to it.
ROUNDOFF = 1e-6


def _params(**kw) -> DpParams:
    return DpParams(delta=kw.pop("delta", DELTA), **kw)


def _jax_privacy(config, T, p) -> float:
    return DpsgdTrainingAccountant(config).compute_epsilon(T, p)


def test_public_path_is_the_module_and_import_reconrisk_leaves_jax_privacy_alone():
    import subprocess
    import sys

    import reconrisk._src.integrations.jax_privacy as impl

    assert rj is impl
    code = "import sys, reconrisk, reconrisk.integrations; reconrisk.Release; print('jax_privacy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("T, kw", [
    (1000, dict(noise_multipliers=1.0, num_samples=60000, batch_size=256)),
    (400, dict(noise_multipliers=0.8, num_samples=5000, batch_size=50)),
    (2000, dict(noise_multipliers=2.0, num_samples=50000, batch_size=500, cycle_length=10)),
])
def test_poisson_never_looser_than_jax_privacy_pld_and_inside_or_below_it(T, kw):
    p = _params(**kw)
    acc = rj.ReconRiskAccountant()
    ours = acc.compute_epsilon(T, p)
    theirs = _jax_privacy(PldAccountantConfig(), T, p)
    rdp = _jax_privacy(RdpAccountantConfig(), T, p)
    bracket = acc.analysis(T, p).epsilon(DELTA, two_sided=True)
    assert ours == bracket.upper
    assert ours <= theirs * (1 + ROUNDOFF)  # never looser than jax-privacy's PLD
    assert bracket.lower <= theirs  # jax-privacy's PLD lies inside or above the certified bracket
    assert ours < rdp
    assert isinstance(acc.analysis(T, p), PrivacyAnalysis)


def test_poisson_equals_dp_accounting_composed_independently():
    """The same run composed by dp_accounting's PLDAccountant directly (float parameters, the cycle reduction
    written out): jax-privacy's reading of cycle_length and the schedule, reproduced independently."""
    p = _params(noise_multipliers=[(0, 1.2), (150, 0.9)], num_samples=20000, batch_size=100,
                batch_size_scale_schedule={100: 2})
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    for t, s, b in [(100, 1.2, 100), (50, 1.2, 200), (150, 0.9, 200)]:
        acc.compose(dpa.PoissonSampledDpEvent(b / 20000, dpa.GaussianDpEvent(s)), t)
    ref = acc.get_epsilon(DELTA)
    ours = rj.ReconRiskAccountant().compute_epsilon(300, p)
    assert ours == pytest.approx(ref, rel=1e-5)
    assert ours <= ref * (1 + ROUNDOFF)
    assert rj.schedule(300, p) == [(100, 1.2, 100), (50, 1.2, 200), (150, 0.9, 200)]

    q = _params(noise_multipliers=1.5, num_samples=10007, batch_size=40, cycle_length=5)  # 10007 // 5 = 2001
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dpa.PoissonSampledDpEvent(40 / 2001, dpa.GaussianDpEvent(1.5)), math.ceil(333 / 5))
    assert rj.ReconRiskAccountant().compute_epsilon(333, q) == pytest.approx(acc.get_epsilon(DELTA), rel=1e-5)


def test_fixed_batch_is_the_replace_one_release_and_sound():
    """Fixed-size batches: replace-one, the symmetrised per-step curve composed (an adversary picks each step's
    orientation). jax-privacy composes one orientation of the Poisson pair at σ/2, which is below: the gap is
    that choice, and ours is at least the better orientation's value (never below what jax-privacy reports)."""
    from reconrisk._src.release import Release

    T, p = 200, _params(noise_multipliers=1.0, num_samples=10000, batch_size=100, sampling_method=FIXED)
    acc = rj.ReconRiskAccountant()
    ours = acc.compute_epsilon(T, p)
    assert acc.analysis(T, p).release.as_run == Release.fixed_batch(1.0, 100, 10000, T)
    theirs = _jax_privacy(PldAccountantConfig(), T, p)
    assert theirs * (1 - ROUNDOFF) <= ours < _jax_privacy(RdpAccountantConfig(), T, p)


def test_refusals_name_the_field():
    acc = rj.ReconRiskAccountant()
    cases = [
        (dict(noise_multipliers=None), "noise_multipliers"),
        (dict(noise_multipliers=-1.0), "noise_multipliers"),
        (dict(noise_multipliers=[(5, 1.0)]), "noise_multipliers"),
        (dict(batch_size=20000), "batch_size"),
        (dict(cycle_length=4, noise_multipliers=[(0, 1.0), (10, 2.0)]), "noise_multipliers"),
        (dict(cycle_length=4, batch_size_scale_schedule={10: 2}), "batch_size_scale_schedule"),
        (dict(cycle_length=4, batch_size=3000), "batch_size"),
        (dict(truncated_batch_size=50, sampling_method=FIXED), "truncated_batch_size"),
        (dict(examples_per_user=2, cycle_length=3), "cycle_length"),
        (dict(examples_per_user=0), "examples_per_user"),
        (dict(delta=0.0), "delta"),
    ]
    for kw, field in cases:
        base = dict(noise_multipliers=1.0, num_samples=10000, batch_size=100)
        base.update(kw)
        with pytest.raises(ReconRiskError, match=field):
            acc.compute_epsilon(10, _params(**base))
    with pytest.raises(ReconRiskError, match="num_updates"):
        acc.compute_epsilon(-1, _params(noise_multipliers=1.0, num_samples=100, batch_size=10))
    with pytest.raises(ReconRiskError, match="DpParams"):
        acc.compute_epsilon(1, {"noise_multipliers": 1.0})


def test_conventions_of_every_dp_training_accountant():
    acc = rj.ReconRiskAccountant(PldAccountantConfig())
    p = _params(noise_multipliers=1.0, num_samples=1000, batch_size=10)
    assert acc.compute_epsilon(0, p) == 0.0
    assert acc.compute_epsilon(5, DpParams(noise_multipliers=1.0, num_samples=1000, batch_size=10, delta=DELTA,
                                           is_finite_guarantee=False)) == math.inf
    assert acc.compute_epsilon(5, _params(noise_multipliers=0.0, num_samples=1000, batch_size=10)) == math.inf
    assert acc.can_calibrate_steps() and acc.can_calibrate_batch_size() and acc.can_calibrate_noise_multipliers()
    assert isinstance(acc, jp.accounting.DpTrainingAccountant)
