"""The VMF mechanism at extreme concentrations (issue 39, item 4).

Before the fix, ``vmf epsilon -k 1e7 -p 10 -q 1 -N 1 --delta 1e-5`` printed ε = 0 (1e6 gave 2e6, 1e12 gave
19.5): scipy's ``ive`` is NaN past x ≈ 1.07·10⁹ and loses accuracy before, and the fallback power series is
wrong there. The references below are mpmath at 60 digits, independent of reconrisk's Bessel code.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconrisk._src.accounting import vmf as acc
from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError
from reconrisk._src.measures.vmf_rero import rero_vmf
from reconrisk._src.mechanisms import vmf as mech

mpmath.mp.dps = 60
REL = 1e-12  # relative tolerance against mpmath


def _tau_mp(alpha, concentration, p):
    """τ_α of Biswas et al. 2024, Prop. 1, by mpmath (the e^x parts cancel exactly at 60 digits)."""
    nu, a, k = mpmath.mpf(p) / 2 - 1, mpmath.mpf(alpha), mpmath.mpf(concentration)
    x = (2 * a - 1) * k
    return float((-nu * mpmath.log(2 * a - 1) + mpmath.log(mpmath.besseli(nu, x)) - mpmath.log(mpmath.besseli(nu, k)))
                 / (a - 1))


@pytest.mark.parametrize("nu", [0.0, 0.5, 4.0, 20.0, 49.5, 63.0, 1000.0])
@pytest.mark.parametrize("x", [3e4, 1e7, 1e9, 2e9, 1e12, 1e15])
def test_log_iv_and_ratio_at_large_x_match_mpmath(nu, x):
    ref = mpmath.log(mpmath.besseli(nu, x))
    assert mech.log_iv(nu, x) == pytest.approx(float(ref), rel=REL)
    assert float(mech.log_iv(np.array([nu]), np.array([x]))[0]) == pytest.approx(float(ref), rel=REL)
    ratio = mpmath.besseli(nu + 1, x) / mpmath.besseli(nu, x)
    assert mech.bessel_ratio(nu, x) == pytest.approx(float(ratio), rel=REL)


@pytest.mark.parametrize("p", [2, 3, 10, 128])
@pytest.mark.parametrize("concentration", [1e7, 1e9, 1e12])
@pytest.mark.parametrize("alpha", [1.001, 2.0, 54.0, 256.0])
def test_rdp_at_high_concentration_matches_mpmath(p, concentration, alpha):
    assert acc.vmf_rdp(alpha, concentration, p) == pytest.approx(_tau_mp(alpha, concentration, p), rel=1e-11)


@pytest.mark.parametrize("p", [3, 10, 128])
@pytest.mark.parametrize("concentration", [1e7, 1e9, 1e12])
def test_epsilon_at_high_concentration_matches_mpmath(p, concentration):
    """q = 1, N = 1: approach 2 is min_α τ_α + log(1−1/α) − (log δ + log α)/(α−1); mpmath evaluates it at the
    returned α (equal) and at other orders (never below: it is a minimum)."""
    delta = 1e-5
    res = acc.vmf_epsilon(concentration, p, 1.0, 1, delta, "2")

    def eps_mp(a):
        return _tau_mp(a, concentration, p) + math.log1p(-1.0 / a) - (math.log(delta) + math.log(a)) / (a - 1.0)

    assert res.bound.upper == pytest.approx(eps_mp(res.alpha), rel=1e-11)
    for a in (1.01, 1.5, 3.0, 20.0, 100.0):
        assert eps_mp(a) >= res.bound.upper * (1 - 1e-11)
    assert 1.99 * concentration < res.bound.upper <= 2.0 * concentration  # VMF is 2κ-DP; ε is close to it here


CONFIGS = [(10, 1.0, 1, 1e-5), (3, 0.01, 100, 1e-10), (1000, 0.5, 3, 1e-3), (2, 1e-3, 1000, 1e-12)]


@pytest.mark.parametrize("p,q,n,delta", CONFIGS)
def test_epsilon_and_rero_never_decrease_in_concentration(p, q, n, delta):
    """A sweep from 1e-6 to the stated limit: every ε (both approaches) and the ReRo bound are finite and
    non-decreasing (relative tolerance 1e-9 for rounding)."""
    prev_e = prev_r = None
    for k in np.geomspace(1e-6, acc.MAX_CONCENTRATION, 12):
        d = acc.vmf_epsilon(k, p, q, n, delta).to_dict()
        e = np.array([d["epsilon"], d["epsilon_approach1"], d["epsilon_approach2"]])
        r = rero_vmf(0.01, k, p, q, n).upper
        assert np.isfinite(e).all() and e.min() >= 0 and 0.01 <= r <= 1.0
        if prev_e is not None:
            assert (e >= prev_e * (1 - 1e-9)).all(), (k, e, prev_e)
            assert r >= prev_r * (1 - 1e-9), (k, r, prev_r)
        prev_e, prev_r = e, r


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log_k=st.floats(-12, 100), ratio=st.floats(1.0, 1e6), p=st.sampled_from([2, 3, 10, 60, 700]),
       q=st.sampled_from([1.0, 0.3, 1e-4]), n=st.sampled_from([1, 7, 10**4]), delta=st.sampled_from([1e-15, 1e-5, 0.5]))
def test_epsilon_monotone_in_concentration_hypothesis(log_k, ratio, p, q, n, delta):
    k1 = 10.0**log_k
    k2 = min(k1 * ratio, acc.MAX_CONCENTRATION)
    e1 = acc.vmf_epsilon(k1, p, q, n, delta, "2").bound.upper
    e2 = acc.vmf_epsilon(k2, p, q, n, delta, "2").bound.upper
    assert math.isfinite(e1) and math.isfinite(e2)
    assert e2 >= e1 * (1 - 1e-9)


def test_concentration_past_the_limit_is_refused_in_one_line(capsys):
    with pytest.raises(ReconRiskError, match="concentration must be <= 1e\\+100"):
        acc.vmf_epsilon(1e101, 10, 1.0, 1, 1e-5)
    with pytest.raises(ReconRiskError, match="concentration must be <= 1e\\+100"):
        rero_vmf(0.01, 1e200, 10, 1.0, 1)
    assert main(["vmf", "epsilon", "-k", "1e300", "-p", "10", "-q", "1", "-N", "1", "--delta", "1e-5"]) == 2
    err = capsys.readouterr().err.strip()
    assert "concentration must be <= 1e+100" in err and "\n" not in err and "Traceback" not in err
    for argv, needle in ((["-k", "5e-324", "-p", "10", "-N", "1"], "concentration must be >= 1e-100"),
                         (["-k", "10", "-p", "1" * 20, "-N", "1"], "dim must be an integer in"),
                         (["-k", "10", "-p", "10", "-N", "1" * 20], "compositions must be an integer in")):
        assert main(["vmf", "epsilon", *argv, "-q", "0.5", "--delta", "1e-5"]) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and "\n" not in err, err


def test_cli_epsilon_at_1e7_is_about_2e7(capsys):
    import json

    assert main(["vmf", "epsilon", "-k", "1e7", "-p", "10", "-q", "1", "-N", "1", "--delta", "1e-5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon"] == pytest.approx(2e7, rel=1e-6)  # was 0.0
