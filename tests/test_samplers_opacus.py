"""Opacus: the loader's sampler is checked, ReconRiskAccountant is in Opacus's registry (issue 24)."""

from __future__ import annotations

import pytest

from reconrisk import Release
from reconrisk.errors import ReconRiskError

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

from torch.utils.data import DataLoader, SequentialSampler, TensorDataset, WeightedRandomSampler  # noqa: E402

from reconrisk.integrations.opacus import ReconRiskAccountant, register_with_opacus  # noqa: E402


def _accountant(steps=50, sigma=1.0, q=0.1):
    a = ReconRiskAccountant()
    for _ in range(steps):
        a.step(noise_multiplier=sigma, sample_rate=q)
    return a


def test_registered_in_opacus_registry():
    accs = pytest.importorskip("opacus.accountants")
    if not hasattr(accs, "register_accountant"):
        assert register_with_opacus() is False
        return
    assert register_with_opacus() is True and register_with_opacus() is True  # idempotent
    assert isinstance(accs.create_accountant("reconrisk"), ReconRiskAccountant)
    assert isinstance(opacus.PrivacyEngine(accountant="reconrisk").accountant, ReconRiskAccountant)


def test_poisson_loader_keeps_the_history():
    from opacus.data_loader import DPDataLoader

    ds = TensorDataset(torch.zeros(100, 2))
    dl = DPDataLoader.from_data_loader(DataLoader(ds, batch_size=10))
    assert Release.from_opacus(_accountant(), data_loader=dl) == Release(1.0, 0.1, 50)


@pytest.mark.parametrize("kind,loader", [
    ("shuffled", lambda ds: DataLoader(ds, batch_size=10, shuffle=True)),
    ("sequential", lambda ds: DataLoader(ds, batch_size=10, sampler=SequentialSampler(ds))),
])
def test_non_poisson_loader_says_what_it_assumed(kind, loader):
    ds = TensorDataset(torch.zeros(100, 2))
    with pytest.warns(UserWarning, match=f"draws {kind} batches.*assumed the sound Release.shuffled") as w:
        rel = Release.from_opacus(_accountant(), data_loader=loader(ds))
    assert len(w) == 1 and "\n" not in str(w[0].message)
    assert rel == Release.shuffled(1.0, epochs=5) and rel.sampler == "fixed"


def test_unknown_sampler_is_refused():
    ds = TensorDataset(torch.zeros(100, 2))
    dl = DataLoader(ds, batch_size=10, sampler=WeightedRandomSampler([1.0] * 100, 100))
    with pytest.raises(ReconRiskError, match="WeightedRandomSampler"):
        Release.from_opacus(_accountant(), data_loader=dl)


def test_importing_after_opacus_registers():
    import os
    import subprocess
    import sys

    code = ("import opacus.accountants as a, reconrisk.integrations.opacus as r; "
            "print(type(a.create_accountant('reconrisk')) is r.ReconRiskAccountant)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == ("True" if hasattr(opacus.accountants, "register_accountant") else ""), out.stderr[-500:]


# -- make_private(poisson_sampling=False): the accountant and the calibration follow the loader ----------------

N_DATA, BATCH = 64, 16  # 4 batches per epoch


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N_DATA, 4, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def _train(model, opt, loader, epochs):
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()


def _stand_in(sigma, epochs):
    from reconrisk._src.analysis.privacy import PrivacyAnalysis

    return PrivacyAnalysis(Release.shuffled(sigma, epochs=epochs))


@pytest.mark.parametrize("shuffle,kind", [(True, "shuffled"), (False, "sequential")])
def test_make_private_without_poisson_sampling_reports_the_stand_in(shuffle, kind):
    """Opacus calls the accountant with q = 1/len(loader) whatever the loader; told the loader by make_private,
    ReconRiskAccountant says (one line) that the batches are not Poisson and every number it gives is the
    stand-in's (ε 15.46 at δ 1e-5 for σ 1, 2 epochs) — never the Poisson number of the same history (5.46)."""
    torch.manual_seed(0)
    engine = opacus.PrivacyEngine()
    acct = engine.accountant = ReconRiskAccountant()
    model = torch.nn.Linear(4, 2)
    with pytest.warns(UserWarning, match=f"ReconRiskAccountant: the data loader draws {kind} batches") as w:
        model, opt, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=DataLoader(_data(), batch_size=BATCH, shuffle=shuffle), noise_multiplier=1.0,
            max_grad_norm=1.0, poisson_sampling=False)
    ours = [x for x in w if "ReconRiskAccountant" in str(x.message)]
    assert len(ours) == 1 and "\n" not in str(ours[0].message)
    assert acct.batch_sampling == kind
    _train(model, opt, loader, epochs=2)
    assert acct.history == [(1.0, 0.25, 8)]  # Opacus's record, as for a Poisson loader
    from reconrisk._src.analysis.privacy import PrivacyAnalysis

    ref = _stand_in(1.0, 2)
    assert acct.release == Release.shuffled(1.0, epochs=2)
    assert engine.get_epsilon(1e-5) == acct.get_epsilon(1e-5) == ref.epsilon(1e-5).upper
    poisson = PrivacyAnalysis(Release(1.0, 0.25, 8)).epsilon(1e-5).upper
    assert acct.get_epsilon(1e-5) > 2 * poisson  # the Poisson number (5.46) would understate it (15.46)
    assert acct.risk("reconstruction", prior_size=100).upper == ref.risk("reconstruction", prior_size=100).upper
    assert acct.rero(prior_size=100).upper == ref.rero(prior_size=100).upper
    # the saved state keeps the sampler: a fresh accountant (and Release.from_opacus) read the stand-in again
    again = ReconRiskAccountant()
    again.load_state_dict(acct.state_dict())
    assert again.batch_sampling == kind and again.get_epsilon(1e-5) == acct.get_epsilon(1e-5)
    with pytest.warns(UserWarning, match=f"draws {kind} batches"):
        assert Release.from_opacus(engine) == Release.shuffled(1.0, epochs=2)


