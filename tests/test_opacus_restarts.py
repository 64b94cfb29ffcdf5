"""Loops that break out of or restart a non-Poisson loader: K is counted over the iterations the run took.

An outside reviewer: shuffle=True, 20 examples, batch 5, σ 2, five loader epochs each stopped after 2 steps was
certified K = 3 (ε(1e-5) 8.39: the 10 steps counted as if taken in the loader's order), while an example can sit
in a batch of every one of the five passes: K = 5, ε 11.48. ReconRiskAccountant now watches the loader it is
told (each iter(loader) a fresh pass of the sampler) and counts K = Σ over iterations of the worst count for that
iteration's batches. References independent of the code under test: the closed-form Gaussian DP δ(ε) of
μ = 2√K/σ through scipy, and K read off the sampler's semantics by hand (a shuffled loader of one permutation per
iteration: an example at most once per iteration; RandomSampler(num_samples=kN) with batch N: every batch a
full pass).
"""

from __future__ import annotations

import json
import math
import warnings

import pytest

from reconrisk import Release
from reconrisk.errors import ReconRiskError

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")
from scipy.optimize import brentq  # scipy is a core dependency: never a skip
from scipy.stats import norm

from torch.utils.data import DataLoader, RandomSampler, TensorDataset  # noqa: E402

from reconrisk._src.adapters.opacus_loaders import LoaderPlan, LoaderRun, loader_plan  # noqa: E402
from reconrisk.integrations.opacus import ReconRiskAccountant  # noqa: E402

DELTA = 1e-5


def gdp_epsilon(mu: float, delta: float = DELTA) -> float:
    """ε at δ of μ-GDP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Cor. 2.13)."""
    return brentq(lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - delta, 0, 400)


