"""One result vocabulary: every certified number of a public result is read from a ``Bound``.

* each public result class holds its certified numbers as :class:`reconrisk._src.results.Bound` fields, and no
  dataclass in a public ``__all__`` stores one under a scalar ``*_upper`` / ``*_lower`` / ``*_bound`` name;
* the scalar spellings of earlier releases still read, equal the Bound's end, and warn
  (:class:`DeprecationWarning`); ``to_dict`` keeps the keys users' JSON has;
* ``calibrate_noise`` and ``calibrate_risk`` answer with ``calibrate``'s numbers and warn;
  ``reconrisk.epsilon`` is the float ``PrivacyAnalysis(r).epsilon(d).upper``;
* no issue numbers in ``src/`` (comments say what and why).
(:mod:`tests.test_vocabulary` covers the renamed keyword arguments and functions.)
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import reconrisk as rr
from reconrisk._src.analysis.calibrate import Calibration
from reconrisk._src.analysis.calibrate_risk import calibrate_risk
from reconrisk._src.audit.empirical import EmpiricalAudit, empirical_audit
from reconrisk.errors import ReconRiskError
from reconrisk._src.accounting.vmf import VmfEpsilon, vmf_epsilon
from reconrisk._src.experiments.audit import AuditSetting, Certificate, certify
from reconrisk._src.experiments.fil import LogRegExperiment, logreg_experiment
from reconrisk._src.measures.tradeoff import TradeOff
from reconrisk._src.train.convex import LogRegFIL, binary_digits, logreg_dfil
from reconrisk._src.train.fil import FILAccounting, FILConfig
from reconrisk._src.results import Bound
from reconrisk._src.theory.analytic import AnalyticBound, AnalyticCalibration, analytic_bound, analytic_calibration
from reconrisk._src.theory.fano import FanoBound, fano_bound
from reconrisk._src.theory.mse import MseBound, mse_bound, rdp_mse

SRC = Path(__file__).resolve().parents[1] / "src" / "reconrisk"


def _silent(fn):
    """``fn()`` where any warning is an error: the new spelling never warns."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float)) if a is not None else b is None


