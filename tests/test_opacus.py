"""Opacus integration, for real: train a tiny PyTorch model with Opacus on CPU and account it with reconrisk.

Needs the ``opacus`` extra (CI installs ``torch==2.13.0`` — a CPU wheel — and
``opacus``); skipped with a visible reason otherwise.
"""

import json
import math
import warnings

import pytest

from reconrisk import Release
from reconrisk._src.api import rero_bound
from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError
from reconrisk.integrations.opacus import ReconRiskAccountant, make_private_with_risk, release_from_opacus

opacus = pytest.importorskip("opacus", reason="opacus is not installed (pip install -e '.[test]', the README's test command)")
torch = pytest.importorskip("torch")

N, BATCH = 64, 16  # sample rate 1/4


def _setup(seed=0):
    torch.manual_seed(seed)
    x = torch.randn(N, 4)
    y = (x[:, 0] > 0).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, opt, loader


def _train(model, opt, loader, epochs):
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            if len(xb):
                loss_fn(model(xb), yb).backward()
            opt.step()


def test_accountant_inside_opacus_matches_opacus_and_reconrisk_bound(capsys):
    engine = opacus.PrivacyEngine(accountant="prv")
    acct = ReconRiskAccountant()
    engine.accountant = acct
    model, opt, loader = _setup()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                 noise_multiplier=1.1, max_grad_norm=1.0)
        _train(model, opt, loader, epochs=3)
    assert acct.history == [(1.1, 0.25, 12)] and len(acct) == 12
    assert engine.get_epsilon(1e-5) == acct.get_epsilon(1e-5)

    # ε against Opacus's own accountants on the same history
    ours = acct.get_epsilon(1e-5)
    prv = opacus.accountants.PRVAccountant()
    rdp = opacus.accountants.RDPAccountant()
    prv.history = list(acct.history)
    rdp.history = list(acct.history)
    eps_prv = prv.get_epsilon(1e-5, eps_error=0.01)
    eps_rdp = rdp.get_epsilon(1e-5)
    assert abs(ours - eps_prv) <= 0.02 * eps_prv + 0.01  # PRV's eps_error plus its truncation / our grid
    assert ours <= eps_rdp * (1 + 1e-9)  # RDP is a looser upper bound

    # the reported risk is `reconrisk bound` on the same history
    b = acct.rero(prior_size=10)
    assert b == rero_bound(release=Release.schedule(acct.history), prior_size=10)
    assert main(["bound", "-s", "1.1", "-q", "0.25", "-T", "12", "--prior-size", "10", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["rero"]["lower"], d["rero"]["upper"]) == (b.lower, b.upper)
    assert acct.risk("reconstruction", prior_size=10).upper == b.upper
    assert Release.from_opacus(engine) == release_from_opacus(acct) == Release(1.1, 0.25, 12)
    t = acct.tradeoff([1e-6, 0.1])
    assert t.power.upper[1] == pytest.approx(acct.risk("membership_tpr", fpr=0.1).upper)


def test_make_private_with_risk_trains_and_meets_the_target():
    engine = opacus.PrivacyEngine()
    engine.accountant = ReconRiskAccountant()
    model, opt, loader = _setup(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = make_private_with_risk(engine, model, opt, loader, measure="reconstruction", target=0.2,
                                                    prior_size=10, epochs=2, max_grad_norm=1.0)
        before = [p.detach().clone() for p in model.parameters()]
        _train(model, opt, loader, epochs=2)
    cal = engine.reconrisk_calibration
    assert cal["sample_rate"] == 0.25 and cal["steps"] == 8
    assert opt.noise_multiplier == cal["noise_multiplier"]
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))  # it trained
    final = engine.accountant.risk("reconstruction", prior_size=10)
    assert len(engine.accountant) == 8
    assert final.upper <= 0.2
    # and it is not wastefully conservative: 2 % less noise breaks the target
    looser = rero_bound(cal["noise_multiplier"] * 0.98, 0.25, 8, prior_size=10)
    assert looser.lower > 0.2 or looser.upper > 0.2


def test_accountant_interface_without_training():
    a = ReconRiskAccountant()
    assert a.get_epsilon(1e-5) == 0.0 and len(a) == 0 and a.mechanism() == "reconrisk"
    for _ in range(3):
        a.step(noise_multiplier=1.0, sample_rate=0.1)
    a.step(noise_multiplier=2.0, sample_rate=0.1)
    assert a.history == [(1.0, 0.1, 3), (2.0, 0.1, 1)]
    b = ReconRiskAccountant()
    b.load_state_dict(a.state_dict())
    assert b.history == a.history and b.get_epsilon(1e-5) == a.get_epsilon(1e-5)
    with pytest.raises(ReconRiskError, match="mechanism"):
        b.load_state_dict({"history": [], "mechanism": "rdp"})
    with pytest.raises(ReconRiskError, match="noise_multiplier"):
        a.step(noise_multiplier=-1.0, sample_rate=0.1)
    with pytest.raises(ReconRiskError, match="sample_rate"):
        a.step(noise_multiplier=1.0, sample_rate=2.0)
    with pytest.raises(ReconRiskError, match="history is empty"):
        Release.from_opacus(ReconRiskAccountant())
    with pytest.raises(ReconRiskError, match="PrivacyEngine"):
        Release.from_opacus(object())
    # an Opacus accountant's history reads the same
    r = opacus.accountants.RDPAccountant()
    for _ in range(5):
        r.step(noise_multiplier=1.0, sample_rate=0.1)
    assert Release.from_opacus(r) == Release(1.0, 0.1, 5)
    assert math.isfinite(a.get_epsilon(1e-5, accountant="rdp"))


