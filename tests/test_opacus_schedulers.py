"""Opacus noise schedulers: a run whose every step has its own σ is accounted as the schedule that ran.

``opacus.schedulers.ExponentialNoise`` (σ_t = σ₀γᵗ), ``StepNoise`` and ``LambdaNoise`` change the optimizer's
noise multiplier between steps; the accountant records one history entry per distinct (σ, q) in a row, and
every number it reports is the :class:`PrivacyAnalysis` of ``Release.schedule(history)``. Certified: the ε
bracket is checked against references that never touch reconrisk's engine — Opacus's own RDP accountant on the
same history (an upper bound the PLD's upper end must not exceed) and Opacus's PRV accountant on the schedule
grouped at each group's smallest σ (its upper end bounds the run from above: our lower end must lie under it)
and at its largest σ (its lower end bounds the run from below: our upper end must lie over it). (The PRV
accountant on the 1,000 distinct steps themselves takes minutes: [0.906, 0.926] at ε error 0.01, around our
[0.9145, 0.9176].)
"""

import json
import warnings

import numpy as np
import pytest

import reconrisk
from reconrisk import Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk._src.cli import main
from reconrisk.integrations.opacus import ReconRiskAccountant

opacus = pytest.importorskip("opacus", reason="opacus is not installed (pip install -e '.[test]', the README's test command)")
torch = pytest.importorskip("torch")
from opacus.schedulers import ExponentialNoise, LambdaNoise, StepNoise  # noqa: E402

DELTA = 1e-5
N, BATCH = 400, 4  # a slice of the embedded digits; Opacus's Poisson loader at q = 1/100