def _data(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def _private(loader, sigma=2.0, acct=None):
    """make_private(poisson_sampling=False) with a ReconRiskAccountant: (accountant, step(batch), loader)."""
    torch.manual_seed(0)
    engine = opacus.PrivacyEngine()
    acct = engine.accountant = acct or ReconRiskAccountant()
    model = torch.nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, dl = engine.make_private(module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                                             data_loader=loader, noise_multiplier=sigma, max_grad_norm=1.0,
                                             poisson_sampling=False)

    def step(batch):
        xb, yb = batch
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()

    return acct, step, dl


def _certified(acct, sigma, passes):
    assert acct.release == Release.shuffled(sigma, epochs=passes)
    assert acct.get_epsilon(DELTA) == pytest.approx(gdp_epsilon(2 * math.sqrt(passes) / sigma), rel=1e-6)


def _shuffled(n=20, batch=5):
    return DataLoader(_data(n), batch_size=batch, shuffle=True)


def test_reviewer_example_five_restarted_epochs_are_five_passes():
    """20 examples, batch 5, σ 2, five loader epochs each stopped after 2 steps: K = 5, ε 11.48 (the loader's
    order counted K = 3, ε 8.39)."""
    acct, step, dl = _private(_shuffled())
    for _ in range(5):
        for i, batch in enumerate(dl):
            step(batch)
            if i + 1 == 2:
                break
    assert acct.history == [(2.0, 0.25, 10)] and acct.loader_run.iterations == (2, 2, 2, 2, 2)
    _certified(acct, 2.0, 5)
    assert acct.get_epsilon(DELTA) == pytest.approx(11.48, abs=0.005)
    assert gdp_epsilon(2 * math.sqrt(3) / 2.0) == pytest.approx(8.39, abs=0.005)  # what the loader's order said
    with pytest.warns(UserWarning, match="counted over the 5 iterations of the loader the run took"):
        assert Release.from_opacus(acct) == Release.shuffled(2.0, epochs=5)
    with pytest.warns(UserWarning, match="5 iterations"):  # the same loader named: its observed run is read
        assert Release.from_opacus(acct, data_loader=dl) == Release.shuffled(2.0, epochs=5)


def test_next_iter_every_step_is_a_fresh_pass_each_step():
    acct, step, dl = _private(_shuffled())
    for _ in range(6):
        step(next(iter(dl)))
    assert acct.loader_run.iterations == (1,) * 6
    _certified(acct, 2.0, 6)  # the loader's order said 2 (6 steps of a 4-batch epoch)


@pytest.mark.parametrize("k,epochs", [(1, 3), (2, 4), (3, 2)])
def test_break_after_k_steps_in_each_epoch(k, epochs):
    """A shuffled loader (one permutation per iteration): an example is in at most one batch of each iteration,
    and can be in one of each: K = the iterations stepped from, whatever k."""
    acct, step, dl = _private(_shuffled())
    for _ in range(epochs):
        for i, batch in enumerate(dl):
            step(batch)
            if i + 1 == k:
                break
    assert acct.loader_run.iterations == (k,) * epochs
    _certified(acct, 2.0, epochs)


def test_break_after_k_steps_of_a_loader_that_repeats_passes():
    """RandomSampler(num_samples=3N), batch N: every batch is a full pass. 2 steps of each of 3 iterations: K = 6,
    as the steps happened; a batch drawn and then left (the loop breaks after drawing it) counts too when a later
    step follows (it could have been stepped on): an upper bound."""
    ds = _data(6)
    acct, step, dl = _private(DataLoader(ds, batch_size=6, sampler=RandomSampler(ds, num_samples=18)), sigma=3.0)
    for _ in range(3):
        for i, batch in enumerate(dl):
            step(batch)
            if i + 1 == 2:
                break
    _certified(acct, 3.0, 6)
    for _ in range(2):  # draw-then-break: the third batch is drawn and left
        for i, batch in enumerate(dl):
            if i == 1:
                break
            step(batch)
    assert acct.loader_run.iterations == (2, 2, 2, 2, 1)
    _certified(acct, 3.0, 9)


@pytest.mark.parametrize("make", [
    lambda: _shuffled(),
    lambda: DataLoader(_data(7), batch_size=3, sampler=RandomSampler(_data(7), num_samples=17)),
    lambda: DataLoader(_data(9), batch_size=4, shuffle=False, drop_last=True),
])
def test_a_full_epoch_loop_is_counted_as_before(make):
    """Whole loader epochs: the iterations are full, and K is what the loader's order counted."""
    acct, step, dl = _private(make())
    for _ in range(3):
        for batch in dl:
            step(batch)
    plan = loader_plan(dl)
    assert acct.loader_run.iterations == (plan.batches,) * 3
    assert acct.release == Release.shuffled(2.0, epochs=plan.passes(3 * plan.batches))


def test_save_load_round_trip_keeps_the_iterations(tmp_path):
    from reconrisk._src.experiments.release_source import release_from_opacus_file

    acct, step, dl = _private(_shuffled())
    for _ in range(3):
        step(next(iter(dl)))
    state = acct.state_dict()
    assert state["iterations"] == [1, 1, 1] and state["assumed_steps"] == 0
    again = ReconRiskAccountant()
    again.load_state_dict(json.loads(json.dumps(state)))
    assert again.loader_run == acct.loader_run and again.release == acct.release == Release.shuffled(2.0, 3)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    with pytest.warns(UserWarning, match="3 iterations"):
        rel, prov = release_from_opacus_file(path)
    assert rel == Release.shuffled(2.0, 3) and prov["loader_iterations"] == "3 observed"
    # resumed: loaded, then told the loader again; its iterations go on from the saved ones
    acct2, step2, dl2 = _private(_shuffled(), acct=again)
    for batch in dl2:
        step2(batch)
    assert acct2.loader_run.iterations == (1, 1, 1, 4) and acct2.release == Release.shuffled(2.0, 4)
    told_first, step3, _ = _private(_shuffled())  # the other order: told, then loaded
    told_first.load_state_dict(state)
    assert told_first.loader_run.iterations == (1, 1, 1)


def test_an_older_state_is_counted_in_the_loader_s_order_and_says_so(tmp_path):
    """A state saved before iterations were observed (no 'iterations') reads as before; resumed on a watched loader
    its steps stay counted in the loader's order and the new ones as they ran."""
    old = {"history": [[2.0, 0.25, 6]], "mechanism": "reconrisk", "batch_sampling": "shuffled",
           "loader": LoaderPlan("RandomSampler", 20, 20, 5).to_dict()}
    acct = ReconRiskAccountant()
    acct.load_state_dict(old)
    assert acct.loader_run is None
    with pytest.warns(UserWarning, match="the steps taken in the loader's order"):
        assert Release.from_opacus(acct) == Release.shuffled(2.0, 2)
    acct, step, dl = _private(_shuffled(), acct=acct)
    for _ in range(2):
        step(next(iter(dl)))
    assert acct.loader_run == LoaderRun(loader_plan(dl), (1, 1), assumed_steps=6)
    with pytest.warns(UserWarning, match=r"the first 6 steps, recorded before, in the loader's order"):
        assert Release.from_opacus(acct) == Release.shuffled(2.0, 4)


def test_a_step_without_a_new_batch_certifies_nothing(tmp_path):
    from reconrisk._src.cli import main

    acct, step, dl = _private(_shuffled())
    batch = next(iter(dl))
    step(batch)
    with pytest.warns(UserWarning, match="drew no new batch from the watched data loader.*certify nothing") as w:
        step(batch)
    ours = [x for x in w if "ReconRiskAccountant" in str(x.message)]
    assert len(ours) == 1 and "\n" not in str(ours[0].message)
    for ask in (lambda: acct.get_epsilon(DELTA), lambda: acct.rero(0.5), lambda: acct.release):
        with pytest.raises(ReconRiskError, match="nothing is certified for this run: an optimisation step drew no"):
            ask()
    state = acct.state_dict()
    again = ReconRiskAccountant()
    again.load_state_dict(state)
    with pytest.raises(ReconRiskError, match="drew no new batch"):
        again.get_epsilon(DELTA)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    assert main(["report", "--from-opacus", str(path), "--out", str(tmp_path / "o"), "--samples", "0"]) == 2


def test_steps_drawn_from_another_loader_object_are_not_matched():
    acct, step, dl = _private(_shuffled())
    other = _shuffled()
    with pytest.warns(UserWarning, match="certify nothing"):
        for batch in other:
            step(batch)
    with pytest.raises(ReconRiskError, match="drew no new batch"):
        acct.get_epsilon(DELTA)


def test_gradient_accumulation_is_refused():
    """Two batches, one optimiser step: Opacus records sample rate 2/len(loader), refused (not one batch a step)."""
    torch.manual_seed(0)
    engine = opacus.PrivacyEngine()
    engine.accountant = acct = ReconRiskAccountant()
    net = torch.nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net, opt, dl = engine.make_private(module=net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1),
                                           data_loader=_shuffled(), noise_multiplier=2.0, max_grad_norm=1.0,
                                           poisson_sampling=False)
    it = iter(dl)
    for _ in range(2):  # two batches, one step
        xb, yb = next(it)
        torch.nn.functional.cross_entropy(net(xb), yb).backward()
    opt.step()
    with pytest.raises(ReconRiskError, match="gradient accumulation"):
        acct.get_epsilon(DELTA)