# (result, its Bound fields, {old spelling: the new one it equals}, to_dict keys of earlier releases)
def _results():
    curve = rr.tradeoff(rr.Release(1.0, 0.01, 100), [1e-3, 1e-2, 0.1])
    fano = fano_bound(1.0, 10)
    mse = mse_bound(rdp_epsilon=1.0, diam=2.0)
    ab = analytic_bound("mse", 0.5, 8, eta=0.1, min_norm=1.0, clip_norm=0.8)
    cal = analytic_calibration("psnr", 20.0, 0.05, 4, 0.5)
    emp = empirical_audit(30, 100, kappa=0.1, delta=1e-5, certified_rero=0.4)
    X, y, _ = binary_digits(0, 1)
    lr = logreg_dfil(X, y, 1e-2, 1e-2)
    lx = logreg_experiment(trials=0)
    rel = rr.Release(1.0, 0.05, 10, clip_norm=1.0)
    acc = FILAccounting(fil=np.array([0.5, 2.0]), fil_runs=np.array([[0.5, 2.0]]), measure="dfil", release=rel,
                        config=FILConfig(), noise_std=1.0, subsampling=None, subsampling_factor=0.05,
                        rdp_epsilon=0.3, rdp_mse=rdp_mse(0.3), test_accuracy=None, test_accuracy_runs=())
    vmf = vmf_epsilon(50.0, 13_700, 128 / 60_000, 3, 1 / 60_000)  # Biswas et al. 2024, Table I
    cert = certify(AuditSetting(rr.Release(2.0, 1.0, 10), prior_size=10, delta=1e-5))
    rdp_mse_old = {"rdp_mse_bound": lambda r: r.rdp_mse.lower}
    return [
        (curve, ["beta", "power"],
         {"beta_lower": lambda r: r.beta.lower, "beta_upper": lambda r: r.beta.upper,
          "power_lower": lambda r: r.power.lower, "power_upper": lambda r: r.power.upper},
         ["method", "alpha", "beta_lower", "beta_upper", "power_lower", "power_upper", "max_width", "release",
          "details"]),
        (fano, ["success", "advantage"],
         {"success_upper": lambda r: r.success.upper, "advantage_upper": lambda r: r.advantage.upper},
         ["prior_size", "entropy", "mutual_information", "success_upper", "advantage_upper", "error_bracket",
          "formula"]),
        (mse, ["mse"],
         {"mse_lower_bound": lambda r: r.mse.lower, "log10_mse_lower_bound": lambda r: r.mse.log10_lower,
          "std_lower_bound": lambda r: r.mse.rms_lower},
         ["rdp_epsilon", "diam", "mse_lower_bound", "log10_mse_lower_bound", "std_lower_bound", "release",
          "sensitivity"]),
        (ab, ["bound", "clip", "ncc"],
         {"rero": lambda r: r.bound.upper, "log_rero": lambda r: r.bound.log_upper,
          "rero_clip": lambda r: r.clip.upper, "ncc_bound": lambda r: r.ncc.upper},
         ["metric", "noise_multiplier", "dim", "eta", "rero", "log_rero", "min_norm", "clip_norm", "rero_clip",
          "data_range", "averaged", "expected", "ncc_bound", "optimal_rows", "basis"]),
        (cal, ["bound"], {"achieved_rero": lambda r: r.bound.upper},
         ["metric", "eta", "target_rero", "dim", "min_norm", "data_range", "averaged", "noise_multiplier",
          "achieved_rero"]),
        (emp, ["rero", "epsilon", "certified_rero"], {"certified_rero_upper": lambda r: r.certified_rero.upper},
         ["rero", "epsilon", "epsilon_by_delta", "certified_rero_upper", "rero_ratio", "consistent"]),
        (lr, ["rdp_mse"], rdp_mse_old,
         ["noise_std", "lam", "n", "d", "rdp_epsilon", "epsilon_formula", "rdp_mse_bound", "dfil_bound"]),
        (lx, ["rdp_mse"], rdp_mse_old,
         ["task", "n", "d", "lam", "noise_std", "epsilon_formula", "rdp_epsilon", "rdp_mse_bound", "dfil_bound",
          "fraction_bound_le_1", "violation_fraction", "train_accuracy", "solver_grad_norm", "attack_trials", "seed",
          "figures"]),
        (acc, ["rdp_mse"], rdp_mse_old,
         ["release", "config", "measure", "noise_std", "subsampling_factor", "subsampling", "rdp_epsilon",
          "rdp_mse_bound", "dfil_bound", "max_dfil_bound", "median_dfil_bound", "test_accuracy", "train_seconds"]),
        (vmf, ["bound", "approach1", "approach2"],
         {"epsilon": lambda r: r.bound.upper, "epsilon_approach1": lambda r: r.approach1.upper,
          "epsilon_approach2": lambda r: r.approach2.upper},
         ["epsilon", "approach", "epsilon_approach1", "epsilon_approach2", "alpha", "eps0", "concentration", "dim",
          "sample_rate", "compositions", "delta", "interpolation"]),
        (cert, ["privacy", "rero"], {"epsilon": lambda r: r.privacy.upper}, None),
    ]


RESULTS = _results()
IDS = [type(r[0]).__name__ for r in RESULTS]


@pytest.mark.parametrize("result, fields, old, keys", RESULTS, ids=IDS)
def test_certified_numbers_are_bounds(result, fields, old, keys):
    for name in fields:
        b = _silent(lambda: getattr(result, name))
        assert isinstance(b, Bound), (type(result).__name__, name, b)
        assert b.quantity and b.method, b  # says what is bounded and how
        assert b.lower is not None or b.upper is not None


@pytest.mark.parametrize("result, fields, old, keys", RESULTS, ids=IDS)
def test_old_spellings_read_the_bound_and_warn(result, fields, old, keys):
    cls = type(result).__name__
    for name, new in old.items():
        want = _silent(lambda: new(result))
        with pytest.warns(DeprecationWarning, match=rf"{cls}\.{name} is deprecated.*use {cls}\."):
            got = getattr(result, name)
        assert _same(got, want), (cls, name, got, want)


