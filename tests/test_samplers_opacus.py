"""Opacus: the loader's sampler is checked, ReconRiskAccountant is in Opacus's registry (issue 24)."""

from __future__ import annotations

import pytest

from reconrisk import Release
from reconrisk.errors import ReconRiskError

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

from torch.utils.data import DataLoader, SequentialSampler, TensorDataset, WeightedRandomSampler  # noqa: E402

from reconrisk.opacus import ReconRiskAccountant, register_with_opacus  # noqa: E402


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

    code = ("import opacus.accountants as a, reconrisk.opacus as r; "
            "print(type(a.create_accountant('reconrisk')) is r.ReconRiskAccountant)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == ("True" if hasattr(opacus.accountants, "register_accountant") else ""), out.stderr[-500:]
