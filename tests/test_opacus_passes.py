"""Opacus loaders that pass over the data more than once per loader epoch (issue 39, item 1).

The stand-in Release.shuffled(σ, K) must count K = max over examples and index sequences of Σ_t m_t²
(m_t: the example's copies in step t) from the loader itself. References, independent of the code under test:
brute force over every placement (the dynamic programme), the real torch samplers (the semantics read), and the
closed-form Gaussian DP δ(ε) of μ = 2√K/σ through scipy (the certified ε of a trained run).
"""

from __future__ import annotations

import itertools
import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk import Release
from reconrisk._src.adapters.opacus_loaders import LoaderPlan, worst_blocks
from reconrisk.errors import ReconRiskError

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")
from scipy.stats import norm  # scipy is a core dependency: never a skip
from scipy.optimize import brentq

from torch.utils.data import (BatchSampler, DataLoader, DistributedSampler, IterableDataset,  # noqa: E402
                              RandomSampler, SequentialSampler, SubsetRandomSampler, TensorDataset)

from reconrisk._src.adapters.opacus_loaders import loader_plan  # noqa: E402
from reconrisk.integrations.opacus import ReconRiskAccountant, make_private_with_risk  # noqa: E402


def gdp_epsilon(mu: float, delta: float) -> float:
    """ε at δ of μ-GDP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Cor. 2.13)."""
    return brentq(lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - delta, 0, 200)