@pytest.mark.parametrize("result, fields, old, keys", RESULTS, ids=IDS)
def test_to_dict_keeps_the_keys_users_have(result, fields, old, keys):
    if keys is None:  # no to_dict (the audit's certificate is written by SettingResult.to_dict)
        assert not hasattr(result, "to_dict")
        return
    d = _silent(result.to_dict)
    assert list(d) == keys
    for name, new in old.items():  # where a key carries an old spelling's name, it holds the Bound's end
        if name in d and not isinstance(d[name], dict):
            assert _same(d[name], new(result)), (name, d[name])


def test_the_bound_ends_are_the_numbers():
    """The Bounds hold the same numbers the scalar fields held (not a copy that can drift)."""
    f = fano_bound(1.0, 10)
    assert f.success.upper == 1.0 - f.error_bracket[0] and f.success.lower is None
    assert f.advantage.upper == pytest.approx((f.success.upper - 0.1) / 0.9, rel=1e-15)
    m = mse_bound(rdp_epsilon=1.0, diam=2.0)
    assert m.mse.lower == pytest.approx(4.0 / (4.0 * np.expm1(1.0)), rel=1e-12) and m.mse.upper is None
    assert m.mse.rms_lower == np.sqrt(m.mse.lower)
    ab = analytic_bound("mse", 0.5, 8, eta=0.1, min_norm=1.0, clip_norm=0.8)
    assert ab.bound.upper == pytest.approx(rr.rero_mse(0.1, 0.5, 8, min_norm=1.0), rel=1e-14)  # exp(log γ)
    assert ab.bound.log_upper == pytest.approx(np.log(ab.bound.upper), rel=1e-15)
    assert ab.clip.upper == rr.rero_mse(0.1, 0.5, 8, clip_norm=0.8) >= ab.bound.upper
    assert ab.ncc.upper == rr.ncc_bound(0.5, 8)
    assert analytic_bound("ncc", 0.5, 8).bound is None
    t = rr.tradeoff(rr.Release(1.0, 1.0, 3), [0.01, 0.1])  # q = 1: the exact GDP curve
    assert t.beta.exact and t.power.exact and t.method == "closed_form"
    assert np.all(t.width == 0.0)
    d = t.power.to_dict()
    assert d["upper"] == t.power.upper.tolist() and d["alpha"] == [0.01, 0.1]


def test_the_other_papers_numbers_are_their_bounds():
    """Theorem 1 in the FIL results, the VMF ε and the audit's ε hold the numbers their functions compute."""
    X, y, _ = binary_digits(0, 1)
    lr = logreg_dfil(X, y, 1e-2, 1e-2)
    assert lr.rdp_mse.lower == rr.rdp_mse_lower_bound(lr.rdp_epsilon) and lr.rdp_mse.upper is None
    assert lr.rdp_mse.method == "rdp" and lr.rdp_mse.details["rdp_epsilon"] == lr.rdp_epsilon
    assert rdp_mse(0.0).lower == np.inf  # nothing released about the data: no attack beats any MSE
    assert rdp_mse(1.0).to_dict()["lower"] == mse_bound(rdp_epsilon=1.0).mse.lower
    with pytest.raises(ReconRiskError, match="rdp_epsilon"):
        rdp_mse(-1.0)
    # the paper's τ interpolation is optimistic: its ε is an estimate, with open ends
    paper = vmf_epsilon(150, 13_700, 128 / 60_000, 3, 1 / 60_000, "2", interpolation="paper")
    sound = vmf_epsilon(150, 13_700, 128 / 60_000, 3, 1 / 60_000, "2")
    assert paper.bound.upper is None and paper.bound.lower is None and paper.approach1 is None
    assert paper.bound.estimate == paper.to_dict()["epsilon"] <= sound.bound.upper == sound.to_dict()["epsilon"]
    with pytest.warns(DeprecationWarning, match=r"VmfEpsilon\.epsilon is deprecated"):
        assert paper.epsilon == paper.bound.estimate
    with pytest.warns(DeprecationWarning, match=r"VmfEpsilon\.epsilon_approach1 is deprecated"):
        assert np.isnan(paper.epsilon_approach1)
    assert np.isnan(paper.to_dict()["epsilon_approach1"])
    # an audit calibrated to a target: the target labels it, the release's PLD ε is the certified number
    rel = rr.Release(2.0, 1.0, 10)
    c = certify(AuditSetting(rel, prior_size=10, delta=1e-5, epsilon=50.0))
    assert c.target_epsilon == 50.0 == c.label and c.privacy.upper == rr.PrivacyAnalysis(rel).epsilon(1e-5).upper
    with pytest.warns(DeprecationWarning, match=r"Certificate\.epsilon is deprecated"):
        assert c.epsilon == 50.0


