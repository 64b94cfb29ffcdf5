"""CLI of Biswas et al. 2024: ``vmf epsilon|concentration`` and ``capacity vmf|gaussian`` (no JAX)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from reconrisk._src.cli import main

TABLE_I = ["--dim", "13700", "--sample-rate", "128/60000", "--compositions", "3", "--delta", "1/60000"]


def _json(capsys, args):
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_vmf_epsilon_json(capsys):
    out = _json(capsys, ["vmf", "epsilon", "--concentration", "200", *TABLE_I, "--approach", "2", "--interpolation", "paper"])
    assert out["epsilon"] == pytest.approx(10.9, abs=0.02)
    assert out["approach"] == "2" and out["compositions"] == 3


def test_vmf_concentration_json(capsys):
    out = _json(capsys, ["vmf", "concentration", "--epsilon", "10.9", *TABLE_I, "--approach", "2", "--interpolation", "paper"])
    assert out["concentration"] == pytest.approx(200, rel=0.01)
    assert out["epsilon"] <= 10.9


def test_capacity_json(capsys):
    assert _json(capsys, ["capacity", "vmf", "--concentration", "500", "--dim", "13700"])["log_capacity"] == pytest.approx(
        490.882, rel=1e-5)
    out = _json(capsys, ["capacity", "gaussian", "--noise-std", "0.5", "--radius", "1", "--dim", "2"])
    assert out["log_capacity"] == pytest.approx(math.log(5.506628274631), rel=1e-10)


@pytest.mark.parametrize(
    "args,word",
    [(["vmf", "epsilon", "--concentration", "-3", *TABLE_I], "concentration"),
     (["vmf", "epsilon", "--concentration", "3", "--dim", "1", "--sample-rate", "0.1", "--compositions", "3",
       "--delta", "1e-5"], "dim"),
     (["vmf", "epsilon", "--concentration", "3", "--dim", "10", "--sample-rate", "a/b", "--compositions", "3",
       "--delta", "1e-5"], "sample_rate"),
     (["vmf", "epsilon", "--concentration", "3", *TABLE_I, "--approach", "7"], "approach"),
     (["capacity", "gaussian", "--noise-std", "0", "--radius", "1", "--dim", "3"], "noise_std"),
     (["capacity", "vmf", "--concentration", "nan", "--dim", "3"], "concentration")],
)
def test_bad_input_one_line_exit_2(capsys, args, word):
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and word in err[0]


def test_capacity_and_vmf_do_not_import_jax():
    code = ("import sys; from reconrisk._src.cli import main; main(['capacity','vmf','--concentration','3','--dim','3','--json']);"
            "main(['vmf','epsilon','--concentration','3','--dim','30','--sample-rate','0.1','--compositions','2','--delta','1e-5',"
            "'--json']); assert 'jax' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_old_spellings_still_work_with_one_note(capsys):
    """--kappa (VMF) and --sigma (capacity gaussian) are hidden deprecated aliases for one release."""
    new = _json(capsys, ["vmf", "epsilon", "--concentration", "200", *TABLE_I, "--approach", "2"])
    assert main(["vmf", "epsilon", "--kappa", "200", *TABLE_I, "--approach", "2", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == new
    assert cap.err.count("\n") == 1 and "--kappa is deprecated" in cap.err and "--concentration" in cap.err
    assert main(["capacity", "gaussian", "--sigma", "0.5", "--radius", "1", "--dim", "2", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["noise_std"] == 0.5 and "--sigma is deprecated" in cap.err
    assert main(["capacity", "vmf", "--kappa", "3", "--concentration", "3", "--dim", "3"]) == 2
    assert "once" in capsys.readouterr().err
    assert main(["vmf", "epsilon", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--concentration" in out and "--kappa" not in out  # hidden
