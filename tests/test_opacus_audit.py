"""The one-run audit hook in a real Opacus training loop (reconrisk.integrations.opacus_audit), on a tiny torch model.

Power (almost no noise: every guess right, the bound at its ceiling), sanity (huge noise: the bound is 0),
a cross-check of the whole hook against theory (q = 1, k = 2: each slot is a Gaussian test with μ = 2√T/σ, so the
guess accuracy is Φ(√T/σ)), soundness (the lower bounds never exceed the certified replace-one ε and μ), and
the boundary checks. Skipped without opacus (``pip install 'torch==2.13.0' opacus``).
"""

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from reconrisk._src.audit.onerun import Guesses, onerun_lower_bounds
from reconrisk.errors import ReconRiskError
from reconrisk.integrations.opacus_audit import OneRunAudit, _step_loglik, replace_one_epsilon
from reconrisk._src.release import Release

opacus = pytest.importorskip("opacus", reason="opacus is not installed (pip install -e '.[test]', the README's test command)")
torch = pytest.importorskip("torch")

N, DIM, CLASSES = 64, 64, 16  # torch.nn.Linear(64, 16): 1,040 parameters, room for 512 canaries x 2 options


def _train(sigma, *, batch, epochs, canaries, options, seed=0, ghost=False):
    """The user's loop, unchanged but for the two audit lines; returns (audit, the ReconRiskAccountant)."""
    from reconrisk.integrations.opacus import ReconRiskAccountant

    torch.manual_seed(seed)
    x = torch.randn(N, DIM)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), batch_size=batch)
    model = torch.nn.Linear(DIM, CLASSES)
    engine = opacus.PrivacyEngine()
    engine.accountant = ReconRiskAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = torch.nn.CrossEntropyLoss()
        kw = dict(module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), data_loader=loader,
                  noise_multiplier=sigma, max_grad_norm=1.0)
        if ghost:  # Opacus's ghost clipping: no per-sample gradients, the clipped sum by a second backward pass
            model, opt, loss, loader = engine.make_private(**kw, grad_sample_mode="ghost", criterion=loss)
        else:
            model, opt, loader = engine.make_private(**kw)
        audit = OneRunAudit(canaries=canaries, options=options, seed=seed).attach(opt, sample_rate=loader.sample_rate)
        for _ in range(epochs):
            for xb, yb in loader:  # Poisson batches can be empty: a zero loss keeps the step
                opt.zero_grad()
                out = model(xb)
                (loss(out, yb) if len(xb) else out.sum() * 0.0).backward()
                opt.step()
    audit.detach()
    assert "add_noise" not in vars(opt)  # the optimizer's own method is back
    return audit, engine.accountant


def _sound(r):
    assert r.epsilon.upper is None and 0.0 <= r.epsilon.lower <= r.certified_epsilon.upper
    assert 0.0 <= r.gdp_mu.lower <= r.certified_epsilon.details["gdp_mu"]
    assert r.epsilon.details["neighbouring"] == "replace_one" and r.epsilon.confidence == 0.95


def test_power_without_noise_and_the_accountants_history():
    audit, acct = _train(0.01, batch=16, epochs=10, canaries=128, options=4)  # q = 1/4, T = 40
    assert audit.history == acct.history == [(0.01, 0.25, 40)]
    r = audit.result(delta=1e-5)
    assert r.guesses.correct[-1] == 128  # every slot was sampled at least once w.p. 1 - 128·(3/4)^40 > 0.998
    counts = r.guesses.guesses
    ceiling = onerun_lower_bounds(Guesses(128, 4, counts, counts), delta=1e-5)  # every guess right
    assert counts == (13, 32, 64, 128) and r.guesses.correct == counts
    assert r.epsilon.lower == ceiling["epsilon"].lower > 4.0 and r.gdp_mu.lower == ceiling["gdp_mu"].lower > 1.5
    _sound(r)
    assert r.epsilon_add_remove.upper == acct.get_epsilon(1e-5)  # beside it: what the accountant reports
    d = json.loads(json.dumps(r.to_dict()))
    assert d["correct_counts"][-1] == 128 and d["certified_epsilon"]["neighbouring"] == "replace_one"
    assert "128/128 guesses right" in str(r)


def test_huge_noise_gives_no_bound():
    audit, _ = _train(1e3, batch=16, epochs=5, canaries=128, options=4)
    for threat in ("transcript", "no_deduction"):
        r = audit.result(threat_model=threat)
        assert r.epsilon.lower < 0.05 and r.gdp_mu.lower < 0.05
        assert stats.binom.cdf(r.guesses.correct[-1], 128, 0.25) > 1e-4  # about the blind guess
        assert stats.binom.sf(r.guesses.correct[-1] - 1, 128, 0.25) > 1e-4
        _sound(r)