def brute_blocks(blocks, chunk):
    best = 0
    for pos in itertools.product(*[range(a, b) for a, b in blocks if b > a]):
        counts = {}
        for x in pos:
            counts[x // chunk] = counts.get(x // chunk, 0) + 1
        best = max(best, sum(c * c for c in counts.values()))
    return best


@settings(max_examples=150, deadline=None, derandomize=True)
@given(n=st.integers(1, 6), m=st.integers(1, 20), chunk=st.integers(1, 13), cut=st.integers(1, 20))
def test_worst_blocks_is_the_brute_force_maximum(n, m, chunk, cut):
    counted = min(cut, m)
    blocks = [(k * n, min((k + 1) * n, counted)) for k in range(math.ceil(counted / n))]
    assert worst_blocks(blocks, chunk) == brute_blocks(blocks, chunk)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(sampler=st.sampled_from(["RandomSampler", "SequentialSampler", "DistributedSampler"]),
       n=st.integers(1, 30), mult=st.integers(1, 4), batch=st.integers(1, 40), drop=st.booleans(),
       replicas=st.integers(1, 5), replacement=st.booleans(), steps=st.integers(0, 60))
def test_passes_grow_with_steps_and_repeat_per_loader_epoch(sampler, n, mult, batch, drop, replicas, replacement,
                                                           steps):
    num = {"RandomSampler": n * mult, "SequentialSampler": n, "DistributedSampler": math.ceil(n / replicas)}[sampler]
    plan = LoaderPlan(sampler, n, num, batch, drop, replacement=replacement and sampler == "RandomSampler",
                      num_replicas=replicas if sampler == "DistributedSampler" else 1)
    if plan.batches == 0:
        assert plan.passes(steps) == 0
        return
    assert plan.passes(steps) <= plan.passes(steps + 1)
    assert plan.passes(steps + plan.batches) == plan.passes(steps) + plan.per_epoch()
    # at least the participations of one example, at most every slot of every step holding it
    assert 1 <= plan.per_epoch(1) and plan.per_epoch() <= plan.batches * (batch * plan.num_replicas) ** 2
    if sampler == "SequentialSampler" or (sampler == "RandomSampler" and not plan.replacement and mult == 1):
        assert plan.per_epoch() == 1  # one permutation: each example once


def _observed(batches_per_step):
    """max over examples of Σ_t (copies in step t)² in one realised loader epoch."""
    tot = {}
    for batch in batches_per_step:
        counts = {}
        for i in batch:
            counts[i] = counts.get(i, 0) + 1
        for i, c in counts.items():
            tot[i] = tot.get(i, 0) + c * c
    return max(tot.values(), default=0)


@pytest.mark.parametrize("n,k_samples,batch,drop", [
    (3, 6, 4, False), (3, 7, 2, True), (4, 10, 3, False), (2, 5, 3, False), (3, 3, 2, True), (3, 8, 7, False)])
def test_random_sampler_without_replacement_plan_is_what_torch_can_draw(n, k_samples, batch, drop):
    """The worst case is reached by torch's own sampler (seeded draws) and never exceeded."""
    ds = TensorDataset(torch.zeros(n, 1))
    gen = torch.Generator().manual_seed(7)
    dl = DataLoader(ds, batch_size=batch, drop_last=drop,
                    sampler=RandomSampler(ds, replacement=False, num_samples=k_samples, generator=gen))
    plan = loader_plan(dl)
    assert plan.batches == len(dl)
    seen = [_observed([list(map(int, b)) for b in BatchSampler(dl.sampler, batch, drop)]) for _ in range(400)]
    assert max(seen) == plan.per_epoch()
    for s in range(1, plan.batches + 1):  # a loader epoch cut short after s steps: never more than the plan's
        cut = [_observed(list(itertools.islice((list(map(int, b)) for b in BatchSampler(dl.sampler, batch, drop)), s)))
               for _ in range(150)]
        assert max(cut) == plan.per_epoch(s)


@pytest.mark.parametrize("n,replicas,batch,shuffle,drop", [
    (10, 4, 3, True, False), (10, 4, 1, False, False), (7, 3, 2, True, False), (3, 5, 1, False, False),
    (10, 4, 3, True, True), (5, 3, 1, False, False)])
def test_distributed_sampler_plan_is_the_padded_list(n, replicas, batch, shuffle, drop):
    """Every replica's loader, step t summed across replicas: the worst example's Σ m² is the plan's, exactly."""
    ds = TensorDataset(torch.zeros(n, 1))
    loaders = [DataLoader(ds, batch_size=batch, sampler=DistributedSampler(ds, replicas, r, shuffle=shuffle,
                                                                           seed=3, drop_last=drop))
               for r in range(replicas)]
    plan = loader_plan(loaders[0])
    assert plan.num_replicas == replicas and plan.batches == len(loaders[0])
    idx = [[list(map(int, b)) for b in BatchSampler(dl.sampler, batch, False)] for dl in loaders]
    steps = [sum((rank[t] for rank in idx), []) for t in range(len(idx[0]))]
    assert _observed(steps) == plan.per_epoch()


def test_issue_example_distributed_counts_the_repeated_examples():
    """N 10, 4 replicas: 12 indices, two examples twice; in one step of 12 they count 2² each."""
    ds = TensorDataset(torch.zeros(10, 1))
    plan = loader_plan(DataLoader(ds, batch_size=3, sampler=DistributedSampler(ds, num_replicas=4, rank=0)))
    assert (plan.total_size, plan.batches, plan.per_epoch(), plan.passes(5)) == (12, 1, 4, 20)


def test_with_replacement_counts_every_draw_as_the_same_example():
    ds = TensorDataset(torch.zeros(5, 1))
    plan = loader_plan(DataLoader(ds, batch_size=3, sampler=RandomSampler(ds, replacement=True, num_samples=7)))
    assert plan.kind == "with_replacement" and plan.per_epoch() == 3 * 3 + 3 * 3 + 1
    # that worst case is a sequence torch can draw (all indices equal), and nothing exceeds it
    gen = torch.Generator().manual_seed(0)
    tiny = TensorDataset(torch.zeros(1, 1))
    dl = DataLoader(tiny, batch_size=3, sampler=RandomSampler(tiny, replacement=True, num_samples=7, generator=gen))
    assert _observed([list(map(int, b)) for b in BatchSampler(dl.sampler, 3, False)]) == loader_plan(dl).per_epoch()


# -- the issue's example: Release.from_opacus with the loader ------------------------------------------------------

def _history_accountant(history):
    a = ReconRiskAccountant()
    for s, q, t in history:
        for _ in range(t):
            a.step(noise_multiplier=s, sample_rate=q)
    return a


def test_issue_example_five_passes_per_loader_epoch():
    """batch 100 of N 100, RandomSampler(num_samples=500): Opacus records [(2.0, 0.2, 5)]; before, the stand-in
    counted one loader epoch (ε(1e-5) 4.38, ReRo(½) 0.841); the run is 5 full passes: μ = 2√5/2, ε 11.48, and
    a two-candidate attack succeeds Φ(√5/2) = 0.868 of the time."""
    ds = TensorDataset(torch.zeros(100, 1))
    dl = DataLoader(ds, batch_size=100, sampler=RandomSampler(ds, replacement=False, num_samples=500))
    with pytest.warns(UserWarning, match="at most 5 passes.*Release.shuffled\\(noise_multiplier=2, epochs=5\\)"):
        rel = Release.from_opacus(_history_accountant([(2.0, 0.2, 5)]), data_loader=dl)
    assert rel == Release.shuffled(2.0, epochs=5)
    from reconrisk._src.analysis.privacy import PrivacyAnalysis

    a = PrivacyAnalysis(rel)
    assert a.epsilon(1e-5).upper == pytest.approx(gdp_epsilon(math.sqrt(5), 1e-5), rel=1e-6)
    assert a.epsilon(1e-5).upper == pytest.approx(11.48, abs=0.005)
    assert a.rero(0.5).upper >= norm.cdf(math.sqrt(5) / 2) > 0.868


def test_history_that_is_not_one_batch_per_step_is_refused():
    ds = TensorDataset(torch.zeros(100, 1))
    dl = DataLoader(ds, batch_size=10, shuffle=True)
    with pytest.raises(ReconRiskError, match=r"sample rate 0.2 is not 1/len\(data_loader\) = 1/10"):
        Release.from_opacus(_history_accountant([(1.0, 0.2, 5)]), data_loader=dl)


class _Stream(IterableDataset):
    def __iter__(self):
        return iter(range(4))


class _MySampler(RandomSampler):
    pass


@pytest.mark.parametrize("make,what", [
    (lambda ds: DataLoader(ds, batch_size=2, sampler=_MySampler(ds)), "_MySampler"),
    (lambda ds: DataLoader(ds, batch_sampler=type("MyBatches", (BatchSampler,), {})(SequentialSampler(ds), 2, False)),
     "MyBatches"),
    (lambda ds: DataLoader(_Stream(), batch_size=2), "_InfiniteConstantSampler"),
    (lambda ds: DataLoader(ds, batch_size=None), "batch_size=None"),
    (lambda ds: DataLoader(ds, batch_size=2, sampler=SubsetRandomSampler([0, 1, 1])), "repeats indices"),
])
def test_a_loader_whose_passes_cannot_be_proved_is_refused_in_one_line(make, what):
    ds = TensorDataset(torch.zeros(6, 1))
    with pytest.raises(ReconRiskError, match=what) as e:
        loader_plan(make(ds))
    assert "\n" not in str(e.value) and "Poisson sampling" in str(e.value)


def test_subset_random_sampler_with_distinct_indices_is_one_pass():
    ds = TensorDataset(torch.zeros(6, 1))
    plan = loader_plan(DataLoader(ds, batch_size=2, sampler=SubsetRandomSampler([5, 0, 3])))
    assert (plan.n, plan.batches, plan.per_epoch(), plan.passes(5)) == (3, 2, 1, 3)


def test_plan_validates_and_round_trips():
    plan = LoaderPlan("RandomSampler", 10, 25, 4, drop_last=True)
    assert LoaderPlan.from_dict(plan.to_dict()) == plan
    with pytest.raises(ReconRiskError, match="loader batch_size must be an integer >= 1; found 0"):
        LoaderPlan("RandomSampler", 10, 25, 0)
    with pytest.raises(ReconRiskError, match="steps must be an integer >= 0"):
        plan.passes(-1)
    with pytest.raises(ReconRiskError, match="loader sampler must be one of"):
        LoaderPlan.from_dict({**plan.to_dict(), "sampler": "WeightedRandomSampler"})


def test_saved_kind_without_its_loader():
    """A bare "sequential" (an older saved state: SequentialSampler, one pass per loader epoch) is read so and the
    note says so; a bare "shuffled" or "with_replacement" is refused: an older state said "shuffled" for any
    RandomSampler (num_samples=5N included) or DistributedSampler, so the passes are not known."""
    from reconrisk._src.release import opacus_history_release

    rel, note = opacus_history_release([(1.5, 0.25, 6)], "sequential")
    assert rel == Release.shuffled(1.5, epochs=2) and "SequentialSampler was assumed" in note
    with pytest.raises(ReconRiskError, match="drawn with replacement, and the loader is not given"):
        opacus_history_release([(1.5, 0.25, 6)], "with_replacement")
    with pytest.raises(ReconRiskError, match="shuffled batches, and the loader is not given"):
        opacus_history_release([(2.0, 0.2, 5)], "shuffled")


def test_the_issue_history_saved_without_its_loader_certifies_nothing(tmp_path, capsys):
    """The issue's run saved by an earlier ReconRiskAccountant (batch_sampling "shuffled", no loader) must not
    give back ε 4.38 (one pass per loader epoch) through the saved-state doors: refused in one line, exit 2."""
    import json

    from reconrisk._src.cli import main
    from reconrisk._src.experiments.release_source import release_from_opacus_file

    state = {"history": [[2.0, 0.2, 5]], "mechanism": "reconrisk", "batch_sampling": "shuffled"}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(state))
    with pytest.raises(ReconRiskError, match="the loader is not given"):
        release_from_opacus_file(path)
    assert main(["report", "--from-opacus", str(path), "--out", str(tmp_path / "o"), "--samples", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the loader is not given" in err and "Traceback" not in err
    acct = ReconRiskAccountant()
    acct.load_state_dict(state)
    with pytest.raises(ReconRiskError, match="the loader is not given"):
        acct.get_epsilon(1e-5)
    ds = TensorDataset(torch.zeros(100, 1))  # resumed on a plain loader: the saved steps' loader is still unknown
    with pytest.warns(UserWarning, match="draws shuffled batches"):
        acct = ReconRiskAccountant()
        acct.use_data_loader(DataLoader(ds, batch_size=20, shuffle=True))
    with pytest.raises(ReconRiskError, match=r"\(its loader not named\) and this accountant's data loader draws "
                       r"shuffled ones \(RandomSampler\(n=100, num_samples=100\) in batches of 20\); resume"):
        acct.load_state_dict(state)


@pytest.mark.parametrize("fields,what", [
    ({"drop_last": "no"}, "loader drop_last must be True or False; found 'no'"),
    ({"replacement": 1}, "loader replacement must be True or False; found 1"),
    ({"sampler": "DistributedSampler", "replacement": True, "num_samples": 5},
     "replacement=True is RandomSampler's only"),
    ({"sampler": "SequentialSampler"}, "SequentialSampler's num_samples must be n = 5; found 15"),
    ({"sampler": "SubsetRandomSampler", "num_samples": 4}, "SubsetRandomSampler's num_samples must be n = 5; found 4"),
    ({"num_replicas": 3}, "num_replicas must be 1 for RandomSampler; found 3"),
    ({"sampler": "DistributedSampler", "num_replicas": 2, "num_samples": 7},
     r"DistributedSampler's num_samples must be one of \[2, 3\] for n = 5, num_replicas = 2; found 7"),
    ({"n": 1, "num_samples": 10 ** 12, "batch_size": 2 * 10 ** 11},
     "loader num_samples/n must be at most 100000 passes per loader epoch; found 1000000000000"),
    ({"sampler": "DistributedSampler", "n": 1, "num_samples": 1, "num_replicas": 10 ** 9},
     "loader num_samples/n must be at most 100000 passes per loader epoch; found 1000000000"),
])
def test_a_hostile_saved_loader_is_refused_in_one_line_at_once(fields, what, tmp_path, capsys):
    """A saved loader that torch cannot build (a bool that is not one, a num_samples its sampler never has, a
    replica count without DistributedSampler) or that would take hours to count is refused in one line, in the
    CLI too (exit 2), before any counting."""
    import json
    import time

    from reconrisk._src.cli import main

    d = {"sampler": "RandomSampler", "n": 5, "num_samples": 15, "batch_size": 5, **fields}
    with pytest.raises(ReconRiskError, match=what):
        LoaderPlan.from_dict(d)
    kind = "with_replacement" if d.get("replacement") is True else "shuffled"
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"history": [[2.0, 0.2, 5]], "mechanism": "reconrisk", "batch_sampling": kind,
                                "loader": d}))
    start = time.monotonic()
    assert main(["report", "--from-opacus", str(path), "--out", str(tmp_path / "o"), "--samples", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and time.monotonic() - start < 30


def test_torch_s_own_distributed_num_samples_are_accepted():
    for n in range(1, 12):
        for replicas in range(1, 8):
            for drop in (False, True):
                s = DistributedSampler(TensorDataset(torch.zeros(n, 1)), num_replicas=replicas, rank=0,
                                       drop_last=drop)
                if s.num_samples >= 1:
                    LoaderPlan("DistributedSampler", n, s.num_samples, 2, num_replicas=replicas)


@pytest.mark.parametrize("indices", [torch.tensor([4, 4, 1]), torch.tensor([[4], [4], [1]]), [4.0, 4.0, 1.0]])
def test_subset_random_sampler_indices_are_compared_as_integers(indices):
    """A tensor of indices (torch.randperm(n)[:k], the common way) repeats example 4: its 0-d tensors hash by
    identity, so they must be compared as the integers they index (or refused when they are not integers)."""
    ds = TensorDataset(torch.zeros(6, 1))
    with pytest.raises(ReconRiskError, match="SubsetRandomSampler"):
        loader_plan(DataLoader(ds, batch_size=2, sampler=SubsetRandomSampler(indices)))
    plan = loader_plan(DataLoader(ds, batch_size=2, sampler=SubsetRandomSampler(torch.tensor([5, 0, 3]))))
    assert (plan.n, plan.per_epoch()) == (3, 1)


def test_a_plan_without_iterations_says_the_steps_are_counted_in_the_loader_s_order():
    """A history read with the loader's plan alone (Opacus's own accountant with data_loader=, a state saved before
    iterations were observed) is counted in the loader's order, and the note says so where the user sees it; the
    accountant itself warns that it counts the loader's iterations as the loop takes them."""
    from reconrisk._src.release import opacus_history_release

    dl = DataLoader(TensorDataset(torch.zeros(20, 1)), batch_size=5, shuffle=True)
    with pytest.warns(UserWarning, match=r"counted over the iterations of this loader object the loop takes \(each "
                                         r"iter\(loader\) a fresh pass: a break or a restart counts as it ran\)"):
        ReconRiskAccountant().use_data_loader(dl)
    rel, note = opacus_history_release([(2.0, 0.25, 10)], loader_plan(dl))
    assert rel == Release.shuffled(2.0, epochs=3) and "the steps taken in the loader's order" in note


def test_a_loaded_history_is_not_recounted_by_the_next_loader():
    """A state saved for RandomSampler(num_samples=5N) in batches of 50 (10 steps a loader epoch, 5 passes) loaded
    into a fresh accountant, then told a plain loader of 10 batches too (1 pass): the saved steps must not be
    counted as the new loader's. Likewise a Poisson history (Opacus's own state) resumed on a shuffled loader."""
    ds = TensorDataset(torch.zeros(100, 1))
    saved = {"history": [(2.0, 0.1, 20)], "mechanism": "reconrisk", "batch_sampling": "shuffled",
             "loader": LoaderPlan("RandomSampler", 100, 500, 50).to_dict()}
    plain = DataLoader(ds, batch_size=10, shuffle=True)
    for state in (saved, {"history": [(2.0, 0.1, 20)], "mechanism": "reconrisk"}):
        acct = ReconRiskAccountant()
        acct.load_state_dict(state)
        with pytest.raises(ReconRiskError, match="use a new accountant per sampler"):
            acct.use_data_loader(plain)
    acct = ReconRiskAccountant()
    acct.load_state_dict(saved)
    acct.use_data_loader(DataLoader(ds, batch_size=50, sampler=RandomSampler(ds, num_samples=500)))  # the same
    assert acct.release == Release.shuffled(2.0, epochs=10)
    with pytest.warns(UserWarning, match="draws shuffled batches"):  # the other order: told first, then loaded
        acct = ReconRiskAccountant()
        acct.use_data_loader(plain)
    with pytest.raises(ReconRiskError, match=r"names no sampler \(Opacus's accountants assume Poisson\)"):
        acct.load_state_dict({"history": [(2.0, 0.1, 20)], "mechanism": "reconrisk"})


def test_a_saved_unknown_sampler_says_nothing_is_certified():
    """A ReconRiskAccountant state saying batch_sampling 'unknown' (its loader had no analysis) is refused with
    that reason, not as an unknown word."""
    from reconrisk._src.release import opacus_history_release

    with pytest.raises(ReconRiskError, match="no analysis reconrisk can prove .* nothing is certified"):
        opacus_history_release([(2.0, 0.2, 5)], "unknown")