def test_report_from_opacus_confirms_the_calibrated_run(tmp_path, capsys):
    """Issue 22's scenario: calibrate with make_private_with_risk (q = 1/24, 3 epochs, a 1-in-100 prior, 5 %),
    train, save the accountant, and the report of that state says the target is met — decided by the bound at
    the release, the very bound the calibrator held against the target."""
    torch.manual_seed(2)
    x = torch.randn(24 * 4, 4)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), batch_size=4)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = opacus.PrivacyEngine()
    engine.accountant = ReconRiskAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = make_private_with_risk(engine, model, opt, loader, measure="reconstruction", target=0.05,
                                                    prior_size=100, epochs=3, max_grad_norm=1.0)
        loss_fn = torch.nn.CrossEntropyLoss()
        for _ in range(3):
            for xb, yb in loader:  # Poisson batches of mean size 4 can be empty: a zero loss keeps every step
                opt.zero_grad()
                out = model(xb)
                (loss_fn(out, yb) if len(xb) else out.sum() * 0.0).backward()
                opt.step()
    cal = engine.reconrisk_calibration
    assert (cal["sample_rate"], cal["steps"]) == (1 / 24, 72) and len(engine.accountant) == 72
    state = tmp_path / "state.json"
    state.write_text(json.dumps(engine.accountant.state_dict()))
    main(["report", "--from-opacus", str(state), "--prior-size", "100", "--target-rero", "0.05", "--samples", "0",
          "--out", str(tmp_path / "rep"), "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert rep["summary"]["meets_target_now"] is True
    assert rep["calibration"]["current_rero"]["upper"] == cal["bound"]["upper"] <= 0.05
    assert rep["rero"]["pld"]["upper"] == cal["bound"]["upper"]
    assert rep["calibration"]["noise_multiplier"] == cal["noise_multiplier"]


def test_accountant_accepts_what_opacus_accepts_zero_noise_and_zero_rate():
    """As Opacus's RDP accountant: a step without noise at q > 0 makes ε = ∞ (every risk vacuous), a step at
    q = 0 costs nothing; both are recorded in the history (Opacus's own test_checkpoints trains at σ = 0)."""
    ref = ReconRiskAccountant()
    for _ in range(5):
        ref.step(noise_multiplier=1.0, sample_rate=0.1)
    a = ReconRiskAccountant()
    a.step(noise_multiplier=1.0, sample_rate=0.0)  # q = 0 alone: nothing touched the data
    assert a.get_epsilon(1e-5) == 0.0
    for _ in range(5):
        a.step(noise_multiplier=1.0, sample_rate=0.1)
    a.step(noise_multiplier=0.0, sample_rate=0.0)  # no noise, but never sampled: still free
    assert a.history == [(1.0, 0.0, 1), (1.0, 0.1, 5), (0.0, 0.0, 1)] and len(a) == 7
    assert a.get_epsilon(1e-5) == ref.get_epsilon(1e-5)
    assert a.rero(prior_size=10) == ref.rero(prior_size=10) and a.release == ref.release
    rdp = opacus.accountants.RDPAccountant()
    rdp.history = list(a.history)
    assert math.isfinite(rdp.get_epsilon(1e-5))  # Opacus agrees these steps are free
    a.step(noise_multiplier=0.0, sample_rate=0.1)
    rdp.history = list(a.history)
    assert rdp.get_epsilon(1e-5) == math.inf == a.get_epsilon(1e-5)
    assert a.risk("reconstruction", prior_size=10).upper == 1.0
    assert a.rero(prior_size=10).upper == 1.0 and a.risk("membership_advantage").upper == 1.0
    assert a.risk("bayes_security").lower == 0.0
    with pytest.raises(ReconRiskError, match="without noise"):
        a.tradeoff([0.1])
    with pytest.raises(ReconRiskError, match="without noise"):
        a.release
    b = ReconRiskAccountant()
    b.load_state_dict(a.state_dict())
    assert b.history == a.history and b.get_epsilon(1e-5) == math.inf
    with pytest.raises(ReconRiskError, match="noise_multiplier"):
        a.step(noise_multiplier=-0.5, sample_rate=0.1)
    with pytest.raises(ReconRiskError, match="sample_rate"):
        a.step(noise_multiplier=1.0, sample_rate=-0.1)


def test_zero_noise_training_with_checkpoints(tmp_path):
    """Opacus's checkpoint round trip with ReconRiskAccountant and noise_multiplier = 0 (what Opacus's own
    test_checkpoints does with its default accountant): trains, saves, loads, and answers ε = ∞."""
    model, opt, loader = _setup(3)
    engine = opacus.PrivacyEngine(accountant="prv")
    engine.accountant = ReconRiskAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                 noise_multiplier=0.0, max_grad_norm=1.0)
        _train(model, opt, loader, epochs=1)
    assert engine.accountant.history == [(0.0, 0.25, 4)] and engine.get_epsilon(1e-5) == math.inf
    path = tmp_path / "ckpt.pt"
    engine.save_checkpoint(path=path, module=model, optimizer=opt)
    engine2 = opacus.PrivacyEngine(accountant="prv")
    engine2.accountant = ReconRiskAccountant()
    model2, opt2, loader2 = _setup(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model2, opt2, loader2 = engine2.make_private(module=model2, optimizer=opt2, data_loader=loader2,
                                                     noise_multiplier=0.0, max_grad_norm=1.0)
        engine2.load_checkpoint(path=path, module=model2, optimizer=opt2)
    assert engine2.accountant.state_dict() == engine.accountant.state_dict()
    assert engine2.get_epsilon(1e-5) == math.inf