def test_full_batch_matches_theory_and_stays_below_the_exact_certificate():
    """q = 1, k = 2: slot i's residual difference is N(±√2·C, 2σ²C²) per step, so the argmax guess is right with
    probability Φ(√T/σ) — the hook adds exactly C·u_j before the noise and reads the released sum."""
    sigma, steps, m = 4.5, 20, 512
    audit, _ = _train(sigma, batch=N, epochs=steps, canaries=m, options=2, seed=2)
    r = audit.result(guess_counts=(128, m))
    p = stats.norm.cdf(math.sqrt(steps) / sigma)
    right = r.guesses.correct[-1]
    assert abs(right / m - p) < 4 * math.sqrt(p * (1 - p) / m), (right, p)
    cert = r.certified_epsilon
    assert cert.method == "closed_form" and cert.lower == cert.upper  # exact for q = 1
    assert cert.details["gdp_mu"] == pytest.approx(2 * math.sqrt(steps) / sigma)
    _sound(r)
    assert r.epsilon.lower > 1.0 and r.gdp_mu.lower > 0.4  # far above 0: the audit has power at μ = 2
    other = audit.result(threat_model="no_deduction", guess_counts=(m,))
    _sound(other)
    assert other.guesses.correct[-1] > 0.7 * m  # the real data's gradient is small beside σC here
    ghost, _ = _train(sigma, batch=N, epochs=steps, canaries=m, options=2, seed=3, ghost=True)
    right = int((ghost.scores().argmax(axis=1) == ghost.choice).sum())  # ghost clipping: the same clipped sum
    assert abs(right / m - p) < 4 * math.sqrt(p * (1 - p) / m), (right, p)


def test_replace_one_certificate():
    from reconrisk._src.accounting.gaussian import gaussian_eps
    from reconrisk._src.analysis.privacy import PrivacyAnalysis

    full = replace_one_epsilon(Release(4.5, 1.0, 20), 1e-5)
    assert full.upper == full.lower == pytest.approx(gaussian_eps(4.5 / 2, 1e-5, steps=20))  # as the JAX audit
    sub = Release(1.0, 0.01, 1000)
    b = replace_one_epsilon(sub, 1e-5)
    assert b.method == "group_privacy"
    d1 = b.details["delta_add_remove"]
    e1 = PrivacyAnalysis(sub).epsilon(d1).upper
    assert b.upper == 2 * e1 and d1 * (1 + math.exp(e1)) <= 1e-5  # group privacy, checked from its parts
    assert b.upper < b.details["epsilon_gdp"]
    # add/remove eps ~ 11: a feasible delta1 lies below the PLD's floor, where the RDP conversion answers; the
    # smaller of group privacy and the GDP garbling is returned, each checked from its parts
    loose_rel = Release(1.0, 0.25, 40)
    loose = replace_one_epsilon(loose_rel, 1e-5)
    gdp = gaussian_eps(0.5, 1e-5, steps=40)
    assert loose.upper <= gdp * (1 + 1e-12)
    if loose.method == "group_privacy":
        d1 = loose.details["delta_add_remove"]
        e1 = PrivacyAnalysis(loose_rel).epsilon(d1).upper
        assert loose.upper == 2 * e1 and d1 * (1 + math.exp(e1)) <= 1e-5
    else:
        assert loose.method == "gdp_garbling" and loose.upper == pytest.approx(gdp)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.floats(0.01, 1.0), st.floats(0.05, 10.0), st.integers(0, 2**32 - 1))
def test_step_likelihood_ranks_like_the_projection(k, q, noise_std, seed):
    """log((1 − q) + q e^z) is increasing in z, so one step never ranks a candidate with a smaller residual above
    one with a larger (it may tie them, where e^z underflows beside 1 − q), and for q = 1 it is the projection."""
    r = np.random.default_rng(seed).normal(size=(5, k))
    order = np.argsort(r, axis=1)
    ll = np.take_along_axis(_step_loglik(r, noise_std, 1.0, q), order, axis=1)
    assert np.all(np.diff(ll, axis=1) >= 0)
    proj = (r - r.mean(axis=1, keepdims=True)) / math.sqrt(1 - 1 / k)
    assert np.allclose(_step_loglik(r, noise_std, 1.0, 1.0), (proj - 0.5) / noise_std**2)


def test_boundaries():
    with pytest.raises(ReconRiskError, match="options"):
        OneRunAudit(canaries=10, options=1)
    with pytest.raises(ReconRiskError, match="canaries"):
        OneRunAudit(canaries=0)
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ReconRiskError, match="DPOptimizer"):
        OneRunAudit(canaries=2).attach(torch.optim.SGD(model.parameters(), lr=0.1), sample_rate=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.zeros(8).long()),
                                             batch_size=4)
        _, opt, _ = opacus.PrivacyEngine().make_private(module=model, data_loader=loader, noise_multiplier=1.0,
                                                        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                                                        max_grad_norm=1.0)
    with pytest.raises(ReconRiskError, match=r"canaries x options must be <= the number of trained parameters \(10\)"):
        OneRunAudit(canaries=6, options=2).attach(opt, sample_rate=0.5)
    with pytest.raises(ReconRiskError, match="sample_rate"):
        OneRunAudit(canaries=2).attach(opt, sample_rate=1.5)
    audit = OneRunAudit(canaries=2, options=2).attach(opt, sample_rate=0.5)
    with pytest.raises(ReconRiskError, match="already attached"):
        audit.attach(opt, sample_rate=0.5)
    with pytest.raises(ReconRiskError, match="no optimizer step"):
        audit.result()
    with pytest.raises(ReconRiskError, match="threat_model"):
        audit.scores("black_box")
    audit.detach()