def _train(make_scheduler, steps: int, sigma: float = 2.0, seed: int = 0):
    """Train a linear model on digits with Opacus + ReconRiskAccountant + a noise scheduler stepped after every
    optimizer step; returns (engine, accountant, the σ each step used, read off the optimizer as it stepped)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # (a tiny model: threads only contend)
    try:
        torch.manual_seed(seed)
        d = reconrisk.load_digits()
        data = torch.utils.data.TensorDataset(torch.tensor(d.x[:N]), torch.tensor(d.y[:N]).long())
        loader = torch.utils.data.DataLoader(data, batch_size=BATCH)
        model = torch.nn.Linear(64, 10)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        engine = opacus.PrivacyEngine()
        acct = engine.accountant = ReconRiskAccountant()
        used = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                     noise_multiplier=sigma, max_grad_norm=1.0)
            sched = make_scheduler(opt)
            loss_fn = torch.nn.CrossEntropyLoss()
            while len(used) < steps:
                for xb, yb in loader:
                    opt.zero_grad()
                    out = model(xb)
                    (loss_fn(out, yb) if len(xb) else out.sum() * 0.0).backward()
                    used.append(opt.noise_multiplier)
                    opt.step()
                    sched.step()
                    if len(used) == steps:
                        break
    finally:
        torch.set_num_threads(threads)
    return engine, acct, used


def _runs(values) -> list:
    """[(σ, 1/100, run length), …]: the σ sequence with equal neighbours merged (what the history must hold)."""
    out = []
    for s in values:
        if out and out[-1][0] == s:
            out[-1] = (s, 0.01, out[-1][2] + 1)
        else:
            out.append((s, 0.01, 1))
    return out


def _prv_bracket(groups) -> tuple[float, float]:
    """Opacus's PRV accountant (Gopi, Lee & Wutschitz 2021; its own engine) on [(σ, q, count), …]: its certified
    (lower, upper) ε, each within its error bound of the exact value."""
    prv = opacus.accountants.PRVAccountant()
    prv.history = [(float(s), q, n) for s, q, n in groups]
    low, _, up = prv._get_dprv(eps_error=0.01, delta_error=1e-8).compute_epsilon(DELTA, 1e-8, 0.01)
    return float(low), float(up)


def test_exponential_noise_over_1000_steps_is_the_schedule_that_ran():
    engine, acct, used = _train(lambda opt: ExponentialNoise(opt, gamma=0.9995), steps=1000)
    hist = acct.history
    assert hist == _runs(used) and len(hist) == 1000 == len({s for s, _, _ in hist})  # one entry per step
    assert used[0] == 2.0 and used[-1] == pytest.approx(2.0 * 0.9995 ** 999, rel=1e-9)
    release = Release.schedule(hist)
    assert Release.from_opacus(engine) == release and release.steps == len(acct) == 1000

    # every number is the PrivacyAnalysis of the same release (a fresh one, not the accountant's)
    ref = PrivacyAnalysis(release)
    eps = ref.epsilon(DELTA, two_sided=True)
    assert acct.get_epsilon(DELTA) == engine.get_epsilon(DELTA) == eps.upper
    rero, rero_ref = acct.rero(prior_size=10), ref.rero(prior_size=10)
    assert (rero.lower, rero.upper) == (rero_ref.lower, rero_ref.upper)
    assert acct.risk("membership_advantage").upper == ref.risk("membership_advantage").upper
    assert eps.upper - eps.lower <= 0.01 * eps.upper and rero.upper - rero.lower <= 0.01 * rero.upper

    # certified, against references outside the engine: Opacus's RDP on the same history (never below the PLD)
    rdp = opacus.accountants.RDPAccountant()
    rdp.history = list(hist)
    assert eps.upper <= rdp.get_epsilon(DELTA)
    # Opacus's PRV accountant on 20 groups of 50 consecutive steps: at each group's smallest σ it over-states the
    # run (post-processing in σ), at its largest it under-states it; the bracket must fit between the two
    sig = np.array([s for s, _, _ in hist]).reshape(20, 50)
    below = _prv_bracket([(g.max(), 0.01, 50) for g in sig])[0]
    above = _prv_bracket([(g.min(), 0.01, 50) for g in sig])[1]
    assert below <= eps.upper and eps.lower <= above
    assert above - below <= 0.1 * eps.upper  # (the references are that close: the check has teeth)

    # a saved state reads back to the same numbers; the RDP route agrees with Opacus's RDP
    again = ReconRiskAccountant()
    again.load_state_dict(json.loads(json.dumps(acct.state_dict())))
    assert again.history == hist and again.get_epsilon(DELTA) == eps.upper
    assert acct.get_epsilon(DELTA, accountant="rdp") == pytest.approx(rdp.get_epsilon(DELTA), rel=0.02)


@pytest.mark.parametrize("name", ["step", "lambda"])
def test_step_and_lambda_noise_histories(name):
    """StepNoise: σ halves every 100 steps (3 entries). LambdaNoise cycling three σ: 300 entries but 3 distinct
    steps — composition commutes, so the run is the 3-segment release of their counts, to the engine's grid."""
    if name == "step":
        engine, acct, used = _train(lambda opt: StepNoise(opt, step_size=100, gamma=0.5), steps=300, sigma=4.0)
        assert acct.history == [(4.0, 0.01, 100), (2.0, 0.01, 100), (1.0, 0.01, 100)]
    else:
        engine, acct, used = _train(lambda opt: LambdaNoise(opt, noise_lambda=lambda e: 1.0 + 0.5 * ((e + 1) % 3)),
                                    steps=300, sigma=1.0)
        assert len(acct.history) == 300 and sorted({s for s, _, _ in acct.history}) == [1.0, 1.5, 2.0]
    assert acct.history == _runs(used)
    release = Release.schedule(acct.history)
    eps = PrivacyAnalysis(release).epsilon(DELTA, two_sided=True)
    assert acct.get_epsilon(DELTA) == eps.upper
    merged = Release.schedule(sorted(((s, 0.01, used.count(s)) for s in set(used)), reverse=True))
    other = PrivacyAnalysis(merged).epsilon(DELTA, two_sided=True)
    assert other.lower <= eps.upper and eps.lower <= other.upper  # the same run: the brackets overlap


def test_report_from_opacus_reads_a_10k_entry_history(tmp_path, capsys):
    """``reconrisk report --from-opacus`` on a saved history of 10⁴ distinct entries (σ from 1 upward in steps of
    0.001, q 0.01: the issue's schedule): it answers, says the schedule's size, and its ε is the PrivacyAnalysis
    of the same release."""
    hist = [(1.0 + 0.001 * i, 0.01, 1) for i in range(10_000)]
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"history": hist, "mechanism": "rdp"}))
    assert main(["report", "--from-opacus", str(state), "--prior-size", "10", "--samples", "0",
                 "--out", str(tmp_path / "rep")]) in (0, None)
    text = capsys.readouterr().out
    assert "schedule of 10,000 segments (10,000 steps in all)" in " ".join(text.split())
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert len(rep["release"]["segments"]) == 10_000 and rep["release"]["steps"] == 10_000
    release = Release.schedule(hist)
    assert rep["epsilon"]["value"] == PrivacyAnalysis(release).epsilon(1e-5).upper
    b = rep["rero"]["pld"]
    assert b["lower"] <= b["upper"] <= 1.01 * b["lower"]
