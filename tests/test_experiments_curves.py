"""experiments/curves.py: the sweeps behind `reconrisk curve` and the audit plot compute what `bound` computes."""

from __future__ import annotations

import numpy as np
import pytest

import reconrisk as rr
from reconrisk.errors import ReconRiskError
from reconrisk._src.experiments.curves import bound_curve, curve_jobs, rero_curves


def test_rows_carry_the_bound_commands_numbers_and_progress_counts_points():
    calls = []
    grid = dict(steps=10, epsilon_range=(1.0, 4.0), points=2, fixed_epsilon=2.0, sample_rates=(0.5,))
    rows = rero_curves(prior_sizes=(10, 100), progress=calls.append, **grid)
    assert len(calls) == len(curve_jobs(**grid)) == 3 and len(rows) == 6
    for r in rows:
        assert set(r["rero"]) == {"method", "lower", "upper", "width", "converged"} and r["kappa"] == 1 / r["prior_size"]
        assert rr.epsilon(r["noise_multiplier"], r["sample_rate"], r["steps"], delta=1e-5) == pytest.approx(r["epsilon"], rel=1e-3)
        b = rr.rero_bound(r["noise_multiplier"], r["sample_rate"], r["steps"], prior_size=r["prior_size"])
        assert (r["rero"]["lower"], r["rero"]["upper"]) == pytest.approx((b.lower, b.upper), rel=1e-12)
        assert r["rero"]["upper"] <= r["baselines"]["rdp"] + 1e-12


def test_bound_curve_spans_the_audited_epsilons_and_grows_with_epsilon():
    grid, ups = bound_curve([2.0, 8.0], 1.0, 10, 10, points=6)
    assert grid.min() < 2.0 and grid.max() > 8.0 and {2.0, 8.0} <= set(grid.tolist())
    assert np.all(np.diff(ups) > 0) and 0.1 < ups[0] and ups[-1] <= 1.0
    with pytest.raises(ReconRiskError, match="epsilons must be > 0"):
        bound_curve([-1.0], 1.0, 10, 10)


def test_bad_ranges_name_the_parameter():
    with pytest.raises(ReconRiskError, match="epsilon_max must be > epsilon_min"):
        curve_jobs(epsilon_range=(4.0, 1.0))
    with pytest.raises(ReconRiskError, match="prior_size"):
        rero_curves(prior_sizes=(1,))
