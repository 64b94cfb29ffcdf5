"""``reconrisk report``: its numbers equal the single commands' ``--json`` numbers field by field, its release
sources (flags, TOML, a saved Opacus accountant), escaping, self-containment and one-line errors."""

from __future__ import annotations

import json
import math
import pickle
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk._src.cli import main

SAMPLES = "20000"  # Monte Carlo: small, the same in the report and in `bound --method mc`


def run_json(capsys, args):
    assert main(args + ["--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def make_report(capsys, tmp_path: Path, args, name="rep") -> dict:
    out = tmp_path / name
    printed = run_json(capsys, ["report", *args, "--samples", SAMPLES, "--out", str(out)])
    on_disk = json.loads((out / "report.json").read_text())
    printed.pop("files")
    assert printed == on_disk  # the file holds what --json prints
    assert (out / "report.html").is_file()
    return on_disk


# two releases: full batch (closed forms, analytic attack applies) and subsampled (PLD only)
RELEASES = {
    "full-batch": ["-s", "2.0", "-q", "1", "-T", "9", "-C", "0.5"],
    "subsampled": ["-s", "1.2", "-q", "0.05", "-T", "40"],
}
EXTRA = ["--prior-size", "10", "--target-rero", "0.3", "--model-dim", "20", "--data-dim", "64", "--min-norm", "0.8",
         "--fpr", "0.02", "--seed", "3"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each release's report, made once through the CLI."""
    out = {}
    for key, rel in RELEASES.items():
        d = tmp_path_factory.mktemp(key)
        assert main(["report", *rel, *EXTRA, "--samples", SAMPLES, "--out", str(d)]) == 0
        out[key] = json.loads((d / "report.json").read_text())
    return out


def _flags(rel):  # σ, q, T without -C (the commands other than report/analytic/capacity have no clip norm)
    return rel[:6]


@pytest.mark.parametrize("key", sorted(RELEASES))
def test_report_equals_bound_and_calibrate(capsys, reports, key):
    rep, rel = reports[key], RELEASES[key]
    b = run_json(capsys, ["bound", *_flags(rel), "--prior-size", "10", "--method", "all", "--samples", SAMPLES,
                          "--seed", "3"])
    assert rep["epsilon"]["value"] == b["epsilon"] and rep["epsilon"]["accountant"] == b["epsilon_accountant"]
    assert rep["epsilon"]["formula"]
    for m, summary in b["methods"].items():
        assert rep["rero"][m] == summary, m
    assert rep["rero"]["rdp"]["upper"] == b["baselines"]["rdp"] and rep["rero"]["rdp"]["method"] == "rdp_optimal"
    assert rep["rero"]["rdp_hayes2023_eq2"]["upper"] == b["baselines"]["rdp_hayes2023_eq2"]  # the paper's Eq. 2
    assert rep["rero"]["dp"]["upper"] == b["baselines"]["dp"]
    c = run_json(capsys, ["calibrate", "--target-rero", "0.3", "--prior-size", "10", "-q", rel[3], "-T", rel[5]])
    cal = rep["calibration"]
    assert cal["noise_multiplier"] == c["noise_multiplier"] and cal["noise_multiplier_bracket"] == c["bracket"]
    assert cal["rero"] == {k: c["rero"][k] for k in ("method", "lower", "upper")}
    assert cal["epsilon"] == c["epsilon"]
    assert rep["summary"]["calibrated_noise_multiplier"] == c["noise_multiplier"]


@pytest.mark.parametrize("key", sorted(RELEASES))
def test_report_equals_risk_and_tradeoff(capsys, reports, key):
    rep, rel = reports[key], RELEASES[key]
    r = run_json(capsys, ["risk", *_flags(rel), "--measure", "all", "--prior-size", "10", "--fpr", "0.02"])
    by_measure = {x["measure"]: x for x in rep["risks"]}
    assert len(r["risks"]) == 6
    for row in r["risks"]:
        assert by_measure[row["measure"]] == row, row["measure"]
    a = run_json(capsys, ["risk", *_flags(rel), "--measure", "attribute", "--baseline", "0.5"])
    rel_keys = {"clip_norm", "noise", "steps", "noise_multiplier", "sample_rate"}
    assert by_measure["attribute"] == {k: x for k, x in a.items() if k not in rel_keys}
    t = run_json(capsys, ["tradeoff", *_flags(rel)])
    t.pop("files")
    mine = dict(rep["tradeoff"])
    assert mine.pop("formula")
    # the report's release carries its clip norm; the curve's numbers do not depend on it
    assert mine.pop("release")["noise_multiplier"] == t.pop("release")["noise_multiplier"]
    assert mine == t


@pytest.mark.parametrize("key", sorted(RELEASES))
def test_report_equals_mse_capacity_and_analytic(capsys, reports, key):
    rep, rel = reports[key], RELEASES[key]
    m = run_json(capsys, ["mse-bound", *_flags(rel)])
    for k in ("rdp_epsilon", "diam", "mse_lower_bound", "log10_mse_lower_bound", "std_lower_bound", "sensitivity"):
        assert rep["mse"][k] == m[k], k
    sigma, clip = float(rel[1]), float(rel[rel.index("-C") + 1]) if "-C" in rel else 1.0
    seg = rep["capacity"]["segments"][0]
    c = run_json(capsys, ["capacity", "gaussian", "--noise-std", repr(seg["noise_std"]), "--radius", repr(clip), "--dim", "20"])
    assert seg["noise_std"] == sigma * clip and seg["log_capacity_step"] == c["log_capacity"]
    q, steps = float(rel[3]), int(rel[5])
    lcq = c["log_capacity"] + (0.0 if q == 1 else math.log(q + (1 - q) * math.exp(-c["log_capacity"])))
    assert rep["capacity"]["log_capacity"] == pytest.approx(steps * lcq, rel=1e-12)
    an = rep["analytic"]
    if q < 1:
        assert an["applicable"] is False and "q = 1" in an["reason"]
        return
    for metric, eta in (("mse", "0.01"), ("psnr", "20")):
        d = run_json(capsys, ["analytic", "bound", "--metric", metric, "--noise-multiplier", rel[1], "--dim", "64",
                              "--eta", eta, "--min-norm", "0.8", "--clip-norm", repr(clip), "--averaged", rel[5]])
        assert an[metric] == d, metric


def test_fano_entry_matches_the_closed_form_on_full_batch(reports):
    from reconrisk import Release
    from reconrisk._src.theory.fano import fano_bound, gaussian_mutual_information

    f = reports["full-batch"]["fano"]
    # q = 1, T = 9, σ = 2: I ≤ min(T/(2σ²) = 1.125, closed form at Δ = 2C over 9 steps)
    closed = gaussian_mutual_information(10, 2.0 / 2.0, steps=9)
    assert f["information"]["gaussian_closed_form"] == pytest.approx(closed, rel=1e-12)
    assert f["mutual_information"] == min(1.125, f["information"]["gaussian_closed_form"])
    assert f["success_upper"] == fano_bound(f["mutual_information"], 10).success.upper
    # Fano is an upper bound on the same success the exact ReRo bound certifies: it may be looser, never below
    # the *achievable* success of the blind guess
    assert f["success_upper"] >= 0.1
    assert reports["subsampled"]["fano"]["information"]["source"] == "kl_chain_rule"
    assert Release  # imported for the docstring's sake


def test_summary_is_computed_and_rounded_up(reports):
    from reconrisk._src.report.html import _pct, summary_sentences

    for rep in reports.values():
        up = rep["rero"][rep["rero"]["headline"]]["upper"]
        text = " ".join(summary_sentences(rep))
        shown = float(re.search(r"at most <strong>([0-9.]+)%</strong>", text).group(1)) / 100
        assert up <= shown <= up * 1.01 + 1e-12  # rounded up, to 3 significant digits
        assert "1-in-10 prior" in text
    assert _pct(0.18999) == "19%" and _pct(0.190001) == "19.1%" and _pct(0.5, up=False) == "50%"


def test_page_is_self_contained_and_escapes_user_text(capsys, tmp_path):
    weird = tmp_path / "a<b>x<script>&'\""
    weird.mkdir()
    toml = weird / "release.toml"
    toml.write_text("[release]\nnoise_multiplier = 1.5\nsample_rate = 1.0\nsteps = 3\n")
    out = tmp_path / "out"
    assert main(["report", "--release", str(toml), "--samples", "0", "--out", str(out)]) == 0
    capsys.readouterr()
    page = (out / "report.html").read_text()
    assert "<b>x" not in page and "a&lt;b&gt;x&lt;script&gt;&amp;&#x27;&quot;" in page
    for attr in re.findall(r"""(?:src|href)\s*=\s*['"]([^'"]*)""", page):
        assert attr.startswith(("data:", "#")), attr  # inline data, or a reference inside the page (SVG markers)
    assert "http://" not in page and "https://" not in page
    assert page.count("<svg") == 2 and "data:image" not in page  # the two figures, inline
    assert json.loads((out / "report.json").read_text())["rero"]["mc"]["applicable"] is False  # --samples 0


def test_toml_equals_flags_and_schedules(capsys, tmp_path):
    toml = tmp_path / "r.toml"
    toml.write_text("noise_multiplier = 1.2\nsample_rate = 0.05\nsteps = 40\n")
    a = make_report(capsys, tmp_path, ["--release", str(toml)], "a")
    b = make_report(capsys, tmp_path, ["-s", "1.2", "-q", "0.05", "-T", "40"], "b")
    a.pop("provenance"), b.pop("provenance")
    assert a == b
    sched = tmp_path / "s.toml"
    sched.write_text("[release]\nsegments = [[1.2, 0.05, 20], [0.9, 0.05, 20]]\nclip_norm = 0.5\n")
    c = make_report(capsys, tmp_path, ["--release", str(sched), "--target-rero", "0.3"], "c")
    assert c["release"]["segments"][1] == {"noise_multiplier": 0.9, "sample_rate": 0.05, "steps": 20}
    assert c["calibration"]["applicable"] is False and "segments" in c["calibration"]["reason"]
    assert c["rero"]["pld"]["upper"] > b["rero"]["pld"]["upper"]  # less noise in half the steps: more risk


@pytest.mark.parametrize("text,needle", [
    ("noise_multiplier = 1.0\nsample_rate = 0.1\n", "missing steps"),
    ("noise_multiplier = 1.0\nsample_rate = 0.1\nsteps = 5\nlearning_rate = 3\n", "unknown key(s) learning_rate"),
    ("noise_multiplier = -1.0\nsample_rate = 0.1\nsteps = 5\n", "noise_multiplier"),
    ("this is = = not toml", "not valid TOML"),
])
def test_bad_release_files_are_one_line_errors(capsys, tmp_path, text, needle):
    f = tmp_path / "r.toml"
    f.write_text(text)
    assert main(["report", "--release", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and err.startswith("reconrisk: error:")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args,needle", [
    ([], "give the release once"),
    (["-s", "1", "-q", "0.1"], "missing --steps"),
    (["-s", "1", "-q", "0.1", "-T", "5", "--from-opacus", "x.json"], "found flags, --from-opacus"),
    (["-s", "1", "-q", "0.1", "-T", "5", "--prior-size", "10", "--kappa", "0.1"], "exactly one of kappa"),
    (["-s", "1", "-q", "0.1", "-T", "5", "--samples", "5"], "samples"),
    (["-s", "1", "-q", "0.1", "-T", "5", "--fpr", "1.5"], "fpr"),
])
def test_bad_flags_are_one_line_errors(capsys, tmp_path, args, needle):
    assert main(["report", *args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


# -- --from-opacus ---------------------------------------------------------------------------------------
def _opacus_history(tmp_path):
    """Train a tiny model with real Opacus; return (its accountant, the engine, the model, the optimizer)."""
    opacus = pytest.importorskip("opacus", reason="opacus is not installed (the 'opacus' extra)")
    torch = pytest.importorskip("torch")
    import warnings

    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = opacus.PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                 noise_multiplier=1.1, max_grad_norm=1.0)
        for _ in range(2):
            for xb, yb in loader:
                opt.zero_grad()
                if len(xb):
                    torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
    return engine, model, opt, torch


def test_from_opacus_json_torch_and_checkpoint_equal_the_flags(capsys, tmp_path):
    engine, model, opt, torch = _opacus_history(tmp_path)
    state = engine.accountant.state_dict()
    assert [tuple(h) for h in state["history"]] == [(1.1, 0.25, 8)]
    as_json = tmp_path / "acct.json"
    as_json.write_text(json.dumps(state))
    as_torch = tmp_path / "acct.pt"
    torch.save(state, as_torch)
    ckpt = tmp_path / "ckpt.pt"
    engine.save_checkpoint(path=ckpt, module=model, optimizer=opt)
    flags = make_report(capsys, tmp_path, ["-s", "1.1", "-q", "0.25", "-T", "8"], "flags")
    flags.pop("provenance")
    for i, f in enumerate((as_json, as_torch, ckpt)):
        rep = make_report(capsys, tmp_path, ["--from-opacus", str(f)], f"o{i}")
        prov = rep.pop("provenance")["release_source"]
        assert prov["source"] == "opacus" and prov["mechanism"] == "rdp" and len(prov["sha256"]) == 64
        assert prov["format"] == ("json" if i == 0 else "torch (weights_only)")
        assert rep == flags


class _Evil:
    def __reduce__(self):
        import os

        return (os.mkdir, (str(_Evil.target),))


def test_from_opacus_never_unpickles(capsys, tmp_path):
    pytest.importorskip("torch")
    _Evil.target = tmp_path / "pwned"
    f = tmp_path / "evil.pt"
    f.write_bytes(pickle.dumps({"history": [(1.0, 0.1, 5)], "x": _Evil()}))
    assert main(["report", "--from-opacus", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "weights_only" in err and err.count("\n") == 1
    assert not _Evil.target.exists()


@pytest.mark.parametrize("payload,needle", [
    ({"mechanism": "rdp"}, "must hold an Opacus accountant state"),
    ({"history": []}, "history is empty"),
    ({"history": [[1.0, 0.1]]}, "segments[0]"),
    ([[1.0, 0.1, 5], [0.0, 0.1, 5]], "noise_multiplier"),
])
def test_from_opacus_bad_json(capsys, tmp_path, payload, needle):
    f = tmp_path / "h.json"
    f.write_text(json.dumps(payload))
    assert main(["report", "--from-opacus", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_report_does_not_import_jax(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from reconrisk._src.cli import main; "
            f"rc = main(['report', '-s', '1', '-q', '0.1', '-T', '5', '--samples', '0', '--out', {str(tmp_path)!r}]); "
            "assert rc == 0; assert 'jax' not in sys.modules, 'jax imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_attack_points_equal_the_audit(capsys, tmp_path):
    """--attack runs the audit's informed adversary on this release: the same numbers as ``reconrisk audit``."""
    pytest.importorskip("jax", reason="the attack needs the simulation extra")
    args = ["-s", "1", "-q", "1", "-T", "3", "--prior-size", "4"]
    rep = make_report(capsys, tmp_path, [*args, "--attack", "--trials", "4", "--attack-seed", "2"])
    au = run_json(capsys, ["audit", "--noise-multiplier", "1", "-q", "1", "-T", "3", "-C", "1", "--prior-size", "4",
                           "--trials", "4", "--seed", "2", "--no-plot", "--out", str(tmp_path / "audit")])
    a, b = rep["attack"], au["results"][0]
    assert a["applicable"] is True and a["attacks"] == b["attacks"] and a["attack_name"] == b["attack_name"] == "alg2"
    assert a["rero"]["upper"] == b["rero"]["upper"] == rep["rero"]["pld"]["upper"]
    assert a["empirical_attacks"] == b["empirical_attacks"] and a["empirical"]["rero"]["lower"] <= a["rero"]["upper"]
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "alg2 success (" in page and "empirical lower bound" in page and "ReRo at κ = 0.25 (alg2)" in page


def test_fano_curve_agrees_with_the_fano_entry(reports):
    for rep in reports.values():
        p = rep["rero_vs_prior"]
        assert all(1.0 / n <= f <= 1.0 for n, f in zip(p["prior_size"], p["fano"]))
        assert all(a >= b for a, b in zip(p["fano"], p["fano"][1:]))  # more candidates: never easier
    from reconrisk import Release
    from reconrisk._src.experiments.riskreport import ReportConfig, fano_entry, rero_vs_prior

    rel = Release(2.0, 1.0, 9, 0.5)
    row = rero_vs_prior(rel, prior_sizes=(10,))
    assert row.fano[0] == fano_entry(rel, ReportConfig(prior_size=10)).success_upper


def test_unreachable_calibration_target_is_reported_not_raised():
    from reconrisk import Release
    from reconrisk._src.experiments.riskreport import ReportConfig, calibration_entry

    # q = 0.001, T = 5: without noise the success is 1 − 0.999^5·0.9 ≈ 0.1045; a target of 0.2 needs no noise at all
    d = calibration_entry(Release(1.0, 0.001, 5), ReportConfig(prior_size=10, target_rero=0.2))
    assert d.applicable is False and "target must be <" in d.reason and "without any noise" in d.reason


@settings(max_examples=60, deadline=None)
@given(x=st.floats(1e-12, 1e6, allow_nan=False))
def test_printed_upper_bounds_never_round_down(x):
    from reconrisk._src.report.html import _down, _up

    assert x <= _up(x) <= x * (1 + 1.01e-2) and x * (1 - 1.01e-2) <= _down(x) <= x


def test_infinite_epsilon_is_said_not_hidden(reports):
    # (a release with ε = inf, e.g. σ = 0.1, q = 0.01, T = 100, takes minutes in the accountants: the sentence is
    # tested on a fixture report whose ε is set to inf)
    import copy

    from reconrisk._src.report.html import summary_sentences

    rep = copy.deepcopy(reports["subsampled"])
    rep["summary"]["epsilon"] = math.inf
    text = " ".join(summary_sentences(rep))
    assert "is unbounded" in text and "differentially private" not in text
    assert "differentially private" in " ".join(summary_sentences(reports["subsampled"]))


def test_independent_methods_agree_inside_the_report(reports):
    """Cross-checks on one page: Monte Carlo's interval meets the PLD bracket, the closed form lies in it (q = 1),
    RDP and (ε, δ) are no better than the tight bracket, and the reconstruction risk row is the ReRo bound."""
    for key, rep in reports.items():
        rr = rep["rero"]
        pld, mc = rr["pld"], rr["mc"]
        assert mc["lower"] <= pld["upper"] and pld["lower"] <= mc["upper"], key
        assert rr["rdp"]["upper"] >= pld["lower"] and rr["dp"]["upper"] >= pld["lower"]
        if "closed_form" in rr:
            assert pld["lower"] - 1e-12 <= rr["closed_form"]["upper"] <= pld["upper"] + 1e-12
        recon = next(r for r in rep["risks"] if r["measure"] == "reconstruction")
        head = rr[rr["headline"]]
        assert (recon["lower"], recon["upper"]) == (head["lower"], head["upper"])


def test_kappa_only_prior_keeps_every_family_on_the_page(capsys, tmp_path):
    from reconrisk._src.report.mathml import formula_html

    rep = make_report(capsys, tmp_path, ["-s", "1.5", "-q", "1", "-T", "4", "--kappa", "0.05"])
    assert rep["rero"]["kappa"] == 0.05 and rep["rero"]["prior_size"] is None
    assert rep["fano"]["applicable"] is False and "--prior-size" in rep["fano"]["reason"]
    assert {r["measure"] for r in rep["risks"]} == {"reconstruction", "attribute", "membership-tpr",
                                                    "membership-advantage", "bayes-security"}
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "a prior whose blind guess succeeds 5% of the time" in page
    for reason in (rep["fano"]["reason"], rep["capacity"]["reason"], rep["analytic"]["reason"]):
        assert formula_html(reason) in page  # n/a families stay on the page with their reason (math as MathML)


def test_the_report_starts_its_draws_before_scipy_is_imported(tmp_path):
    """`import reconrisk._src.cli` and the Monte-Carlo sampler need numpy only, so `reconrisk report` can start its
    draws on the idle core while scipy and the rest load (issue 22); an eager import would undo that silently."""
    import subprocess
    import sys

    code = ("import sys; import reconrisk._src.cli, reconrisk._src.measures.montecarlo, reconrisk._src.release, "
            "reconrisk._src.experiments.release_source; "
            "heavy = sorted(m for m in ('scipy', 'matplotlib', 'jax', 'dp_accounting') if m in sys.modules); "
            "assert not heavy, heavy")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_the_report_builds_its_release_once(capsys, tmp_path, monkeypatch):
    """`reconrisk report -s …` reads its release where the flags are parsed and carries it: the early draws,
    the analysis and the report use that one object (no second Release built from the same flags)."""
    from reconrisk._src.release import Release

    made = []
    init = Release.__init__
    monkeypatch.setattr(Release, "__init__", lambda self, *a, **k: made.append(a) or init(self, *a, **k))
    rep = run_json(capsys, ["report", "-s", "1.2", "-q", "0.05", "-T", "40", "--samples", "1000",
                            "--out", str(tmp_path)])
    assert made == [(1.2, 0.05, 40, 1.0)] and rep["rero"]["mc"]["upper"] is not None


def test_summary_is_text_rendered_once_to_html(reports, capsys, tmp_path):
    """The summary is made as text: the page escapes and emphasises its parts, the terminal prints the text."""
    import copy

    from reconrisk._src.report.html import summary, summary_sentences

    rep = copy.deepcopy(reports["full-batch"])
    rep["summary"].update(target_rero=0.15, meets_target_now=False, calibrated_noise_multiplier=3.5)
    sentences = summary(rep)
    assert [s.html for s in sentences] == summary_sentences(rep)
    last = sentences[-1]
    assert last.text.startswith("It does not meet the target risk of 15%") and "<" not in last.text
    assert last.html.startswith("It does <strong>not</strong> meet the target risk of 15%")
    assert main(["report", *RELEASES["subsampled"], *EXTRA, "--samples", "0", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    head = [s.text for s in summary(json.loads((tmp_path / "report.json").read_text()))]
    assert all(t in " ".join(printed.split()) for t in head) and "<strong>" not in printed
