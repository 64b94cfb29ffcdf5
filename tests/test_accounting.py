import numpy as np
import pytest

import reconrisk as rr
from reconrisk._src.accounting.rdp import DEFAULT_ORDERS, subsampled_gaussian_rdp


@pytest.mark.parametrize("sigma,q,T", [(1.0, 0.01, 1000), (0.6, 0.05, 100), (3.0, 0.3, 50), (10.812, 1.0, 100)])
def test_pld_epsilon_matches_dp_accounting(sigma, q, T):
    ours = rr.epsilon(sigma, q, T, 1e-5)
    ref = rr.epsilon(sigma, q, T, 1e-5, accountant="dp_accounting")
    assert ours == pytest.approx(ref, rel=2e-3)


def test_rdp_curve_matches_dp_accounting_at_integer_orders():
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_acc

    orders = DEFAULT_ORDERS[DEFAULT_ORDERS == np.round(DEFAULT_ORDERS)][:40]
    for sigma, q in [(1.0, 0.01), (0.7, 0.1), (2.0, 0.5)]:
        ref = rdp_acc._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
        np.testing.assert_allclose(subsampled_gaussian_rdp(sigma, q, orders), ref, rtol=1e-8)


def test_rdp_epsilon_is_close_to_dp_accounting_and_never_above_it():
    # ours minimises over a finer (continuous) set of orders, so it may only be lower
    import dp_accounting

    for sigma, q, T in [(1.0, 0.01, 1000), (2.0, 0.2, 100)]:
        acc = dp_accounting.rdp.RdpAccountant()  # its default orders (fractional, from 1.25)
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), T)
        ref = acc.get_epsilon(1e-5)
        ours = rr.epsilon(sigma, q, T, 1e-5, accountant="rdp")
        assert ours <= ref * (1 + 1e-9)
        assert ours == pytest.approx(ref, rel=2e-2)


def test_noise_for_epsilon_round_trip():
    for q in (0.02, 1.0):
        s = rr.noise_multiplier_for_epsilon(2.0, q, 200)
        assert rr.epsilon(s, q, 200) <= 2.0 + 1e-9
        assert rr.epsilon(s * 0.995, q, 200) > 2.0


def test_pld_accountant_full_batch_equals_gaussian_dp():
    # q = 1: exact Gaussian DP with mu = sqrt(T)/sigma
    assert rr.epsilon(10.812, 1.0, 100, 1e-5) == pytest.approx(4.0, abs=2e-3)