@pytest.mark.parametrize("extra,what", [
    ({"iterations": [0]}, r"iterations\[0\] must be an integer in \[1, 4\]"),
    ({"iterations": [2, -1]}, r"iterations\[1\] must be an integer in \[1, 4\]"),
    ({"iterations": [True] * 10}, r"iterations\[0\] must be an integer"),
    ({"iterations": [1.5] * 10}, r"iterations\[0\] must be an integer"),
    ({"iterations": ["3"] * 10}, r"iterations\[0\] must be an integer"),
    ({"iterations": [5, 5]}, r"iterations\[0\] must be an integer in \[1, 4\]"),
    ({"iterations": "1111111111"}, "iterations must be a list of integers"),
    ({"iterations": {"a": 1}}, "iterations must be a list of integers"),
    ({"iterations": [1, 1]}, "the history records 10 steps but the loader's observed iterations delivered 2"),
    ({"iterations": [4] * 3, "assumed_steps": 11}, "the history records 10 steps"),
    ({"iterations": [4] * 3, "assumed_steps": -1}, "assumed_steps must be an integer >= 0"),
    ({"iterations": [4] * 3, "assumed_steps": "0"}, "assumed_steps must be an integer >= 0"),
    ({"iterations": [4] * 3, "unmatched": 7}, "unmatched must be a reason"),
    ({"iterations": [4] * 3, "unmatched": "a\nb"}, "unmatched must be a reason"),
    ({"iterations": [4] * 3, "loader": None}, "holds loader iterations but no loader"),
])
def test_a_hostile_saved_list_is_refused_in_one_line(extra, what, tmp_path, capsys):
    from reconrisk._src.cli import main

    state = {"history": [[2.0, 0.25, 10]], "mechanism": "reconrisk", "batch_sampling": "shuffled",
             "loader": LoaderPlan("RandomSampler", 20, 20, 5).to_dict(), **extra}
    if state["loader"] is None:
        del state["loader"]
    with pytest.raises(ReconRiskError, match=what) as e:
        ReconRiskAccountant().load_state_dict(state)
    assert "\n" not in str(e.value)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    assert main(["report", "--from-opacus", str(path), "--out", str(tmp_path / "o"), "--samples", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_out_of_order_batches_are_refused():
    dl = DataLoader(_data(8), batch_size=2, shuffle=True, num_workers=2, in_order=False)
    with pytest.raises(ReconRiskError, match="in_order=False"):
        loader_plan(dl)


def test_workers_and_persistent_workers_are_counted_as_they_ran():
    """With workers torch prefetches batches; only those handed to the loop count. Persistent workers reset one
    torch iterator on every iter(loader): an older iterator drawing after that draws the new pass (unmatched)."""
    for kw in ({"num_workers": 2}, {"num_workers": 2, "persistent_workers": True}):
        acct, step, dl = _private(DataLoader(_data(20), batch_size=5, shuffle=True, **kw))
        for _ in range(3):
            for i, batch in enumerate(dl):
                step(batch)
                if i + 1 == 2:
                    break
        assert acct.loader_run.iterations == (2, 2, 2), kw
        _certified(acct, 2.0, 3)
    old = iter(dl)
    step(next(old))
    iter(dl)  # resets the one torch iterator `old` draws from
    with pytest.warns(UserWarning, match="persistent workers was used after the loader was iterated again"):
        step(next(old))
    with pytest.raises(ReconRiskError, match="persistent workers"):
        acct.get_epsilon(DELTA)


def test_a_copy_of_a_watched_loader_is_the_user_s_class_and_unwatched():
    import copy
    import pickle

    acct, step, dl = _private(_shuffled())
    for clone in (copy.deepcopy(dl), pickle.loads(pickle.dumps(dl))):
        assert type(clone) is DataLoader and len(list(clone)) == 4
    with pytest.warns(UserWarning, match="drew no new batch"):
        step(next(iter(copy.copy(dl))))