@pytest.mark.parametrize("shuffle,kind", [(True, "shuffled"), (False, "sequential")])
def test_make_private_with_risk_without_poisson_sampling_calibrates_the_stand_in(shuffle, kind):
    """σ is calibrated for Release.shuffled(σ, epochs) — the release the run is certified by — and said so;
    the accountant's final risk is that release's, within the target; 2 % less noise misses it."""
    from reconrisk.integrations.opacus import make_private_with_risk

    torch.manual_seed(1)
    engine = opacus.PrivacyEngine()
    engine.accountant = ReconRiskAccountant()
    model = torch.nn.Linear(4, 2)
    with pytest.warns(UserWarning, match=f"batches are {kind} .*, not Poisson.*calibrated for the sound stand-in "
                                         r"Release.shuffled\(noise_multiplier="):
        model, opt, loader = make_private_with_risk(
            engine, model, torch.optim.SGD(model.parameters(), lr=0.1),
            DataLoader(_data(1), batch_size=BATCH, shuffle=shuffle), measure="reconstruction", target=0.2,
            prior_size=10, epochs=2, max_grad_norm=1.0, poisson_sampling=False)
    cal = engine.reconrisk_calibration
    sigma = cal["noise_multiplier"]
    assert cal["batch_sampling"] == kind and (cal["sample_rate"], cal["steps"]) == (1.0, 2)
    assert opt.noise_multiplier == sigma
    assert _stand_in(sigma, 2).risk("reconstruction", prior_size=10).upper <= 0.2
    tighter = _stand_in(0.98 * sigma, 2).risk("reconstruction", prior_size=10)
    assert tighter.upper > 0.2  # not wastefully conservative
    _train(model, opt, loader, epochs=2)
    final = engine.accountant.risk("reconstruction", prior_size=10)
    assert final.upper == _stand_in(sigma, 2).risk("reconstruction", prior_size=10).upper <= 0.2


def test_make_private_with_risk_refuses_a_sampler_without_analysis():
    from reconrisk.integrations.opacus import make_private_with_risk

    ds = _data()
    dl = DataLoader(ds, batch_size=BATCH, sampler=WeightedRandomSampler([1.0] * N_DATA, N_DATA))
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ReconRiskError, match="WeightedRandomSampler"):
        make_private_with_risk(opacus.PrivacyEngine(), model, torch.optim.SGD(model.parameters(), lr=0.1), dl,
                               target=0.2, prior_size=10, epochs=1, max_grad_norm=1.0, poisson_sampling=False)


def test_make_private_with_an_unknown_sampler_trains_but_certifies_nothing():
    torch.manual_seed(0)
    engine = opacus.PrivacyEngine()
    acct = engine.accountant = ReconRiskAccountant()
    model = torch.nn.Linear(4, 2)
    dl = DataLoader(_data(), batch_size=BATCH, sampler=WeightedRandomSampler([1.0] * N_DATA, N_DATA))
    with pytest.warns(UserWarning, match="WeightedRandomSampler.*certify nothing"):
        model, opt, loader = engine.make_private(module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                                                 data_loader=dl, noise_multiplier=1.0, max_grad_norm=1.0,
                                                 poisson_sampling=False)
    _train(model, opt, loader, epochs=1)
    with pytest.raises(ReconRiskError, match="nothing is certified"):
        acct.get_epsilon(1e-5)
    with pytest.raises(ReconRiskError, match="nothing is certified"):
        acct.risk("reconstruction", prior_size=10)


def test_poisson_make_private_keeps_the_poisson_numbers():
    torch.manual_seed(0)
    engine = opacus.PrivacyEngine()
    acct = engine.accountant = ReconRiskAccountant()
    model = torch.nn.Linear(4, 2)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # nothing of ours to say for a Poisson loader
        warnings.filterwarnings("ignore", message="Secure RNG")
        engine.make_private(module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                            data_loader=DataLoader(_data(), batch_size=BATCH, shuffle=True), noise_multiplier=1.0,
                            max_grad_norm=1.0)
    assert acct.batch_sampling == "poisson"
    for _ in range(8):
        acct.step(noise_multiplier=1.0, sample_rate=0.25)
    assert acct.release == Release(1.0, 0.25, 8)


def test_saved_state_of_a_sequential_run_reads_as_the_stand_in(tmp_path):
    """A saved state naming its kind but no loader: "sequential" is one pass per loader epoch (SequentialSampler);
    "shuffled" is refused (an earlier accountant said so for RandomSampler(num_samples=…) too)."""
    import json

    from reconrisk._src.experiments.release_source import release_from_opacus_file

    p = tmp_path / "state.json"
    p.write_text(json.dumps({"history": [[1.0, 0.25, 8]], "mechanism": "reconrisk", "batch_sampling": "sequential"}))
    with pytest.warns(UserWarning, match="draws sequential batches"):
        rel, prov = release_from_opacus_file(p)
    assert rel == Release.shuffled(1.0, epochs=2) and prov["batch_sampling"].startswith("sequential")
    p.write_text(json.dumps({"history": [[1.0, 0.25, 8]], "mechanism": "reconrisk", "batch_sampling": "shuffled"}))
    with pytest.raises(ReconRiskError, match="shuffled batches, and the loader is not given"):
        release_from_opacus_file(p)
