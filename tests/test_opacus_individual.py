"""Per-sample norms and the per-example budget as hooks in a real Opacus loop (reconrisk.integrations.opacus_individual).

A tiny torch model (Linear(8, 3) on 32 random points: runs in a second or two). Each recorded norm is
checked against an independent computation (torch.func per-example gradients at the same parameters, the
batch's indices recovered by matching its rows to the data), the filter's zeroing against the clipped sum
Opacus forms before its noise (the admitted examples' clipped gradients, recomputed), and its bookkeeping
against a fresh filter fed the recorded norms. Skipped without opacus.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from reconrisk.errors import ReconRiskError
from reconrisk._src.release import Release

opacus = pytest.importorskip("opacus", reason="opacus is not installed (pip install -e '.[test]', the README's test command)")
torch = pytest.importorskip("torch")

from reconrisk._src.individual.filter import IndividualFilter  # noqa: E402
from reconrisk.integrations.opacus_individual import IndividualFilterHook, PerSampleNorms, full_norms  # noqa: E402

N, DIM, CLASSES, SIGMA, CLIP = 32, 8, 3, 1.0, 1.0


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, DIM, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()
    return x, y


def _private(batch, seed=0, clip=CLIP):
    torch.manual_seed(seed)
    x, y = _data(seed)
    data = torch.utils.data.TensorDataset(x, y)
    model = torch.nn.Linear(DIM, CLASSES)
    engine = opacus.PrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            data_loader=torch.utils.data.DataLoader(data, batch_size=batch), noise_multiplier=SIGMA,
            max_grad_norm=clip)
    return model, opt, loader, data, x


def _direct_grads(model, xb, yb):
    """Per-example gradients of the cross-entropy of Linear(8, 3) in closed form, independently of Opacus:
    ∂ℓ/∂b = softmax(Wx + b) − e_y, ∂ℓ/∂W = (∂ℓ/∂b) xᵀ."""
    base = model._module
    with torch.no_grad():
        gb = torch.softmax(xb @ base.weight.T + base.bias, dim=1) - torch.nn.functional.one_hot(yb, CLASSES)
        return {"weight": gb[:, :, None] * xb[:, None, :], "bias": gb}


def _direct_norms(model, xb, yb):
    g = _direct_grads(model, xb, yb)
    return torch.sqrt(sum(t.reshape(len(xb), -1).pow(2).sum(1) for t in g.values())).double().numpy()


def test_recorded_norms_are_the_sampled_examples_own(tmp_path):
    model, opt, loader, data, x = _private(batch=8)
    rec = PerSampleNorms().attach(opt, loader)
    expected = []  # per step: {index: norm}
    for _ in range(3):
        for xb, yb in loader:
            opt.zero_grad()
            if len(xb):
                idx = [int(torch.nonzero((x == r).all(1))[0, 0]) for r in xb]  # the rows are distinct
                expected.append(dict(zip(idx, _direct_norms(model, xb, yb))))
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
            else:
                expected.append({})
                model(x[:1]).sum().mul(0.0).backward()
            opt.step()
    rec.detach()
    assert "clip_and_accumulate" not in vars(opt) and "add_noise" not in vars(opt)
    norms = rec.norms
    assert norms.shape == (N, len(expected)) == (N, rec.steps)
    for t, exp in enumerate(expected):
        seen = np.flatnonzero(~np.isnan(norms[:, t]))
        assert sorted(exp) == seen.tolist()
        for i, v in exp.items():
            assert norms[i, t] == pytest.approx(min(v, CLIP), rel=1e-4)
    assert rec.release.sample_rate == pytest.approx(loader.sample_rate) and rec.release.clip_norm == CLIP
    who = rec.analysis()
    assert who.certified is False and who.rero(0.1).shape == (N,)
    assert np.all(who.rero(0.1) <= who.worst_case_rero(0.1).upper + 1e-12)


def test_filter_zeroes_the_stopped_examples_and_keeps_its_books():
    """C = 5 above most norms (≈ 2), so examples are charged unequally and the budget (1.06 full steps at
    ReRo 0.5) stops some (about 40 %) and not others."""
    steps, clip = 6, 5.0
    model, opt, loader, data, x = _private(batch=N, clip=clip)  # q = 1: every example in every batch
    assert loader.sample_rate == 1.0
    f = IndividualFilter(Release(SIGMA, 1.0, steps, clip), target_rero=0.5, kappa=0.1)
    hook = IndividualFilterHook(f).attach(opt, loader)
    checked = []
    inner = opt.add_noise  # the hook's add_noise; wrap it to see the clipped sum before the noise

    def add_noise():
        admitted = f.counts.sum(axis=1) - (checked[-1][0] if checked else 0)  # admitted at this step (0 or 1)
        xs, ys = data.tensors
        g = _direct_grads(model, xs, ys)
        base = model._module
        norm = torch.sqrt(sum(t.reshape(N, -1).pow(2).sum(1) for t in g.values()))
        w = torch.as_tensor(admitted, dtype=norm.dtype) * (clip / (norm + 1e-6)).clamp(max=1.0)
        for name, p in base.named_parameters():
            manual = torch.einsum("i,i...->...", w, g[name])
            assert torch.allclose(p.summed_grad, manual, atol=1e-5), name
        checked.append((f.counts.sum(axis=1).copy(), admitted.copy()))
        inner()

    opt.add_noise = add_noise
    for _ in range(steps):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    assert len(checked) == steps and hook.charged_own == steps
    assert f.filtered.any() and not f.filtered.all()  # the budget stops some, not all
    assert np.all(f.certified_rero(0.1) <= 0.5 + 1e-12)
    # the bookkeeping equals a fresh filter fed the recorded norms (q = 1: every norm observed)
    fresh = IndividualFilter(Release(SIGMA, 1.0, steps, clip), target_rero=0.5, kappa=0.1)
    for t in range(steps):
        fresh.admit(hook.norms[:, t])
    assert np.array_equal(fresh.counts, f.counts) and np.array_equal(fresh.filtered, f.filtered)


def test_filter_charges_c_unless_it_knows_every_norm():
    steps = 4
    for norms_fn in (None, "full"):
        model, opt, loader, data, x = _private(batch=8)  # q = 1/4: Poisson batches
        f = IndividualFilter(Release(SIGMA, loader.sample_rate, steps, CLIP))  # no target: never filters
        fn = full_norms(model, data, torch.nn.functional.cross_entropy) if norms_fn else None
        hook = IndividualFilterHook(f, norms_fn=fn).attach(opt, loader)
        done = 0
        while done < steps:
            for xb, yb in loader:
                opt.zero_grad()
                (torch.nn.functional.cross_entropy(model(xb), yb) if len(xb) else model(x[:1]).sum() * 0.0).backward()
                opt.step()
                done += 1
                if done == steps:
                    break
        if norms_fn is None:  # the sampled examples' norms depend on the sampling coin: everyone at C
            assert hook.charged_own == 0 and f.counts[:, :-1].sum() == 0 and np.all(f.counts[:, -1] == steps)
        else:
            assert hook.charged_own == steps and f.counts[:, :-1].sum() > 0  # own, smaller norms charged


def test_refusals():
    model, opt, loader, data, x = _private(batch=8)
    with pytest.raises(ReconRiskError, match="DPOptimizer"):
        PerSampleNorms().attach(torch.optim.SGD(model.parameters(), lr=0.1), loader)
    f = IndividualFilter(Release(2.0, loader.sample_rate, 3, CLIP))
    with pytest.raises(ReconRiskError, match="must be the run's"):
        IndividualFilterHook(f).attach(opt, loader)
    assert "add_noise" not in vars(opt)  # a refused attach leaves the optimizer as it was
    with pytest.raises(ReconRiskError, match="IndividualFilter"):
        IndividualFilterHook(object())
    rec = PerSampleNorms()
    with pytest.raises(ReconRiskError, match="train first"):
        rec.norms


def test_filter_takes_q_from_the_sampler_not_from_the_draw():
    """n = 2 at q = 1/2: some Poisson draws hold both examples. Such a draw is the sampling coin, not q = 1, so
    the charge there must be the q < 1 charge (C for both, as at every other step) — charging their own, smaller
    norms exactly when both were drawn would make the filter's books reveal the coin. C = 5 lies above every
    recorded norm, so an own-norm charge would land on a lower level than C."""
    n, steps, clip = 2, 12, 5.0
    torch.manual_seed(3)
    x, y = _data(3)
    data = torch.utils.data.TensorDataset(x[:n], y[:n])
    model = torch.nn.Linear(DIM, CLASSES)
    engine = opacus.PrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            data_loader=torch.utils.data.DataLoader(data, batch_size=1), noise_multiplier=SIGMA, max_grad_norm=clip)
    assert loader.sample_rate == 0.5
    f = IndividualFilter(Release(SIGMA, 0.5, steps, clip))  # no target: never filters, only keeps books
    hook = IndividualFilterHook(f).attach(opt, loader)
    done = 0
    while done < steps:
        for xb, yb in loader:
            opt.zero_grad()
            out = model(xb)  # an empty draw: a zero loss on the empty batch keeps the step
            (torch.nn.functional.cross_entropy(out, yb) if len(xb) else out.sum() * 0.0).backward()
            opt.step()
            done += 1
            if done == steps:
                break
    drawn = ~np.isnan(hook.norms)
    both = np.flatnonzero(drawn.all(axis=0))
    assert both.size >= 1 and not drawn.all()  # the seed draws everyone at some steps, not at all of them
    assert np.all(f.levels_of(hook.norms[drawn]) < f.levels.size - 1)  # own norms would be charged below C
    assert hook.charged_own == 0
    assert f.counts[:, :-1].sum() == 0 and np.all(f.counts[:, -1] == steps)  # every step at C, drawn or not