def test_the_one_run_audit_reads_its_certified_numbers_as_bounds():
    from reconrisk._src.experiments.onerun import OneRunResult, OneRunSetting

    s = OneRunSetting(rr.Release(4.0, 1.0, 25), delta=1e-5)
    r = OneRunResult(s, "transcript", None, {}, s.certified(), 0.0, 0.0, 0.0, float("nan"))
    eps, mu, ar = _silent(lambda: (r.certified_epsilon, r.certified_gdp_mu, r.epsilon_add_remove))
    assert eps.exact and eps.upper == r.certified["epsilon"] and eps.neighbouring == "replace_one"
    assert mu.upper == 2.0 * np.sqrt(25) / 4.0 and ar.upper == r.certified["epsilon_add_remove"] < eps.upper
    assert ar.neighbouring == "add_remove" and eps.delta == 1e-5
    from reconrisk.integrations.opacus_audit import replace_one_epsilon  # the Opacus audit's own path

    assert eps.upper == pytest.approx(replace_one_epsilon(s.release, 1e-5).upper, rel=1e-12)


def test_empirical_audit_takes_the_certificate_as_a_bound():
    cert = rr.PrivacyAnalysis(rr.Release(2.0, 1.0, 10)).rero(prior_size=10)
    a = empirical_audit(3, 100, kappa=0.1, delta=1e-5, certified_rero=cert)
    assert a.certified_rero is cert and a.rero_ratio == a.rero.lower / cert.upper
    with pytest.warns(DeprecationWarning, match="certified_rero_upper= is deprecated.*certified_rero="):
        old = empirical_audit(3, 100, kappa=0.1, delta=1e-5, certified_rero_upper=cert.upper)
    assert old.to_dict() == _silent(lambda: empirical_audit(3, 100, kappa=0.1, delta=1e-5,
                                                            certified_rero=cert.upper).to_dict())
    with pytest.raises(ReconRiskError, match="give certified_rero once"):
        empirical_audit(3, 100, kappa=0.1, delta=1e-5, certified_rero=0.5, certified_rero_upper=0.5)
    with pytest.raises(ReconRiskError, match="certified_rero"):
        empirical_audit(3, 100, kappa=0.1, delta=1e-5, certified_rero=1.5)


def _public_dataclasses():
    """Every dataclass named in ``reconrisk.__all__`` or in a submodule's ``__all__``."""
    found = {}
    for name in rr.__all__:
        obj = getattr(rr, name)
        if isinstance(obj, type) and dataclasses.is_dataclass(obj):
            found[obj.__qualname__] = obj
    for info in pkgutil.walk_packages(rr.__path__, "reconrisk."):
        if info.name.endswith("__main__") or ".cli" in info.name:
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:  # an optional extra (jax, torch, flwr) that is not installed
            continue
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name, None)
            if isinstance(obj, type) and dataclasses.is_dataclass(obj):
                found[obj.__qualname__] = obj
    return found


#: Scalar names that are not certified numbers: inputs, or estimates named so.
NOT_CERTIFIED = {"target_rero"}
_SCALAR = re.compile(r"(_upper|_lower|_bound|_lower_bound)$")


