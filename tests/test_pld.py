"""The PLD engine against dp_accounting and against brute force."""

import numpy as np
import pytest
from scipy import special

from reconrisk import Release
from reconrisk._src.accounting.pld import compose_segments, step_pmf


def _brute_blowup(pmf, kappa, eps_grid):
    return min(float(e_kappa + d) for e_kappa, d in zip(np.exp(eps_grid) * kappa, pmf.delta(eps_grid)))


@pytest.mark.parametrize("pess", [True, False])
def test_exact_infimum_is_below_any_grid_of_epsilons(pess):
    pmf = compose_segments(Release(1.0, 0.05, 50).segments, 1e-3, pessimistic=pess)
    for kappa in (1e-4, 0.01, 0.3):
        exact = pmf.blowup(np.array([kappa]))[0]
        grid = np.linspace(-2, 12, 4001)
        brute = _brute_blowup(pmf, kappa, grid)
        assert exact <= brute + 1e-12
        assert exact >= brute - 5e-3  # the grid is fine enough to come close


def test_pessimistic_delta_matches_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    sigma, q, T, h = 1.2, 0.02, 200, 1e-4
    ref = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=h)
    ref_remove = ref._pmf_remove.self_compose(T)  # the "remove" direction = mu || nu
    ours = compose_segments(Release(sigma, q, T).segments, h, pessimistic=True)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(ours.delta(eps), ref_remove.get_delta_for_epsilon(eps), rtol=2e-3, atol=1e-9)


def test_optimistic_below_pessimistic_everywhere():
    segs = Release(0.9, 0.01, 300).segments
    up = compose_segments(segs, 5e-4, pessimistic=True)
    lo = compose_segments(segs, 5e-4, pessimistic=False)
    eps = np.linspace(-1, 6, 50)
    assert np.all(lo.delta(eps) <= up.delta(eps) + 1e-12)


@pytest.mark.parametrize("sigma,T", [(0.7, 1), (2.0, 10), (5.0, 100)])
def test_engine_brackets_the_gaussian_dp_closed_form_at_q_one(sigma, T):
    # the public pld method short-cuts q = 1 to the closed form; here the engine itself is checked
    segs = Release(sigma, 1.0, T).segments
    kappa = np.array([1e-6, 1e-3, 0.1, 0.5])
    truth = special.ndtr(special.ndtri(kappa) + np.sqrt(T) / sigma)
    up = np.maximum(compose_segments(segs, 1e-3, pessimistic=True).blowup(kappa), kappa)
    lo = compose_segments(segs, 1e-3, pessimistic=False).blowup(kappa)
    assert np.all(up >= truth - 1e-12)
    assert np.all(lo <= truth + 1e-12)
    assert np.all(up - lo < 1e-3)


def test_step_pmf_masses_sum_to_one():
    for direction in ("remove", "add"):
        p = step_pmf(1.0, 0.01, 1e-3, pessimistic=True, direction=direction)
        # the atoms carry their relative rounding charge (pld_rounding.pessimistic_scale): 1 + 32u·c, c the
        # largest P(L > ε)/δ(ε) (~4e-13 remove, ~1.3e-11 add, where δ_add → 0 at −log(1 − q))
        charge = 2e-11 if direction == "add" else 1e-12
        assert p.probs.sum() + p.infinity_mass == pytest.approx(1.0, abs=charge)


def test_cap_keeps_the_orderings_when_every_atom_is_above_it():
    from reconrisk._src.accounting.pld import PMF

    p = PMF(0.1, 500, np.array([0.25, 0.5, 0.25]), 0.0, True)  # losses 50.0, 50.1, 50.2
    up = p.cap(10.0)
    assert up.infinity_mass == pytest.approx(1.0) and up.probs.sum() == 0.0
    lo = PMF(0.1, 500, np.array([0.25, 0.5, 0.25]), 0.0, False).cap(10.0)
    assert lo.losses[-1] <= 10.0 and lo.probs.sum() == pytest.approx(1.0)
    eps = np.linspace(0, 60, 13)
    assert np.all(lo.delta(eps) <= p.delta(eps) + 1e-15)
    assert np.all(up.delta(eps) >= p.delta(eps) - 1e-15)
