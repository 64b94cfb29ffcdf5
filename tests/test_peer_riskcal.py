"""Against riskcal (Kulynych et al.) where riskcal is sound; riskcal is never a dependency (skipped without it).

riskcal returns the add/remove-*symmetrised* curve from ``dp_accounting``'s pessimistic PLD: a valid lower bound
on f wherever its PLD is faithful, so it must never exceed our certified upper end there. At moderate α and
well-resolved settings that is what we check; at small α riskcal can exceed it (benchmarks/bench_peers.py, trade-off section
counts those α), which is why the comparison is restricted.
"""

import warnings

import numpy as np
import pytest

from reconrisk import Release
from reconrisk._src.analysis import risk as R
from reconrisk import tradeoff
from reconrisk import analyse

riskcal = pytest.importorskip("riskcal", reason="riskcal is not installed (peer comparison; see benchmarks/bench_peers.py, trade-off section)")


@pytest.mark.parametrize("sigma, q, t", [(2.0, 0.05, 200), (1.0, 1.0, 10)])
def test_riskcal_is_inside_or_below_our_bracket(sigma, q, t):
    from riskcal.calibration.dpsgd import get_advantage_for_dpsgd, get_beta_for_dpsgd

    a = np.linspace(0.05, 0.5, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        beta = np.asarray(get_beta_for_dpsgd(noise_multiplier=sigma, sample_rate=q, num_steps=t, alpha=a, grid_step=1e-4))
        adv = get_advantage_for_dpsgd(noise_multiplier=sigma, sample_rate=q, num_steps=t, grid_step=1e-4)
    tr = tradeoff(Release(sigma, q, t), a)
    assert np.all(beta <= tr.beta.upper + 1e-6)
    mine = R.membership_advantage(analyse(Release(sigma, q, t)))
    assert mine.lower - 1e-6 <= adv  # riskcal's advantage is a pessimistic (upper) value
