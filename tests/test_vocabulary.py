"""Issue 22's vocabulary: renamed public names keep their old spelling for one release, with one warning each."""

from __future__ import annotations

import warnings

import pytest

import reconrisk as rr
from reconrisk._src.theory import analytic as A
from reconrisk._src.measures import conversions as C
from reconrisk._src.theory import mse as M
from reconrisk.errors import ReconRiskError


def _silent(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_rero_mse_and_psnr_replace_the_gamma_names():
    new = _silent(lambda: A.rero_mse(0.1, 0.5, 8, min_norm=1.0))
    with pytest.warns(DeprecationWarning, match=r"rero_gamma_mse\(\) is deprecated.*use rero_mse\(\)"):
        assert A.rero_gamma_mse(0.1, 0.5, 8, min_norm=1.0) == new
    with pytest.warns(DeprecationWarning, match="rero_psnr"):
        assert rr.rero_gamma_psnr(10.0, 0.5, 8, min_norm=1.0) == A.rero_psnr(10.0, 0.5, 8, min_norm=1.0)
    assert "rero_gamma_mse" not in rr.__all__ and "rero_mse" in A.__all__


def test_analytic_bound_fields():
    b = A.analytic_bound("mse", 0.5, 8, eta=0.1, min_norm=1.0, clip_norm=0.8)
    d = b.to_dict()
    assert {"rero", "log_rero", "rero_clip"} <= set(d) and not any("gamma" in k for k in d)
    with pytest.warns(DeprecationWarning, match="AnalyticBound.rero"):
        with pytest.warns(DeprecationWarning, match="AnalyticBound.gamma"):
            assert b.gamma == b.rero
    with pytest.warns(DeprecationWarning, match="rero_clip"):
        with pytest.warns(DeprecationWarning, match="gamma_clip"):
            assert b.gamma_clip == b.rero_clip


def test_keyword_renames():
    eta = _silent(lambda: A.eta_for_rero("mse", target_rero=0.05, noise_multiplier=0.5, dim=4, min_norm=0.5))
    with pytest.warns(DeprecationWarning, match="gamma= is deprecated.*target_rero="):
        assert A.eta_for_rero("mse", gamma=0.05, noise_multiplier=0.5, dim=4, min_norm=0.5) == eta
    with pytest.warns(DeprecationWarning, match="bias_factor="):
        assert M.rdp_mse_lower_bound(1.0, gamma=0.5) == M.rdp_mse_lower_bound(1.0, bias_factor=0.5)
    with pytest.warns(DeprecationWarning, match="rero="):
        assert C.dp_from_two_point_rero(0.6, gamma=0.7) == C.dp_from_two_point_rero(0.6, rero=0.7)
    with pytest.raises(ReconRiskError, match="give bias_factor once"):
        M.rdp_mse_lower_bound(1.0, gamma=0.5, bias_factor=0.5)
