"""``reconrisk audit --per-example``: the tables say which numbers are estimates and which are certified,
the JSON keeps every example, a filtered run certifies every example at its budget, bad flags are one line.

One small run (N = 100, T = 20, prior size 5, FIL accounting on, a filtered run at ReRo ≤ 0.8, no attack
trials: the attack check is tests/test_individual_audit.py's): ≈ 20 s CPU (busy 2-core machine), mostly
the compilations of the norm-recording run with FIL, and of the filtered run.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from reconrisk._src.cli import main

pytest.importorskip("jax")

SMALL = ["--per-example", "--steps", "20", "--train-size", "100", "--prior-size", "5", "--trials", "0", "--top-k", "4"]


def run(capsys, args):
    code = main(["audit", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--per-example-budget", "0.5"], "--per-example-budget needs --per-example"),
        ([*SMALL, "--known-size", "50"], "--per-example does not take --known-size"),
        ([*SMALL, "-e", "1", "-e", "2"], "one --epsilon"),
        ([*SMALL, "--per-example-budget", "0.1"], "budget must be in"),
        ([*SMALL, "--trials", "-1"], "trials must be"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, args, needle, tmp_path):
    code, out, err = run(capsys, [*args, "--out", str(tmp_path)])
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("reconrisk: error:"), err


def test_tables_and_json(capsys, tmp_path):
    from reconrisk._src.report.individual import CERTIFIED_TITLE, EX_POST_TITLE

    code, out, err = run(capsys, [*SMALL, "--per-example-budget", "0.8", "--out", str(tmp_path)])
    assert code == 0, err
    assert f"Per-example risk, {EX_POST_TITLE}" in out and f"Most exposed examples, {EX_POST_TITLE}" in out
    assert f"Per-example budget ReRo ≤ 0.8: {CERTIFIED_TITLE}" in out and "worst case (certified)" in out
    assert "certified ReRo_i" in out and "ex-post median" in out and "max ReRo_i" not in out
    assert "Spearman ρ" in out and "per_example.json" in out and "Attack check" not in out
    doc = json.loads((tmp_path / "per_example.json").read_text())
    n = doc["summary"]["examples"]
    assert n == 100 and len(doc["ex_post"]["ex_post_rero"]) == n and len(doc["examples"]["dfil"]) == n
    assert doc["setting"]["release"]["clip_norm"] == 3.0 and doc["setting"]["epsilon"] == 10.0
    f = doc["filtered"]
    assert f["kind"] == "certified" and f["certified"] is True and len(f["certified_rero"]) == n
    # one certificate, the budget's, for every example; what each spent beside it, as an estimate
    assert f["certified_rero"] == [f["certified_rero_every_example"]] * n and "max_certified_rero" not in f
    assert f["certified_rero_every_example"] <= 0.8 + 1e-12 and len(f["ex_post_rero"]) == n
    assert max(f["ex_post_rero"]) <= f["certified_rero_every_example"] + 1e-12
    # the worst case is 0.877 at κ = 0.2: a budget of 0.8 stops examples (here nearly all, T = 20 is short)
    assert f["filtered_share"] == pytest.approx(np.mean(f["filtered"])) and f["filtered_share"] > 0
    assert (tmp_path / "per_example_gallery.svg").stat().st_size > 1000
    assert "Who is at risk" in (tmp_path / "per_example.html").read_text()