def test_no_public_dataclass_stores_a_bound_under_a_scalar_name():
    classes = _public_dataclasses()
    for cls in (TradeOff, FanoBound, MseBound, AnalyticBound, AnalyticCalibration, EmpiricalAudit, Calibration,
                LogRegFIL, LogRegExperiment, FILAccounting, VmfEpsilon, Certificate):
        classes.setdefault(cls.__qualname__, cls)
    scalar = {(name, f.name) for name, cls in classes.items() for f in dataclasses.fields(cls)
              if _SCALAR.search(f.name) and f.name not in NOT_CERTIFIED}
    assert scalar == set(), "hold these as Bound fields (old names as deprecated properties)"


# -- the calibrators -----------------------------------------------------------------------------


def test_calibrate_noise_is_calibrate_and_warns():
    ref = _silent(lambda: rr.calibrate("reconstruction", 0.05, sample_rate=0.01, steps=1000, prior_size=100))
    with pytest.warns(DeprecationWarning, match=r"calibrate_noise\(\) is deprecated.*use calibrate\("):
        d = rr.calibrate_noise(0.05, 0.01, 1000, prior_size=100)
    assert d["noise_multiplier"] == ref.noise_multiplier
    assert d["rero_upper"] == d["rero"]["upper"] == ref.bound.upper and d["rero"]["lower"] == ref.bound.lower
    assert d["evaluations"] == ref.evaluations and d["bracket"] == list(ref.bracket)
    assert d["epsilon"] == rr.PrivacyAnalysis(ref.release).epsilon(1e-5).upper


@pytest.mark.parametrize("measure, kw", [("membership_advantage", {}), ("reconstruction", {"prior_size": 10})])
def test_calibrate_risk_is_calibrate_and_warns(measure, kw):
    ref = _silent(lambda: rr.calibrate(measure, 0.3, "noise_multiplier", sample_rate=0.1, steps=50, **kw))
    with pytest.warns(DeprecationWarning, match=r"calibrate_risk\(\) is deprecated.*use calibrate\(\)"):
        d = calibrate_risk(measure, 0.3, "noise_multiplier", sample_rate=0.1, steps=50, **kw)
    assert d["noise_multiplier"] == ref.noise_multiplier and d["upper"] == ref.bound.upper
    assert d["bound"] == ref.bound.to_dict() and d["measure"] == ref.quantity
    assert rr.calibrate_risk is calibrate_risk


def test_no_calibrator_in_src_calls_the_deprecated_wrappers():
    calls = re.compile(r"\b(calibrate_noise|calibrate_risk)\(")
    found = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py")
             if p.name not in ("api.py", "calibrate_risk.py")
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if calls.search(line)]
    assert not found, found


def test_epsilon_is_the_float_upper_end_of_the_analysis_bound():
    r = rr.Release(1.0, 0.01, 1000)
    e = _silent(lambda: rr.epsilon(release=r, delta=1e-5))
    assert type(e) is float and e == rr.PrivacyAnalysis(r).epsilon(1e-5).upper
    assert "PrivacyAnalysis(r).epsilon(d).upper" in rr.epsilon.__doc__


# -- names ----------------------------------------------------------------------------------------


def test_no_issue_numbers_in_src():
    pat = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)
    found = [f"{p.relative_to(SRC)}:{i}: {line.strip()}" for p in sorted(SRC.rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pat.search(line)]
    assert not found, "say what and why instead:\n" + "\n".join(found)


def test_all_is_grouped_and_whole():
    assert len(rr.__all__) == len(set(rr.__all__))
    for name in rr.__all__:
        assert hasattr(rr, name), name
    text = (SRC / "__init__.py").read_text(encoding="utf-8")
    block = text[text.index("__all__ = ["):]
    groups = re.findall(r"^\s*# (.+)$", block, re.MULTILINE)
    assert len(groups) >= 8 and not any(re.search(r"\d+$", g) and "issue" in g.lower() for g in groups)
