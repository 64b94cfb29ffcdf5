"""Who is at risk (issue 26, orchestration): the per-example audit, its attack check, its files.

One small run (N = 100 digits, T = 20, q = 1, C = 3, σ at ε = 10, prior size 5: deciles of 10 examples),
module-scoped, so the trainer and the attack's trial function compile once (≈ 6 s + 10 s CPU on the 2-core
machine). Sizes: 400 trials per decile give a success rate with standard deviation ≤ 0.025, so a true
success 0.05 above the decile's largest ex-post ReRo_i would fail
``test_least_exposed_decile_below_its_largest_ex_post_rero`` with probability ≈ 0.98, and the measured margin
(0.52 against 0.74) is ~9 standard deviations, so
the derandomised (seed 0) test is not a coin flip.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip("jax")

from reconrisk._src.experiments.individual import PerExampleSetting, exposure_order, per_example_audit  # noqa: E402
from reconrisk._src.experiments.individual_attack import decile_attacks, group_attack, group_members  # noqa: E402
from reconrisk._src.release import Release  # noqa: E402

TRIALS = 400


@pytest.fixture(scope="module")
def audit():
    s = PerExampleSetting.of(10.0, steps=20, train_size=100, prior_size=5, top_k=4, fil=False)
    return per_example_audit(s)


@pytest.fixture(scope="module")
def attacks(audit):
    return decile_attacks(audit, trials=TRIALS)


def test_every_example_at_most_the_worst_case(audit):
    worst = float(audit.worst_rero.upper)
    assert audit.rero.shape == (100,) and audit.epsilon.shape == (100,)
    assert np.all(audit.rero <= worst + 1e-12) and np.all(audit.rero >= audit.setting.kappa)
    assert np.all(audit.epsilon <= float(audit.worst_epsilon.upper) + 1e-12)
    # an example clipped at every step gets the worst case itself (to rounding)
    full = np.all(audit.norms >= audit.setting.release.clip_norm, axis=1)
    assert full.any(), "the setting should leave some example clipped at every step"
    np.testing.assert_allclose(audit.rero[full], worst, rtol=1e-9)
    assert np.median(audit.rero) < worst  # gradients shrink: the median example is below the worst case


def test_most_exposed_are_ranked_and_shown(audit):
    top = audit.most_exposed
    assert top.size == 4 and np.all(np.diff(audit.rero[top]) <= 0)
    assert np.array_equal(top, exposure_order(audit.rero, audit.norms)[:4])
    rows = audit.top_rows()
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    assert rows[0]["ex_post_rero"] == pytest.approx(float(np.max(audit.rero)))
    assert rows[0]["dataset_index"] == int(audit.indices[top[0]])


def test_json_keeps_every_example_under_ex_post_names(audit):
    doc = json.loads(json.dumps(audit.to_dict()))
    ex = doc["ex_post"]
    assert ex["kind"] == "ex_post" and ex["certified"] is False and "not itself a differential-privacy" in ex["note"]
    assert len(ex["ex_post_rero"]) == 100 and len(ex["ex_post_epsilon"]) == 100
    assert not any(k.startswith("certified_") for k in ex)
    assert len(doc["examples"]["dataset_index"]) == 100 and len(doc["examples"]["label"]) == 100
    sm = doc["summary"]
    assert sm["ex_post_rero_median"] < sm["worst_case_rero"] == pytest.approx(float(audit.worst_rero.upper))
    assert "filtered" not in doc and "fil_relation" not in doc  # no filter, no FIL in this run


def test_least_exposed_decile_below_its_largest_ex_post_rero(attacks):
    """The attack on the least exposed decile stays below that decile's largest ex-post ReRo_i (an estimate that
    the attack checks: no bound)."""
    most, least = attacks
    assert (most.group, least.group) == ("most", "least")
    assert least.rate.trials == TRIALS and least.members.size == 10
    assert least.rate.rate <= least.largest_rero and least.holds
    assert least.rate.ci[0] <= least.largest_rero  # not refuted either
    assert most.rate.rate <= most.largest_rero  # and the most exposed: at most its (worst-case) number
    assert least.largest_rero < most.largest_rero and least.prior_largest_rero <= least.largest_rero
    with pytest.warns(DeprecationWarning, match="largest_rero"):
        assert least.bound == least.largest_rero
    # reported either way; in this run the least exposed are reconstructed less often
    assert least.rate.rate < most.rate.rate


def test_attack_trial_has_power(audit, attacks):
    """Almost no noise (same compiled trial: σ is traced): the deduction is exact, every target is found."""
    s = audit.setting
    quiet = dataclasses.replace(s, release=Release(0.02, 1.0, s.release.steps, s.release.clip_norm))
    g = group_attack(dataclasses.replace(audit, setting=quiet), "most", trials=64)
    assert g.rate.rate >= 0.95


def test_groups_split_the_ranking():
    r = np.array([0.3, 0.1, 0.5, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.15])
    assert group_members(r, "least", 0.2).tolist() == [1, 9]
    assert group_members(r, "most", 0.2).tolist() == [7, 8]


def test_report_files(audit, attacks, tmp_path):
    from reconrisk._src.report.individual import CERTIFIED_TITLE, EX_POST_TITLE, write_individual

    fake = dataclasses.replace(audit, dfil=np.linspace(0.01, 1.0, audit.n)[np.argsort(np.argsort(audit.rero))])
    files = write_individual(fake, tmp_path, attacks, config={"seed": 0})["files"]
    names = {p.split("/")[-1] for p in files}
    for stem in ("per_example_histogram", "per_example_gallery", "per_example_fil", "per_example_attack"):
        assert f"{stem}.svg" in names and f"{stem}.png" not in names  # each figure drawn once, as SVG
    page = (tmp_path / "per_example.html").read_text()
    assert "Who is at risk" in page and EX_POST_TITLE in page and CERTIFIED_TITLE not in page
    assert "largest ex-post ReRo_i" in page and "bound (largest" not in page
    assert page.count("<svg") == 4 and "http" not in page.replace("http://www.w3.org", "")
    doc = json.loads((tmp_path / "per_example.json").read_text())
    assert doc["fil_relation"]["spearman_rho"] > 0.99  # dFIL ranked as ReRo_i here (up to ties)
    assert [a["group"] for a in doc["attack_check"]] == ["most", "least"]
    assert all(a["success_le_ex_post_max"] for a in doc["attack_check"])
    note = doc["attack_check"][0]["note"]
    assert "neither DP guarantees nor bounds" in note and "bounds a" not in note


def test_the_fil_relation_is_computed_once(audit, attacks, tmp_path, monkeypatch):
    """Spearman's ρ of ReRo_i against dFIL is computed with the result; the JSON, the page and the CLI's caption
    read that one number (no second Spearman)."""
    import reconrisk._src.experiments.individual as E
    from reconrisk._src.cli.audit_individual import _fil_caption
    from reconrisk._src.report.individual import write_individual

    calls = []
    real = E.fil_relation
    monkeypatch.setattr(E, "fil_relation", lambda *a: calls.append(a) or real(*a))
    fake = dataclasses.replace(audit, dfil=np.linspace(0.01, 1.0, audit.n))
    assert len(calls) == 1 and fake.fil_relation == real(fake.rero, fake.dfil, fake.norms)
    write_individual(fake, tmp_path, attacks)
    caption = _fil_caption(fake)
    assert len(calls) == 1, f"the FIL relation was computed {len(calls)} times"
    rho = f"{fake.fil_relation['spearman_rho']:.3f}"
    assert rho in caption and f"ρ = {rho}" in (tmp_path / "per_example.html").read_text()
    assert json.loads((tmp_path / "per_example.json").read_text())["fil_relation"] == fake.fil_relation
    assert audit.fil_relation is None  # no dFIL in this run: nothing to relate


def test_each_figure_drawn_once_and_nothing_certified_recomputed(audit, attacks, tmp_path, monkeypatch):
    """The page and the files share one drawing per figure; a filtered run's certified ReRo and what each
    example spent are the run's own numbers, which the page draws without asking the run's analysis again."""
    import reconrisk._src.report.individual as R
    from reconrisk._src.experiments.individual import FilteredRun

    drawn = []
    real = R.matplotlib_svg
    monkeypatch.setattr(R, "matplotlib_svg", lambda fig: drawn.append(fig) or real(fig))

    class Asked:  # the filtered run's analysis: the report must not ask it (its numbers are in the run)
        def __getattr__(self, name):
            raise AssertionError(f"report/ asked the filtered run's analysis for {name}")

    spent = np.linspace(0.21, 0.6, audit.n)
    filtered = FilteredRun(Asked(), np.arange(audit.n) % 3 == 0, 0.9, 0.8, 0.7, rero=0.654321, spent_rero=spent)
    fake = dataclasses.replace(audit, filtered=filtered)
    page = R.render_page(fake, attacks, R.figures(fake, attacks))
    assert len(drawn) == 3 and page.count("<svg") == 3  # histogram, gallery, attack (no dFIL in this run)
    assert "at most 0.654, the budget's" in page and f"largest {spent.max():.3f}" in page
    drawn.clear()
    names = sorted(p.split("/")[-1] for p in R.write_individual(audit, tmp_path, attacks)["files"])
    assert len(drawn) == 3 and names == ["per_example.html", "per_example.json", "per_example_attack.svg",
                                         "per_example_gallery.svg", "per_example_histogram.svg"]
    svg = (tmp_path / "per_example_gallery.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and 'xmlns="http://www.w3.org/2000/svg"' in svg  # a standalone file
