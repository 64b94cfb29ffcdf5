"""EventAnalysis parity with PrivacyAnalysis (issue 24): risks, GDP μ, refinement; release files of
non-Gaussian events through ``bound``/``risk``/``report``; calibration with fixed-size batches.

Exact references: one Laplace step of scale b (sensitivity 1, ε₀ = 1/b) has the trade-off curve below
(Neyman–Pearson on the two Laplace laws), TV = δ(0) = 1 − e^{−ε₀/2}. Sizes: single Laplace steps compose in
milliseconds; the refinement test composes 50 subsampled steps on grids from 2e-3 down (≈ 1 s).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk._src.analysis.events import EventAnalysis
from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError
from reconrisk._src.release import Release

dpa = pytest.importorskip("dp_accounting")


def laplace_tradeoff(alpha, eps0):
    alpha = np.asarray(alpha, dtype=float)
    return np.where(alpha <= math.exp(-eps0) / 2, 1 - math.exp(eps0) * alpha,
                    np.where(alpha <= 0.5, math.exp(-eps0) / (4 * alpha), math.exp(-eps0) * (1 - alpha)))


@pytest.mark.parametrize("b", [0.7, 3.0])
def test_laplace_event_risks_contain_the_exact_values(b):
    a = PrivacyAnalysis.from_dp_event(dpa.LaplaceDpEvent(b))
    assert isinstance(a, EventAnalysis)
    e0 = 1 / b
    tv = -math.expm1(-e0 / 2)
    ma = a.risk("membership_advantage")
    assert ma.lower - 1e-12 <= tv <= ma.upper + 1e-12 and ma.upper - ma.lower < 1e-4
    bs = a.risk("bayes_security")
    assert bs.lower - 1e-12 <= 1 - tv <= bs.upper + 1e-12
    for n in (2, 10, 1000):
        exact = 1 - float(laplace_tradeoff(1 / n, e0))
        r = a.risk("reidentification", prior_size=n)
        assert r.lower - 1e-12 <= exact <= r.upper + 1e-12
        rad = a.risk("rad", prior_size=n)  # RAD = ReRo(1/N) − 1/N for a uniform prior
        assert rad.lower - 1e-12 <= exact - 1 / n <= rad.upper + 1e-12
    tpr = a.risk("membership_tpr", fpr=0.01)
    assert tpr.lower - 1e-12 <= 1 - float(laplace_tradeoff(0.01, e0)) <= tpr.upper + 1e-12
    rad = a.risk("rad", prior=[0.5, 0.3, 0.2])
    assert 0 <= rad.lower <= rad.upper <= 1 - 0.5


@settings(max_examples=15, deadline=None)
@given(b=st.floats(0.3, 5.0), n=st.integers(2, 10**6), la=st.floats(-9, -0.01))
def test_laplace_event_risk_brackets_property(b, n, la):
    a = EventAnalysis(dpa.LaplaceDpEvent(b))
    e0 = 1 / b
    for r, exact in ((a.risk("membership_advantage"), -math.expm1(-e0 / 2)),
                     (a.risk("reidentification", prior_size=n), 1 - float(laplace_tradeoff(1 / n, e0))),
                     (a.risk("membership_tpr", fpr=10.0**la), 1 - float(laplace_tradeoff(10.0**la, e0)))):
        assert r.lower <= r.upper and r.lower - 1e-12 <= exact <= r.upper + 1e-12
    lo = a.risk("membership_advantage").lower
    assert EventAnalysis(dpa.LaplaceDpEvent(b * 1.5)).risk("membership_advantage").upper <= lo + 1e-9  # more noise


def test_gdp_mu_of_events():
    g = EventAnalysis(dpa.GaussianDpEvent(2.0)).gdp_mu()  # exactly 0.5-GDP
    assert g.lower - 1e-9 <= 0.5 <= g.upper and g.upper == pytest.approx(0.5)
    b = 1.5
    lap = EventAnalysis(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(b), 2)).gdp_mu()
    mu1 = 2 * special.ndtri(1 / (1 + math.exp(-1 / b)))
    assert lap.lower <= lap.upper == pytest.approx(math.sqrt(2) * mu1)
    # the pure-DP μ is sound: G_μ lies below the Laplace curve (one step) everywhere
    al = np.logspace(-9, math.log10(0.999), 300)
    assert np.all(special.ndtr(special.ndtri(1 - al) - mu1) <= laplace_tradeoff(al, 1 / b) + 1e-12)
    from reconrisk._src.mechanisms.base import Step  # (a mixture's PLD takes about a minute: not built here)
    from reconrisk._src.mechanisms.mixture_gaussians import MixtureOfGaussians
    from reconrisk._src.mechanisms.samplers import NoAmplification

    assert Step(MixtureOfGaussians(1.0, (0, 1), (0.5, 0.5)), NoAmplification()).gdp_mu_squared() is None  # upper None


def test_questions_refine_the_grid_when_they_need_precision():
    ev = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.2, dpa.LaplaceDpEvent(1.0)), 50)
    a = EventAnalysis(ev, value_discretization=2e-3)
    first = a.rero(0.1, rel_tol=1.0)  # any width will do: the first grid
    fine = a.rero(0.1, rel_tol=1e-3)
    assert first.details["discretization"] == 2e-3 and fine.details["discretization"] < 2e-3
    assert fine.upper - fine.lower < first.upper - first.lower
    assert max(first.lower, fine.lower) <= min(first.upper, fine.upper)  # both certified: they overlap
    t = a.tradeoff([1e-3, 0.1, 0.4], tol=1e-4)
    assert np.all(t.beta.lower <= t.beta.upper) and t.details["discretization"] <= 2e-3
    r = a.risk("reconstruction", kappa=0.1)
    assert (r.lower, r.upper) == (a.rero(0.1).lower, a.rero(0.1).upper)


LAPLACE_TOML = """
[[release.events]]
type = "laplace"
noise_multiplier = 2.0
count = 3
"""


@pytest.fixture()
def laplace_file(tmp_path):
    p = tmp_path / "laplace.toml"
    p.write_text(LAPLACE_TOML)
    return p


def run_json(capsys, args):
    assert main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_release_file_of_laplace_events_end_to_end(capsys, laplace_file, tmp_path):
    b = run_json(capsys, ["bound", "--release", str(laplace_file), "--prior-size", "100"])
    assert "LaplaceDpEvent" in b["dp_event"] and b["baselines"]["rdp"] is None
    assert 0.01 < b["rero"]["lower"] <= b["rero"]["upper"] <= b["baselines"]["dp"]
    r = run_json(capsys, ["risk", "--release", str(laplace_file), "--measure", "reconstruction", "--prior-size", "100"])
    assert (r["lower"], r["upper"]) == (b["rero"]["lower"], b["rero"]["upper"])
    assert main(["bound", "--release", str(laplace_file), "--prior-size", "100", "--method", "mc"]) == 2
    err = capsys.readouterr().err.strip()
    assert "LaplaceDpEvent" in err and err.count("\n") == 0
    rep = run_json(capsys, ["report", "--release", str(laplace_file), "--prior-size", "10", "--samples", "0",
                            "--out", str(tmp_path / "rep")])
    assert rep["fano"]["applicable"] is False and "LaplaceDpEvent" in rep["fano"]["reason"]
    assert rep["rero"]["pld"]["lower"] <= rep["rero"]["pld"]["upper"]
    assert all(x["lower"] <= x["upper"] for x in rep["risks"])
    assert (tmp_path / "rep" / "report.html").stat().st_size > 0


def test_release_file_of_an_unsupported_mix_is_refused_in_one_line(capsys, tmp_path):
    p = tmp_path / "mix.toml"
    p.write_text(LAPLACE_TOML + '\n[[release.events]]\ntype = "sampled_without_replacement_gaussian"\n'
                 "noise_multiplier = 1.0\nsource_dataset_size = 100\nsample_size = 10\n")
    assert main(["risk", "--release", str(p), "--measure", "membership-advantage"]) == 2
    err = capsys.readouterr().err.strip()
    assert "mixes" in err and err.count("\n") == 0


@pytest.fixture(scope="module")
def fixed_calibration():
    from reconrisk import calibrate

    return calibrate("reconstruction", 0.3, kappa=0.1, batch_size=20, dataset_size=1000, steps=100)


def test_calibrate_fixed_batches_with_the_one_calibrator(fixed_calibration):
    from reconrisk import calibrate

    c = fixed_calibration
    assert c.sampler == "fixed" and c.release == Release.fixed_batch(c.noise_multiplier, 20, 1000, 100)
    again = PrivacyAnalysis(c.release).risk("reconstruction", kappa=0.1)
    assert again.upper == c.bound.upper <= 0.3  # the same bound through another door
    poisson = calibrate("reconstruction", 0.3, kappa=0.1, sample_rate=0.02, steps=100)
    # a fixed-batch release is its Poisson dominating pair at sigma/2: the answers differ by 2 (within rel_tol)
    assert c.noise_multiplier / poisson.noise_multiplier == pytest.approx(2.0, rel=3e-3)
    with pytest.raises(ReconRiskError, match="not both"):
        calibrate("reconstruction", 0.3, kappa=0.1, sample_rate=0.02, batch_size=20, dataset_size=1000, steps=100)


def test_calibrate_the_largest_batch(fixed_calibration, capsys):
    from reconrisk import calibrate

    s = fixed_calibration.noise_multiplier
    c = calibrate("reconstruction", 0.3, "batch_size", kappa=0.1, noise_multiplier=s, dataset_size=1000, steps=100)
    assert c.batch_size >= 20 and c.bound.upper <= 0.3
    if c.batch_size < 1000:
        over = PrivacyAnalysis(Release.fixed_batch(s, c.batch_size + 1, 1000, 100)).risk("reconstruction", kappa=0.1)
        assert over.upper > 0.3
    d = run_json(capsys, ["calibrate", "--measure", "reconstruction", "--target", "0.3", "--kappa", "0.1",
                          "--batch-size", "20", "--dataset-size", "1000", "--steps", "100"])
    assert d["sampler"] == "fixed" and d["batch_size"] == 20 and d["noise_multiplier"] == fixed_calibration.noise_multiplier
