"""The Monte-Carlo sampler (bounds/montecarlo.py): the numbers depend on the seed only, and the sampler's
shortcuts (per-block streams, a Binomial count of sampled steps, in-place tiles) draw the laws of Hayes,
Mahloujifar & Balle 2023, Algorithm 1.

Sizes: each check draws at most 4·10⁶ normals (< 0.2 s); the law checks are two-sample Kolmogorov–Smirnov
tests against a direct construction (T Bernoulli draws per row, the log-ratio by ``logaddexp``) at n = 4,000
per side, seeded, each with a false-alarm rate of 1e-3 (a shifted or mis-scaled sampler — a wrong sign of
1/(2σ²), σ² for σ, the sampled steps not shifted — moves the KS statistic by far more than 0.05 at this n).
"""

import numpy as np
import pytest
from scipy import stats

from reconrisk import Release
from reconrisk._src.measures import montecarlo as M
from reconrisk._src.analysis.privacy import PrivacyAnalysis


def _direct(rng, n, release, from_mu):
    """log r of n samples by the printed construction: every coordinate drawn, Bernoulli(q) shifts."""
    out = np.zeros(n)
    for s in release.segments:
        x = rng.standard_normal((n, s.steps)) * s.noise_multiplier
        if from_mu:
            x += rng.random((n, s.steps)) < s.sample_rate
        z = (2 * x - 1) / (2 * s.noise_multiplier**2)
        out += np.logaddexp(np.log1p(-s.sample_rate), np.log(s.sample_rate) + z).sum(axis=1) if s.sample_rate < 1 \
            else z.sum(axis=1)
    return out


def test_same_seed_same_numbers_whatever_the_threads(monkeypatch):
    monkeypatch.setattr(M, "BLOCK_FLOATS", 1 << 14)  # many blocks, so that threads interleave
    segs = Release(1.0, 0.05, 200).segments
    runs = [M.LogRatioSampler(7, 3000, segs, threads=t).result() for t in (0, 1, 3)]
    for nu, mu in runs[1:]:
        assert np.array_equal(nu, runs[0][0]) and np.array_equal(mu, runs[0][1])
    other = M.LogRatioSampler(8, 3000, segs, threads=2).result()
    assert not np.array_equal(other[0], runs[0][0])


@pytest.mark.parametrize("release", [Release(1.0, 0.05, 200), Release(0.5, 0.5, 20), Release(2.0, 1.0, 10),
                                     Release.schedule([(1.0, 0.02, 30), (1.5, 0.1, 20)])])
@pytest.mark.parametrize("from_mu", [False, True])
def test_sampler_draws_the_printed_law(release, from_mu):
    fast = M.sample_log_ratios(1, 4000, release.segments, from_mu=from_mu)
    direct = _direct(np.random.default_rng(2), 4000, release, from_mu)
    assert stats.ks_2samp(fast, direct).pvalue > 1e-3


def test_rows_longer_than_a_tile(monkeypatch):
    # T above TILE_FLOATS: a row is drawn in column tiles, and the sampled steps of a row span tiles
    monkeypatch.setattr(M, "TILE_FLOATS", 64)
    rel = Release(1.0, 0.3, 200)
    fast = M.sample_log_ratios(3, 2000, rel.segments, from_mu=True)
    assert stats.ks_2samp(fast, _direct(np.random.default_rng(4), 2000, rel, True)).pvalue > 1e-3


def test_cancel_and_errors_stop_the_threads():
    segs = Release(1.0, 0.01, 1000).segments
    job = M.LogRatioSampler(0, 50_000, segs, threads=2)
    job.cancel()
    assert all(not t.is_alive() for t in job._blocks._workers)

    def boom(_k):
        raise RuntimeError("progress failed")

    with pytest.raises(RuntimeError, match="progress failed"):
        M.LogRatioSampler(0, 3000, Release(1.0, 0.05, 200).segments, progress=boom, threads=2).result()


def test_a_started_sampler_is_used_only_for_its_own_draws():
    """``reconrisk report`` starts the draws before its imports and hands them over: the result is the same
    as drawing in place, and draws for another seed, size or release are cancelled and drawn anew."""
    from reconrisk._src.analysis.privacy_rero import start_monte_carlo

    rel = Release(1.0, 0.05, 200)
    direct = start_monte_carlo(PrivacyAnalysis(rel), 0.1, samples=3000, seed=5).bounds()[0]
    early = M.LogRatioSampler(5, 3000, rel.segments, threads=1)
    assert start_monte_carlo(PrivacyAnalysis(rel), 0.1, samples=3000, seed=5, sampler=early).bounds()[0] == direct
    for wrong in (M.LogRatioSampler(6, 3000, rel.segments, threads=1),
                  M.LogRatioSampler(5, 2000, rel.segments, threads=1),
                  M.LogRatioSampler(5, 3000, Release(1.0, 0.06, 200).segments, threads=1)):
        assert start_monte_carlo(PrivacyAnalysis(rel), 0.1, samples=3000, seed=5, sampler=wrong).bounds()[0] == direct
        assert all(not t.is_alive() for t in wrong._blocks._workers)


def test_a_started_sampler_is_cancelled_when_the_arguments_are_refused():
    from reconrisk import ReconRiskError
    from reconrisk._src.analysis.privacy_rero import start_monte_carlo

    rel = Release(1.0, 0.01, 1000)
    early = M.LogRatioSampler(0, 50_000, rel.segments, threads=2)
    with pytest.raises(ReconRiskError, match="confidence"):
        start_monte_carlo(PrivacyAnalysis(rel), 0.1, samples=50_000, seed=0, confidence=1.5, sampler=early)
    assert all(not t.is_alive() for t in early._blocks._workers)


def test_report_cli_draws_the_same_numbers_as_bound_mc(tmp_path, monkeypatch):
    """The CLI's early start (flags) and ``bound --method mc`` (no early start) draw the same samples, and the
    report draws once: the early sampler is the one used."""
    import json

    from reconrisk._src.cli import main

    made = []
    real = M.LogRatioSampler

    class Counting(real):
        def __init__(self, *a, **k):
            made.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(M, "LogRatioSampler", Counting)
    main(["report", "-s", "1", "-q", "0.05", "-T", "50", "--prior-size", "10", "--samples", "2000",
          "--out", str(tmp_path), "--json"])
    assert len(made) == 1
    monkeypatch.setattr(M, "LogRatioSampler", real)
    mc = json.loads((tmp_path / "report.json").read_text())["rero"]["mc"]
    from reconrisk._src.analysis.privacy_rero import rero_bounds

    ref = rero_bounds(PrivacyAnalysis(Release(1.0, 0.05, 50)), [0.1], method="mc", samples=2000, seed=0)[0]
    assert (mc["lower"], mc["upper"], mc["estimate"]) == (ref.lower, ref.upper, ref.estimate)
